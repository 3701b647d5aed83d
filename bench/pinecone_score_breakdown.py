"""What the Pinecone score breakdown costs: response bytes and latency against the no-breakdown query.

Why: Pinecone returns only the fused hybrid score. `PineconeVectorIndex` adds one dense-only query
(no metadata, no values) and solves the sparse score from the fused one, fetching vectors only for
matches outside the dense list (`librarian/index/pinecone_scores.py`). Measured beside it: asking
the query for values (exact in one request, but every match carries its whole vector), the worst
case of the chosen way (every match fetched, as at alpha 1), and two single-channel queries, with
how many matches each leaves without a score. Everything runs in one process against the local
wire server, so the ratios compare like with like; absolute times include the wire server's
pure-Python scoring, the same for every mode, which shrinks the ratios.

Vectors are rounded to 9 significant digits before upsert: Pinecone stores float32 and answers
with its short form, so JSON values are about as long as they are from the real service.

    PYTHONPATH=. python bench/pinecone_score_breakdown.py [--records 100] [--queries 30] [--dims 384 3072]
        [--scifact 500]   # also real abstracts and claims through the embedded models
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from unittest import mock

import numpy as np

import librarian.index.pinecone as pinecone_module
from librarian.index.base import EmbeddingContract
from librarian.index.pinecone import PineconeVectorIndex
from tests.wire.pinecone_server import TEST_API_KEY, PineconeWireServer

NAMESPACE = "bench-org"
TOP_K = 40
ALPHA = 0.75
TERMS = 60
TEXT_CHARS = 1200  # a typical chunk kept in metadata for citations


def _short(values: np.ndarray) -> list[float]:
    return [float(f"{v:.9g}") for v in values]


def _records(rng: np.random.Generator, n: int, dimension: int) -> list[dict]:
    dense = rng.normal(size=(n, dimension))
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    return [
        {
            "id": f"docs/bench.pdf:{i}",
            "values": _short(dense[i]),
            "sparse_values": {
                "indices": sorted(rng.choice(30_000, TERMS, replace=False).tolist()),
                "values": _short(rng.uniform(0.05, 3.0, TERMS)),
            },
            "metadata": {
                "path": "docs/bench.pdf",
                "chunkIndex": i,
                "page": i // 5 + 1,
                "text": "x" * TEXT_CHARS,
            },
        }
        for i in range(n)
    ]


def _queries(rng: np.random.Generator, n: int, dimension: int) -> list[tuple[list[float], dict]]:
    out = []
    for _ in range(n):
        q = rng.normal(size=dimension)
        sparse = {"indices": sorted(rng.choice(30_000, 12, replace=False).tolist()), "values": [1.0] * 12}
        out.append((_short(q / np.linalg.norm(q)), sparse))
    return out


def _measure(server: PineconeWireServer, queries: list, run: Callable) -> tuple[float, ...]:
    """(p50 ms, mean response bytes per query, share of matches scored, share of matches fetched)."""
    run(*queries[0])  # warm up connections
    times, sizes, covered, fetched, total = [], [], 0, 0, 0
    for q, sq in queries:
        server.clear_requests()
        start = time.perf_counter()
        matches = run(q, sq)
        times.append((time.perf_counter() - start) * 1000)
        sizes.append(sum(r.response_size for r in server.requests))
        fetches = [r for r in server.requests if r.path.endswith("/vectors/fetch")]
        fetched += sum(len(r.query.get("ids", [])) for r in fetches)
        covered += sum(m.dense_score is not None and m.sparse_score is not None for m in matches)
        total += len(matches)
    return statistics.median(times), statistics.fmean(sizes), covered / max(1, total), fetched / max(1, total)


def _two_single_channel_queries(index: PineconeVectorIndex) -> Callable:
    """The fused query plus a dense-only and a sparse-only query, each with its own top k.

    A match found in either channel's list gets that score, and the other one solved from the fused
    score; a match in neither list gets none.
    """

    def run(q: list[float], sq: dict) -> list:
        fused = index.query(namespace=NAMESPACE, vector=q, sparse_vector=sq, alpha=ALPHA, top_k=TOP_K)
        dense = index.query(namespace=NAMESPACE, vector=q, alpha=1.0, top_k=TOP_K, include_metadata=False)
        sparse = index.query(
            namespace=NAMESPACE, vector=q, sparse_vector=sq, alpha=0.0, top_k=TOP_K, include_metadata=False
        )
        dense_by_id, sparse_by_id = {m.id: m.score for m in dense}, {m.id: m.score for m in sparse}
        for m in fused:
            d, s = dense_by_id.get(m.id), sparse_by_id.get(m.id)
            if d is not None and s is None:
                s = (m.score - ALPHA * d) / (1 - ALPHA)
            elif s is not None and d is None:
                d = (m.score - (1 - ALPHA) * s) / ALPHA
            m.dense_score, m.sparse_score = d, s
        return fused

    return run


def synthetic(dimension: int, records: int, queries: int) -> tuple[str, int, list[dict], list]:
    """Random unit vectors and random terms: the channels are unrelated, the hard case for the solve."""
    rng = np.random.default_rng(dimension)
    title = f"synthetic {dimension}-d, {records} records, chunk text {TEXT_CHARS} chars"
    return title, dimension, _records(rng, records, dimension), _queries(rng, queries, dimension)


def scifact(records: int, queries: int) -> tuple[str, int, list[dict], list]:
    """SciFact abstracts and claims through the embedded models (MiniLM + lexical, fixed IDF)."""
    import json
    import os
    import tempfile
    from pathlib import Path

    from librarian.settings import load_settings
    from librarian.stack import Stack

    data = Path(os.environ.get("LIBRARIAN_SHARED_DIR", "/work/shared")) / "data" / "scifact-dev"
    with (data / "corpus.jsonl").open() as f:
        docs = [json.loads(line) for _, line in zip(range(records), f, strict=False)]
    with (data / "queries.jsonl").open() as f:
        claims = [json.loads(line)["text"] for _, line in zip(range(queries), f, strict=False)]
    stack = Stack(load_settings(data_dir=Path(tempfile.mkdtemp()), sparse_idf="fixed"))
    texts = [f"{d['title']}. {d['text']}" for d in docs]
    dense, sparse = stack.dense.embed_documents(texts), stack.sparse.embed_documents(texts)
    rows = [
        {
            "id": f"scifact:{d['_id']}",
            "values": _short(np.asarray(v)),
            "sparse_values": sv,
            "metadata": {"path": f"scifact/{d['_id']}", "chunkIndex": 0, "text": t},
        }
        for d, t, v, sv in zip(docs, texts, dense, sparse, strict=True)
    ]
    qs = [(stack.dense.embed_query(c), stack.sparse.embed_query(c)) for c in claims]
    return f"SciFact {stack.dense.dimension}-d, {records} abstracts", stack.dense.dimension, rows, qs


def bench(title: str, dimension: int, records: list[dict], queries: list) -> None:
    contract = EmbeddingContract(
        dense_model=f"bench-{dimension}", dimension=dimension, sparse_model="bench-sparse"
    )
    with PineconeWireServer() as server:

        def open_index(**kw: object) -> PineconeVectorIndex:
            return PineconeVectorIndex(TEST_API_KEY, f"bench-{dimension}", contract, host=server.url, **kw)

        open_index().upsert(records, namespace=NAMESPACE)
        qs = queries
        plain, breakdown = open_index(score_breakdown=False), open_index()

        def query(index: PineconeVectorIndex) -> Callable:
            return lambda q, sq: index.query(
                namespace=NAMESPACE, vector=q, sparse_vector=sq, alpha=ALPHA, top_k=TOP_K
            )

        def with_values(q: list[float], sq: dict) -> list:
            return breakdown.query(
                namespace=NAMESPACE, vector=q, sparse_vector=sq, alpha=ALPHA, top_k=TOP_K, include_values=True
            )

        def all_fetched(q: list[float], sq: dict) -> list:
            with mock.patch.object(pinecone_module, "solve_from_dense", lambda matches, *_: matches):
                return query(breakdown)(q, sq)

        modes = {
            "no breakdown (baseline)": query(plain),
            "dense-only query + solve (chosen)": query(breakdown),
            "  worst case: every match fetched": all_fetched,
            "values in the query": with_values,
            "two single-channel queries": _two_single_channel_queries(plain),
        }
        results = {name: _measure(server, qs, run) for name, run in modes.items()}
    base_ms, base_bytes, *_ = results["no breakdown (baseline)"]
    print(f"\n{title}; top_k {TOP_K}, alpha {ALPHA}, {len(queries)} queries")
    print(f"{'mode':36} {'p50 ms':>8} {'x':>6} {'bytes/query':>12} {'x':>6} {'scored':>7} {'fetched':>8}")
    for name, (ms, size, coverage, fetched) in results.items():
        print(
            f"{name:36} {ms:8.1f} {ms / base_ms:6.2f} {size:12,.0f} {size / base_bytes:6.2f} "
            f"{coverage:7.0%} {fetched:8.0%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 3072])
    parser.add_argument("--scifact", type=int, default=0, help="also run on this many SciFact abstracts")
    args = parser.parse_args()
    for dimension in args.dims:
        bench(*synthetic(dimension, args.records, args.queries))
    if args.scifact:
        bench(*scifact(args.scifact, args.queries))


if __name__ == "__main__":
    main()
