"""Fitting without fooling oneself: k-fold by query over precomputed score tables, and weight grids.

The runners (`evals.retrieval`) score every candidate setting on every query once; choosing a
setting and scoring it on held-out queries is then pure array work, kept here so that it can be
tested without a corpus, an index or a model.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from librarian.evaluation.metrics import kfold

NDCG_DEPTH = 10


def held_out_mean(
    per_query: np.ndarray, qids: Sequence[str], k: int, seed: int = 0
) -> tuple[float, list[int]]:
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


def ndcg_columns(docs: Sequence[str], chunk_scores: np.ndarray, rel: dict[str, int]) -> np.ndarray:
    """nDCG@10 of every column of (chunks × M) scores, chunks folded into documents by max.

    One call scores every weight vector of a grid at once, which is what makes the reranker's
    k-fold affordable: the features are computed once per query, never once per weight vector.
    """
    unique = list(dict.fromkeys(docs))
    index = np.array([unique.index(d) for d in docs])
    doc_scores = np.full((len(unique), chunk_scores.shape[1]), -np.inf)
    np.maximum.at(doc_scores, index, chunk_scores)
    gains = np.array([rel.get(d, 0) for d in unique], dtype=np.float64)
    ideal = sorted((g for g in rel.values() if g > 0), reverse=True)[:NDCG_DEPTH]
    idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
    if not idcg or not gains.any():
        return np.zeros(chunk_scores.shape[1])
    top = np.argsort(-doc_scores, axis=0, kind="stable")[:NDCG_DEPTH]
    discounts = 1 / np.log2(np.arange(2, top.shape[0] + 2))
    return (gains[top] * discounts[:, None]).sum(axis=0) / idcg
