"""The embedded vector index: LanceDB on local disk, with exact hybrid scoring in numpy (DESIGN §3).

LanceDB supplies what is hard to get right: atomic versioned commits (crash-safe, several processes
on one store), string ids, SQL deletes. It has no sparse vectors and an exact scan is slow, so
queries score a cached in-memory snapshot of the namespace instead (`lance_cache`), re-read
whenever the table version moves.

Filters: a query evaluates its filter over the snapshot with `filters.evaluate_mask`, for any key;
a delete by filter runs as one SQL commit when every key has a typed column (the usual `path`),
and otherwise deletes the ids that the same Python semantics select.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import lancedb
import numpy as np
import pyarrow as pa
from filelock import FileLock, Timeout
from lancedb.index import Bitmap

from librarian.embeddings.base import SparseVector
from librarian.errors import ContractMismatchError
from librarian.index.base import EmbeddingContract, IndexStats, NamespaceStats, QueryMatch, VectorRecord
from librarian.index.contract import check_contract, read_contract, record_contract
from librarian.index.filters import (
    evaluate_mask,
    sql_keys,
    sql_string,
    to_sql,
    validate_filter,
)
from librarian.index.lance_cache import NamespaceSnapshot, SnapshotCache, build_snapshot
from librarian.index.lance_schema import (
    KNOWN_COLUMNS,
    TABLE_NAME,
    InvalidVectorError,
    check_query,
    records_to_table,
    row_metadata,
    table_schema,
)
from librarian.index.lance_version import VersionProbe, local_versions_dir
from librarian.tenancy import validate_organization_id

logger = logging.getLogger(__name__)

T = TypeVar("T")
_IDS_PER_STATEMENT = 500
_COMMIT_ATTEMPTS = 8


class LanceVectorIndex:
    """A `VectorIndex` over one LanceDB table `chunks`, partitioned by the `ns` column.

    `compact_every` writes (upserts and deletes) from this instance, the table is compacted and
    versions older than `cleanup_older_than` are removed: without it the store grows with every
    commit. The margin must exceed the longest read another process may still be doing on an old
    version (a query takes milliseconds; a snapshot read of a large namespace, seconds), so the
    default of ten minutes is generous while still bounding disk use.
    """

    def __init__(
        self,
        path: Path,
        contract: EmbeddingContract,
        compact_every: int = 50,
        *,
        cleanup_older_than: timedelta = timedelta(minutes=10),
        cache_bytes: int = 1 << 30,
    ) -> None:
        self.path = Path(path)
        self.contract = contract
        self._compact_every = max(1, compact_every)
        self._cleanup_older_than = cleanup_older_than
        self._cache = SnapshotCache(cache_bytes)
        self._writes = 0
        self._lock = threading.Lock()
        # Threads of this instance queue on the first; other instances and processes on the second.
        self._upsert_lock = threading.Lock()
        self._upsert_file_lock = FileLock(self.path / ".upsert.lock")
        # The contract is checked, and for a new index recorded, before the table is opened or
        # created: a mismatch cannot touch the data, and a table never exists without a contract.
        check_contract(read_contract(self.path), contract)
        self._db = lancedb.connect(self.path, read_consistency_interval=timedelta(0))
        self._ensure_contract()
        self._table = self._open_table()
        self._versions = VersionProbe(lambda: self._table.version, local_versions_dir(str(self._table.uri)))

    # ---------------------------------------------------------------------------------------------
    # opening

    def _table_exists(self) -> bool:
        return TABLE_NAME in self._db.list_tables().tables

    def _ensure_contract(self) -> None:
        """Record the contract for a new index; refuse a table that has none recorded.

        Creators record the contract before creating the table, so a table without one was made
        by something else, and its vectors' provenance is unknown.
        """
        # Table first, contract second: a creator records before it creates, so a table seen
        # here has its contract on disk already, unless it never had one.
        if self._table_exists() and read_contract(self.path) is None:
            raise ContractMismatchError(
                f"the index at {self.path} has data but no recorded embedding contract; "
                f"cannot tell whether it matches {self.contract.describe()}"
            )
        check_contract(record_contract(self.path, self.contract), self.contract)

    def _open_table(self) -> Any:
        schema = table_schema(self.contract.dimension)
        if self._table_exists():
            table = self._db.open_table(TABLE_NAME)
        else:
            try:
                table = self._db.create_table(TABLE_NAME, schema=schema, exist_ok=True)
            except Exception:  # another process created it between our check and our create
                table = self._db.open_table(TABLE_NAME)
        vector_type = table.schema.field("vector").type
        if getattr(vector_type, "list_size", None) != self.contract.dimension:
            raise ContractMismatchError(
                f"the index's vectors have {getattr(vector_type, 'list_size', '?')} dimensions, but "
                f"the configured contract is {self.contract.describe()}"
            )
        if not any(list(getattr(i, "columns", [])) == ["ns"] for i in table.list_indices()):
            try:
                table.create_index("ns", config=Bitmap())
            except Exception as exc:  # an optimisation; a concurrent creator may have won
                logger.warning("could not index the namespace column: %s", exc)
        return table

    # ---------------------------------------------------------------------------------------------
    # writes

    def upsert(self, records: list[VectorRecord], *, namespace: str) -> int:
        """Insert or replace by id in one atomic commit; a duplicate id in the batch: last wins.

        When none of the ids exists yet (the ingest graph deleted the path's vectors first, so
        every batch but a retried one), the rows are appended: a merge joins them against the
        table and cost 16 ms a commit here, an append 4 ms. Check and append happen under one
        lock shared with other processes, so two writers cannot both find an id missing and
        both append it.
        """
        namespace = validate_organization_id(namespace)
        rows = records_to_table(records, namespace, self.contract.dimension)
        if rows.num_rows == 0:
            return 0

        def merge() -> Any:
            return (
                self._table.merge_insert(["ns", "id"])
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(rows)
            )

        ids = rows.column("id").to_pylist()
        with self._upsert_lock, self._upsert_file_lock:
            if not any(self._table.count_rows(where) for where in _id_clauses(namespace, ids)):
                result = _retry_conflicts(lambda: self._table.add(rows))
            else:
                result = _retry_conflicts(merge)
        self._after_write(getattr(result, "version", None), namespace)
        return rows.num_rows

    def delete(
        self,
        *,
        namespace: str,
        ids: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        delete_all: bool = False,
    ) -> None:
        """Delete by ids, by filter, or all of the namespace (exactly one), always within it."""
        namespace = validate_organization_id(namespace)
        chosen = sum([ids is not None, filter is not None, bool(delete_all)])
        if chosen != 1:
            raise ValueError("delete takes exactly one of ids, filter or delete_all=True")
        in_ns = f"ns = {sql_string(namespace)}"
        if delete_all:
            self._delete_where(in_ns, namespace)
        elif ids is not None:
            self._delete_ids(namespace, ids)
        else:
            canonical = validate_filter(filter)
            if not canonical:
                raise ValueError("delete by filter needs a non-empty filter (use delete_all=True)")
            if sql_keys(canonical) <= KNOWN_COLUMNS.keys():
                self._delete_where(f"{in_ns} AND {to_sql(canonical, KNOWN_COLUMNS)}", namespace)
            else:
                snapshot = self._snapshot(namespace)
                mask = evaluate_mask(canonical, snapshot.size, snapshot.column)
                self._delete_ids(namespace, [snapshot.ids[i] for i in np.flatnonzero(mask)])

    def _delete_ids(self, namespace: str, ids: list[str]) -> None:
        if isinstance(ids, str) or not all(isinstance(i, str) for i in ids):
            raise ValueError("ids must be a list of strings")
        for where in _id_clauses(namespace, sorted(set(ids))):
            self._delete_where(where, namespace)

    def _delete_where(self, where: str, namespace: str) -> None:
        # Every ingest deletes its path's old vectors first, and for a new document there are none:
        # counting is a read (2 ms) where a delete is a commit (13 ms, more under load), per file.
        if self._table.count_rows(where) == 0:
            return
        result = _retry_conflicts(lambda: self._table.delete(where))
        self._after_write(getattr(result, "version", None), namespace)

    def _after_write(self, version: int | None, namespace: str) -> None:
        if version is not None:
            self._cache.advance(version, namespace)
        with self._lock:
            self._writes += 1
            due = self._writes % self._compact_every == 0
        if due:
            self.optimize()

    def optimize(self) -> None:
        """Compact files, fold new rows into the `ns` index, and drop versions past the margin.

        One process compacts at a time (a non-blocking file lock; the others skip their turn):
        two compactions rewrite the same fragments and one of them always loses. Conflicts with
        ordinary writes are retried. Failure is logged, not raised: the write that triggered it is
        already committed, and the next round will try again.
        """
        try:
            with FileLock(self.path / ".optimize.lock", timeout=0):
                _retry_conflicts(lambda: self._table.optimize(cleanup_older_than=self._cleanup_older_than))
        except Timeout:
            logger.debug("another process is optimizing the index; skipping this round")
        except Exception as exc:
            logger.warning("LanceDB optimize failed (will retry later): %s", exc)

    # ---------------------------------------------------------------------------------------------
    # reads

    def query(
        self,
        *,
        namespace: str,
        vector: list[float],
        sparse_vector: SparseVector | None = None,
        alpha: float = 0.75,
        top_k: int = 40,
        filter: dict[str, Any] | None = None,
        include_values: bool = False,
        include_metadata: bool = True,
    ) -> list[QueryMatch]:
        """Exact hybrid scores over the namespace: alpha·dense·q + (1 - alpha)·sparse·q."""
        namespace, dense_q, sp_idx, sp_val = check_query(
            namespace, vector, sparse_vector, alpha, top_k, self.contract.dimension
        )
        canonical = validate_filter(filter)

        snapshot = self._snapshot(namespace)
        if snapshot.size == 0:
            return []
        dense = snapshot.dense_scores(dense_q)
        sparse = snapshot.sparse_scores(np.asarray(sp_idx, dtype=np.uint32), np.asarray(sp_val, np.float32))
        scores = alpha * dense + (1.0 - alpha) * sparse
        rows = _top_rows(scores, top_k, self._candidates(snapshot, canonical))
        metadata = snapshot.metadata(rows) if include_metadata else [{} for _ in rows]
        return [
            QueryMatch(
                id=snapshot.ids[row],
                score=float(scores[row]),
                metadata=meta,
                values=snapshot.dense[row].tolist() if include_values else None,
                dense_score=float(dense[row]),
                sparse_score=float(sparse[row]),
            )
            for row, meta in zip(rows.tolist(), metadata, strict=True)
        ]

    def sparse_term_counts(self, indices: list[int], *, namespace: str) -> tuple[int, dict[int, int]]:
        """(records in the namespace, {term id: records holding it}) for query-time IDF.

        Counts come from this namespace's snapshot only (DESIGN §6 option (b)): another tenant's
        documents never shape this one's term weights.
        """
        namespace = validate_organization_id(namespace)
        snapshot = self._snapshot(namespace)
        ids = np.asarray(indices, dtype=np.uint32)
        counts = snapshot.term_counts(ids)
        return snapshot.size, dict(zip(ids.tolist(), counts.tolist(), strict=True))

    @staticmethod
    def _candidates(snapshot: NamespaceSnapshot, canonical: dict[str, Any]) -> np.ndarray | None:
        if not canonical:
            return None
        return np.flatnonzero(evaluate_mask(canonical, snapshot.size, snapshot.column))

    def fetch(self, ids: list[str], *, namespace: str) -> dict[str, VectorRecord]:
        """Stored records by id (values, sparse values, metadata); unknown ids are left out."""
        namespace = validate_organization_id(namespace)
        out: dict[str, VectorRecord] = {}
        unique = sorted({i for i in ids if isinstance(i, str)})
        for start in range(0, len(unique), _IDS_PER_STATEMENT):
            chunk = ", ".join(sql_string(i) for i in unique[start : start + _IDS_PER_STATEMENT])
            for row in self._select(f"ns = {sql_string(namespace)} AND id IN ({chunk})").to_pylist():
                known = {key: row[key] for key in KNOWN_COLUMNS}
                out[row["id"]] = VectorRecord(
                    id=row["id"],
                    values=[float(v) for v in row["vector"]],
                    sparse_values=SparseVector(indices=list(row["sp_idx"]), values=list(row["sp_val"])),
                    metadata=row_metadata(known, row["meta_json"]),
                )
        return out

    def list_ids(self, *, namespace: str, prefix: str | None = None) -> list[str]:
        """All ids of the namespace (sorted), optionally only those starting with `prefix`."""
        namespace = validate_organization_id(namespace)
        where = f"ns = {sql_string(namespace)}"
        if prefix:
            where += f" AND starts_with(id, {sql_string(prefix)})"
        return sorted(self._select(where, ["id"]).column("id").to_pylist())

    def describe_index_stats(self) -> IndexStats:
        """Record counts per namespace (each count is of that namespace only)."""
        counts = self._table.search().select(["ns"]).limit(None).to_arrow().column("ns").value_counts()
        namespaces = {
            str(item["values"]): NamespaceStats(vector_count=int(item["counts"]))
            for item in counts.to_pylist()
        }
        return IndexStats(
            dimension=self.contract.dimension,
            namespaces=namespaces,
            total_vector_count=sum(n.vector_count for n in namespaces.values()),
        )

    # ---------------------------------------------------------------------------------------------
    # internals

    def _select(self, where: str, columns: list[str] | None = None) -> pa.Table:
        query = self._table.search().where(where)
        if columns is not None:
            query = query.select(columns)
        return query.limit(None).to_arrow()

    def _snapshot(self, namespace: str) -> NamespaceSnapshot:
        """The namespace's snapshot at the table's current version (reading it if needed).

        The version is read before the rows: if a commit lands in between, the snapshot holds
        newer rows under an older label, which costs one extra re-read, never a stale answer.
        The version is checked on every query (cheaply, see `lance_version`), so another
        process's commit is visible to the next query.
        """
        version = self._versions.current()
        snapshot = self._cache.get(namespace, version)
        if snapshot is None:
            rows = self._select(f"ns = {sql_string(namespace)}")
            snapshot = build_snapshot(version, rows, self.contract.dimension)
            self._cache.put(namespace, snapshot)
        return snapshot


def _top_rows(scores: np.ndarray, top_k: int, candidates: np.ndarray | None) -> np.ndarray:
    """Indices of the best `top_k` rows, best first (ties by row order, so results are stable)."""
    pool = np.arange(len(scores)) if candidates is None else candidates
    if len(pool) == 0:
        return pool
    pool_scores = scores[pool]
    if len(pool) > top_k:
        part = np.argpartition(-pool_scores, top_k - 1)[:top_k]
        pool, pool_scores = pool[part], pool_scores[part]
    order = np.lexsort((pool, -pool_scores))
    return pool[order]


def _id_clauses(namespace: str, ids: list[str]) -> Iterator[str]:
    """WHERE clauses selecting `ids` within the namespace, a bounded number of ids per statement."""
    for start in range(0, len(ids), _IDS_PER_STATEMENT):
        listed = ", ".join(sql_string(i) for i in ids[start : start + _IDS_PER_STATEMENT])
        yield f"ns = {sql_string(namespace)} AND id IN ({listed})"


def _is_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "conflict" in text or "retryable" in text or "concurrent" in text


def _retry_conflicts(action: Callable[[], T]) -> T:
    """Run a commit, retrying when another writer committed first.

    LanceDB already rebases compatible commits; what remains are true conflicts (e.g. two merges
    rewriting one file), which succeed on a retry against the new version. The jittered backoff
    keeps two busy writers from colliding in lockstep.
    """
    for attempt in range(_COMMIT_ATTEMPTS):
        try:
            return action()
        except Exception as exc:
            if attempt == _COMMIT_ATTEMPTS - 1 or not _is_conflict(exc):
                raise
            logger.info("LanceDB commit conflict, retrying (%s)", exc)
            time.sleep(random.uniform(0, 0.02 * 2**attempt))
    raise AssertionError("unreachable")


__all__ = ["InvalidVectorError", "LanceVectorIndex"]
