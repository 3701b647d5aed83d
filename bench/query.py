"""Search latency of the product path (`librarian.retrieval.search.retrieve`), cold and warm, next to
the numpy floor.

    python bench/query.py [--sizes 5000] [--others 20] [--queries 100] [--reranker none local]

The target namespace (default 5,000 chunks) shares the LanceDB table with 20 other namespaces of 1,000
chunks. Every stored chunk carries a real SciFact abstract as text with its real lexical sparse
vector; dense vectors are synthetic unit vectors (embedding 25k chunks would cost more than the
benchmark is worth, and the index does the same work on any vector). Queries are real SciFact
claims, embedded by the real models.

Per query: `embed` = dense + sparse query vectors (with the namespace's IDF counts), `index` = the
hybrid query, `rerank` = the configured reranker plus the floor, `total` = `retrieve()` end to end
(timed on its own). Cold = the first query of a fresh stack (model load, namespace snapshot read).
The floor is brute-force numpy over the same matrices in the same process. Goal: total p50 <= 50 ms.
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

from index_latency import ALPHA, TOP_K, NumpyFloor

from librarian.retrieval.rerankers import make_reranker
from librarian.retrieval.search import SearchOptions, embed_query, rank, retrieve
from librarian.settings import load_settings
from librarian.stack import Stack

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact-dev"
BATCH = 2_000


def records(prefix: str, texts: list[str], sparse: list[dict], rng: np.random.Generator, n: int):
    dense = rng.normal(size=(n, 384)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    out = []
    for i in range(n):
        j = i % len(texts)
        out.append(
            {
                "id": f"{prefix}:{i}",
                "values": dense[i].tolist(),
                "sparse_values": sparse[j],
                "metadata": {
                    "path": f"docs/{prefix}-{i // 20}.txt",
                    "filename": f"{prefix}-{i // 20}.txt",
                    "chunkIndex": i % 20,
                    "page": 1,
                    "blockType": "Text",
                    "text": texts[j],
                },
            }
        )
    return out, dense


def pct(samples: list[float]) -> tuple[float, float]:
    arr = np.asarray(samples) * 1000
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def measure(stack: Stack, namespace: str, questions: list[str], floor: NumpyFloor) -> dict[str, list[float]]:
    reranker = make_reranker(stack)
    options = SearchOptions.from_settings(stack)
    times: dict[str, list[float]] = {k: [] for k in ("embed", "index", "rerank", "total", "floor")}
    for question in questions:
        t0 = time.perf_counter()
        dense, sparse = embed_query(stack, question, namespace=namespace)
        t1 = time.perf_counter()
        depth = max(options.top_k, options.candidates)
        matches = stack.index.query(
            namespace=namespace, vector=dense, sparse_vector=sparse, alpha=options.alpha, top_k=depth
        )
        t2 = time.perf_counter()
        rank(question, matches, reranker, options.top_k, options.floor)
        t3 = time.perf_counter()
        retrieve(stack, namespace, question, options, reranker)
        t4 = time.perf_counter()
        q_idx = np.asarray(sparse["indices"] if sparse else [], dtype=np.int64)
        q_val = np.asarray(sparse["values"] if sparse else [], dtype=np.float32)
        floor.query(np.asarray(dense, dtype=np.float32), q_idx, q_val)
        t5 = time.perf_counter()
        for key, value in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
            times[key].append(value)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000])
    parser.add_argument("--others", type=int, default=20)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--reranker", nargs="+", default=["none", "local"])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    args = parser.parse_args()

    corpus = [json.loads(line) for line in (args.data / "corpus.jsonl").read_text().splitlines()]
    texts = [f"{d['title']}\n\n{d['text']}" for d in corpus]
    questions = [json.loads(q)["text"] for q in (args.data / "queries.jsonl").read_text().splitlines()]
    questions = questions[: args.queries]
    rng = np.random.default_rng(0)

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(data_dir=Path(tmp) / "data")
        loader = Stack(settings)
        started = time.perf_counter()
        sparse = loader.sparse.embed_documents(texts)
        print(
            f"lexical vectors of {len(texts)} abstracts in {time.perf_counter() - started:.0f} s", flush=True
        )
        for n in range(args.others):
            batch, _ = records(f"o{n}", texts[n * 50 :] + texts[: n * 50], sparse, rng, 1_000)
            for i in range(0, len(batch), BATCH):
                loader.index.upsert(batch[i : i + BATCH], namespace=f"other-{n}")
        print(
            f"\n{'records':>7} {'reranker':>8} {'phase':>5} {'embed':>7} {'index':>7} {'rerank':>7} "
            f"{'total':>7} {'p95':>7} {'numpy':>7} {'index/numpy':>11} {'total/50ms':>10}"
        )
        for size in args.sizes:
            namespace = f"target-{size}"
            batch, dense = records("t", texts, sparse, rng, size)
            for i in range(0, len(batch), BATCH):
                loader.index.upsert(batch[i : i + BATCH], namespace=namespace)
            loader.index.optimize()
            floor = NumpyFloor(
                dense,
                [
                    (np.asarray(s["indices"], dtype=np.int64), np.asarray(s["values"], np.float32))
                    for s in (batch[i]["sparse_values"] for i in range(size))
                ],
            )
            for choice in args.reranker:
                # A fresh stack per reranker: its first query is cold (models, snapshot, reranker caches).
                stack = Stack(settings.model_copy(update={"reranker": choice}))
                cold = measure(stack, namespace, questions[:1], floor)
                warm = measure(stack, namespace, questions[1:], floor)
                for phase, times in (("cold", cold), ("warm", warm)):
                    (e50, _), (i50, _), (r50, _), (t50, t95), (f50, _) = (pct(times[k]) for k in times)
                    print(
                        f"{size:>7} {choice:>8} {phase:>5} {e50:>7.1f} {i50:>7.2f} {r50:>7.1f} {t50:>7.1f} "
                        f"{t95:>7.1f} {f50:>7.2f} {i50 / f50:>11.2f} {t50 / 50:>10.2f}",
                        flush=True,
                    )
        print(
            f"\nms; p50 over {len(questions) - 1} warm queries (cold: the first query of a fresh stack); "
            f"alpha {ALPHA}, top {TOP_K} candidates; total = retrieve() end to end, timed separately."
        )


if __name__ == "__main__":
    main()
