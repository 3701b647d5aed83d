"""LanceVectorIndex's own machinery on a real LanceDB store: snapshots, versions, compaction, processes.

The behaviour every index shares (scores, filters, overwrites, deletes, tenancy, the embedding
contract) is tested once for all of them in `tests/integration/test_vector_index_contract.py`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from librarian.errors import ContractMismatchError
from librarian.index import lance_cache
from librarian.index.contract import check_contract, contract_from_json, contract_to_json
from librarian.index.lance import LanceVectorIndex
from librarian.index.lance_version import VersionProbe, local_versions_dir
from tests.integration.test_vector_index_contract import CONTRACT, brute_force, query_args
from tests.integration.test_vector_index_contract import make_records as _records

_brute_force, _query_args = brute_force, query_args


@pytest.fixture
def index(tmp_path: Path) -> LanceVectorIndex:
    return LanceVectorIndex(tmp_path / "lance", contract=CONTRACT, compact_every=5)


# ------------------------------------------------------------------------------------------------
# scoring and deletes


@pytest.mark.parametrize("alpha", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_scipy_slice_sparse_path_equals_brute_force(index, alpha, monkeypatch):
    """The snapshot's second sparse code path (many postings: scipy's column slice); the first is
    the one every contract test runs."""
    monkeypatch.setattr(lance_cache, "_GATHER_LIMIT", 0)
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


# ------------------------------------------------------------------------------------------------
# contract


def test_contract_helpers(tmp_path):
    check_contract(None, CONTRACT)
    check_contract(CONTRACT, CONTRACT)
    assert contract_from_json(contract_to_json(CONTRACT)) == CONTRACT
    with pytest.raises(ContractMismatchError, match="unreadable"):
        contract_from_json("{not json")
    path = tmp_path / "lance"
    LanceVectorIndex(path, contract=CONTRACT)
    assert contract_from_json((path / "contract.json").read_text()) == CONTRACT


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
