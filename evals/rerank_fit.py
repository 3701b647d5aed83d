"""Hybrid + the local reranker, and its weights fitted by k-fold on a simplex grid.

The reranker is built once and its features computed once per query; every weight vector of the
grid is then scored by matrix product (`librarian.evaluation.crossval.ndcg_columns`), so fitting
costs no more model calls than reranking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evals.ranking import Row, doc_ranking, match_paths, score
from librarian.evaluation.crossval import held_out_mean, ndcg_columns, weight_grid
from librarian.evaluation.data import Beir, doc_id_from_path
from librarian.index.base import QueryMatch
from librarian.retrieval.reranker import Reranker
from librarian.stack import Stack

if TYPE_CHECKING:
    from librarian.retrieval.local_rerank import LocalReranker


@dataclass
class RerankFit:
    """The reranked row, and the (queries × grid columns) nDCG@10 table the k-fold chooses from."""

    row: Row
    table: np.ndarray
    grid: np.ndarray


def local_reranker(stack: Stack, configured: Reranker) -> LocalReranker:
    """The configured reranker if it is the local one (its settings are what users run), else a default."""
    from librarian.retrieval.local_rerank import LocalReranker, sentence_embedder

    if isinstance(configured, LocalReranker):
        return configured
    return LocalReranker(sentence_embedder(stack.dense))


def rerank_candidates(
    stack: Stack, data: Beir, configured: Reranker, candidates: dict[str, list[QueryMatch]]
) -> RerankFit:
    """Rerank each query's hybrid candidates (timed), and score every grid weight vector on them."""
    from librarian.retrieval.local_rerank import FEATURES, normalise

    settings = stack.settings
    local = local_reranker(stack, configured)
    grid = weight_grid(len(FEATURES))
    table = np.zeros((len(data.queries), grid.shape[1]))
    reranked = Row(f"hybrid a={settings.alpha:g} + local rerank", ms=[])
    for qi, qid in enumerate(data.queries):
        with_text = [m for m in candidates[qid] if m.metadata.get("text")]
        head, tail = with_text[: settings.candidates], with_text[settings.candidates :]
        if not head:
            reranked.add((0.0, 0.0, 0.0))
            continue
        started = time.perf_counter()
        features = local.features(data.queries[qid], head)
        order = local.rerank(data.queries[qid], head, len(head))
        reranked.ms.append(1000 * (time.perf_counter() - started))  # type: ignore[union-attr]
        reranked.add(score(doc_ranking(match_paths([r.match for r in order] + tail)), data.qrels[qid]))
        normalised, _ = normalise(features)
        docs = [doc_id_from_path(p) for p in match_paths(head)]
        table[qi] = ndcg_columns(docs, normalised @ grid, data.qrels[qid])
    return RerankFit(reranked, table, grid)


def rerank_kfold_rows(fit: RerankFit, qids: list[str], folds: int) -> list[list[Any]]:
    """Weights chosen on k-1 folds and scored on the held-out one; the shipped weights beside them."""
    from librarian.retrieval.local_rerank import DEFAULT_WEIGHTS, FEATURES

    table, grid = fit.table, fit.grid
    default_col = int(np.argmin(np.abs(grid - DEFAULT_WEIGHTS.vector()[:, None]).sum(axis=0)))
    fused_col = int(np.argmax(grid[FEATURES.index("fused")]))
    held, chosen = held_out_mean(table, qids, folds)
    best = int(np.argmax(table.mean(axis=0)))

    def weights(col: int) -> str:
        return ",".join(f"{f}={w:.1f}" for f, w in zip(FEATURES, grid[:, col], strict=True) if w)

    baseline = float(table[:, fused_col].mean())
    shipped = float(table[:, default_col].mean())
    return [
        [
            "local rerank weights (grid step 0.1)",
            weights(best),
            float(table[:, best].mean()),
            held,
            baseline,
            " | ".join(weights(c) for c in chosen),
        ],
        [
            "local rerank, shipped weights",
            weights(default_col),
            shipped,
            shipped,
            baseline,
            "fixed (fitted earlier on this split)",
        ],
    ]
