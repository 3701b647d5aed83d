"""The dense and sparse halves of a Pinecone hybrid score, which Pinecone does not return.

Pinecone answers one number per match over a dotproduct index: `fused = alpha·d + (1 - alpha)·s`,
with `d = q·v` (dense) and `s = s_q·w` (sparse) the unweighted channel scores that LanceDB and
pgvector report. One channel score and the fused score give the other, so the breakdown costs one
extra, small query: the dense-only query (same namespace and filter, no metadata, no values, a few
times deeper than top k) returns `d` for almost every fused match, and `s` follows from the fused
score. A match outside that list (low dense, high sparse) has its vectors fetched and both scores
computed from them, so every match gets both scores.

Measured against the other ways (bench/pinecone_score_breakdown.py): asking the query for its
values is exact in one request but multiplies the response bytes by ~6 at 384-d and ~36 at 3,072-d
(and can pass Pinecone's 4 MB result cap); two single-channel queries add a request and still
leave matches outside both lists unscored.

Special cases: with no lexical query, `s = 0` and `d = fused / alpha`, no extra request. As alpha
nears 1 the fused score says less and less of `s` (at 1, nothing), and solving for it would magnify
Pinecone's float32 rounding by 1 / (1 - alpha); above `MAX_SOLVE_ALPHA` the vectors are fetched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from librarian.embeddings.base import SparseVector
from librarian.index.base import QueryMatch

DENSE_QUERY_DEPTH_FACTOR = 4  # the dense-only query reads this many times the fused top k
MAX_SOLVE_ALPHA = 0.95  # solving s from the fused score magnifies its rounding by at most 20 here
PINECONE_MAX_TOP_K = 10_000  # Pinecone's top_k ceiling for a query without values or metadata
PINECONE_MAX_RESULT_BYTES = 4_000_000
VALUES_BYTES_BUDGET = 2_000_000  # half the result cap for values; metadata (<= 40 KB a record) gets the rest
JSON_BYTES_PER_FLOAT = 13  # a float32 printed shortest, with its comma: "-0.012345678,"

Vectors = dict[str, tuple[Sequence[float], SparseVector | None]]


def dense_query_depth(top_k: int) -> int:
    return min(PINECONE_MAX_TOP_K, top_k * DENSE_QUERY_DEPTH_FACTOR)


def ids_per_fetch(dimension: int, ceiling: int) -> int:
    """How many records one fetch may return with values and stay well under the result cap."""
    per_record = max(1, dimension * JSON_BYTES_PER_FLOAT)
    return max(1, min(ceiling, VALUES_BYTES_BUDGET // per_record))


def sparse_query_terms(sparse: SparseVector | None) -> dict[int, float]:
    """The query's sparse vector as {term: weight}; an absent one scores every record 0.0."""
    if not sparse:
        return {}
    return {int(i): float(v) for i, v in zip(sparse["indices"], sparse["values"], strict=True)}


def solve_without_lexical_query(matches: list[QueryMatch], alpha: float) -> None:
    """No sparse query: `s = 0` and the fused score is `alpha·d` (needs alpha > 0)."""
    for match in matches:
        match.sparse_score = 0.0
        match.dense_score = match.score / alpha


def solve_from_dense(matches: list[QueryMatch], dense: Mapping[str, float], alpha: float) -> list[QueryMatch]:
    """Set both scores where `d` is known (alpha <= MAX_SOLVE_ALPHA); return the matches it misses."""
    missing = []
    for match in matches:
        if match.id not in dense:
            missing.append(match)
            continue
        match.dense_score = float(dense[match.id])
        match.sparse_score = (match.score - alpha * match.dense_score) / (1.0 - alpha)
    return missing


def compute_from_vectors(
    matches: list[QueryMatch],
    vectors: Vectors,
    dense_query: Sequence[float],
    sparse_query: SparseVector | None,
) -> None:
    """Both scores from the records' own vectors; a record gone since the query keeps None."""
    known = [m for m in matches if m.id in vectors and len(vectors[m.id][0])]
    if not known:
        return
    matrix = np.asarray([vectors[m.id][0] for m in known], dtype=np.float64)
    dense = matrix @ np.asarray(dense_query, dtype=np.float64)
    terms = sparse_query_terms(sparse_query)
    for match, dense_score in zip(known, dense.tolist(), strict=True):
        sparse = vectors[match.id][1]
        match.dense_score = dense_score
        match.sparse_score = _sparse_dot(terms, sparse["indices"], sparse["values"]) if sparse else 0.0


def _sparse_dot(query: Mapping[int, float], indices: Sequence[int], values: Sequence[float]) -> float:
    return float(sum(query.get(int(i), 0.0) * float(v) for i, v in zip(indices, values, strict=True)))
