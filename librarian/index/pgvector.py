"""PostgreSQL with pgvector as a `VectorIndex`: the LanceDB index's semantics in a shared database.

For deployments that already run PostgreSQL (`LIBRARIAN_POSTGRES_URL`, the checkpointer's and the
graph store's database) and want the vectors there too: several replicas share one index, backups
and transactions come with the database. Semantics are LanceDB's (`lance.py`), pinned by the same
contract tests: one row per record with dense and sparse vectors (`pgvector_sparse`), fused score
alpha·dense·q + (1 - alpha)·sparse·q, every call inside one namespace, Pinecone filters
(`pgvector_filters`), the embedding contract recorded in the database (`pgvector_schema`).
Each transaction names its namespace to row-level security too (`librarian.pg_tenancy`), so the
table's policy, not only the statement's `ns = ...`, keeps other organizations' rows out.

Ranking: a namespace of at most `exact_limit` rows is scored exactly, row by row, so results equal
LanceDB's (within ties); a larger one is searched through candidates from both channels
(`pgvector_sql`), as Pinecone does. The API is synchronous like the other indexes; async callers
use `asyncio.to_thread`, as they do for LanceDB.
"""

from __future__ import annotations

import copy
import math
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from librarian.embeddings.base import SparseVector
from librarian.errors import ConfigError
from librarian.index.base import EmbeddingContract, IndexStats, NamespaceStats, QueryMatch, VectorRecord
from librarian.index.filters import validate_filter
from librarian.index.lance_schema import (
    KNOWN_COLUMNS,
    InvalidVectorError,
    check_query,
    records_to_table,
    row_metadata,
)
from librarian.index.pgvector_schema import DEFAULT_TABLE, check_table_name, ensure_schema
from librarian.index.pgvector_sparse import BUCKETS, bucket_texts, dense_text, query_buckets
from librarian.index.pgvector_sql import (
    Where,
    channel_candidates,
    namespace_where,
    scored_query,
    sparse_score,
)
from librarian.pg_tenancy import bind_organization, read_all_organizations, warn_if_unguarded
from librarian.tenancy import validate_organization_id

EXACT_LIMIT = 20_000  # rows of one namespace scored exactly (see README "Vector index" for timings)
CHANNEL_DEPTH = 200  # candidates per channel above EXACT_LIMIT (at least top_k)
HNSW_MAX_EF_SEARCH = 1_000  # pgvector's upper bound for hnsw.ef_search
_MIN_SCAN_TUPLES = 20_000  # pgvector's default hnsw.max_scan_tuples
_MAX_SCAN_TUPLES = 2_000_000
_CONNECT_TIMEOUT_S = 10.0


class PgVectorIndex:
    """A `VectorIndex` over one PostgreSQL table (default `librarian_chunks`), partitioned by `ns`."""

    def __init__(
        self,
        url: str,
        contract: EmbeddingContract,
        *,
        table: str = DEFAULT_TABLE,
        exact_limit: int = EXACT_LIMIT,
        channel_depth: int = CHANNEL_DEPTH,
        pool_size: int = 4,
        connect_timeout_s: float = _CONNECT_TIMEOUT_S,
    ) -> None:
        if not url:
            raise ConfigError(
                "LIBRARIAN_POSTGRES_URL is not set, but LIBRARIAN_VECTOR_INDEX=pgvector needs it"
            )
        if contract.metric != "dotproduct":
            raise ConfigError(
                "the pgvector index scores by dot product; the contract's metric must be 'dotproduct'"
            )
        from librarian.checkpoint import describe_postgres_url

        self.contract = contract
        self.table = check_table_name(table)
        self.exact_limit = max(0, exact_limit)
        self.channel_depth = max(1, channel_depth)
        self._pool = _open_pool(url, pool_size, connect_timeout_s)
        weakref.finalize(self, self._pool.close)  # a dropped index (a discarded Stack) frees its connections
        try:
            with self._cursor() as cursor:
                ensure_schema(cursor, self.table, contract)
                warn_if_unguarded(cursor, describe_postgres_url(url))
        except BaseException:
            self._pool.close()
            raise

    def close(self) -> None:
        self._pool.close()

    # --- query option (the vector query tool's `pgvector.ef`); kept apart from the tenancy code
    ef_search: int | None = None  # a floor for hnsw.ef_search on the approximate (HNSW) path

    def with_ef_search(self, ef_search: int) -> PgVectorIndex:
        """This index (same pool) whose HNSW scans use an `hnsw.ef_search` of at least `ef_search`.

        Only namespaces larger than `exact_limit` use the HNSW index; smaller ones are scored
        exactly, which no `ef_search` can improve on.
        """
        view = copy.copy(self)
        view.ef_search = min(max(1, int(ef_search)), HNSW_MAX_EF_SEARCH)
        return view

    @contextmanager
    def _cursor(self, namespace: str | None = None, *, all_namespaces: bool = False) -> Iterator[Any]:
        """A cursor inside one transaction (committed on success, rolled back on any error).

        With `namespace`, row-level security admits only that namespace's rows; `all_namespaces`
        lets it read every namespace (and write none); with neither, it sees no rows (schema work).
        """
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            if namespace is not None:
                bind_organization(cursor, namespace)
            elif all_namespaces:
                read_all_organizations(cursor)
            yield cursor

    # ---------------------------------------------------------------------------------------------
    # writes

    def upsert(self, records: list[VectorRecord], *, namespace: str) -> int:
        """Insert or replace by id in one transaction; a duplicate id in the batch: last wins.

        Validation is LanceDB's own (`lance_schema.records_to_table`), so both indexes accept and
        refuse the same records. Rows are written in id order, so two writers upserting
        overlapping batches lock rows in the same order and cannot deadlock.
        """
        namespace = validate_organization_id(namespace)
        rows = _rows(records, namespace, self.contract.dimension)
        if not rows:
            return 0
        statement = sql.SQL(
            "INSERT INTO {t} (ns, id, dense, {buckets}, terms, weights, metadata) VALUES "
            "(%s, %s, %s::vector, {placeholders}, %s::bigint[], %s::real[], %s::jsonb) "
            "ON CONFLICT (ns, id) DO UPDATE SET dense = EXCLUDED.dense, {updates}, terms = EXCLUDED.terms, "
            "weights = EXCLUDED.weights, metadata = EXCLUDED.metadata"
        ).format(
            t=sql.Identifier(self.table),
            buckets=sql.SQL(", ").join(sql.Identifier(f"sp{b}") for b in range(BUCKETS)),
            placeholders=sql.SQL(", ").join(sql.SQL("%s::sparsevec") for _ in range(BUCKETS)),
            updates=sql.SQL(", ").join(
                sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(f"sp{b}")) for b in range(BUCKETS)
            ),
        )
        with self._cursor(namespace) as cursor:
            cursor.executemany(statement, rows)
        return len(rows)

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
        if sum([ids is not None, filter is not None, bool(delete_all)]) != 1:
            raise ValueError("delete takes exactly one of ids, filter or delete_all=True")
        if ids is not None:
            if isinstance(ids, str) or not all(isinstance(i, str) for i in ids):
                raise ValueError("ids must be a list of strings")
            where = Where([sql.SQL("ns = %(ns)s"), sql.SQL("id = ANY(%(ids)s::text[])")], {"ns": namespace})
            where.params["ids"] = sorted(set(ids))
        elif filter is not None:
            if not validate_filter(filter):
                raise ValueError("delete by filter needs a non-empty filter (use delete_all=True)")
            where = namespace_where(namespace, filter)
        else:
            where = namespace_where(namespace, None)
        statement = sql.SQL("DELETE FROM {t} WHERE {w}").format(t=sql.Identifier(self.table), w=where.sql())
        with self._cursor(namespace) as cursor:
            cursor.execute(statement, where.params)

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
        """Hybrid scores alpha·dense·q + (1 - alpha)·sparse·q, best first (ties by id)."""
        namespace, dense_q, sp_idx, sp_val = check_query(
            namespace, vector, sparse_vector, alpha, top_k, self.contract.dimension
        )
        where = namespace_where(namespace, filter)
        params: dict[str, Any] = {**where.params, "q": dense_text(dense_q), "a": alpha, "b": 1.0 - alpha}
        params["k"] = top_k
        sparse = sparse_score(query_buckets(sp_idx, sp_val), params)
        with self._cursor(namespace) as cursor:
            size = self._namespace_size(cursor, namespace, self.exact_limit + 1)
            if size == 0:
                return []
            candidates = None
            if size > self.exact_limit:
                depth = max(top_k, self.channel_depth)
                params.update(n=depth, terms=sp_idx)
                for name, value in self.candidate_settings(cursor, size, depth):
                    cursor.execute("SELECT set_config(%s, %s, true)", (name, value))
                candidates = channel_candidates(self.table, where, sparse, bool(sp_idx))
            statement = scored_query(
                self.table,
                where,
                sparse,
                candidates=candidates,
                include_values=include_values,
                include_metadata=include_metadata,
            )
            cursor.execute(statement, params)
            rows = cursor.fetchall()
        return [
            QueryMatch(
                id=row_id,
                score=float(fused),
                metadata=dict(meta or {}) if include_metadata else {},
                values=_parse_vector(values) if include_values else None,
                dense_score=float(dense),
                sparse_score=float(sparse_value),
            )
            for row_id, fused, dense, sparse_value, meta, values in rows
        ]

    def sparse_term_counts(self, indices: list[int], *, namespace: str) -> tuple[int, dict[int, int]]:
        """(records in the namespace, {term id: records holding it}) for query-time IDF.

        Counted within this namespace only (DESIGN §6 option (b)), like LanceDB's snapshot counts,
        so both indexes weight a query's terms the same way.
        """
        namespace = validate_organization_id(namespace)
        wanted = sorted({int(i) for i in indices})
        counts = dict.fromkeys(wanted, 0)
        t = sql.Identifier(self.table)
        with self._cursor(namespace) as cursor:
            size = self._namespace_size(cursor, namespace, None)
            if wanted and size:
                cursor.execute(
                    sql.SQL(
                        "SELECT term, count(*) FROM {t}, unnest(terms) AS term "
                        "WHERE ns = %(ns)s AND terms && %(w)s::bigint[] AND term = ANY(%(w)s::bigint[]) "
                        "GROUP BY term"
                    ).format(t=t),
                    {"ns": namespace, "w": wanted},
                )
                counts.update({int(term): int(n) for term, n in cursor.fetchall()})
        return size, {int(i): counts[int(i)] for i in indices}

    def fetch(self, ids: list[str], *, namespace: str) -> dict[str, VectorRecord]:
        """Stored records by id (values, sparse values as upserted, metadata); unknown ids are left out."""
        namespace = validate_organization_id(namespace)
        unique = sorted({i for i in ids if isinstance(i, str)})
        if not unique:
            return {}
        statement = sql.SQL(
            "SELECT id, dense, terms, weights, metadata FROM {t} WHERE ns = %s AND id = ANY(%s::text[])"
        ).format(t=sql.Identifier(self.table))
        with self._cursor(namespace) as cursor:
            cursor.execute(statement, (namespace, unique))
            rows = cursor.fetchall()
        return {
            row_id: VectorRecord(
                id=row_id,
                values=_parse_vector(dense),
                sparse_values=SparseVector(
                    indices=[int(i) for i in terms], values=np.asarray(weights, dtype=np.float32).tolist()
                ),
                metadata=dict(metadata),
            )
            for row_id, dense, terms, weights, metadata in rows
        }

    def list_ids(self, *, namespace: str, prefix: str | None = None) -> list[str]:
        """All ids of the namespace (sorted by code point), optionally only those starting with `prefix`."""
        namespace = validate_organization_id(namespace)
        statement = sql.SQL("SELECT id FROM {t} WHERE ns = %s AND starts_with(id, %s)").format(
            t=sql.Identifier(self.table)
        )
        with self._cursor(namespace) as cursor:
            cursor.execute(statement, (namespace, prefix or ""))
            return sorted(row[0] for row in cursor.fetchall())

    def describe_index_stats(self) -> IndexStats:
        """Record counts per namespace (each count is of that namespace only).

        The one read across organizations (migrations list the namespaces with it), so it is the
        one transaction that asks row-level security for every namespace, read-only.
        """
        statement = sql.SQL("SELECT ns, count(*) FROM {t} GROUP BY ns").format(t=sql.Identifier(self.table))
        with self._cursor(all_namespaces=True) as cursor:
            cursor.execute(statement)
            namespaces = {ns: NamespaceStats(vector_count=int(n)) for ns, n in cursor.fetchall()}
        return IndexStats(
            dimension=self.contract.dimension,
            namespaces=namespaces,
            total_vector_count=sum(n.vector_count for n in namespaces.values()),
        )

    # ---------------------------------------------------------------------------------------------
    # internals

    def _namespace_size(self, cursor: Any, namespace: str, limit: int | None) -> int:
        """Rows in the namespace, counted up to `limit` (a bounded index-only scan of the key)."""
        t = sql.Identifier(self.table)
        if limit is None:
            cursor.execute(sql.SQL("SELECT count(*) FROM {t} WHERE ns = %s").format(t=t), (namespace,))
        else:
            cursor.execute(
                sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {t} WHERE ns = %s LIMIT %s) AS n").format(t=t),
                (namespace, limit),
            )
        return int(cursor.fetchone()[0])

    def candidate_settings(self, cursor: Any, size: int, depth: int) -> list[tuple[str, str]]:
        """The settings under which the candidate query runs (set for its transaction only).

        The iterative HNSW scan goes on past `ef_search` until `depth` rows of this namespace (and
        filter) are found. With the namespace a fraction f of the table, about depth / f tuples
        are visited; the bound is that, twice over, within [pgvector's default, 2M]. `size` is a
        lower bound of the namespace (counted up to `exact_limit + 1`), so the bound errs high:
        it only permits a longer scan, which stops as soon as `depth` rows are found.
        """
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (self.table,))
        row = cursor.fetchone()
        total = max(float(row[0]) if row else 0.0, float(size))
        needed = math.ceil(2 * depth * total / max(size, 1))
        return [
            # The dense channel must read the HNSW index: otherwise the planner may sort the
            # namespace's rows instead when it guesses that cheaper, an exact scan of a namespace
            # already found too large for one.
            ("enable_sort", "off"),
            ("hnsw.iterative_scan", "relaxed_order"),
            ("hnsw.ef_search", str(min(max(depth, 40, self.ef_search or 0), HNSW_MAX_EF_SEARCH))),
            ("hnsw.max_scan_tuples", str(min(max(needed, _MIN_SCAN_TUPLES), _MAX_SCAN_TUPLES))),
        ]


def _open_pool(url: str, size: int, timeout_s: float) -> Any:
    from psycopg_pool import ConnectionPool, PoolTimeout

    from librarian.checkpoint import describe_postgres_url

    where = describe_postgres_url(url)
    # No server-side prepared statements, as for the graph store and the checkpointer: they break
    # behind pgbouncer in transaction mode.
    pool = ConnectionPool(
        conninfo=url, kwargs={"prepare_threshold": None}, min_size=1, max_size=max(1, size), open=False
    )
    try:
        pool.open(wait=True, timeout=timeout_s)
    except PoolTimeout:
        pool.close()
        raise ConfigError(
            f"cannot connect to PostgreSQL at {where} for the pgvector index: "
            "check LIBRARIAN_POSTGRES_URL and that the server is running"
        ) from None
    return pool


def _rows(records: list[VectorRecord], namespace: str, dimension: int) -> list[tuple[Any, ...]]:
    """Validated rows to write, in id order (LanceDB's validation and its last-wins rule)."""
    table = records_to_table(records, namespace, dimension)
    if table.num_rows == 0:
        return []
    ids = table.column("id").to_pylist()
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    dense = np.asarray(flat, dtype=np.float32).reshape(len(ids), dimension)
    sp_idx = table.column("sp_idx").to_pylist()
    sp_val = table.column("sp_val").to_pylist()
    known = {key: table.column(key).to_pylist() for key in KNOWN_COLUMNS}
    extra = table.column("meta_json").to_pylist()
    rows = []
    for i in sorted(range(len(ids)), key=ids.__getitem__):
        metadata = row_metadata({key: known[key][i] for key in KNOWN_COLUMNS}, extra[i])
        _refuse_nul(ids[i], metadata)
        rows.append(
            (
                namespace,
                ids[i],
                dense_text(dense[i]),
                *bucket_texts(sp_idx[i], sp_val[i]),
                sp_idx[i],
                sp_val[i],
                Jsonb(metadata),
            )
        )
    return rows


def _refuse_nul(record_id: str, metadata: dict[str, Any]) -> None:
    """PostgreSQL text and jsonb hold no NUL characters: refuse them before anything is written."""
    texts = [record_id, *metadata]
    for value in metadata.values():
        texts.extend(value if isinstance(value, list) else [value] if isinstance(value, str) else [])
    if any("\x00" in text for text in texts):
        raise InvalidVectorError(
            f"record {record_id!r}: ids and metadata must not contain NUL characters (PostgreSQL stores none)"
        )


def _parse_vector(text: str | None) -> list[float]:
    """pgvector's text output `[0.1,0.2,...]` as the float32 values stored."""
    inner = (text or "").strip().strip("[]")
    return np.asarray(inner.split(","), dtype=np.float32).tolist() if inner else []


__all__ = ["InvalidVectorError", "PgVectorIndex"]
