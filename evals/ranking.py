"""What every retrieval stage shares: chunks folded into documents, the three scores, a report row.

A document scores as its best chunk, and Recall@100 counts the documents of the top 100 chunks.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from librarian.evaluation.data import doc_id_from_path
from librarian.evaluation.metrics import mean, mrr_at, ndcg_at, recall_at
from librarian.index.base import QueryMatch

DEPTH = 100


def doc_ranking(paths: Iterable[str]) -> list[str]:
    """Documents best first, each at the rank of its best chunk."""
    return list(dict.fromkeys(doc_id_from_path(p) for p in paths))


def match_paths(matches: Iterable[QueryMatch]) -> list[str]:
    return [str(m.metadata.get("path", "")) for m in matches]


def score(ranked: list[str], rel: dict[str, int]) -> tuple[float, float, float]:
    """nDCG@10, Recall@100 and MRR@10 of one query's document ranking."""
    return ndcg_at(ranked, rel), recall_at(ranked, rel, DEPTH), mrr_at(ranked, rel)


@dataclass
class Row:
    """One pipeline's per-query scores; `ms` is None for rows whose time would mean nothing."""

    name: str
    ndcg: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    ms: list[float] | None = None

    def add(self, scores: tuple[float, float, float]) -> None:
        for values, value in zip((self.ndcg, self.recall, self.mrr), scores, strict=True):
            values.append(value)

    def cells(self) -> list[Any]:
        p50 = statistics.median(self.ms) if self.ms else None
        return [self.name, mean(self.ndcg), mean(self.recall), mean(self.mrr), p50]
