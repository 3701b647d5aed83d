"""Scores of one gate run: per question, then summarised into the metrics the gate compares.

Retrieval is scored on what users get: the sources of the configured search (its `top_k`, alpha,
reranker and floor), folded into documents (or document pages, when a judgment names a page) in
rank order. nDCG@10 and recall follow `librarian.evaluation.metrics` (binary gains); recall is over
the returned sources, so a smaller `top_k` that loses a judged document shows as a regression.

Answer figures come from the verified citation records (`librarian.answers.citations`): citation
precision is the share of cited pieces of evidence that support their sentence, and the
unsupported-sentence rate the share of cited sentences no cited source supports (the sentences the
answer marks `[unsupported]` or drops). Both are pooled over all answers, not averaged per answer,
so a one-sentence answer weighs no more than a long one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from librarian.evaluation.gate.questions import JudgedQuestion, Relevant
from librarian.evaluation.metrics import answer_contained, ndcg_at, recall_at

NDCG = "retrieval nDCG@10"
RECALL = "retrieval recall"
CITATION_PRECISION = "citation precision"
UNSUPPORTED = "unsupported-sentence rate"
CONTAINED = "gold answer contained"
SEARCH_P50 = "search latency p50 (ms)"
ANSWER_P50 = "answer latency p50 (ms)"
METRICS = (NDCG, RECALL, CITATION_PRECISION, UNSUPPORTED, CONTAINED, SEARCH_P50, ANSWER_P50)
LOWER_IS_BETTER = frozenset({UNSUPPORTED, SEARCH_P50, ANSWER_P50})
LATENCY = frozenset({SEARCH_P50, ANSWER_P50})
ANSWER_METRICS = frozenset({CITATION_PRECISION, UNSUPPORTED, CONTAINED, ANSWER_P50})


@dataclass
class QuestionResult:
    """What one judged question scored; None where the question has no judgment for it."""

    id: str
    question: str
    retrieved: list[str]
    ndcg: float | None = None
    recall: float | None = None
    search_ms: float = 0.0
    answer: str | None = None
    answer_ms: float | None = None
    contained: float | None = None
    cited_sentences: int = 0
    unsupported_sentences: int = 0
    evidence: int = 0
    evidence_supported: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Ranked:
    """One retrieved source as the scores need it: its document path and page."""

    path: str
    page: int | None = None


def ranked_keys(ranked: Sequence[Ranked], relevant: Sequence[Relevant]) -> list[str]:
    """The ranking as judgment keys, best first, each once: a source that matches a judgment takes its
    key (one not found yet, if it matches several), any other counts as its document, so chunks of
    one document fold together at the rank of the first."""
    keys: list[str] = []
    for source in ranked:
        hits = [r.key for r in relevant if r.matches(source.path, source.page)]
        fresh = [k for k in hits if k not in keys]
        keys.append((fresh or hits or [f"other:{source.path}"])[0])
    return list(dict.fromkeys(keys))


def score_retrieval(item: JudgedQuestion, ranked: Sequence[Ranked], ms: float) -> QuestionResult:
    """nDCG@10 and recall of one question's sources (None for both when it judges no document)."""
    result = QuestionResult(item.id, item.question, [f"{r.path}#page={r.page}" for r in ranked], search_ms=ms)
    if item.relevant:
        keys = ranked_keys(ranked, item.relevant)
        gains = {r.key: 1 for r in item.relevant}
        result.ndcg = ndcg_at(keys, gains, 10)
        result.recall = recall_at(keys, gains, len(keys))
    return result


def add_answer(
    result: QuestionResult,
    item: JudgedQuestion,
    answer: str,
    citations: Sequence[dict[str, Any]],
    ms: float,
) -> None:
    """The answer's citation counts (from its verified citation records) and gold-answer check."""
    result.answer, result.answer_ms = answer, ms
    if item.answers:
        result.contained = answer_contained(answer, list(item.answers))
    for record in citations:
        if record.get("markers"):
            result.cited_sentences += 1
            result.unsupported_sentences += not record.get("supported")
        for evidence in record.get("evidence", []):
            result.evidence += 1
            result.evidence_supported += bool(evidence.get("supported"))


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _p50(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


@dataclass
class Summary:
    """The gate's metrics over every question; None where no question could be scored for one."""

    metrics: dict[str, float | None] = field(default_factory=dict)

    @classmethod
    def of(cls, results: Sequence[QuestionResult]) -> Summary:
        sentences = sum(r.cited_sentences for r in results)
        evidence = sum(r.evidence for r in results)
        return cls(
            {
                NDCG: _mean([r.ndcg for r in results]),
                RECALL: _mean([r.recall for r in results]),
                CITATION_PRECISION: (
                    sum(r.evidence_supported for r in results) / evidence if evidence else None
                ),
                UNSUPPORTED: (
                    sum(r.unsupported_sentences for r in results) / sentences if sentences else None
                ),
                CONTAINED: _mean([r.contained for r in results]),
                SEARCH_P50: _p50([r.search_ms for r in results]),
                ANSWER_P50: _p50([r.answer_ms for r in results]),
            }
        )
