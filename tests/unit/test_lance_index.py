"""LanceVectorIndex on a real LanceDB store: scores, filters, tenancy, contract, caching, processes."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from librarian.errors import ContractMismatchError, TenantError
from librarian.index import lance_cache
from librarian.index.base import EmbeddingContract
from librarian.index.contract import check_contract, contract_from_json, contract_to_json
from librarian.index.filters import InvalidFilterError
from librarian.index.lance import LanceVectorIndex
from librarian.index.lance_schema import InvalidVectorError
from librarian.index.lance_version import VersionProbe, local_versions_dir

DIM = 8
CONTRACT = EmbeddingContract(dense_model="test-dense", dimension=DIM, sparse_model="test-sparse")


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _records(n: int, seed: int = 0, path: str = "docs/a.pdf", prefix: str | None = None) -> list[dict]:
    rng = np.random.default_rng(seed)
    vectors = _unit(rng, n)
    out = []
    for i in range(n):
        terms = rng.choice(50, size=5, replace=False)
        out.append(
            {
                "id": f"{prefix or path}:{i}",
                "values": vectors[i].tolist(),
                "sparse_values": {
                    "indices": [int(t) for t in terms],
                    "values": rng.uniform(0.1, 2.0, size=5).round(3).tolist(),
                },
                "metadata": {
                    "path": path,
                    "filename": path.rsplit("/", 1)[-1],
                    "chunkIndex": i,
                    "page": i % 4 + 1,
                    "blockType": "Table" if i % 5 == 0 else "Text",
                    "text": f"chunk {i} of {path}",
                    "bbox_left": 0.1 * (i % 10),
                    "tags": ["even"] if i % 2 == 0 else ["odd", "prime"] if i in (3, 5, 7) else ["odd"],
                    "lang": "en" if i % 3 else "de",
                },
            }
        )
    return out


def _brute_force(records, query, sparse_q, alpha):
    """Reference hybrid scores in float64 from the raw records."""
    q = np.asarray(query, dtype=np.float64)
    qs = dict(zip(sparse_q["indices"], sparse_q["values"], strict=True)) if sparse_q else {}
    scores = {}
    for r in records:
        dense = float(np.dot(np.asarray(r["values"], dtype=np.float64), q))
        sv = r["sparse_values"]
        sparse = sum(v * qs.get(i, 0.0) for i, v in zip(sv["indices"], sv["values"], strict=True))
        scores[r["id"]] = (alpha * dense + (1 - alpha) * sparse, dense, sparse)
    return scores


@pytest.fixture
def index(tmp_path: Path) -> LanceVectorIndex:
    return LanceVectorIndex(tmp_path / "lance", contract=CONTRACT, compact_every=5)


def _query_args(seed: int = 42):
    rng = np.random.default_rng(seed)
    q = _unit(rng, 1)[0].tolist()
    sq = {"indices": [1, 2, 3, 7, 11, 49], "values": [0.5, 1.0, 0.25, 2.0, 0.75, 1.5]}
    return q, sq


# ------------------------------------------------------------------------------------------------
# writes


def test_upsert_overwrites_by_id(index):
    records = _records(10)
    assert index.upsert(records, namespace="org1") == 10
    changed = [dict(r, metadata={**r["metadata"], "text": "new"}) for r in records[:4]]
    index.upsert(changed, namespace="org1")
    assert index.describe_index_stats().namespaces["org1"].vector_count == 10
    assert sorted(index.list_ids(namespace="org1")) == sorted(r["id"] for r in records)
    fetched = index.fetch([records[0]["id"], records[5]["id"]], namespace="org1")
    assert fetched[records[0]["id"]]["metadata"]["text"] == "new"
    assert fetched[records[5]["id"]]["metadata"] == records[5]["metadata"]
    assert fetched[records[5]["id"]]["sparse_values"]["indices"] == records[5]["sparse_values"]["indices"]
    np.testing.assert_allclose(fetched[records[5]["id"]]["values"], records[5]["values"], rtol=1e-6)


def test_duplicate_ids_in_one_batch_last_wins(index):
    first, second = _records(2)
    second = dict(second, id=first["id"])
    assert index.upsert([first, second], namespace="org1") == 1
    assert index.fetch([first["id"]], namespace="org1")[first["id"]]["metadata"]["chunkIndex"] == 1


def test_upsert_of_new_ids_appends_once_across_instances(tmp_path):
    """New ids are appended rather than merged; writers racing on the same new ids (separate
    instances, so only the lock on disk orders them) must still leave each id once."""
    path = tmp_path / "lance"
    writers = [LanceVectorIndex(path, contract=CONTRACT) for _ in range(4)]
    records = _records(6)
    start = threading.Barrier(len(writers))
    errors: list[BaseException] = []

    def write(index: LanceVectorIndex) -> None:
        try:
            start.wait(10)
            index.upsert(records, namespace="org1")
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert writers[0].describe_index_stats().namespaces["org1"].vector_count == len(records)
    # A retried batch (same ids again) replaces rather than duplicates.
    writers[1].upsert(records[:3], namespace="org1")
    assert writers[2].describe_index_stats().namespaces["org1"].vector_count == len(records)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda r: r.update(values=[0.1] * (DIM + 1)), "dimensions"),
        (lambda r: r.update(values=[float("nan")] * DIM), "NaN"),
        (lambda r: r.update(id=""), "ids"),
        (lambda r: r.update(sparse_values={"indices": [1, 1], "values": [1.0, 2.0]}), "unique"),
        (lambda r: r.update(sparse_values={"indices": [1], "values": [1.0, 2.0]}), "length"),
        (lambda r: r.update(sparse_values={"indices": [-1], "values": [1.0]}), "32-bit"),
        (lambda r: r["metadata"].update(page="iv"), "'page' must be a int"),
        (lambda r: r["metadata"].update(bbox={"left": 1}), "'bbox' must be"),
        (lambda r: r["metadata"].update(x=None), "'x' must be"),
    ],
)
def test_invalid_records_rejected_before_writing(index, mutate, fragment):
    record = _records(1)[0]
    mutate(record)
    with pytest.raises(InvalidVectorError) as info:
        index.upsert([record], namespace="org1")
    assert fragment in str(info.value)
    assert index.describe_index_stats().total_vector_count == 0


# ------------------------------------------------------------------------------------------------
# scoring


@pytest.mark.parametrize("gather_limit", [15_000, 0], ids=["numpy-gather", "scipy-slice"])
@pytest.mark.parametrize("alpha", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_hybrid_scores_equal_brute_force(index, alpha, gather_limit, monkeypatch):
    monkeypatch.setattr(lance_cache, "_GATHER_LIMIT", gather_limit)  # both sparse code paths
    records = _records(60)
    index.upsert(records, namespace="org1")
    index.upsert(_records(30, seed=9, path="docs/other.pdf"), namespace="org2")
    q, sq = _query_args()
    matches = index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=alpha, top_k=60)
    expected = _brute_force(records, q, sq, alpha)
    assert len(matches) == 60
    for m in matches:
        fused, dense, sparse = expected[m.id]
        assert m.score == pytest.approx(fused, abs=1e-5)
        assert m.dense_score == pytest.approx(dense, abs=1e-5)
        assert m.sparse_score == pytest.approx(sparse, abs=1e-5)
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    top5 = sorted(expected, key=lambda i: -expected[i][0])[:5]
    got5 = [m.id for m in index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=alpha, top_k=5)]
    assert [expected[i][0] for i in got5] == pytest.approx([expected[i][0] for i in top5], abs=1e-5)


def test_alpha_extremes_order_by_one_channel(index):
    records = _records(40)
    index.upsert(records, namespace="org1")
    q, sq = _query_args()
    expected = _brute_force(records, q, sq, 0.5)
    dense_order = sorted(expected, key=lambda i: -expected[i][1])[:10]
    sparse_ranked = sorted(expected, key=lambda i: -expected[i][2])
    dense_only = index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=1.0, top_k=10)
    assert [m.id for m in dense_only] == dense_order
    sparse_only = index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=0.0, top_k=10)
    assert [m.sparse_score for m in sparse_only] == pytest.approx(
        [expected[i][2] for i in sparse_ranked[:10]], abs=1e-5
    )
    assert [m.score for m in sparse_only] == pytest.approx([m.sparse_score for m in sparse_only], abs=1e-6)


def test_query_options(index):
    records = _records(10)
    index.upsert(records, namespace="org1")
    q, _ = _query_args()
    bare = index.query(namespace="org1", vector=q, top_k=3, include_metadata=False)
    assert all(m.metadata == {} and m.values is None for m in bare)
    full = index.query(namespace="org1", vector=q, top_k=3, include_values=True)
    by_id = {r["id"]: r for r in records}
    for m in full:
        assert m.metadata == by_id[m.id]["metadata"]
        assert not {"ns", "id", "vector", "sp_idx", "sp_val", "meta_json"} & m.metadata.keys()
        np.testing.assert_allclose(m.values, by_id[m.id]["values"], rtol=1e-6)
    assert index.query(namespace="empty-org", vector=q) == []
    with pytest.raises(InvalidVectorError, match="dimensions"):
        index.query(namespace="org1", vector=[1.0, 0.0])
    with pytest.raises(ValueError, match="alpha"):
        index.query(namespace="org1", vector=q, alpha=1.5)
    with pytest.raises(ValueError, match="top_k"):
        index.query(namespace="org1", vector=q, top_k=0)
    with pytest.raises(InvalidFilterError):
        index.query(namespace="org1", vector=q, filter={"page": {"$regex": "1"}})


# ------------------------------------------------------------------------------------------------
# filters through the index


FILTER_CASES = [
    {"path": "docs/a.pdf"},
    {"page": {"$eq": 2}},
    {"page": {"$ne": 2}},
    {"page": {"$in": [1, 3]}},
    {"page": {"$nin": [1, 3]}},
    {"chunkIndex": {"$gt": 10}},
    {"chunkIndex": {"$gte": 10}},
    {"chunkIndex": {"$lt": 5}},
    {"chunkIndex": {"$lte": 5}},
    {"bbox_left": {"$gte": 0.45}},
    {"lang": "de"},
    {"lang": {"$ne": "de"}},
    {"tags": {"$in": ["prime"]}},
    {"tags": "even"},
    {"tags": {"$nin": ["odd"]}},
    {"missing_key": "x"},
    {"$or": [{"page": 1}, {"tags": "prime"}]},
    {"$and": [{"blockType": "Text"}, {"lang": "en"}], "page": {"$lte": 2}},
]


@pytest.mark.parametrize("flt", FILTER_CASES, ids=[str(f) for f in FILTER_CASES])
def test_filters_through_query_and_delete(tmp_path, flt):
    from librarian.index.filters import matches

    index = LanceVectorIndex(tmp_path / "lance", contract=CONTRACT)
    records = _records(24)
    index.upsert(records, namespace="org1")
    index.upsert(_records(24, seed=3), namespace="org2")  # same ids and metadata, other tenant
    expected = {r["id"] for r in records if matches(flt, r["metadata"])}
    q, sq = _query_args()
    got = index.query(namespace="org1", vector=q, sparse_vector=sq, top_k=100, filter=flt)
    assert {m.id for m in got} == expected
    assert all(matches(flt, m.metadata) for m in got)
    index.delete(namespace="org1", filter=flt)
    assert set(index.list_ids(namespace="org1")) == {r["id"] for r in records} - expected
    assert len(index.list_ids(namespace="org2")) == 24  # the other tenant is untouched


def test_delete_by_ids_and_all(index):
    records = _records(12)
    index.upsert(records, namespace="org1")
    index.upsert(_records(5), namespace="org2")
    index.delete(namespace="org1", ids=[records[0]["id"], records[1]["id"], "no-such-id"])
    assert len(index.list_ids(namespace="org1")) == 10
    q, _ = _query_args()
    assert records[0]["id"] not in {m.id for m in index.query(namespace="org1", vector=q, top_k=50)}
    index.delete(namespace="org1", delete_all=True)
    assert index.list_ids(namespace="org1") == []
    assert index.query(namespace="org1", vector=q) == []
    assert len(index.list_ids(namespace="org2")) == 5
    with pytest.raises(ValueError, match="exactly one"):
        index.delete(namespace="org2")
    with pytest.raises(ValueError, match="exactly one"):
        index.delete(namespace="org2", ids=["a"], delete_all=True)
    with pytest.raises(ValueError, match="non-empty"):
        index.delete(namespace="org2", filter={})


def test_deleting_nothing_commits_nothing(index):
    """Every ingest deletes its path first; for a new document that must not cost a commit."""
    index.upsert(_records(3), namespace="org1")
    before = index._table.version
    index.delete(namespace="org1", filter={"path": "docs/new.pdf"})
    index.delete(namespace="org1", ids=["docs/new.pdf:0"])
    assert index._table.version == before
    index.delete(namespace="org1", filter={"path": "docs/a.pdf"})
    assert index._table.version > before
    assert index.list_ids(namespace="org1") == []


def test_list_ids_prefix(index):
    index.upsert(_records(3, path="docs/a.pdf") + _records(2, path="docs/a_b.pdf"), namespace="org1")
    assert index.list_ids(namespace="org1", prefix="docs/a.pdf:") == [f"docs/a.pdf:{i}" for i in range(3)]
    assert index.list_ids(namespace="org1", prefix="docs/a_") == ["docs/a_b.pdf:0", "docs/a_b.pdf:1"]
    assert index.list_ids(namespace="org1", prefix="it's") == []


# ------------------------------------------------------------------------------------------------
# tenancy


def test_namespace_isolation(index):
    # Same ids and metadata in both tenants; only the vectors tell them apart.
    a, b = _records(20, path="docs/shared.pdf"), _records(7, seed=5, path="docs/shared.pdf")
    index.upsert(a, namespace="orgA")
    index.upsert(b, namespace="orgB")
    a_values = {r["id"]: r["values"] for r in a}
    q, sq = _query_args()
    filters = [
        None,
        {"path": "docs/shared.pdf"},
        {"ns": "orgB"},
        {"ns": {"$ne": "orgA"}},
        {"$or": [{"page": {"$gte": 0}}, {"ns": "orgB"}]},
    ]
    for flt in filters:
        got = index.query(
            namespace="orgA", vector=q, sparse_vector=sq, top_k=100, filter=flt, include_values=True
        )
        for m in got:
            np.testing.assert_allclose(m.values, a_values[m.id], rtol=1e-6)
    assert index.query(namespace="orgA", vector=q, filter={"ns": "orgB"}) == []  # no such metadata
    assert len(index.query(namespace="orgB", vector=q, top_k=100)) == 7
    stats = index.describe_index_stats()
    assert {k: v.vector_count for k, v in stats.namespaces.items()} == {"orgA": 20, "orgB": 7}
    assert stats.total_vector_count == 27 and stats.dimension == DIM

    # deletes stay inside their namespace, whatever the filter says (OR must not escape `ns = ...`)
    index.delete(namespace="orgA", filter={"ns": "orgB"})
    index.delete(namespace="orgB", filter={"$or": [{"path": "docs/shared.pdf"}, {"page": 1}]})
    assert len(index.list_ids(namespace="orgA")) == 20
    assert index.list_ids(namespace="orgB") == []
    assert index.fetch([a[0]["id"]], namespace="orgB") == {}
    assert index.fetch([a[0]["id"]], namespace="orgA")[a[0]["id"]]["values"] == pytest.approx(
        a[0]["values"], rel=1e-6
    )


@pytest.mark.parametrize("bad", [None, "", " ", "../x", "a' OR '1'='1", "x" * 64, 7])
def test_missing_or_invalid_namespace(index, bad):
    q, _ = _query_args()
    calls = [
        lambda: index.upsert(_records(1), namespace=bad),
        lambda: index.query(namespace=bad, vector=q),
        lambda: index.delete(namespace=bad, delete_all=True),
        lambda: index.fetch(["x"], namespace=bad),
        lambda: index.list_ids(namespace=bad),
    ]
    for call in calls:
        with pytest.raises(TenantError):
            call()


def test_namespace_is_keyword_only(index):
    with pytest.raises(TypeError):
        index.upsert(_records(1), "org1")  # type: ignore[misc]


# ------------------------------------------------------------------------------------------------
# contract


def test_contract_mismatch_names_both_and_touches_nothing(tmp_path):
    path = tmp_path / "lance"
    index = LanceVectorIndex(path, contract=CONTRACT)
    index.upsert(_records(3), namespace="org1")
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    other = EmbeddingContract(dense_model="other-dense", dimension=16, sparse_model="test-sparse")
    with pytest.raises(ContractMismatchError) as info:
        LanceVectorIndex(path, contract=other)
    message = str(info.value)
    assert CONTRACT.describe() in message and other.describe() in message
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before
    # same dimension, different sparse model: also refused
    with pytest.raises(ContractMismatchError, match="other-sparse"):
        LanceVectorIndex(path, contract=EmbeddingContract("test-dense", DIM, "other-sparse"))
    assert len(LanceVectorIndex(path, contract=CONTRACT).list_ids(namespace="org1")) == 3


def test_contract_helpers(tmp_path):
    check_contract(None, CONTRACT)
    check_contract(CONTRACT, CONTRACT)
    assert contract_from_json(contract_to_json(CONTRACT)) == CONTRACT
    with pytest.raises(ContractMismatchError, match="unreadable"):
        contract_from_json("{not json")
    path = tmp_path / "lance"
    LanceVectorIndex(path, contract=CONTRACT)
    assert contract_from_json((path / "contract.json").read_text()) == CONTRACT


def test_table_without_contract_is_refused(tmp_path):
    path = tmp_path / "lance"
    LanceVectorIndex(path, contract=CONTRACT)
    (path / "contract.json").unlink()
    with pytest.raises(ContractMismatchError, match="no recorded embedding contract"):
        LanceVectorIndex(path, contract=CONTRACT)


# ------------------------------------------------------------------------------------------------
# caching and other writers


def test_cache_sees_writes_from_another_instance(tmp_path):
    path = tmp_path / "lance"
    reader = LanceVectorIndex(path, contract=CONTRACT)
    writer = LanceVectorIndex(path, contract=CONTRACT)
    records = _records(10)
    writer.upsert(records, namespace="org1")
    q, sq = _query_args()
    assert len(reader.query(namespace="org1", vector=q, top_k=50)) == 10
    cached = reader._cache.get("org1", reader._table.version)
    assert cached is not None  # second query would be served from memory
    assert reader._snapshot("org1") is cached

    # overwrite one record so that it becomes the best dense match, from the other instance
    winner = dict(records[3], values=q)
    writer.upsert([winner], namespace="org1")
    top = reader.query(namespace="org1", vector=q, sparse_vector=sq, alpha=1.0, top_k=1)[0]
    assert top.id == winner["id"] and top.score == pytest.approx(1.0, abs=1e-5)
    writer.delete(namespace="org1", ids=[winner["id"]])
    assert winner["id"] not in {m.id for m in reader.query(namespace="org1", vector=q, top_k=50)}
    writer.upsert(_records(2, seed=7, prefix="new"), namespace="org1")
    assert len(reader.query(namespace="org1", vector=q, top_k=50)) == 11


def test_version_probe_skips_full_check_until_a_commit(tmp_path):
    calls: list[int] = []

    def read_version() -> int:
        calls.append(1)
        return len(calls)

    versions = tmp_path / "_versions"
    versions.mkdir()
    past = time.time() - 60
    os.utime(versions, (past, past))
    probe = VersionProbe(read_version, versions)
    assert [probe.current() for _ in range(3)] == [1, 1, 1]  # one full check, then the stat
    (versions / "2.manifest").write_text("")  # what a commit does
    assert probe.current() == 2
    assert probe.current() == 3  # a fresh mtime is not trusted: a same-tick commit could hide
    os.utime(versions, (past, past))
    assert [probe.current() for _ in range(2)] == [4, 4]
    assert local_versions_dir("s3://bucket/chunks.lance") is None
    assert VersionProbe(read_version, None).current() == 5  # no directory: always the full check


def test_idle_reader_sees_other_instance_commit(tmp_path):
    """With the probe trusting an old mtime, a commit from elsewhere is still seen at once."""
    path = tmp_path / "lance"
    reader = LanceVectorIndex(path, contract=CONTRACT)
    writer = LanceVectorIndex(path, contract=CONTRACT)
    writer.upsert(_records(4), namespace="org1")
    q, _ = _query_args()
    versions = path / "chunks.lance" / "_versions"
    past = time.time() - 60
    os.utime(versions, (past, past))
    assert len(reader.query(namespace="org1", vector=q, top_k=50)) == 4
    assert len(reader.query(namespace="org1", vector=q, top_k=50)) == 4  # served without a full check
    writer.upsert(_records(3, seed=2, prefix="late"), namespace="org1")
    assert len(reader.query(namespace="org1", vector=q, top_k=50)) == 7


def test_namespace_column_is_indexed(index):
    index.upsert(_records(3), namespace="org1")
    assert any(list(i.columns) == ["ns"] for i in index._table.list_indices())


def test_own_write_keeps_other_namespaces_cached(index):
    index.upsert(_records(5), namespace="org1")
    index.upsert(_records(5), namespace="org2")
    q, _ = _query_args()
    index.query(namespace="org2", vector=q)
    snap = index._snapshot("org2")
    index.upsert(_records(3, seed=1, prefix="more"), namespace="org1")
    assert index._snapshot("org2") is snap  # relabelled, not re-read
    assert len(index.query(namespace="org1", vector=q, top_k=50)) == 8


def test_compaction_keeps_data(tmp_path):
    index = LanceVectorIndex(tmp_path / "lance", contract=CONTRACT, compact_every=2)
    for i in range(6):
        index.upsert(_records(4, seed=i, prefix=f"batch{i}"), namespace="org1")
    index.delete(namespace="org1", filter={"page": 1})
    assert len(index.list_ids(namespace="org1")) == 18
    q, _ = _query_args()
    assert len(index.query(namespace="org1", vector=q, top_k=100)) == 18


def _write_batches(index: LanceVectorIndex, worker: int, batches: int) -> None:
    for b in range(batches):
        index.upsert(_records(10, seed=worker * 100 + b, prefix=f"w{worker}b{b}"), namespace="shared")


def _worker(path: str, worker: int, batches: int, ready, go) -> None:
    index = LanceVectorIndex(Path(path), contract=CONTRACT, compact_every=4)
    ready.set()
    if go.wait(60):
        _write_batches(index, worker, batches)


@pytest.mark.slow
def test_two_processes_upsert_concurrently(tmp_path):
    """This process and a spawned one write into one table at once (compacting as they go)."""
    path = tmp_path / "lance"
    here = LanceVectorIndex(path, contract=CONTRACT, compact_every=4)
    ctx = mp.get_context("spawn")
    ready, go = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_worker, args=(str(path), 1, 12, ready, go))
    child.start()
    try:
        assert ready.wait(60), "the writer process did not start"
        go.set()
        _write_batches(here, 0, 12)
        child.join(60)
        assert child.exitcode == 0, f"the writer process failed (exit code {child.exitcode})"
    finally:
        if child.is_alive():
            child.kill()
    expected = {f"w{w}b{b}:{i}" for w in range(2) for b in range(12) for i in range(10)}
    assert set(here.list_ids(namespace="shared")) == expected
    assert here.describe_index_stats().namespaces["shared"].vector_count == len(expected)
    q, _ = _query_args()
    assert len(here.query(namespace="shared", vector=q, top_k=1000)) == len(expected)


def test_cache_is_bounded_by_memory(tmp_path):
    index = LanceVectorIndex(tmp_path / "lance", contract=CONTRACT, cache_bytes=1)
    index.upsert(_records(5), namespace="org1")
    index.upsert(_records(6, seed=1), namespace="org2")
    q, _ = _query_args()
    assert len(index.query(namespace="org1", vector=q, top_k=50)) == 5
    assert len(index.query(namespace="org2", vector=q, top_k=50)) == 6
    version = index._versions.current()
    assert index._cache.get("org1", version) is None  # evicted: least recently used
    assert index._cache.get("org2", version) is not None  # the newest always stays
    assert len(index.query(namespace="org1", vector=q, top_k=50)) == 5  # re-read on demand


def test_sparse_term_counts_are_per_namespace(tmp_path: Path) -> None:
    """Query-time IDF reads the searched namespace's document frequencies and nobody else's."""
    index = LanceVectorIndex(tmp_path, CONTRACT)
    mine, theirs = _records(30, seed=1), _records(200, seed=2)
    index.upsert(mine, namespace="acme")
    index.upsert(theirs, namespace="globex")
    terms = [0, 7, 49, 12345]
    expected = {t: sum(t in r["sparse_values"]["indices"] for r in mine) for t in terms}
    assert index.sparse_term_counts(terms, namespace="acme") == (30, expected)
    assert expected[12345] == 0 and any(expected.values())
    size, counts = index.sparse_term_counts(terms, namespace="globex")
    assert size == 200 and counts[0] == sum(0 in r["sparse_values"]["indices"] for r in theirs)
    assert index.sparse_term_counts(terms, namespace="empty") == (0, dict.fromkeys(terms, 0))
