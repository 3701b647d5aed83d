"""`librarian eval retrieval`: nDCG@10, Recall@100 and MRR@10 of the configured pipeline and its baselines.

Retrieval runs through `librarian.retrieval.search` (the one core), in stages:

- the configured pipeline (settings' alpha, reranker and floor), timed per query end to end;
- its baselines from the same query embeddings (`evals.alpha_sweep`): dense only (alpha 1), sparse
  only (alpha 0), hybrid (settings' alpha, no rerank); hybrid + local rerank (`evals.rerank_fit`);
  and bm25s over whole documents if installed;
- k-fold by query for everything fitted: alpha (grid 0-1, step 0.05) and the local reranker's
  weights (simplex grid, step 0.1), each chosen on k-1 folds and scored on the held-out fold;
- the multi-hop protocol of HippoRAG: mean recall@2 and @5 over the relevant documents, for the
  configured pipeline and bm25s, so multi-hop figures compare with published ones.
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
from librarian.evaluation.metrics import mean_recall_at
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
RECALL_KS = (2, 5)
RECALL_COLUMNS = ["pipeline", *(f"recall@{k}" for k in RECALL_KS)]


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
    configured_row, configured_ranking = configured_pipeline(stack, data, configured, configured_name)
    rows = [configured_row]
    rankings = {configured_row.name: configured_ranking}
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
    bm25_ranked = bm25_ranking(data, DEPTH) if bm25 else None
    if bm25_ranked is not None:
        rows.append(bm25_baseline(data, bm25_ranked))
        rankings[rows[-1].name] = bm25_ranked
    report = retrieval_report(stack, data, folds, configured_name, rows, kfold_rows)
    report["tables"].append(recall_table(data, rankings))
    return report


def recall_table(data: Beir, rankings: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """Mean recall@2 and @5 per pipeline: the HippoRAG protocol, so multi-hop figures compare."""
    rows = [
        [name, *(mean_recall_at(ranked, data.qrels, k) for k in RECALL_KS)]
        for name, ranked in rankings.items()
    ]
    return {
        "name": "multi-hop protocol (HippoRAG): mean recall@k over the relevant documents",
        "columns": list(RECALL_COLUMNS),
        "rows": rows,
        "chart": "recall@5",
        "note": "per query |relevant in top k| / |relevant| (relevant: qrels grade > 0), averaged over "
        "the judged queries, ranking the whole corpus (for multi-hop sets, all questions' passages pooled).",
    }


def configured_pipeline(
    stack: Stack, data: Beir, configured: Reranker, name: str
) -> tuple[Row, dict[str, list[str]]]:
    """What users get, end to end and timed: query embedding, index, rerank, floor; and its rankings."""
    settings = stack.settings
    options = SearchOptions(top_k=DEPTH, alpha=settings.alpha, candidates=DEPTH, floor=settings.score_floor)
    row = Row(f"configured: hybrid a={settings.alpha:g}, rerank={name}", ms=[])
    rankings: dict[str, list[str]] = {}
    for qid, query in data.queries.items():
        started = time.perf_counter()
        ranked = retrieve(stack, ORG, query, options, configured)
        row.ms.append(1000 * (time.perf_counter() - started))  # type: ignore[union-attr]
        rankings[qid] = doc_ranking(match_paths([r.match for r in ranked]))
        row.add(score(rankings[qid], data.qrels[qid]))
    return row, rankings


def bm25_baseline(data: Beir, ranking: dict[str, list[str]]) -> Row:
    """bm25s over whole documents, from its rankings (`bm25_ranking`, None when bm25s is missing)."""
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
