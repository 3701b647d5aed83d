"""The `VectorIndex` contract, run against every index: LanceDB, pgvector, and Pinecone (wire server).

One behaviour, one test, parametrized over the indexes that must show it: scores, filters,
overwrites, deletes, tenancy, the embedding contract. Pinecone runs the tests its adapter can
meet (no local validation, no channel scores, no query-time IDF; its contract checks and wire
details live in `test_pinecone_wire.py`); LanceDB's own machinery (snapshots, versions,
compaction) is in `tests/unit/test_lance_index.py`.

pgvector runs on the embedded PostgreSQL of `tests.pg_embedded`, a fresh database per test.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from librarian.errors import ConfigError, ContractMismatchError, TenantError
from librarian.index.base import EmbeddingContract, VectorIndex
from librarian.index.filters import InvalidFilterError, matches
from librarian.index.lance import LanceVectorIndex
from librarian.index.lance_schema import InvalidVectorError
from librarian.index.pgvector import PgVectorIndex
from librarian.index.pgvector_schema import CONTRACTS_TABLE
from tests.devserver import free_port
from tests.pg_embedded import pg_server, pgvector_url  # noqa: F401  (pytest fixtures)

DIM = 8
CONTRACT = EmbeddingContract(dense_model="test-dense", dimension=DIM, sparse_model="test-sparse")
LOCAL = ["lancedb", "pgvector"]
ALL = [*LOCAL, "pinecone"]


# ------------------------------------------------------------------------------------------------
# records and reference scores (shared with tests/unit/test_lance_index.py)


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def make_records(n: int, seed: int = 0, path: str = "docs/a.pdf", prefix: str | None = None) -> list[dict]:
    rng = np.random.default_rng(seed)
    vectors = unit_vectors(rng, n)
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


def brute_force(records, query, sparse_q, alpha) -> dict[str, tuple[float, float, float]]:
    """Reference hybrid scores in float64 from the raw records: id -> (fused, dense, sparse)."""
    q = np.asarray(query, dtype=np.float64)
    qs = dict(zip(sparse_q["indices"], sparse_q["values"], strict=True)) if sparse_q else {}
    scores = {}
    for r in records:
        dense = float(np.dot(np.asarray(r["values"], dtype=np.float64), q))
        sv = r["sparse_values"]
        sparse = sum(v * qs.get(i, 0.0) for i, v in zip(sv["indices"], sv["values"], strict=True))
        scores[r["id"]] = (alpha * dense + (1 - alpha) * sparse, dense, sparse)
    return scores


def query_args(seed: int = 42) -> tuple[list[float], dict[str, list]]:
    rng = np.random.default_rng(seed)
    q = unit_vectors(rng, 1)[0].tolist()
    sq = {"indices": [1, 2, 3, 7, 11, 49], "values": [0.5, 1.0, 0.25, 2.0, 0.75, 1.5]}
    return q, sq


# ------------------------------------------------------------------------------------------------
# the indexes


@dataclass
class Backend:
    """One kind of index on one store: `open` gives another instance on the same store."""

    kind: str
    open: Callable[..., VectorIndex]
    state: Callable[[], Any] | None = None  # everything stored, to show a refusal touched nothing
    forget_contract: Callable[[], None] | None = None


def _lance(tmp_path: Path) -> Backend:
    path = tmp_path / "lance"

    def state() -> list[Path]:
        return sorted(p.relative_to(path) for p in path.rglob("*"))

    return Backend(
        "lancedb",
        lambda contract=CONTRACT, **kw: LanceVectorIndex(path, contract=contract, **kw),
        state,
        lambda: (path / "contract.json").unlink(),
    )


def _pgvector(url: str) -> Backend:
    def state() -> tuple[Any, ...]:
        with psycopg.connect(url) as conn:
            relations = conn.execute(
                "SELECT relname, relkind FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1"
            ).fetchall()
            contracts = conn.execute(f"SELECT table_name, contract FROM {CONTRACTS_TABLE}").fetchall()
            rows = conn.execute("SELECT ns, id, dense::text, metadata FROM librarian_chunks ORDER BY ns, id")
            return relations, contracts, rows.fetchall()

    def forget() -> None:
        with psycopg.connect(url) as conn:
            conn.execute(f"DELETE FROM {CONTRACTS_TABLE}")

    return Backend(
        "pgvector", lambda contract=CONTRACT, **kw: PgVectorIndex(url, contract, **kw), state, forget
    )


def _pinecone(server: Any) -> Backend:
    from librarian.index.pinecone import PineconeVectorIndex
    from tests.wire.pinecone_server import TEST_API_KEY

    return Backend(
        "pinecone",
        lambda contract=CONTRACT, **kw: PineconeVectorIndex(
            TEST_API_KEY, "document-chunks", contract, host=server.url, **kw
        ),
    )


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    kind = request.param
    if kind == "lancedb":
        return _lance(tmp_path)
    if kind == "pgvector":
        return _pgvector(request.getfixturevalue("pgvector_url"))
    return _pinecone(request.getfixturevalue("pinecone_server"))


@pytest.fixture
def index(backend: Backend) -> VectorIndex:
    return backend.open()


def on(kinds: list[str]) -> pytest.MarkDecorator:
    """Run a test with the `backend` (and `index`) of each of these kinds."""
    return pytest.mark.parametrize("backend", kinds, indirect=True)


# ------------------------------------------------------------------------------------------------
# writes


@on(ALL)
def test_upsert_overwrites_by_id(index):
    records = make_records(10)
    assert index.upsert(records, namespace="org1") == 10
    changed = [dict(r, metadata={**r["metadata"], "text": "new"}) for r in records[:4]]
    index.upsert(changed, namespace="org1")
    assert index.describe_index_stats().namespaces["org1"].vector_count == 10
    assert sorted(index.list_ids(namespace="org1")) == sorted(r["id"] for r in records)
    fetched = index.fetch([records[0]["id"], records[5]["id"]], namespace="org1")
    assert fetched[records[0]["id"]]["metadata"]["text"] == "new"
    assert fetched[records[5]["id"]]["metadata"] == records[5]["metadata"]
    assert fetched[records[5]["id"]]["sparse_values"]["indices"] == records[5]["sparse_values"]["indices"]
    np.testing.assert_allclose(
        fetched[records[5]["id"]]["sparse_values"]["values"], records[5]["sparse_values"]["values"], rtol=1e-6
    )
    np.testing.assert_allclose(fetched[records[5]["id"]]["values"], records[5]["values"], rtol=1e-6)


@on(LOCAL)
def test_duplicate_ids_in_one_batch_last_wins(index):
    first, second = make_records(2)
    second = dict(second, id=first["id"])
    assert index.upsert([first, second], namespace="org1") == 1
    assert index.fetch([first["id"]], namespace="org1")[first["id"]]["metadata"]["chunkIndex"] == 1


@on(LOCAL)
def test_racing_writers_on_the_same_new_ids_leave_each_id_once(backend):
    """Separate instances (as separate processes would be) upsert the same new ids at once."""
    writers = [backend.open() for _ in range(4)]
    records = make_records(6)
    start = threading.Barrier(len(writers))
    errors: list[BaseException] = []

    def write(index: VectorIndex) -> None:
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


@on(LOCAL)
@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda r: r.update(values=[0.1] * (DIM + 1)), "dimensions"),
        (lambda r: r.update(values=[float("nan")] * DIM), "NaN"),
        (lambda r: r.update(id=""), "ids"),
        (lambda r: r.update(sparse_values={"indices": [1, 1], "values": [1.0, 2.0]}), "unique"),
        (lambda r: r.update(sparse_values={"indices": [1], "values": [1.0, 2.0]}), "length"),
        (lambda r: r.update(sparse_values={"indices": [-1], "values": [1.0]}), "32-bit"),
        (lambda r: r.update(sparse_values={"indices": [2**32], "values": [1.0]}), "32-bit"),
        (lambda r: r["metadata"].update(page="iv"), "'page' must be a int"),
        (lambda r: r["metadata"].update(bbox={"left": 1}), "'bbox' must be"),
        (lambda r: r["metadata"].update(x=None), "'x' must be"),
    ],
)
def test_invalid_records_rejected_before_writing(index, mutate, fragment):
    record = make_records(1)[0]
    mutate(record)
    with pytest.raises(InvalidVectorError) as info:
        index.upsert([make_records(2, seed=5, prefix="fine")[0], record], namespace="org1")
    assert fragment in str(info.value)
    assert index.describe_index_stats().total_vector_count == 0


@on(ALL)
def test_writes_from_another_instance_are_seen_by_the_next_query(backend):
    reader, writer = backend.open(), backend.open()
    records = make_records(10)
    writer.upsert(records, namespace="org1")
    q, sq = query_args()
    assert len(reader.query(namespace="org1", vector=q, top_k=50)) == 10
    winner = dict(records[3], values=q)  # now the best dense match, written by the other instance
    writer.upsert([winner], namespace="org1")
    top = reader.query(namespace="org1", vector=q, sparse_vector=sq, alpha=1.0, top_k=1)[0]
    assert top.id == winner["id"] and top.score == pytest.approx(1.0, abs=1e-5)
    writer.delete(namespace="org1", ids=[winner["id"]])
    assert winner["id"] not in {m.id for m in reader.query(namespace="org1", vector=q, top_k=50)}
    writer.upsert(make_records(2, seed=7, prefix="new"), namespace="org1")
    assert len(reader.query(namespace="org1", vector=q, top_k=50)) == 11


# ------------------------------------------------------------------------------------------------
# scoring


@on(ALL)
@pytest.mark.parametrize("alpha", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_hybrid_scores_equal_brute_force(backend, index, alpha):
    records = make_records(60)
    index.upsert(records, namespace="org1")
    index.upsert(make_records(30, seed=9, path="docs/other.pdf"), namespace="org2")
    q, sq = query_args()
    found = index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=alpha, top_k=60)
    expected = brute_force(records, q, sq, alpha)
    assert len(found) == 60
    for m in found:
        fused, dense, sparse = expected[m.id]
        assert m.score == pytest.approx(fused, abs=1e-5)
        if backend.kind != "pinecone":  # Pinecone reports the fused score only
            assert m.dense_score == pytest.approx(dense, abs=1e-5)
            assert m.sparse_score == pytest.approx(sparse, abs=1e-5)
    assert [m.score for m in found] == sorted((m.score for m in found), reverse=True)
    top5 = sorted(expected, key=lambda i: -expected[i][0])[:5]
    got5 = [m.id for m in index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=alpha, top_k=5)]
    assert [expected[i][0] for i in got5] == pytest.approx([expected[i][0] for i in top5], abs=1e-5)


@on(LOCAL)
def test_alpha_extremes_order_by_one_channel(index):
    records = make_records(40)
    index.upsert(records, namespace="org1")
    q, sq = query_args()
    expected = brute_force(records, q, sq, 0.5)
    dense_order = sorted(expected, key=lambda i: -expected[i][1])[:10]
    sparse_ranked = sorted(expected, key=lambda i: -expected[i][2])
    dense_only = index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=1.0, top_k=10)
    assert [m.id for m in dense_only] == dense_order
    sparse_only = index.query(namespace="org1", vector=q, sparse_vector=sq, alpha=0.0, top_k=10)
    assert [m.sparse_score for m in sparse_only] == pytest.approx(
        [expected[i][2] for i in sparse_ranked[:10]], abs=1e-5
    )
    assert [m.score for m in sparse_only] == pytest.approx([m.sparse_score for m in sparse_only], abs=1e-6)


@on(LOCAL)
def test_query_options(index):
    records = make_records(10)
    index.upsert(records, namespace="org1")
    q, _ = query_args()
    bare = index.query(namespace="org1", vector=q, top_k=3, include_metadata=False)
    assert all(m.metadata == {} and m.values is None for m in bare)
    full = index.query(namespace="org1", vector=q, top_k=3, include_values=True)
    by_id = {r["id"]: r for r in records}
    for m in full:
        assert m.metadata == by_id[m.id]["metadata"]
        internal = {"ns", "id", "vector", "dense", "sp_idx", "sp_val", "terms", "weights", "meta_json"}
        assert not internal & m.metadata.keys()
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
    {"path": {"$in": ["docs/a.pdf", "docs/b.pdf"]}, "page": {"$gt": 1}},
    {"$or": [{"path": "docs/none.pdf"}, {"chunkIndex": {"$gte": 20}}]},
]


@on(ALL)
@pytest.mark.parametrize("flt", FILTER_CASES, ids=[str(f) for f in FILTER_CASES])
def test_filters_through_query_and_delete(index, flt):
    records = make_records(24)
    index.upsert(records, namespace="org1")
    index.upsert(make_records(24, seed=3), namespace="org2")  # same ids and metadata, other tenant
    expected = {r["id"] for r in records if matches(flt, r["metadata"])}
    q, sq = query_args()
    got = index.query(namespace="org1", vector=q, sparse_vector=sq, top_k=100, filter=flt)
    assert {m.id for m in got} == expected
    assert all(matches(flt, m.metadata) for m in got)
    index.delete(namespace="org1", filter=flt)
    assert set(index.list_ids(namespace="org1")) == {r["id"] for r in records} - expected
    assert len(index.list_ids(namespace="org2")) == 24  # the other tenant is untouched


@on(ALL)
def test_delete_by_ids_and_all(backend, index):
    records = make_records(12)
    index.upsert(records, namespace="org1")
    index.upsert(make_records(5), namespace="org2")
    index.delete(namespace="org1", ids=[records[0]["id"], records[1]["id"], "no-such-id"])
    assert len(index.list_ids(namespace="org1")) == 10
    q, _ = query_args()
    assert records[0]["id"] not in {m.id for m in index.query(namespace="org1", vector=q, top_k=50)}
    index.delete(namespace="org1", delete_all=True)
    assert index.list_ids(namespace="org1") == []
    assert index.query(namespace="org1", vector=q) == []
    assert len(index.list_ids(namespace="org2")) == 5
    stats = index.describe_index_stats()
    assert {ns: s.vector_count for ns, s in stats.namespaces.items() if s.vector_count} == {"org2": 5}
    with pytest.raises(ValueError):
        index.delete(namespace="org2")
    with pytest.raises(ValueError):
        index.delete(namespace="org2", ids=["a"], delete_all=True)
    with pytest.raises(ValueError):
        index.delete(namespace="org2", filter={})
    if backend.kind != "pinecone":
        with pytest.raises(ValueError, match="exactly one"):
            index.delete(namespace="org2")


@on(ALL)
def test_list_ids_prefix(index):
    index.upsert(make_records(3, path="docs/a.pdf") + make_records(2, path="docs/a_b.pdf"), namespace="org1")
    assert index.list_ids(namespace="org1", prefix="docs/a.pdf:") == [f"docs/a.pdf:{i}" for i in range(3)]
    assert index.list_ids(namespace="org1", prefix="docs/a_") == ["docs/a_b.pdf:0", "docs/a_b.pdf:1"]
    assert index.list_ids(namespace="org1", prefix="docs/a%") == []  # no LIKE wildcards
    assert index.list_ids(namespace="org1", prefix="it's") == []


# ------------------------------------------------------------------------------------------------
# tenancy


@on(ALL)
def test_namespace_isolation(backend, index):
    # Same ids and metadata in both tenants; only the vectors tell them apart, and the other
    # tenant's are the best possible match for the query.
    q, sq = query_args()
    a, b = make_records(20, path="docs/shared.pdf"), make_records(7, seed=5, path="docs/shared.pdf")
    b = [dict(r, values=q, sparse_values=sq) for r in b]
    index.upsert(a, namespace="orgA")
    index.upsert(b, namespace="orgB")
    a_values = {r["id"]: r["values"] for r in a}
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


@on(ALL)
@pytest.mark.parametrize("bad", [None, "", " ", "../x", "a' OR '1'='1", "x" * 64, 7])
def test_missing_or_invalid_namespace(index, bad):
    q, _ = query_args()
    calls = [
        lambda: index.upsert(make_records(1), namespace=bad),
        lambda: index.query(namespace=bad, vector=q),
        lambda: index.delete(namespace=bad, delete_all=True),
        lambda: index.fetch(["x"], namespace=bad),
        lambda: index.list_ids(namespace=bad),
    ]
    for call in calls:
        with pytest.raises(TenantError):
            call()


@on(ALL)
def test_namespace_is_keyword_only(index):
    calls = [
        lambda: index.upsert(make_records(1), "org1"),  # type: ignore[misc]
        lambda: index.fetch(["x"], "org1"),  # type: ignore[misc]
        lambda: index.query("org1", [0.0] * DIM),  # type: ignore[misc]
    ]
    for call in calls:
        with pytest.raises(TypeError):
            call()


@on(LOCAL)
def test_sparse_term_counts_are_per_namespace(index) -> None:
    """Query-time IDF reads the searched namespace's document frequencies and nobody else's."""
    mine, theirs = make_records(30, seed=1), make_records(200, seed=2)
    index.upsert(mine, namespace="acme")
    index.upsert(theirs, namespace="globex")
    terms = [0, 7, 49, 12345]
    expected = {t: sum(t in r["sparse_values"]["indices"] for r in mine) for t in terms}
    assert index.sparse_term_counts(terms, namespace="acme") == (30, expected)
    assert expected[12345] == 0 and any(expected.values())
    size, counts = index.sparse_term_counts(terms, namespace="globex")
    assert size == 200 and counts[0] == sum(0 in r["sparse_values"]["indices"] for r in theirs)
    assert index.sparse_term_counts(terms, namespace="empty") == (0, dict.fromkeys(terms, 0))


# ------------------------------------------------------------------------------------------------
# the embedding contract


@on(LOCAL)
def test_contract_mismatch_names_both_and_touches_nothing(backend):
    backend.open().upsert(make_records(3), namespace="org1")
    before = backend.state()
    other = EmbeddingContract(dense_model="other-dense", dimension=16, sparse_model="test-sparse")
    with pytest.raises(ContractMismatchError) as info:
        backend.open(contract=other)
    message = str(info.value)
    assert CONTRACT.describe() in message and other.describe() in message
    assert backend.state() == before
    # same dimension, different sparse model: also refused
    with pytest.raises(ContractMismatchError, match="other-sparse"):
        backend.open(contract=EmbeddingContract("test-dense", DIM, "other-sparse"))
    assert backend.state() == before
    assert len(backend.open().list_ids(namespace="org1")) == 3


@on(LOCAL)
def test_index_without_a_recorded_contract_is_refused(backend):
    backend.open()
    backend.forget_contract()
    with pytest.raises(ContractMismatchError, match="no recorded embedding contract"):
        backend.open()


# ------------------------------------------------------------------------------------------------
# properties: filters against the Python reference, tenancy under random writes, equal rankings

_KEYS = ["a", "b", "page", "lang"]
# Small domains, so that stored values and operands often meet (quotes, backslashes and JSON path
# syntax among the characters, so that escaping is tested too).
_TEXT = st.text(alphabet="a'\"\\$@é", max_size=1)
_NUMBER = st.one_of(st.integers(-2, 2), st.sampled_from([-1.5, 0.0, 0.5, 1.0, 2.0]))
_SCALAR = st.one_of(_NUMBER, st.booleans(), _TEXT)


def _metadata() -> st.SearchStrategy[dict[str, Any]]:
    free = st.one_of(_SCALAR, st.lists(_TEXT, max_size=3))
    return st.fixed_dictionaries({"a": free, "page": st.integers(0, 3)}, optional={"b": free, "lang": _TEXT})


def _operand(op: str) -> st.SearchStrategy[Any]:
    if op in ("$in", "$nin"):
        return st.lists(_SCALAR, max_size=4)
    if op == "$exists":
        return st.booleans()
    return _NUMBER if op in ("$gt", "$gte", "$lt", "$lte") else _SCALAR


_OPERATORS = ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"]


def _condition() -> st.SearchStrategy[Any]:
    """An operator dict, or the `{"k": v}` shorthand."""
    op = st.sampled_from(_OPERATORS).flatmap(lambda name: st.tuples(st.just(name), _operand(name)))
    return st.one_of(st.lists(op, min_size=1, max_size=2).map(dict), _SCALAR)


_FILTERS = st.recursive(
    st.dictionaries(st.sampled_from(_KEYS), _condition(), min_size=1, max_size=1),
    lambda children: st.one_of(
        st.builds(lambda kids: {"$and": kids}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda kids: {"$or": kids}, st.lists(children, min_size=1, max_size=3)),
        st.builds(
            lambda kids, extra: {**extra, "$or": kids}, st.lists(children, min_size=1, max_size=2), children
        ),
    ),
    max_leaves=4,
)
_PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_ns_counter = itertools.count()


def _fresh_namespace(stem: str) -> str:
    return f"{stem}-{next(_ns_counter)}"


def _record(i: int, metadata: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    return {"id": f"r{i}", "values": unit_vectors(rng, 1)[0].tolist(), "metadata": metadata}


def _filter_with(op: str) -> st.SearchStrategy[dict[str, Any]]:
    """Random filters that use `op` at least once (alone, under $and or $or, beside other keys)."""
    leaf = st.builds(lambda key, operand: {key: {op: operand}}, st.sampled_from(_KEYS), _operand(op))
    return st.one_of(
        leaf,
        st.tuples(leaf, _FILTERS).map(lambda p: {"$or": [p[0], p[1]]}),
        st.tuples(leaf, _FILTERS).map(lambda p: {"$and": [p[1], p[0]]}),
        st.tuples(leaf, _FILTERS).map(lambda p: {**p[1], "$or": [p[0]]}),
    )


@on(["pgvector"])
@pytest.mark.parametrize("op", _OPERATORS)
@_PROPERTY
@given(rows=st.lists(_metadata(), min_size=3, max_size=12), data=st.data())
def test_filters_equal_the_python_reference(index, op, rows, data):
    """Random filters over random metadata: what the index returns (and deletes) is exactly what
    `filters.matches`, the reference evaluator, selects. One run per operator, so each is tried
    often against values equal to, above and below its operand."""
    flt = data.draw(_filter_with(op), label="filter")
    namespace = _fresh_namespace("filters")
    rng = np.random.default_rng(0)
    index.upsert([_record(i, meta, rng) for i, meta in enumerate(rows)], namespace=namespace)
    expected = {f"r{i}" for i, meta in enumerate(rows) if matches(flt, meta)}
    found = index.query(namespace=namespace, vector=[1.0] + [0.0] * (DIM - 1), top_k=100, filter=flt)
    assert {m.id for m in found} == expected, flt
    index.delete(namespace=namespace, filter=flt)
    assert set(index.list_ids(namespace=namespace)) == {f"r{i}" for i in range(len(rows))} - expected


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.integers(0, 2), st.lists(st.integers(0, 6), min_size=1, max_size=4)),
        st.tuples(st.just("ids"), st.integers(0, 2), st.lists(st.integers(0, 6), max_size=3)),
        st.tuples(st.just("filter"), st.integers(0, 2), st.integers(0, 3)),
        st.tuples(st.just("all"), st.integers(0, 2), st.just(0)),
    ),
    min_size=1,
    max_size=8,
)


@on(LOCAL)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS, seed=st.integers(0, 2**16))
def test_random_writes_never_cross_namespaces(index, ops, seed):
    """Three tenants with the same ids; random upserts and deletes in one never show in another."""
    rng = np.random.default_rng(seed)
    tenants = [_fresh_namespace(name) for name in ("acme", "globex", "initech")]
    model: dict[str, dict[str, dict[str, Any]]] = {t: {} for t in tenants}
    for op, which, arg in ops:
        ns = tenants[which]
        if op == "upsert":
            records = [
                dict(_record(i, {"page": int(rng.integers(0, 4)), "owner": ns}, rng), id=f"doc:{i}")
                for i in arg
            ]
            index.upsert(records, namespace=ns)
            model[ns].update({r["id"]: r for r in records})
        elif op == "ids":
            index.delete(namespace=ns, ids=[f"doc:{i}" for i in arg])
            for i in arg:
                model[ns].pop(f"doc:{i}", None)
        elif op == "filter":
            index.delete(namespace=ns, filter={"$or": [{"page": arg}, {"owner": {"$ne": ns}}]})
            model[ns] = {k: r for k, r in model[ns].items() if r["metadata"]["page"] != arg}
        else:
            index.delete(namespace=ns, delete_all=True)
            model[ns] = {}
    for ns in tenants:
        assert index.list_ids(namespace=ns) == sorted(model[ns])
        found = index.query(namespace=ns, vector=unit_vectors(rng, 1)[0].tolist(), top_k=50)
        assert {m.id for m in found} == set(model[ns])
        assert all(m.metadata["owner"] == ns for m in found)
        for record_id, stored in index.fetch([f"doc:{i}" for i in range(7)], namespace=ns).items():
            np.testing.assert_allclose(stored["values"], model[ns][record_id]["values"], rtol=1e-6)


# Small ids collide often; the others sit on and around the edges of the five sparsevec buckets.
_EDGES = [b * 1_000_000_000 + d for b in range(1, 5) for d in (-1, 0, 1)] + [0, 2**32 - 1, 2**32 - 2]
_TERM_IDS = st.one_of(st.integers(0, 30), st.sampled_from(_EDGES), st.integers(0, 2**32 - 1))


@st.composite
def _hybrid_world(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    n = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    vectors = unit_vectors(rng, n)
    if n > 2 and draw(st.booleans()):
        vectors[1] = vectors[0]  # exact ties
    records = []
    for i in range(n):
        terms = draw(st.lists(_TERM_IDS, min_size=0, max_size=8, unique=True))
        weights = [float(np.float32(w)) for w in rng.uniform(0.05, 3.0, size=len(terms))]
        records.append(
            {
                "id": f"doc:{i}",
                "values": vectors[i].tolist(),
                "sparse_values": {"indices": terms, "values": weights},
                "metadata": {"page": i % 3},
            }
        )
    pool = sorted({t for r in records for t in r["sparse_values"]["indices"]})
    q_terms = draw(st.lists(st.sampled_from(pool), max_size=5, unique=True)) if pool else []
    q_terms += draw(
        st.lists(_TERM_IDS, max_size=2, unique=True).map(lambda ts: [t for t in ts if t not in q_terms])
    )
    query = {
        "vector": unit_vectors(rng, 1)[0].tolist(),
        "sparse_vector": {"indices": q_terms, "values": rng.uniform(0.1, 2.0, size=len(q_terms)).tolist()},
        "alpha": draw(st.sampled_from([0.0, 0.3, 0.75, 1.0])),
        "top_k": draw(st.integers(1, 40)),
        "filter": draw(st.sampled_from([None, {"page": {"$ne": 1}}])),
    }
    return records, query


def assert_same_ranking(left: list[Any], right: list[Any], tol: float = 1e-5) -> None:
    """Equal scores position by position; equal ids except among scores tied within `tol`."""
    assert len(left) == len(right)
    assert [m.score for m in left] == pytest.approx([m.score for m in right], abs=tol)
    if not left:
        return
    cut = min(m.score for m in left) + tol  # the last tie group may be cut at top_k differently
    for a, b in ((left, right), (right, left)):
        scores = {m.id: m.score for m in b}
        for m in a:
            if m.score > cut:
                assert m.id in scores and scores[m.id] == pytest.approx(m.score, abs=tol), m.id

    def untied(i: int) -> bool:
        return left[i].score > cut and all(
            abs(left[i].score - o.score) > tol for o in left if o is not left[i]
        )

    assert [m.id for i, m in enumerate(left) if untied(i)] == [
        right[i].id for i in range(len(left)) if untied(i)
    ]


@pytest.fixture
def lance_and_pg(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[LanceVectorIndex, PgVectorIndex]:
    """A LanceDB and a pgvector index, empty, with the same contract."""
    url = request.getfixturevalue("pgvector_url")
    return LanceVectorIndex(tmp_path / "lance", CONTRACT), PgVectorIndex(url, CONTRACT)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=_hybrid_world())
def test_pgvector_ranks_as_lancedb_does(lance_and_pg, world):
    """Same records, same query: the same ranking within ties, and the same channel scores."""
    records, query = world
    namespace = _fresh_namespace("rank")
    for index in lance_and_pg:
        index.upsert(records, namespace=namespace)
    got = [index.query(namespace=namespace, **query) for index in lance_and_pg]
    assert_same_ranking(*got)
    channels = {m.id: (m.dense_score, m.sparse_score) for m in got[1]}
    for m in got[0]:
        if m.id in channels:
            assert (m.dense_score, m.sparse_score) == pytest.approx(channels[m.id], abs=1e-5)


# ------------------------------------------------------------------------------------------------
# pgvector's own: large namespaces, opening, settings


@pytest.fixture
def database(request: pytest.FixtureRequest) -> str:
    """A fresh database with pgvector (`tests.pg_embedded.pgvector_url`)."""
    return request.getfixturevalue("pgvector_url")


def _scored_world(n: int, seed: int, namespace: str, index: VectorIndex) -> list[dict]:
    records = make_records(n, seed=seed, prefix=namespace)
    index.upsert(records, namespace=namespace)
    return records


def test_large_namespaces_search_hnsw_candidates_with_exact_scores(database):
    """Above `exact_limit` the dense channel comes from the HNSW index (iterative scan, so the
    namespace filter still yields enough rows); what is returned is scored exactly, and another
    tenant's rows never appear, whatever they score."""
    index = PgVectorIndex(database, CONTRACT, exact_limit=50, channel_depth=60)
    mine = _scored_world(400, 1, "mine", index)
    q, sq = query_args()
    # The other tenant's rows sit right around the query (distinct points: HNSW graphs degrade on
    # many identical vectors) and hold every query term: better matches than any of "mine".
    near = unit_vectors(np.random.default_rng(3), 1500) * 0.05 + np.asarray(q, dtype=np.float32)
    others = [
        dict(r, values=(v / np.linalg.norm(v)).tolist(), sparse_values=sq)
        for r, v in zip(make_records(1500, seed=2, prefix="theirs"), near, strict=True)
    ]
    index.upsert(others, namespace="theirs")
    with psycopg.connect(database) as conn:
        conn.execute("ANALYZE librarian_chunks")
    for alpha in (0.0, 0.5, 1.0):
        expected = brute_force(mine, q, sq, alpha)
        truth = sorted(expected, key=lambda i: -expected[i][0])[:10]
        found = index.query(namespace="mine", vector=q, sparse_vector=sq, alpha=alpha, top_k=10)
        assert [m.id for m in found] == truth  # recall 1.0 here: the channels hold the true top 10
        for m in found:
            assert m.score == pytest.approx(expected[m.id][0], abs=1e-5)
    filtered = index.query(namespace="mine", vector=q, sparse_vector=sq, top_k=40, filter={"page": 2})
    assert len(filtered) == 40 and all(m.metadata["page"] == 2 and m.id.startswith("mine") for m in filtered)
    # the dense channel reads the HNSW index (the lexical one uses the GIN or the namespace index,
    # whichever the planner prices lower)
    assert "Index Scan using librarian_chunks_dense_hnsw" in _plan(index, database)


def _plan(index: PgVectorIndex, url: str) -> str:
    """EXPLAIN of the candidate query the index runs for a large namespace."""
    from librarian.index.pgvector_sparse import dense_text, query_buckets
    from librarian.index.pgvector_sql import channel_candidates, namespace_where, sparse_score

    q, sq = query_args()
    where = namespace_where("mine", None)
    params = {**where.params, "q": dense_text(np.asarray(q, dtype=np.float32)), "n": 60}
    params["terms"] = sq["indices"]
    sparse = sparse_score(query_buckets(sq["indices"], sq["values"]), params)
    statement = channel_candidates(index.table, where, sparse, True)
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        for name, value in index.candidate_settings(cursor, index.exact_limit + 1, 60):
            cursor.execute("SELECT set_config(%s, %s, false)", (name, value))
        rows = cursor.execute(psycopg.sql.SQL("EXPLAIN {}").format(statement), params).fetchall()
    return "\n".join(row[0] for row in rows)


def test_concurrent_first_opens_record_one_contract(database):
    opened: list[PgVectorIndex] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_index() -> None:
        try:
            start.wait(10)
            opened.append(PgVectorIndex(database, CONTRACT))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_index) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and len(opened) == 4
    with psycopg.connect(database) as conn:
        assert conn.execute(f"SELECT count(*) FROM {CONTRACTS_TABLE}").fetchone() == (1,)


def test_tables_are_per_name_and_nul_is_refused(database):
    default = PgVectorIndex(database, CONTRACT)
    other = PgVectorIndex(
        database, EmbeddingContract("other-dense", 4, "test-sparse"), table="librarian_chunks_v2"
    )
    default.upsert(make_records(2), namespace="org1")
    assert other.list_ids(namespace="org1") == []
    with pytest.raises(InvalidVectorError, match="NUL"):
        default.upsert([dict(make_records(1)[0], metadata={"text": "a\x00b"})], namespace="org1")
    with pytest.raises(ConfigError, match="table name"):
        PgVectorIndex(database, CONTRACT, table="chunks; DROP TABLE x")


def test_settings_and_stack_choose_pgvector(settings, database):
    from librarian.settings import load_settings
    from librarian.stack import Stack

    with pytest.raises(ConfigError, match="LIBRARIAN_POSTGRES_URL"):
        load_settings(data_dir=settings.data_dir, vector_index="pgvector")
    chosen = settings.model_copy(update={"vector_index": "pgvector", "postgres_url": database})
    stack = Stack(chosen.validate_providers())
    assert isinstance(stack.index, PgVectorIndex)
    assert stack.index.contract == stack.contract


def test_unreachable_database_is_a_config_error():
    with pytest.raises(ConfigError, match="pgvector index"):
        PgVectorIndex(f"postgresql://postgres@127.0.0.1:{free_port()}/none", CONTRACT, connect_timeout_s=0.5)


def test_migrate_on_pgvector_says_how_to_re_embed(settings, database):
    from librarian.stack import Stack
    from services.reindex_migrate import migrate_index

    chosen = settings.model_copy(update={"vector_index": "pgvector", "postgres_url": database})
    with pytest.raises(ConfigError, match="LIBRARIAN_PGVECTOR_TABLE") as info:
        migrate_index(Stack(chosen))
    assert "reindex --org" in str(info.value) and "Pinecone" not in str(info.value)


# ------------------------------------------------------------------------------------------------
# Pinecone's score breakdown


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.75, 0.97, 1.0])
@pytest.mark.parametrize("with_sparse", [True, False], ids=["hybrid", "dense-query"])
def test_pinecone_channel_scores_equal_lancedb(tmp_path, pinecone_server, alpha, with_sparse):
    """Pinecone returns only the fused score; its dense and sparse halves must match LanceDB's exactly."""
    lance, pinecone = _lance(tmp_path).open(), _pinecone(pinecone_server).open()
    records = make_records(40)
    for index in (lance, pinecone):
        index.upsert(records, namespace="org1")
    q, sq = query_args()
    sparse = sq if with_sparse else None

    expected = {
        m.id: m for m in lance.query(namespace="org1", vector=q, sparse_vector=sparse, alpha=alpha, top_k=40)
    }
    found = pinecone.query(namespace="org1", vector=q, sparse_vector=sparse, alpha=alpha, top_k=15)

    assert len(found) == 15
    for m in found:
        assert m.dense_score == pytest.approx(expected[m.id].dense_score, abs=1e-5)
        assert m.sparse_score == pytest.approx(expected[m.id].sparse_score, abs=1e-5)
        assert m.score == pytest.approx(expected[m.id].score, abs=1e-5)
        assert m.score == pytest.approx(alpha * m.dense_score + (1 - alpha) * m.sparse_score, abs=1e-5)
