"""`librarian eval`: retrieval and answer quality on the user's own judged data, through the product.

    from evals.runner import evaluate_retrieval, evaluate_answers, ingested
    from librarian.evaluation.data import load_beir
    data = load_beir(Path("my-beir"), "test")
    with ingested(data, load_settings()) as stack:
        report = evaluate_retrieval(stack, data)

Every corpus document becomes one small text file, uploaded and ingested into a fresh organization by
`DocumentService` (the real parse, chunk, embed and upsert), so the figures are those of what users
run. A document scores as its best chunk. Retrieval runs through `librarian.retrieval.search` (the one core):

- the configured pipeline (settings' alpha, reranker and floor), timed per query end to end;
- its baselines from the same query embeddings: dense only (alpha 1), sparse only (alpha 0), hybrid
  (settings' alpha, no rerank), hybrid + local rerank, and bm25s over whole documents if installed;
- k-fold by query for everything fitted: alpha (grid 0-1, step 0.05) and the local reranker's
  weights (simplex grid, step 0.1), each chosen on k-1 folds and scored on the held-out fold.

Recall@100 counts the documents of the top 100 chunks.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from librarian.evaluation.data import Beir, QAItem, doc_id_from_path, filename_for
from librarian.evaluation.metrics import (
    answer_contained,
    exact_match,
    kfold,
    mean,
    mrr_at,
    ndcg_at,
    recall_at,
    token_f1,
)
from librarian.index.base import QueryMatch
from librarian.settings import Settings
from librarian.stack import Stack
from librarian.retrieval.search import SearchOptions, embed_query, retrieve

ORG = "eval"
ALPHAS = tuple(round(a * 0.05, 2) for a in range(21))
DEPTH = 100
Progress = Callable[[str], None]


# ----------------------------------------------------------------------------------------- ingest


def index_key(data: Beir, settings: Settings) -> str:
    """Corpus + everything that shapes the index (parser output version, chunking, models)."""
    h = hashlib.sha256()
    for doc_id, text in data.corpus.items():
        h.update(doc_id.encode() + b"\0" + text.encode() + b"\0")
    stack = Stack(settings)
    shaping = (settings.chunk_size, stack.parser.cache_key, stack.contract.describe())
    h.update(repr(shaping).encode())
    return h.hexdigest()[:16]


def ingest(data: Beir, stack: Stack, progress: Progress = print) -> int:
    """Upload and ingest every document through DocumentService; returns the chunk count."""
    import sqlite3
    from concurrent.futures import ThreadPoolExecutor

    from langgraph.checkpoint.sqlite import SqliteSaver

    from services.documents import DocumentService

    data_dir = stack.settings.data_dir
    saver = SqliteSaver(sqlite3.connect(data_dir / "eval-checkpoints.sqlite", check_same_thread=False))
    service = DocumentService(stack, saver)
    started = time.perf_counter()
    paths = [service.upload(ORG, filename_for(i), text.encode()) for i, text in data.corpus.items()]
    with ThreadPoolExecutor(max_workers=stack.settings.ingest_concurrency) as pool:
        statuses = list(pool.map(lambda p: service.ingest(ORG, p), paths))
    bad = [s for s in statuses if s.status != "indexed"]
    if bad:
        progress(f"{len(bad)} documents not indexed, e.g. {bad[0].path}: {bad[0].status} {bad[0].reason}")
    chunks = sum(s.chunkCount or 0 for s in statuses)
    seconds = time.perf_counter() - started
    progress(
        f"ingested {len(paths)} documents as {chunks} chunks in {seconds:.0f} s ({chunks / seconds:.1f}/s)"
    )
    return chunks


@contextmanager
def ingested(
    data: Beir, settings: Settings, *, reuse: bool = False, progress: Progress = print
) -> Iterator[Stack]:
    """A stack over a data directory holding the corpus in organization `eval`.

    Fresh in a temporary directory, or with `reuse` kept under the temp dir keyed by `index_key`.
    """
    if not reuse:
        with tempfile.TemporaryDirectory(prefix="librarian-eval-") as tmp:
            stack = Stack(settings.model_copy(update={"data_dir": Path(tmp)}))
            ingest(data, stack, progress)
            yield stack
        return
    cache = Path(tempfile.gettempdir()) / f"librarian-eval-index-{index_key(data, settings)}"
    stack = Stack(settings.model_copy(update={"data_dir": cache}))
    if (cache / "complete").exists():
        progress(f"reusing the ingested index at {cache}")
    else:
        shutil.rmtree(cache, ignore_errors=True)  # an interrupted earlier ingest
        cache.mkdir(parents=True)
        ingest(data, stack, progress)
        (cache / "complete").touch()
    yield stack


# ----------------------------------------------------------------------------------------- retrieval


def doc_ranking(paths: list[str]) -> list[str]:
    """Documents best first, each at the rank of its best chunk."""
    return list(dict.fromkeys(doc_id_from_path(p) for p in paths))


def _paths(matches: list[QueryMatch]) -> list[str]:
    return [str(m.metadata.get("path", "")) for m in matches]


@dataclass
class Row:
    name: str
    ndcg: list[float]
    recall: list[float]
    mrr: list[float]
    ms: list[float] | None = None

    def cells(self) -> list[Any]:
        p50 = statistics.median(self.ms) if self.ms else None
        return [self.name, mean(self.ndcg), mean(self.recall), mean(self.mrr), p50]


def _score(ranked: list[str], rel: dict[str, int]) -> tuple[float, float, float]:
    return ndcg_at(ranked, rel), recall_at(ranked, rel, DEPTH), mrr_at(ranked, rel)


def _cv(per_query: np.ndarray, qids: list[str], k: int, seed: int = 0) -> tuple[float, list[int]]:
    """Held-out mean of a (queries × settings) nDCG table: pick the best column on k-1 folds, score the
    fold left out. Returns (held-out mean over all queries, chosen column per fold)."""
    position = {q: i for i, q in enumerate(qids)}
    held, chosen = np.zeros(len(qids)), []
    for train, test in kfold(qids, k, seed):
        tr, te = [position[q] for q in train], [position[q] for q in test]
        best = int(np.argmax(per_query[tr].mean(axis=0)))
        chosen.append(best)
        held[te] = per_query[te, best]
    return float(held.mean()), chosen


def weight_grid(features: int, step: float = 0.1) -> np.ndarray:
    """Every weight vector of a simplex grid, as a (features × M) matrix whose columns sum to 1."""
    ticks = round(1 / step)
    rows = [c for c in itertools.product(range(ticks + 1), repeat=features - 1) if sum(c) <= ticks]
    return np.array([[*c, ticks - sum(c)] for c in rows], dtype=np.float64).T / ticks


def _ndcg_columns(docs: list[str], chunk_scores: np.ndarray, rel: dict[str, int]) -> np.ndarray:
    """nDCG@10 of every column of (chunks × M) scores, chunks folded into documents by max."""
    unique = list(dict.fromkeys(docs))
    index = np.array([unique.index(d) for d in docs])
    doc_scores = np.full((len(unique), chunk_scores.shape[1]), -np.inf)
    np.maximum.at(doc_scores, index, chunk_scores)
    gains = np.array([rel.get(d, 0) for d in unique], dtype=np.float64)
    ideal = sorted((g for g in rel.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
    if not idcg or not gains.any():
        return np.zeros(chunk_scores.shape[1])
    top = np.argsort(-doc_scores, axis=0, kind="stable")[:10]
    discounts = 1 / np.log2(np.arange(2, top.shape[0] + 2))
    return (gains[top] * discounts[:, None]).sum(axis=0) / idcg


def bm25_ranking(data: Beir) -> dict[str, list[str]] | None:
    """bm25s over whole documents (same Snowball stemmer and English stop words), or None if absent."""
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return None
    ids = list(data.corpus)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    corpus_tokens = bm25s.tokenize(
        list(data.corpus.values()), stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever.index(corpus_tokens, show_progress=False)
    out = {}
    for qid, text in data.queries.items():
        tokens = bm25s.tokenize(
            [text], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
        )
        scores = retriever.get_scores(tokens[0])
        out[qid] = [ids[j] for j in np.argsort(-scores, kind="stable")[:DEPTH]]
    return out


def evaluate_retrieval(
    stack: Stack,
    data: Beir,
    *,
    folds: int = 5,
    rerank: bool = True,
    bm25: bool = True,
    progress: Progress = print,
) -> dict[str, Any]:
    """nDCG@10, Recall@100, MRR@10 for the configured pipeline and its baselines, and k-fold figures."""
    from librarian.retrieval.rerankers import make_reranker

    settings = stack.settings
    qids = list(data.queries)
    configured = make_reranker(stack)
    configured_name = getattr(configured, "name", "none")
    options = SearchOptions(top_k=DEPTH, alpha=settings.alpha, candidates=DEPTH, floor=settings.score_floor)

    # 1. The configured pipeline, end to end, timed (query embedding, index, rerank, floor).
    product = Row(f"configured: hybrid a={settings.alpha:g}, rerank={configured_name}", [], [], [], [])
    for qid, query in data.queries.items():
        started = time.perf_counter()
        ranked = retrieve(stack, ORG, query, options, configured)
        product.ms.append(1000 * (time.perf_counter() - started))  # type: ignore[union-attr]
        scores = _score(doc_ranking(_paths([r.match for r in ranked])), data.qrels[qid])
        for values, value in zip((product.ndcg, product.recall, product.mrr), scores, strict=True):
            values.append(value)
    progress(f"configured pipeline: {len(qids)} queries")

    # 2. The alpha sweep from one embedding per query: dense only, sparse only, hybrid, and alpha's k-fold.
    sweep = np.zeros((len(qids), len(ALPHAS), 3))
    hybrid_candidates: dict[str, list[QueryMatch]] = {}
    index = stack.index
    for qi, (qid, query) in enumerate(data.queries.items()):
        dense, sparse = embed_query(stack, query, namespace=ORG)
        for ai, alpha in enumerate(ALPHAS):
            matches = index.query(namespace=ORG, vector=dense, sparse_vector=sparse, alpha=alpha, top_k=DEPTH)
            matches = [m for m in matches if m.metadata.get("text")]
            sweep[qi, ai] = _score(doc_ranking(_paths(matches)), data.qrels[qid])
        hybrid_candidates[qid] = index.query(
            namespace=ORG, vector=dense, sparse_vector=sparse, alpha=settings.alpha, top_k=DEPTH
        )
    progress(f"alpha sweep: {len(ALPHAS)} values")

    def sweep_row(name: str, alpha: float) -> Row:
        ai = min(range(len(ALPHAS)), key=lambda i: abs(ALPHAS[i] - alpha))
        return Row(name, *(list(sweep[:, ai, m]) for m in range(3)))

    rows = [
        product,
        sweep_row("dense only (a=1)", 1.0),
        sweep_row("sparse only (a=0)", 0.0),
        sweep_row(f"hybrid a={settings.alpha:g}, no rerank", settings.alpha),
    ]
    best_alpha = int(np.argmax(sweep[:, :, 0].mean(axis=0)))
    alpha_held, alpha_chosen = _cv(sweep[:, :, 0], qids, folds)
    fused_ai = min(range(len(ALPHAS)), key=lambda i: abs(ALPHAS[i] - settings.alpha))
    kfold_rows: list[list[Any]] = [
        [
            "alpha (grid 0-1 step 0.05)",
            f"{ALPHAS[best_alpha]:g}",
            float(sweep[:, best_alpha, 0].mean()),
            alpha_held,
            float(sweep[:, fused_ai, 0].mean()),
            " ".join(f"{ALPHAS[c]:g}" for c in alpha_chosen),
        ]
    ]

    # 3. Hybrid + the local reranker (built once), and its weights' k-fold.
    if rerank:
        from librarian.retrieval.local_rerank import DEFAULT_WEIGHTS, FEATURES, LocalReranker, normalise, sentence_embedder

        local = (
            configured
            if isinstance(configured, LocalReranker)
            else LocalReranker(sentence_embedder(stack.dense))
        )
        grid = weight_grid(len(FEATURES))
        default_col = int(np.argmin(np.abs(grid - DEFAULT_WEIGHTS.vector()[:, None]).sum(axis=0)))
        fused_col = int(np.argmax(grid[FEATURES.index("fused")]))
        table = np.zeros((len(qids), grid.shape[1]))
        reranked = Row(f"hybrid a={settings.alpha:g} + local rerank", [], [], [], [])
        for qi, qid in enumerate(qids):
            candidates = [m for m in hybrid_candidates[qid] if m.metadata.get("text")]
            head, tail = candidates[: settings.candidates], candidates[settings.candidates :]
            if not head:
                for values in (reranked.ndcg, reranked.recall, reranked.mrr):
                    values.append(0.0)
                continue
            started = time.perf_counter()
            features = local.features(data.queries[qid], head)
            order = local.rerank(data.queries[qid], head, len(head))
            reranked.ms.append(1000 * (time.perf_counter() - started))  # type: ignore[union-attr]
            ranked = doc_ranking(_paths([r.match for r in order] + tail))
            for values, value in zip(
                (reranked.ndcg, reranked.recall, reranked.mrr), _score(ranked, data.qrels[qid]), strict=True
            ):
                values.append(value)
            normalised, _ = normalise(features)
            docs = [doc_id_from_path(p) for p in _paths(head)]
            table[qi] = _ndcg_columns(docs, normalised @ grid, data.qrels[qid])
        rows.append(reranked)
        progress("local rerank: features computed")
        held, chosen = _cv(table, qids, folds)
        best = int(np.argmax(table.mean(axis=0)))

        def weights(col: int) -> str:
            return ",".join(f"{f}={w:.1f}" for f, w in zip(FEATURES, grid[:, col], strict=True) if w)

        kfold_rows.append(
            [
                "local rerank weights (grid step 0.1)",
                weights(best),
                float(table[:, best].mean()),
                held,
                float(table[:, fused_col].mean()),
                " | ".join(weights(c) for c in chosen),
            ]
        )
        kfold_rows.append(
            [
                "local rerank, shipped weights",
                weights(default_col),
                float(table[:, default_col].mean()),
                float(table[:, default_col].mean()),
                float(table[:, fused_col].mean()),
                "fixed (fitted earlier on this split)",
            ]
        )

    if bm25:
        bm = bm25_ranking(data)
        if bm is not None:
            rows.append(
                Row(
                    "bm25s (whole documents)",
                    *map(list, zip(*(_score(bm[q], data.qrels[q]) for q in qids), strict=True)),
                )
            )

    return {
        "kind": "retrieval",
        "title": f"librarian eval retrieval: {data.name} ({data.split})",
        "summary": {
            "documents": len(data.corpus),
            "judged queries": len(qids),
            "alpha": settings.alpha,
            "candidates": settings.candidates,
            "reranker": configured_name,
            "dense model": stack.dense.model_id,
            "sparse model": stack.sparse.model_id,
            "sparse idf": settings.sparse_idf,
            "folds": folds,
        },
        "tables": [
            {
                "name": "pipelines",
                "columns": ["pipeline", "nDCG@10", "Recall@100", "MRR@10", "p50 ms"],
                "rows": [r.cells() for r in rows],
                "chart": "nDCG@10",
                "note": "p50 ms: the configured pipeline end to end (embedding, index, rerank); "
                "the local rerank row: rerank time only.",
            },
            {
                "name": f"{folds}-fold cross-validation by query (nDCG@10)",
                "columns": [
                    "fitted",
                    "best in sample",
                    "in-sample nDCG@10",
                    "held-out nDCG@10",
                    "no-fit baseline",
                    "chosen per fold",
                ],
                "rows": kfold_rows,
                "chart": "held-out nDCG@10",
                "note": "baseline: hybrid at the configured alpha, no rerank. Held-out: each fold "
                "scored with the setting chosen on the other folds.",
            },
        ],
    }


# ----------------------------------------------------------------------------------------- answers


def _cited(answer: str, sources: list[dict[str, Any]], citations: list[dict[str, Any]] | None) -> list[str]:
    """Ids of the sources the answer cites (from its citation records, else from its `[n]` markers)."""
    if citations:
        return list(dict.fromkeys(i for c in citations for i in c.get("source_ids", []) if i))
    numbers = {
        int(n)
        for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", answer)
        for n in re.split(r"\s*,\s*", group)
    }
    return [sources[n - 1]["id"] for n in sorted(numbers) if 1 <= n <= len(sources)]


def evaluate_answers(
    stack: Stack,
    items: list[QAItem],
    *,
    name: str = "qa",
    progress: Progress = print,
    graph_routing: bool = True,
) -> dict[str, Any]:
    """Answer EM/F1, supporting documents among cited sources, citation precision/recall.

    The agent answers each question as users get it (the configured chat model, or extractive
    answers offline). Citation records are the agent's `citations` (librarian.answers.citations); when a graph
    does not produce them, they are computed from the answer and its sources the same way.
    `graph_routing=False` keeps the offline agent on search even when the organization has a graph.
    """
    from langchain_core.messages import HumanMessage

    from graphs.agent import build_agent

    try:
        from librarian.answers.citations import verify_answer
    except ImportError:  # citations not available: precision/recall are reported as absent
        verify_answer = None

    agent = build_agent(lambda: stack, graph_routing=graph_routing)
    per: dict[str, list[float]] = {
        k: [] for k in ("em", "f1", "contains", "support_cited", "support_retrieved")
    }
    sentences_supported, sentences, evidence_supported, evidence = 0, 0, 0, 0
    modes: dict[str, int] = {}  # offline: search / local / global, as the mode chooser routed each question
    examples = []
    for n, item in enumerate(items, start=1):
        started = time.perf_counter()
        state = agent.invoke({"messages": [HumanMessage(item.question)]}, context={"organization_id": ORG})
        seconds = time.perf_counter() - started
        answer = str(state["messages"][-1].content)
        mode = state["messages"][-1].response_metadata.get("retrieval_mode", "agent's choice")
        modes[mode] = modes.get(mode, 0) + 1
        sources = list(state.get("sources") or [])
        citations = state.get("citations")
        if citations is None and verify_answer is not None:
            citations = verify_answer(answer, sources)
        cited_ids = _cited(answer, sources, citations)
        by_id = {s["id"]: s for s in sources}
        cited_docs = {doc_id_from_path(by_id[i]["path"]) for i in cited_ids if i in by_id}
        retrieved_docs = {doc_id_from_path(s["path"]) for s in sources}
        supporting = set(item.supporting_doc_ids)
        per["em"].append(exact_match(answer, item.answers))
        per["f1"].append(token_f1(answer, item.answers))
        per["contains"].append(answer_contained(answer, item.answers))
        if supporting:
            per["support_cited"].append(len(cited_docs & supporting) / len(supporting))
            per["support_retrieved"].append(len(retrieved_docs & supporting) / len(supporting))
        for c in citations or []:
            if c.get("markers"):
                sentences += 1
                sentences_supported += bool(c.get("supported"))
            for ev in c.get("evidence", []):
                evidence += 1
                evidence_supported += bool(ev.get("supported"))
        if len(examples) < 5:
            examples.append(
                [item.question, item.answers[0] if item.answers else "", answer[:300], f"{seconds:.1f}"]
            )
        if n % 25 == 0:
            progress(f"answered {n}/{len(items)}")
    metrics = {
        "answer EM": mean(per["em"]),
        "answer F1": mean(per["f1"]),
        "gold answer contained": mean(per["contains"]),
        "supporting docs among cited sources (recall)": mean(per["support_cited"]),
        "supporting docs among retrieved sources (recall)": mean(per["support_retrieved"]),
        "citation recall (cited sentences supported)": sentences_supported / sentences if sentences else None,
        "citation precision (citations supporting)": evidence_supported / evidence if evidence else None,
    }
    return {
        "kind": "answers",
        "title": f"librarian eval answers: {name}",
        "summary": {
            "questions": len(items),
            "answers by": stack.settings.chat_model or "extractive (no chat model)",
            "reranker": stack.settings.reranker,
            "answered from": ", ".join(f"{mode} {n}" for mode, n in sorted(modes.items())),
        },
        "metrics": metrics,
        "tables": [
            {
                "name": "answers",
                "columns": ["metric", "value"],
                "rows": [[k, v] for k, v in metrics.items()],
                "chart": "value",
            },
            {"name": "first answers", "columns": ["question", "gold", "answer", "seconds"], "rows": examples},
        ],
    }
