"""Sparse vectors with 32-bit term ids in pgvector's `sparsevec`, exactly, by splitting the id range.

pgvector's `sparsevec` takes at most 1,000,000,000 dimensions and 16,000 non-zero elements (measured on
pgvector 0.8.6: `'{1000000001:1}/1000000001'::sparsevec` is refused). Both sparse models hash terms to
unsigned 32-bit ids (the lexical encoder's MurmurHash3, Pinecone's `pinecone-sparse-english-v0`), so
about three ids in four do not fit one `sparsevec`. Folding ids into range (a modulus) would merge
unrelated terms and change scores; a term dictionary would need a shared table and a lookup on
every write and query. Instead each record's sparse vector is split by id range into five
`sparsevec` columns, bucket b holding ids in [b·10⁹, (b+1)·10⁹): a dot product is the sum of the
five buckets' dot products, so the score is exact, and all of it stays in the record's one row.
Chunks hold a few hundred terms at most, far under the 16,000 limit (checked on upsert).

The ids and values as upserted (order included) are also kept as `terms bigint[]` and
`weights real[]`: `fetch` returns them unchanged, and a GIN index on `terms` answers "which records
of this namespace hold term t" (query-time IDF, and the sparse channel's candidates in large
namespaces).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from librarian.index.lance_schema import InvalidVectorError

SPARSE_DIMENSIONS = 1_000_000_000  # pgvector's SPARSEVEC_MAX_DIM
MAX_NONZERO = 16_000  # pgvector's SPARSEVEC_MAX_NNZ
BUCKETS = 5  # ceil(2**32 / SPARSE_DIMENSIONS)


def bucket_texts(indices: Sequence[int], values: Sequence[float]) -> list[str]:
    """The five `sparsevec` literals of one sparse vector (text format: 1-based indices).

    Values are float32, as pgvector stores them; `repr` of the float32 value parses back to the
    same float32, so what is scored is exactly what LanceDB scores.
    """
    if len(indices) > MAX_NONZERO:
        raise InvalidVectorError(
            f"sparse vector has {len(indices)} non-zero values; "
            f"pgvector's sparsevec takes at most {MAX_NONZERO}"
        )
    parts: list[list[str]] = [[] for _ in range(BUCKETS)]
    order = np.argsort(np.asarray(indices, dtype=np.int64), kind="stable")
    weights = np.asarray(values, dtype=np.float32)
    for position in order.tolist():
        index = int(indices[position])
        bucket, offset = divmod(index, SPARSE_DIMENSIONS)
        parts[bucket].append(f"{offset + 1}:{float(weights[position])!r}")
    return ["{" + ",".join(part) + "}/" + str(SPARSE_DIMENSIONS) for part in parts]


def query_buckets(indices: Sequence[int], values: Sequence[float]) -> dict[int, str]:
    """The buckets a query's sparse vector touches, as `sparsevec` literals (others score 0)."""
    texts = bucket_texts(indices, values)
    touched = {int(i) // SPARSE_DIMENSIONS for i in indices}
    return {b: texts[b] for b in sorted(touched)}


def dense_text(vector: np.ndarray) -> str:
    """A `vector` literal of float32 values that parses back to the same float32 values."""
    return "[" + ",".join(map(repr, vector.astype(np.float32).astype(np.float64).tolist())) + "]"
