"""The alpha sweep: dense only, sparse only, hybrid, and alpha fitted by k-fold, from one embedding per query.

Every alpha of the grid is queried with the same query vectors, so the rows differ only by fusion;
the hybrid candidates at the configured alpha are kept for the reranker stage, which reranks them
rather than querying again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evals.corpus import ORG
from evals.ranking import DEPTH, Row, doc_ranking, match_paths, score
from librarian.evaluation.crossval import held_out_mean
from librarian.evaluation.data import Beir
from librarian.index.base import QueryMatch
from librarian.retrieval.search import embed_query
from librarian.stack import Stack

ALPHAS = tuple(round(a * 0.05, 2) for a in range(21))


@dataclass
class AlphaSweep:
    """(queries × alphas × [nDCG@10, Recall@100, MRR@10]) scores, and the configured alpha's candidates."""

    scores: np.ndarray
    hybrid_candidates: dict[str, list[QueryMatch]]

    def row(self, name: str, alpha: float) -> Row:
        """The grid's alpha nearest to `alpha`, as a report row."""
        ai = nearest_alpha(alpha)
        return Row(name, *(list(self.scores[:, ai, m]) for m in range(3)))

    def rows(self, configured_alpha: float) -> list[Row]:
        return [
            self.row("dense only (a=1)", 1.0),
            self.row("sparse only (a=0)", 0.0),
            self.row(f"hybrid a={configured_alpha:g}, no rerank", configured_alpha),
        ]

    def kfold_row(self, qids: list[str], folds: int, configured_alpha: float) -> list[Any]:
        """Alpha chosen on k-1 folds and scored on the held-out one, against the configured alpha."""
        ndcg = self.scores[:, :, 0]
        best = int(np.argmax(ndcg.mean(axis=0)))
        held, chosen = held_out_mean(ndcg, qids, folds)
        return [
            "alpha (grid 0-1 step 0.05)",
            f"{ALPHAS[best]:g}",
            float(ndcg[:, best].mean()),
            held,
            float(ndcg[:, nearest_alpha(configured_alpha)].mean()),
            " ".join(f"{ALPHAS[c]:g}" for c in chosen),
        ]


def nearest_alpha(alpha: float) -> int:
    return min(range(len(ALPHAS)), key=lambda i: abs(ALPHAS[i] - alpha))


def sweep_alphas(stack: Stack, data: Beir) -> AlphaSweep:
    """Query the index at every alpha of the grid, and once more at the configured alpha for the reranker."""
    scores = np.zeros((len(data.queries), len(ALPHAS), 3))
    hybrid_candidates: dict[str, list[QueryMatch]] = {}
    index = stack.index
    for qi, (qid, query) in enumerate(data.queries.items()):
        dense, sparse = embed_query(stack, query, namespace=ORG)
        for ai, alpha in enumerate(ALPHAS):
            matches = index.query(namespace=ORG, vector=dense, sparse_vector=sparse, alpha=alpha, top_k=DEPTH)
            matches = [m for m in matches if m.metadata.get("text")]
            scores[qi, ai] = score(doc_ranking(match_paths(matches)), data.qrels[qid])
        hybrid_candidates[qid] = index.query(
            namespace=ORG, vector=dense, sparse_vector=sparse, alpha=stack.settings.alpha, top_k=DEPTH
        )
    return AlphaSweep(scores, hybrid_candidates)
