"""One gate run: every judged question against an organization's current index and configuration.

Retrieval goes through `librarian.retrieval.search.retrieve` with the configured options, as the
agent's search tool does. Answers come from an `Answerer` the caller passes (the CLI hands in the
agent), because `librarian` imports no graph (DESIGN §8). The first question is asked once untimed
before the timed pass, so model loading and cold caches do not land in the latency figures.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from librarian.evaluation.gate.fingerprint import fingerprint
from librarian.evaluation.gate.questions import JudgedQuestion
from librarian.evaluation.gate.scores import (
    ANSWER_METRICS,
    QuestionResult,
    Ranked,
    Summary,
    add_answer,
    score_retrieval,
)
from librarian.stack import Stack

Progress = Callable[[str], None]


@dataclass
class Answered:
    """An answer as the gate needs it: the text, its sources and its verified citation records."""

    answer: str
    sources: list[dict[str, Any]]
    citations: list[dict[str, Any]]


class Answerer(Protocol):
    def __call__(self, organization_id: str, question: str) -> Answered: ...


@dataclass
class GateRun:
    organization: str
    results: list[QuestionResult]
    summary: Summary
    fingerprint: dict[str, Any]
    questions_digest: str
    answered: bool = True  # False: retrieval only (`--no-answers`)
    documents: int = 0  # the organization's documents: a changed corpus also moves the figures

    @property
    def not_run(self) -> frozenset[str]:
        """Metrics this run did not measure on purpose."""
        return frozenset() if self.answered else ANSWER_METRICS

    def record(self) -> dict[str, Any]:
        """What an accepted run stores: enough to compare with, and to explain a later failure."""
        return {
            "metrics": self.summary.metrics,
            "fingerprint": self.fingerprint,
            "questions": len(self.results),
            "questions_digest": self.questions_digest,
            "answered": self.answered,
            "documents": self.documents,
            "per_question": [r.to_json() for r in self.results],
        }


def questions_digest(questions: list[JudgedQuestion]) -> str:
    """Changes when the judged questions change, so a comparison across two sets can be flagged."""
    body = json.dumps([q.to_json() for q in questions], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def _ranked(stack: Stack, organization_id: str, question: str) -> list[Ranked]:
    from librarian.retrieval.rerankers import make_reranker
    from librarian.retrieval.search import SearchOptions, retrieve

    options = SearchOptions.from_settings(stack)
    matches = retrieve(stack, organization_id, question, options, make_reranker(stack))
    out = []
    for item in matches:
        metadata = item.match.metadata
        page = metadata.get("page")
        out.append(
            Ranked(str(metadata.get("path", "")), int(page) if isinstance(page, int | float) else None)
        )
    return out


def run_gate(
    stack: Stack,
    organization_id: str,
    questions: list[JudgedQuestion],
    answerer: Answerer | None,
    *,
    progress: Progress = lambda _: None,
) -> GateRun:
    """Score every question: retrieval always, answers when an answerer is given."""
    warm = questions[0].question
    _ranked(stack, organization_id, warm)
    if answerer is not None:
        answerer(organization_id, warm)
    results = []
    for n, item in enumerate(questions, start=1):
        started = time.perf_counter()
        ranked = _ranked(stack, organization_id, item.question)
        result = score_retrieval(item, ranked, 1000 * (time.perf_counter() - started))
        if answerer is not None:
            started = time.perf_counter()
            answered = answerer(organization_id, item.question)
            add_answer(
                result, item, answered.answer, answered.citations, 1000 * (time.perf_counter() - started)
            )
        results.append(result)
        if n % 10 == 0:
            progress(f"scored {n}/{len(questions)} questions")
    return GateRun(
        organization_id,
        results,
        Summary.of(results),
        fingerprint(stack),
        questions_digest(questions),
        answered=answerer is not None,
        documents=len(stack.files.list(organization_id)),
    )
