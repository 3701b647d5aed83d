"""Query latency of LanceVectorIndex against the numpy floor for the same exact hybrid scores.

Why: the embedded index promises exact hybrid scores at close to in-memory speed (DESIGN §3). The
floor is what a brute-force numpy computation over data already in memory costs (dense matmul,
sparse CSR product, top-k); the index is allowed at most twice that. Other tenants share the table
so the numbers include namespace separation.

    PYTHONPATH=. python bench/index_latency.py [--sizes 1000 5000 20000] [--queries 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse as sp

from librarian.index.base import EmbeddingContract
from librarian.index.lance import LanceVectorIndex

DIM = 384
TERMS_PER_DOC = 60
TERMS_PER_QUERY = 12
VOCABULARY = 30_000
TOP_K = 40
ALPHA = 0.75
BATCH = 2_000


def _term_ids(rng: np.random.Generator) -> np.ndarray:
    """A Zipf-like vocabulary hashed to 32-bit ids, like the lexical encoder's mmh3 term ids."""
    return rng.choice(2**32 - 1, size=VOCABULARY, replace=False).astype(np.int64)


def _docs(rng: np.random.Generator, n: int, vocab: np.ndarray, weights: np.ndarray, terms: int):
    dense = rng.normal(size=(n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    sparse = []
    for _ in range(n):
        picked = rng.choice(VOCABULARY, size=terms, replace=False, p=weights)
        sparse.append((vocab[picked], rng.uniform(0.05, 3.0, size=terms).astype(np.float32)))
    return dense, sparse


def _records(prefix: str, dense: np.ndarray, sparse: list) -> list[dict]:
    return [
        {
            "id": f"{prefix}:{i}",
            "values": dense[i].tolist(),
            "sparse_values": {"indices": sparse[i][0].tolist(), "values": sparse[i][1].tolist()},
            "metadata": {
                "path": f"docs/{prefix}-{i // 50}.pdf",
                "filename": f"{prefix}-{i // 50}.pdf",
                "chunkIndex": i % 50,
                "page": i % 50 // 5 + 1,
                "blockType": "Text",
                "text": f"synthetic chunk {i} " * 20,
                "mediaType": "application/pdf",
            },
        }
        for i in range(len(dense))
    ]


def _load(index: LanceVectorIndex, namespace: str, records: list[dict]) -> float:
    start = time.perf_counter()
    for i in range(0, len(records), BATCH):
        index.upsert(records[i : i + BATCH], namespace=namespace)
    return time.perf_counter() - start


class NumpyFloor:
    """The same hybrid scores from matrices already in memory: the cost no index can beat."""

    def __init__(self, dense: np.ndarray, sparse: list) -> None:
        self.dense = dense
        all_terms = np.concatenate([idx for idx, _ in sparse])
        self.terms, cols = np.unique(all_terms, return_inverse=True)
        indptr = np.concatenate([[0], np.cumsum([len(idx) for idx, _ in sparse])])
        values = np.concatenate([val for _, val in sparse])
        self.matrix = sp.csr_matrix((values, cols, indptr), shape=(len(dense), len(self.terms)))

    def query(self, q: np.ndarray, q_idx: np.ndarray, q_val: np.ndarray) -> np.ndarray:
        qvec = np.zeros(len(self.terms), dtype=np.float32)
        pos = np.searchsorted(self.terms, q_idx)
        ok = (pos < len(self.terms)) & (self.terms[np.minimum(pos, len(self.terms) - 1)] == q_idx)
        qvec[pos[ok]] = q_val[ok]
        scores = ALPHA * (self.dense @ q) + (1 - ALPHA) * (self.matrix @ qvec)
        top = np.argpartition(-scores, TOP_K - 1)[:TOP_K]
        return top[np.argsort(-scores[top])]


def _percentiles(samples: list[float]) -> tuple[float, float]:
    arr = np.asarray(samples) * 1000
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_000, 20_000])
    parser.add_argument("--others", type=int, default=20, help="other namespaces of ~1k records")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    vocab = _term_ids(rng)
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    weights /= weights.sum()
    contract = EmbeddingContract("bench-dense", DIM, "bench-sparse")

    with tempfile.TemporaryDirectory() as tmp:
        index = LanceVectorIndex(Path(tmp) / "lance", contract=contract, compact_every=10)
        load_s, loaded = 0.0, 0
        for n in range(args.others):
            dense, sparse = _docs(rng, 1_000, vocab, weights, TERMS_PER_DOC)
            load_s += _load(index, f"other-{n}", _records(f"o{n}", dense, sparse))
            loaded += 1_000
        print(f"{args.others} other namespaces: {loaded} records in {load_s:.1f} s")

        queries = []
        for _ in range(args.queries):
            qd, qs = _docs(rng, 1, vocab, weights, TERMS_PER_QUERY)
            queries.append((qd[0], qs[0][0], qs[0][1]))

        header = (
            f"{'records':>8} {'cold ms':>8} {'index p50':>10} {'p95':>7} {'no-meta p50':>12} "
            f"{'filter p50':>11} {'numpy p50':>10} {'p95':>7} {'ratio p50':>10} {'ratio p95':>10}"
        )
        print(header)
        for size in args.sizes:
            namespace = f"target-{size}"
            dense, sparse = _docs(rng, size, vocab, weights, TERMS_PER_DOC)
            _load(index, namespace, _records("t", dense, sparse))
            index.optimize()
            floor = NumpyFloor(dense, sparse)

            def run(**kwargs: Any) -> tuple[list[float], list[float]]:
                return _alternate(index, namespace, floor, queries, **kwargs)  # noqa: B023

            start = time.perf_counter()
            first = index.query(namespace=namespace, vector=queries[0][0].tolist(), top_k=TOP_K)
            cold = (time.perf_counter() - start) * 1000
            assert len(first) == TOP_K
            _check_exact(index, namespace, floor, queries[:5])

            index_times, floor_times = run()
            idx_p50, idx_p95 = _percentiles(index_times)
            np_p50, np_p95 = _percentiles(floor_times)
            bare_p50, _ = _percentiles(run(include_metadata=False)[0])
            filt_p50, _ = _percentiles(run(filter={"page": {"$lte": 3}, "chunkIndex": {"$ne": 0}})[0])
            print(
                f"{size:>8} {cold:>8.1f} {idx_p50:>10.2f} {idx_p95:>7.2f} {bare_p50:>12.2f} "
                f"{filt_p50:>11.2f} {np_p50:>10.2f} {np_p95:>7.2f} {idx_p50 / np_p50:>10.2f} "
                f"{idx_p95 / np_p95:>10.2f}"
            )

        start = time.perf_counter()
        for _ in range(200):
            _ = index._table.version
        full_check = (time.perf_counter() - start) / 200 * 1000
        print(f"full LanceDB version check: {full_check:.3f} ms (the mtime probe skips it when idle)")


def _alternate(
    index: LanceVectorIndex, namespace: str, floor: NumpyFloor, queries: list, **kwargs: Any
) -> tuple[list[float], list[float]]:
    """Index and floor alternate query by query, so both see the same machine load."""
    index_times, floor_times = [], []
    for q, qi, qv in queries:
        start = time.perf_counter()
        index.query(
            namespace=namespace,
            vector=q.tolist(),
            sparse_vector={"indices": qi.tolist(), "values": qv.tolist()},
            alpha=ALPHA,
            top_k=TOP_K,
            **kwargs,
        )
        index_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        floor.query(q, qi, qv)
        floor_times.append(time.perf_counter() - start)
    return index_times, floor_times


def _check_exact(index: LanceVectorIndex, namespace: str, floor: NumpyFloor, queries: list) -> None:
    """The benchmark compares like with like: the index returns the floor's top ids and scores."""
    for q, qi, qv in queries:
        matches = index.query(
            namespace=namespace,
            vector=q.tolist(),
            sparse_vector={"indices": qi.tolist(), "values": qv.tolist()},
            alpha=ALPHA,
            top_k=TOP_K,
        )
        expected = floor.query(q, qi, qv)
        got = [int(m.id.split(":")[1]) for m in matches]
        assert got[:10] == expected[:10].tolist(), "index and numpy floor disagree"


if __name__ == "__main__":
    main()
