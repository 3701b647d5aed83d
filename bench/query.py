"""End-to-end search latency, split into query embedding, index and rerank, next to the numpy floor.

    PYTHONPATH=. python bench/query.py [--sizes 1000 5000 20000] [--queries 100]

One namespace of each size shares the table with 20 other namespaces of ~1k records. Stored vectors
are synthetic (embedding 40k real chunks would take longer than the benchmark is worth), but every
stored chunk carries a real SciFact abstract as text, so the reranker does real sentence work, and
the query embedding uses the real models on real SciFact questions. The floor is brute-force numpy
over the same hybrid scores in the same process; goal: index time ≤ 2 × floor.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from index_latency import (
    ALPHA,
    DIM,
    TERMS_PER_DOC,
    TOP_K,
    VOCABULARY,
    NumpyFloor,
    _docs,
    _load,
    _records,
    _term_ids,
)

from librarian.index.base import EmbeddingContract
from librarian.index.lance import LanceVectorIndex
from librarian.settings import load_settings
from librarian.stack import Stack
from tools.local_rerank import LocalReranker

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact-dev"


def pct(samples: list[float]) -> tuple[float, float]:
    arr = np.asarray(samples) * 1000
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_000, 20_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    args = parser.parse_args()

    texts = [json.loads(line)["text"] for line in (args.data / "corpus.jsonl").read_text().splitlines()]
    questions = [json.loads(q)["text"] for q in (args.data / "queries.jsonl").read_text().splitlines()]
    questions = questions[: args.queries]
    rng = np.random.default_rng(0)
    vocab = _term_ids(rng)
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    weights /= weights.sum()

    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(load_settings(data_dir=Path(tmp) / "data"))
        reranker = LocalReranker(stack.dense)
        stack.dense.embed_query("warm up")
        index = LanceVectorIndex(
            Path(tmp) / "lance", EmbeddingContract("bench", DIM, "bench"), compact_every=10
        )
        for n in range(20):
            dense, sparse = _docs(rng, 1_000, vocab, weights, TERMS_PER_DOC)
            _load(index, f"other-{n}", _records(f"o{n}", dense, sparse))
        print(
            f"{'records':>8} {'embed p50':>10} {'p95':>7} {'index p50':>10} {'p95':>7} {'rerank p50':>11} "
            f"{'p95':>7} {'numpy p50':>10} {'p95':>7} {'index/numpy p50':>16} {'p95':>6}"
        )
        for size in args.sizes:
            namespace = f"target-{size}"
            dense, sparse = _docs(rng, size, vocab, weights, TERMS_PER_DOC)
            records = _records("t", dense, sparse)
            for i, record in enumerate(records):
                record["metadata"]["text"] = texts[(i * 7919) % len(texts)]
            _load(index, namespace, records)
            index.optimize()
            floor = NumpyFloor(dense, sparse)
            index.query(namespace=namespace, vector=dense[0].tolist(), top_k=TOP_K)  # builds the cache
            embed_t, index_t, rerank_t, floor_t = [], [], [], []
            for question in questions:
                start = time.perf_counter()
                q_dense = np.asarray(stack.dense.embed_query(question), dtype=np.float32)
                q_sparse = stack.sparse.embed_query(question)
                embed_t.append(time.perf_counter() - start)
                # The synthetic index has its own vocabulary: query it with a synthetic sparse vector
                # of the real query's size, so the index does the same amount of work.
                q_idx = vocab[rng.choice(VOCABULARY, size=max(1, len(q_sparse["indices"])), replace=False)]
                q_val = np.asarray(q_sparse["values"] or [1.0], dtype=np.float32)[: len(q_idx)]
                start = time.perf_counter()
                matches = index.query(
                    namespace=namespace,
                    vector=q_dense.tolist(),
                    sparse_vector={"indices": q_idx.tolist(), "values": q_val.tolist()},
                    alpha=ALPHA,
                    top_k=TOP_K,
                )
                index_t.append(time.perf_counter() - start)
                start = time.perf_counter()
                reranker.rerank(question, matches, 8)
                rerank_t.append(time.perf_counter() - start)
                start = time.perf_counter()
                floor.query(q_dense, q_idx, q_val)
                floor_t.append(time.perf_counter() - start)
            (e50, e95), (i50, i95), (r50, r95), (f50, f95) = map(pct, (embed_t, index_t, rerank_t, floor_t))
            print(
                f"{size:>8} {e50:>10.1f} {e95:>7.1f} {i50:>10.2f} {i95:>7.2f} {r50:>11.1f} {r95:>7.1f} "
                f"{f50:>10.2f} {f95:>7.2f} {i50 / f50:>16.2f} {i95 / f95:>6.2f}"
            )
        print(
            "times in ms; rerank includes sentence embedding of candidates not seen before (cached per text)"
        )


if __name__ == "__main__":
    main()
