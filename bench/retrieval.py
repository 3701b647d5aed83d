"""End-to-end retrieval quality on a BEIR folder, through the real ingest graph and the real search path.

    python bench/retrieval.py --data DIR [--split train] [--limit-queries N] [--reuse-index]
                              [--tune] [--deep N]

Why end to end: the numbers that matter are those of what users run. Each corpus document becomes one
small text file, uploaded and ingested into a fresh organization by `DocumentService` (parse, chunk,
embed dense + sparse, upsert; SQLite checkpoints; two ingest threads), and every judged query goes
through `tools.retrieval.search`. Chunks map back to their document (the file name carries the id); a
document scores as its best chunk.

Printed for one run: the default pipeline (settings' alpha + the local reranker) and the baselines
sparse-only (alpha=0), dense-only (alpha=1) and hybrid without rerank (settings' alpha).
  - nDCG@10 and MRR@10 come from the product's configuration: `candidates` from settings (40), the
    reranker's own floor applied, and every surviving candidate returned so ten documents can be ranked.
  - Recall@100 needs 100 documents, so it comes from a second search per query with candidates=100,
    top_k=100 and no floor; for the reranked pipeline the reranker then orders all 100 candidates.

`--reuse-index` keeps the ingested data directory under /tmp keyed by a hash of the corpus and of every
setting that shapes the index, to speed up tuning iterations; without it nothing is reused. `--tune`
grid-searches the local reranker's weights on this folder (use a dev split, never the test split).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import math
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from graphs.documents import DocumentService  # noqa: E402
from librarian.settings import Settings, load_settings  # noqa: E402
from librarian.stack import Stack  # noqa: E402
from tools.local_rerank import FEATURES, LocalReranker, normalise, sentence_embedder  # noqa: E402
from tools.rerank_base import Reranker  # noqa: E402
from tools.rerankers import NoReranker  # noqa: E402
from tools.retrieval import SearchOptions, candidates_for, search  # noqa: E402

ORG = "bench"
NO_FLOOR = float("-inf")
_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,150}")


# ----------------------------------------------------------------------------------------- data


@dataclass
class Beir:
    corpus: dict[str, str]  # doc id -> "title\n\ntext"
    queries: dict[str, str]  # judged queries only
    qrels: dict[str, dict[str, int]]


def load_beir(folder: Path, split: str, limit_queries: int | None) -> Beir:
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / f"{split}.tsv").open() as f:
        for row in csv.DictReader(f, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    corpus = {}
    with (folder / "corpus.jsonl").open() as f:
        for line in f:
            d = json.loads(line)
            title, text = (d.get("title") or "").strip(), (d.get("text") or "").strip()
            corpus[str(d["_id"])] = f"{title}\n\n{text}" if title else text
    queries = {}
    with (folder / "queries.jsonl").open() as f:
        for line in f:
            q = json.loads(line)
            if str(q["_id"]) in qrels:
                queries[str(q["_id"])] = q["text"]
    if limit_queries:
        queries = dict(itertools.islice(queries.items(), limit_queries))
    return Beir(corpus, queries, qrels)


def filename_for(doc_id: str) -> str:
    """Readable when the id is a safe file name, hex otherwise; `doc_id_from_path` inverts both."""
    if _SAFE_ID.fullmatch(doc_id):
        return f"d-{doc_id}.txt"
    return f"h-{doc_id.encode().hex()}.txt"


def doc_id_from_path(path: str) -> str:
    name = path.rsplit("/", 1)[-1].removesuffix(".txt")
    kind, _, rest = name.partition("-")
    return bytes.fromhex(rest).decode() if kind == "h" else rest


# ----------------------------------------------------------------------------------------- ingest


def index_key(data: Beir, settings: Settings) -> str:
    h = hashlib.sha256()
    for doc_id, text in data.corpus.items():
        h.update(doc_id.encode() + b"\0" + text.encode() + b"\0")
    # The parser's cache key carries its output version: a parser change must not reuse old chunks.
    parser_key = Stack(settings).parser.cache_key
    shaping = (settings.chunk_size, settings.dense_embedder, settings.sparse_embedder, parser_key)
    h.update(repr(shaping).encode())
    return h.hexdigest()[:16]


def ingest(data: Beir, data_dir: Path, stack: Stack) -> tuple[int, float]:
    """Upload and ingest every document through DocumentService; returns (chunks, seconds)."""
    saver = SqliteSaver(sqlite3.connect(data_dir / "bench-checkpoints.sqlite", check_same_thread=False))
    service = DocumentService(stack, saver)
    started = time.perf_counter()
    paths = [service.upload(ORG, filename_for(i), text.encode()) for i, text in data.corpus.items()]
    with ThreadPoolExecutor(max_workers=2) as pool:
        statuses = list(pool.map(lambda p: service.ingest(ORG, p), paths))
    bad = [s for s in statuses if s.status != "indexed"]
    if bad:
        print(f"  {len(bad)} documents not indexed, e.g. {bad[0].path}: {bad[0].status} {bad[0].reason}")
    return sum(s.chunkCount for s in statuses), time.perf_counter() - started


def ingest_into(data: Beir, base: Settings, data_dir: Path) -> Stack:
    data_dir.mkdir(parents=True, exist_ok=True)
    stack = Stack(base.model_copy(update={"data_dir": data_dir}))
    chunks, seconds = ingest(data, data_dir, stack)
    print(
        f"ingested {len(data.corpus)} documents as {chunks} chunks in {seconds:.0f} s "
        f"({chunks / seconds:.1f} chunks/s)"
    )
    return stack


@contextmanager
def ingested(data: Beir, base: Settings, reuse: bool) -> Iterator[Stack]:
    """A stack over a data directory holding the ingested corpus (fresh, or reused with --reuse-index)."""
    if not reuse:
        with tempfile.TemporaryDirectory(prefix="librarian-bench-") as tmp:
            yield ingest_into(data, base, Path(tmp))
        return
    cache = Path(tempfile.gettempdir()) / f"librarian-bench-index-{index_key(data, base)}"
    if (cache / "complete").exists():
        print(f"reusing the ingested index at {cache}")
        yield Stack(base.model_copy(update={"data_dir": cache}))
        return
    shutil.rmtree(cache, ignore_errors=True)  # an interrupted earlier ingest
    stack = ingest_into(data, base, cache)
    (cache / "complete").touch()
    yield stack


# ----------------------------------------------------------------------------------------- metrics


def doc_ranking(sources: list[dict]) -> list[str]:
    """Documents best first, each scored by its best chunk (sources arrive best first)."""
    seen: dict[str, None] = {}
    for s in sources:
        seen.setdefault(doc_id_from_path(s["path"]), None)
    return list(seen)


def ndcg_at_10(ranked: list[str], rel: dict[str, int]) -> float:
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted((g for g in rel.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def mrr_at_10(ranked: list[str], rel: dict[str, int]) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if rel.get(d, 0) > 0), 0.0)


def recall_at_100(ranked: list[str], rel: dict[str, int]) -> float:
    relevant = {d for d, g in rel.items() if g > 0}
    return len(relevant & set(ranked[:100])) / len(relevant) if relevant else 0.0


# ----------------------------------------------------------------------------------------- runs


@dataclass
class Pipeline:
    name: str
    alpha: float
    reranker: Reranker | None  # None: the fused order, as search() does without a reranker


@dataclass
class Scores:
    ndcg: float
    recall: float
    mrr: float
    p50_ms: float


def run(stack: Stack, data: Beir, pipe: Pipeline) -> Scores:
    candidates = stack.settings.candidates
    at10 = SearchOptions(top_k=candidates, alpha=pipe.alpha, candidates=candidates, floor=None)
    at100 = SearchOptions(top_k=100, alpha=pipe.alpha, candidates=100, floor=NO_FLOOR)
    ndcgs, mrrs, recalls, times = [], [], [], []
    for qid, query in data.queries.items():
        rel = data.qrels[qid]
        started = time.perf_counter()
        ranked = doc_ranking(search(stack, ORG, query, at10, pipe.reranker)["sources"])
        times.append(time.perf_counter() - started)
        ndcgs.append(ndcg_at_10(ranked, rel))
        mrrs.append(mrr_at_10(ranked, rel))
        if pipe.reranker is not None or candidates < 100:
            ranked = doc_ranking(search(stack, ORG, query, at100, pipe.reranker)["sources"])
        recalls.append(recall_at_100(ranked, rel))
    return Scores(
        statistics.fmean(ndcgs),
        statistics.fmean(recalls),
        statistics.fmean(mrrs),
        1000 * statistics.median(times),
    )


def weight_grid(step: float, features: int = len(FEATURES)) -> np.ndarray:
    """Every weight vector on a simplex grid (FEATURES order), as a (features × M) matrix.

    The fused weight takes the remainder, so every column sums to 1.
    """
    ticks = round(1 / step)
    fused = FEATURES.index("fused")
    rows = []
    for free in itertools.product(range(ticks + 1), repeat=features - 1):
        if sum(free) <= ticks:
            row = list(free)
            row.insert(fused, ticks - sum(free))
            rows.append(row)
    return np.array(rows, dtype=np.float64).T / ticks


def tune(stack: Stack, data: Beir, reranker: LocalReranker, step: float = 0.1) -> None:
    """Grid over the local reranker's weights on features computed once per query (settings' candidates).

    Every weight vector is scored at once per query: normalised features (n × F) @ weights (F × M),
    chunks folded into documents by max, then nDCG@10 per column.
    """
    options = SearchOptions.from_settings(stack)
    grid = weight_grid(step)
    totals = np.zeros(grid.shape[1])
    started = time.perf_counter()
    for qid, query in data.queries.items():
        matches = candidates_for(stack, ORG, query, options)
        if not matches:
            continue
        docs = [doc_id_from_path(str(m.metadata.get("path", ""))) for m in matches]
        unique = list(dict.fromkeys(docs))
        normalised, _ = normalise(reranker.features(query, matches))
        chunk_scores = normalised @ grid  # (chunks × M)
        doc_scores = np.full((len(unique), grid.shape[1]), -np.inf)
        for row, doc in enumerate(docs):
            j = unique.index(doc)
            doc_scores[j] = np.maximum(doc_scores[j], chunk_scores[row])
        rel = data.qrels[qid]
        gains = np.array([rel.get(d, 0) for d in unique], dtype=np.float64)
        ideal = sorted((g for g in rel.values() if g > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        if not idcg or not gains.any():
            continue
        top = np.argsort(-doc_scores, axis=0, kind="stable")[:10]  # (≤10 × M)
        discounts = 1 / np.log2(np.arange(2, top.shape[0] + 2))
        totals += (gains[top] * discounts[:, None]).sum(axis=0) / idcg
    means = totals / len(data.queries)
    print(
        f"\ntuned on {len(data.queries)} queries in {time.perf_counter() - started:.0f} s; "
        f"features {FEATURES}; best weights:"
    )
    for col in np.argsort(-means, kind="stable")[:12]:
        print(
            f"  nDCG@10 {means[col]:.4f}  "
            + " ".join(f"{f}={w:.2f}" for f, w in zip(FEATURES, grid[:, col], strict=True))
        )
    fused_only = int(np.argmax(grid[FEATURES.index("fused")]))
    default = np.argmin(np.abs(grid - reranker.weights.vector()[:, None]).sum(axis=0))
    print(
        f"  fused only (the no-rerank order): {means[fused_only]:.4f}; current default: {means[default]:.4f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)"
    )
    parser.add_argument("--split", default="test", help="qrels/SPLIT.tsv (default: test)")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--reuse-index", action="store_true", help="keep/reuse the ingested index under /tmp")
    parser.add_argument("--tune", action="store_true", help="grid-search the local reranker's weights")
    parser.add_argument(
        "--deep",
        type=int,
        default=None,
        help="candidates given sentence/token signals (default: the reranker's; 0: all)",
    )
    args = parser.parse_args(argv)

    data = load_beir(args.data, args.split, args.limit_queries)
    settings = load_settings()
    print(
        f"{args.data.name} ({args.split}): {len(data.corpus)} documents, {len(data.queries)} judged queries; "
        f"alpha={settings.alpha}, candidates={settings.candidates}"
    )
    with ingested(data, settings, args.reuse_index) as stack:
        deep = {} if args.deep is None else {"deep": args.deep or None}
        local = LocalReranker(sentence_embedder(stack.dense), **deep)
        if args.tune:
            tune(stack, data, local)
            return
        pipelines = [
            Pipeline(f"default: hybrid a={settings.alpha} + local rerank", settings.alpha, local),
            Pipeline("sparse only (a=0)", 0.0, None),
            Pipeline("dense only (a=1)", 1.0, None),
            Pipeline(f"hybrid a={settings.alpha}, no rerank", settings.alpha, NoReranker()),
        ]
        print(f"\n{'pipeline':<40} {'nDCG@10':>8} {'Recall@100':>10} {'MRR@10':>8} {'p50 ms':>8}")
        results: dict[str, Scores] = {}
        for pipe in pipelines:
            s = run(stack, data, pipe)
            results[pipe.name] = s
            print(
                f"{pipe.name:<40} {s.ndcg:>8.4f} {s.recall:>10.4f} {s.mrr:>8.4f} {s.p50_ms:>8.1f}", flush=True
            )
        default = results[pipelines[0].name]
        best_base = max(results[p.name].ndcg for p in pipelines[1:])
        print(f"\ndefault / best baseline nDCG@10: {default.ndcg / best_base:.3f}")


if __name__ == "__main__":
    main()
