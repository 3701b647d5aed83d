"""`librarian eval retrieval`: nDCG@10, Recall@100 and MRR@10 of the configured pipeline and its baselines.

Retrieval runs through `librarian.retrieval.search` (the one core), in stages:

- the configured pipeline (settings' alpha, reranker and floor), timed per query end to end;
- its baselines from the same query embeddings (`evals.alpha_sweep`): dense only (alpha 1), sparse
  only (alpha 0), hybrid (settings' alpha, no rerank); hybrid + local rerank (`evals.rerank_fit`);
  and bm25s over whole documents if installed;
- k-fold by query for everything fitted: alpha (grid 0-1, step 0.05) and the local reranker's
  weights (simplex grid, step 0.1), each chosen on k-1 folds and scored on the held-out fold.
"""

from __future__ import annotations

import time
from typing import Any

from evals.alpha_sweep import ALPHAS, sweep_alphas
from evals.corpus import ORG, Progress
from evals.ranking import DEPTH, Row, doc_ranking, match_paths, score
from evals.rerank_fit import rerank_candidates, rerank_kfold_rows
from librarian.evaluation.bm25 import bm25_ranking
from librarian.evaluation.data import Beir
from librarian.retrieval.reranker import Reranker
from librarian.retrieval.search import SearchOptions, retrieve
from librarian.stack import Stack

PIPELINE_COLUMNS = ["pipeline", "nDCG@10", "Recall@100", "MRR@10", "p50 ms"]
KFOLD_COLUMNS = [
    "fitted",
    "best in sample",
    "in-sample nDCG@10",
    "held-out nDCG@10",
    "no-fit baseline",
    "chosen per fold",
]


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

    alpha = stack.settings.alpha
    qids = list(data.queries)
    configured = make_reranker(stack)
    configured_name = getattr(configured, "name", "none")
    rows = [configured_pipeline(stack, data, configured, configured_name)]
    progress(f"configured pipeline: {len(qids)} queries")
    sweep = sweep_alphas(stack, data)
    progress(f"alpha sweep: {len(ALPHAS)} values")
    rows += sweep.rows(alpha)
    kfold_rows = [sweep.kfold_row(qids, folds, alpha)]
    if rerank:
        fit = rerank_candidates(stack, data, configured, sweep.hybrid_candidates)
        rows.append(fit.row)
        progress("local rerank: features computed")
        kfold_rows += rerank_kfold_rows(fit, qids, folds)
    bm25_row = bm25_baseline(data) if bm25 else None
    if bm25_row is not None:
        rows.append(bm25_row)
    return retrieval_report(stack, data, folds, configured_name, rows, kfold_rows)


def configured_pipeline(stack: Stack, data: Beir, configured: Reranker, name: str) -> Row:
    """What users get, end to end and timed: query embedding, index, rerank, floor."""
    settings = stack.settings
    options = SearchOptions(top_k=DEPTH, alpha=settings.alpha, candidates=DEPTH, floor=settings.score_floor)
    row = Row(f"configured: hybrid a={settings.alpha:g}, rerank={name}", ms=[])
    for qid, query in data.queries.items():
        started = time.perf_counter()
        ranked = retrieve(stack, ORG, query, options, configured)
        row.ms.append(1000 * (time.perf_counter() - started))  # type: ignore[union-attr]
        row.add(score(doc_ranking(match_paths([r.match for r in ranked])), data.qrels[qid]))
    return row


def bm25_baseline(data: Beir) -> Row | None:
    """bm25s over whole documents, or None when it is not installed."""
    ranking = bm25_ranking(data, DEPTH)
    if ranking is None:
        return None
    per_query = (score(ranking[q], data.qrels[q]) for q in data.queries)
    return Row("bm25s (whole documents)", *map(list, zip(*per_query, strict=True)))


def retrieval_report(
    stack: Stack,
    data: Beir,
    folds: int,
    reranker: str,
    rows: list[Row],
    kfold_rows: list[list[Any]],
) -> dict[str, Any]:
    """The report `librarian.evaluation.report` renders as text, JSON or HTML."""
    settings = stack.settings
    return {
        "kind": "retrieval",
        "title": f"librarian eval retrieval: {data.name} ({data.split})",
        "summary": {
            "documents": len(data.corpus),
            "judged queries": len(data.queries),
            "alpha": settings.alpha,
            "candidates": settings.candidates,
            "reranker": reranker,
            "dense model": stack.dense.model_id,
            "sparse model": stack.sparse.model_id,
            "sparse idf": settings.sparse_idf,
            "folds": folds,
        },
        "tables": [
            {
                "name": "pipelines",
                "columns": list(PIPELINE_COLUMNS),
                "rows": [r.cells() for r in rows],
                "chart": "nDCG@10",
                "note": "p50 ms: the configured pipeline end to end (embedding, index, rerank); "
                "the local rerank row: rerank time only.",
            },
            {
                "name": f"{folds}-fold cross-validation by query (nDCG@10)",
                "columns": list(KFOLD_COLUMNS),
                "rows": kfold_rows,
                "chart": "held-out nDCG@10",
                "note": "baseline: hybrid at the configured alpha, no rerank. Held-out: each fold "
                "scored with the setting chosen on the other folds.",
            },
        ],
    }
