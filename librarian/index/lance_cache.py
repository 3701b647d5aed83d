"""In-memory snapshots of one namespace, so a hybrid query costs about one numpy matmul.

LanceDB has no sparse vectors and its exact scan costs tens of milliseconds per query; the data of
one namespace, held as a dense float32 matrix plus a CSC term matrix, scores in about a millisecond.
A snapshot's data never changes; it is labelled with the table version it was read at, and when
the table moves on (a write from this or another process), the next query reads a fresh one.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import sparse as sp

from librarian.index.filters import MISSING, FactorizedColumn
from librarian.index.lance_schema import KNOWN_COLUMNS

_GATHER_LIMIT = 15_000


@dataclass
class NamespaceSnapshot:
    """One namespace's rows at one table version. Rows are in arbitrary but fixed order."""

    version: int
    ids: list[str]
    dense: np.ndarray  # (rows, dimension) float32
    terms: np.ndarray  # sorted distinct term ids (uint32), one per column of `postings`
    postings: sp.csc_matrix  # (rows, len(terms)) float32 sparse values
    known: dict[str, list[Any]]  # typed metadata columns (None where a record lacks the key)
    meta_json: list[str]  # remaining metadata as JSON text
    _extra: list[dict[str, Any]] | None = field(default=None, repr=False)
    _rows: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    _columns: dict[str, FactorizedColumn] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def size(self) -> int:
        return len(self.ids)

    @cached_property
    def nbytes(self) -> int:
        """Approximate memory held (text dominates the Python side; the rest is small per row)."""
        text = sum(len(t) for t in self.known["text"] if t) + sum(len(t) for t in self.meta_json)
        sparse = self.postings.data.nbytes + self.postings.indices.nbytes + self.postings.indptr.nbytes
        return self.dense.nbytes + sparse + self.terms.nbytes + text + 600 * self.size

    def dense_scores(self, query: np.ndarray) -> np.ndarray:
        return self.dense @ query

    def sparse_scores(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Exact sparse dot products, touching only the postings of the query's terms.

        Few postings: gather them with a handful of numpy calls and sum per row with `bincount`
        (scipy's slicing has a fixed cost of ~0.1 ms). Many postings: scipy's column slice and
        product, two passes in C, win. The crossover was measured at ~15k postings.
        """
        if not len(indices) or not len(self.terms):
            return np.zeros(self.size, dtype=np.float32)
        pos = np.minimum(np.searchsorted(self.terms, indices), len(self.terms) - 1)
        hit = self.terms[pos] == indices
        cols, weights = pos[hit], values[hit]
        starts = self.postings.indptr[cols]
        lengths = self.postings.indptr[cols + 1] - starts
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(self.size, dtype=np.float32)
        if total > _GATHER_LIMIT:
            return np.asarray(self.postings[:, cols] @ weights, dtype=np.float32).ravel()
        # positions of every posting of the chosen columns, laid end to end
        entries = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        contrib = self.postings.data[entries] * np.repeat(weights, lengths)
        rows = self.postings.indices[entries]
        return np.bincount(rows, weights=contrib, minlength=self.size).astype(np.float32)

    def term_counts(self, indices: np.ndarray) -> np.ndarray:
        """Rows holding each term (its posting count; 0 for terms the namespace never saw)."""
        if not len(indices) or not len(self.terms):
            return np.zeros(len(indices), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.terms, indices), len(self.terms) - 1)
        lengths = self.postings.indptr[pos + 1] - self.postings.indptr[pos]
        return np.where(self.terms[pos] == indices, lengths, 0)

    def metadata(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """Metadata of some rows as upserted (typed columns that are set, plus the JSON rest).

        Each row's dict is assembled once per snapshot and copied out, so answering a top-40 query
        costs microseconds instead of a column gather per key.
        """
        out = []
        for row in rows.tolist():
            item = self._rows.get(row)
            if item is None:
                item = {key: col[row] for key, col in self.known.items() if col[row] is not None}
                item.update(self._extra[row] if self._extra is not None else json.loads(self.meta_json[row]))
                self._rows[row] = item
            out.append(dict(item))
        return out

    def extra(self) -> list[dict[str, Any]]:
        """Parsed `meta_json` of every row, computed once (only filters on untyped keys need it)."""
        if self._extra is None:
            with self._lock:
                if self._extra is None:
                    self._extra = [json.loads(text) for text in self.meta_json]
        return self._extra

    def column(self, key: str) -> FactorizedColumn:
        """One metadata key over all rows, factorized for `filters.evaluate_mask` (cached)."""
        cached = self._columns.get(key)
        if cached is not None:
            return cached
        if key in self.known:
            column = _factorize_values([MISSING if v is None else v for v in self.known[key]])
        else:
            column = _factorize_values([row.get(key, MISSING) for row in self.extra()])
        self._columns[key] = column
        return column


def _factorize_values(values: list[Any]) -> FactorizedColumn:
    """Factorize Python values; keys keep True apart from 1 and make lists hashable."""
    positions: dict[Any, int] = {}
    uniques: list[Any] = []
    codes = np.empty(len(values), dtype=np.int64)
    for row, value in enumerate(values):
        hashable = tuple(value) if isinstance(value, list) else value
        key = (type(value) is bool, value is MISSING, hashable)
        code = positions.get(key)
        if code is None:
            code = positions[key] = len(uniques)
            uniques.append(hashable)
        codes[row] = code
    return FactorizedColumn(codes=codes, uniques=uniques)


def build_snapshot(version: int, table: pa.Table, dimension: int) -> NamespaceSnapshot:
    """Turn the Arrow rows of one namespace into matrices (one copy each, no Python loops)."""
    rows = table.num_rows
    vectors = table.column("vector").combine_chunks()
    flat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    dense = np.ascontiguousarray(flat.reshape(rows, dimension))
    sp_idx = table.column("sp_idx").combine_chunks()
    sp_val = table.column("sp_val").combine_chunks()
    offsets = sp_idx.offsets.to_numpy()
    indptr = (offsets - offsets[0]).astype(np.int64) if rows else np.zeros(1, dtype=np.int64)
    term_ids = sp_idx.flatten().to_numpy(zero_copy_only=False)
    weights = np.asarray(sp_val.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    terms, columns = np.unique(term_ids, return_inverse=True)
    postings = sp.csr_matrix((weights, columns.ravel(), indptr), shape=(rows, len(terms))).tocsc()
    known = {key: table.column(key).to_pylist() for key in KNOWN_COLUMNS}
    return NamespaceSnapshot(
        version=version,
        ids=table.column("id").to_pylist(),
        dense=dense,
        terms=terms.astype(np.uint32),
        postings=postings,
        known=known,
        meta_json=table.column("meta_json").to_pylist(),
    )


class SnapshotCache:
    """Least-recently-used snapshots per namespace, bounded by memory rather than by count.

    A busy server holds the namespaces being queried; an idle tenant's matrices are dropped first.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._items: OrderedDict[str, NamespaceSnapshot] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, namespace: str, version: int) -> NamespaceSnapshot | None:
        with self._lock:
            snapshot = self._items.get(namespace)
            if snapshot is None or snapshot.version != version:
                return None
            self._items.move_to_end(namespace)
            return snapshot

    def put(self, namespace: str, snapshot: NamespaceSnapshot) -> None:
        with self._lock:
            current = self._items.get(namespace)
            if current is not None and current.version > snapshot.version:
                return  # a concurrent reader already stored a newer one
            self._items[namespace] = snapshot
            self._items.move_to_end(namespace)
            total = sum(s.nbytes for s in self._items.values())
            while total > self._max_bytes and len(self._items) > 1:
                _, dropped = self._items.popitem(last=False)
                total -= dropped.nbytes

    def advance(self, new_version: int, written_namespace: str) -> None:
        """Relabel snapshots that our own commit, which created `new_version`, left unchanged.

        Versions are consecutive, so a snapshot read at `new_version - 1` differs from the new
        version only by our commit; if that commit touched another namespace, the snapshot is
        still exact and need not be read again (typical server: one tenant ingests while others
        query).
        """
        with self._lock:
            for namespace, snapshot in self._items.items():
                if namespace != written_namespace and snapshot.version == new_version - 1:
                    snapshot.version = new_version

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
