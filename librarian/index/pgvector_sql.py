"""The statements of the pgvector index: hybrid scores, candidates, filters, all with bound values.

Scores are LanceDB's: dense = dense·q (`-(dense <#> q)`, pgvector's negative inner product),
sparse = sparse·q summed over the query's id buckets (`pgvector_sparse`), fused =
alpha·dense + (1 - alpha)·sparse; best first, ties by id.

Two ways to find the top k, chosen per query by the namespace's size (`PgVectorIndex.query`):
- exact: score every row of the namespace (that passes the filter), as LanceDB does; the plan is a
  scan of the namespace through the primary key, never the HNSW index, because the ORDER BY is the
  fused expression, which no index orders by;
- candidates: the dense channel's best rows from the HNSW index with an iterative scan (pgvector 0.8:
  the scan goes on past `ef_search` until enough rows of this namespace, filter included, are found),
  united with the sparse channel's exact best rows among those sharing a query term (GIN on
  `terms`), then re-scored exactly. This is Pinecone's kind of approximation (a row that is in
  neither channel's top list is missed), used only where the exact scan is too slow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from librarian.index.pgvector_filters import filter_predicate, path_values
from librarian.index.pgvector_sparse import BUCKETS


@dataclass
class Where:
    """A WHERE clause within one namespace, plus its parameters (values are never in the text)."""

    clauses: list[sql.Composable] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def sql(self) -> sql.Composable:
        return sql.SQL(" AND ").join(self.clauses)


def namespace_where(namespace: str, filter: dict[str, Any] | None) -> Where:
    """`ns = ...` AND the filter (a JSON path predicate, plus the `path` index hint when it applies)."""
    where = Where([sql.SQL("ns = %(ns)s")], {"ns": namespace})
    predicate = filter_predicate(filter)
    if predicate is None:
        return where
    paths = path_values(filter)
    if paths is not None:
        where.clauses.append(sql.SQL("metadata->>'path' = ANY(%(paths)s::text[])"))
        where.params["paths"] = paths
    where.clauses.append(sql.SQL("jsonb_path_exists(metadata, %(fpath)s::jsonpath, %(fvars)s::jsonb)"))
    where.params.update(fpath=predicate.path, fvars=Jsonb(predicate.variables))
    return where


def sparse_score(buckets: dict[int, str], params: dict[str, Any]) -> sql.Composable:
    """sparse·q as SQL: one `sparsevec` product per bucket the query touches (0 without any)."""
    if not buckets:
        return sql.SQL("0::float8")
    terms = []
    for bucket, text in buckets.items():
        assert 0 <= bucket < BUCKETS
        params[f"s{bucket}"] = text
        terms.append(
            sql.SQL("({} <#> %({})s::sparsevec)").format(sql.Identifier(f"sp{bucket}"), sql.SQL(f"s{bucket}"))
        )
    return sql.SQL("(-({}))").format(sql.SQL(" + ").join(terms))


DENSE_SCORE = sql.SQL("(-(dense <#> %(q)s::vector))")


def scored_query(
    table: str,
    where: Where,
    sparse: sql.Composable,
    *,
    candidates: sql.Composable | None,
    include_values: bool,
    include_metadata: bool,
) -> sql.Composed:
    """Top k by the fused score over the namespace's rows, or only over `candidates` (ids).

    The inner query computes each channel's score once (`OFFSET 0` keeps the planner from folding
    it into the outer one, which would evaluate both products twice); `metadata` and `dense` are
    passed through unconverted, so only the k rows returned are detoasted and printed.
    """
    restrict = sql.SQL("")
    if candidates is not None:
        restrict = sql.SQL(" AND id IN ({})").format(candidates)
    return sql.SQL(
        "SELECT id, %(a)s * d + %(b)s * s AS fused, d, s, {meta}, {vals} FROM ("
        "SELECT id, metadata, dense, {dense} AS d, {sparse} AS s "
        "FROM {t} WHERE {where}{restrict} OFFSET 0) c "
        "ORDER BY fused DESC, id LIMIT %(k)s"
    ).format(
        meta=sql.SQL("metadata" if include_metadata else "NULL::jsonb"),
        vals=sql.SQL("dense" if include_values else "NULL::vector"),
        dense=DENSE_SCORE,
        sparse=sparse,
        t=sql.Identifier(table),
        where=where.sql(),
        restrict=restrict,
    )


def channel_candidates(table: str, where: Where, sparse: sql.Composable, has_sparse: bool) -> sql.Composed:
    """Ids of the dense channel's best `n` (HNSW, iterative) united with the sparse channel's best `n`."""
    t = sql.Identifier(table)
    dense = sql.SQL("(SELECT id FROM {t} WHERE {where} ORDER BY dense <#> %(q)s::vector LIMIT %(n)s)").format(
        t=t, where=where.sql()
    )
    if not has_sparse:
        return dense
    lexical = sql.SQL(
        "(SELECT id FROM {t} WHERE {where} AND terms && %(terms)s::bigint[] "
        "ORDER BY {sparse} DESC LIMIT %(n)s)"
    ).format(t=t, where=where.sql(), sparse=sparse)
    return sql.SQL("{} UNION {}").format(dense, lexical)
