"""`librarian eval answers`: answer EM/F1, supporting sources cited, citation precision and recall.

The agent answers each question as users get it (the configured chat model, or extractive answers
offline), in the evaluation organization that `evals.corpus.ingested` filled.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evals.corpus import ORG, Progress
from librarian.evaluation.data import QAItem, doc_id_from_path
from librarian.evaluation.metrics import answer_contained, exact_match, mean, token_f1
from librarian.stack import Stack

PER_QUESTION = ("em", "f1", "contains", "support_cited", "support_retrieved")
EXAMPLES = 5
PROGRESS_EVERY = 25
Verifier = Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]]


@dataclass
class Answered:
    """One agent answer with what the metrics need from its final state."""

    answer: str
    mode: str
    sources: list[dict[str, Any]]
    citations: list[dict[str, Any]] | None
    seconds: float


@dataclass
class AnswerTally:
    """Per-question scores and citation counts, summed over the questions answered so far."""

    per: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in PER_QUESTION})
    sentences_supported: int = 0
    sentences: int = 0
    evidence_supported: int = 0
    evidence: int = 0
    modes: dict[str, int] = field(default_factory=dict)  # search / local / global, as the chooser routed
    examples: list[list[str]] = field(default_factory=list)

    def add(self, item: QAItem, answered: Answered) -> None:
        answer, sources = answered.answer, answered.sources
        self.modes[answered.mode] = self.modes.get(answered.mode, 0) + 1
        cited_ids = cited(answer, sources, answered.citations)
        by_id = {s["id"]: s for s in sources}
        cited_docs = {doc_id_from_path(by_id[i]["path"]) for i in cited_ids if i in by_id}
        retrieved_docs = {doc_id_from_path(s["path"]) for s in sources}
        supporting = set(item.supporting_doc_ids)
        self.per["em"].append(exact_match(answer, item.answers))
        self.per["f1"].append(token_f1(answer, item.answers))
        self.per["contains"].append(answer_contained(answer, item.answers))
        if supporting:
            self.per["support_cited"].append(len(cited_docs & supporting) / len(supporting))
            self.per["support_retrieved"].append(len(retrieved_docs & supporting) / len(supporting))
        self.count_citations(answered.citations or [])
        if len(self.examples) < EXAMPLES:
            gold = item.answers[0] if item.answers else ""
            self.examples.append([item.question, gold, answer[:300], f"{answered.seconds:.1f}"])

    def count_citations(self, citations: list[dict[str, Any]]) -> None:
        """Sentences with markers (for recall) and each piece of evidence (for precision)."""
        for c in citations:
            if c.get("markers"):
                self.sentences += 1
                self.sentences_supported += bool(c.get("supported"))
            for ev in c.get("evidence", []):
                self.evidence += 1
                self.evidence_supported += bool(ev.get("supported"))

    def metrics(self) -> dict[str, float | None]:
        per = self.per
        return {
            "answer EM": mean(per["em"]),
            "answer F1": mean(per["f1"]),
            "gold answer contained": mean(per["contains"]),
            "supporting docs among cited sources (recall)": mean(per["support_cited"]),
            "supporting docs among retrieved sources (recall)": mean(per["support_retrieved"]),
            "citation recall (cited sentences supported)": (
                self.sentences_supported / self.sentences if self.sentences else None
            ),
            "citation precision (citations supporting)": (
                self.evidence_supported / self.evidence if self.evidence else None
            ),
        }


def cited(answer: str, sources: list[dict[str, Any]], citations: list[dict[str, Any]] | None) -> list[str]:
    """Ids of the sources the answer cites (from its citation records, else from its `[n]` markers)."""
    if citations:
        return list(dict.fromkeys(i for c in citations for i in c.get("source_ids", []) if i))
    numbers = {
        int(n)
        for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", answer)
        for n in re.split(r"\s*,\s*", group)
    }
    return [sources[n - 1]["id"] for n in sorted(numbers) if 1 <= n <= len(sources)]


def citation_verifier() -> Verifier | None:
    """`verify_answer`, or None when citations are not available: precision/recall are then absent."""
    try:
        from librarian.answers.citations import verify_answer
    except ImportError:
        return None
    return verify_answer


def ask(agent: Any, question: str, verify: Verifier | None) -> Answered:
    """One question through the agent, timed; citation records computed when the path made none."""
    from langchain_core.messages import HumanMessage

    started = time.perf_counter()
    state = agent.invoke({"messages": [HumanMessage(question)]}, context={"organization_id": ORG})
    seconds = time.perf_counter() - started
    last = state["messages"][-1]
    answer = str(last.content)
    sources = list(state.get("sources") or [])
    citations = state.get("citations")
    if citations is None and verify is not None:
        citations = verify(answer, sources)
    mode = last.response_metadata.get("retrieval_mode", "agent's choice")
    return Answered(answer, mode, sources, citations, seconds)


def evaluate_answers(
    stack: Stack,
    items: list[QAItem],
    *,
    name: str = "qa",
    progress: Progress = print,
    graph_routing: bool = True,
) -> dict[str, Any]:
    """Answer EM/F1, supporting documents among cited sources, citation precision/recall.

    Citation records are the agent's `citations` (librarian.answers.citations); when a graph does
    not produce them, they are computed from the answer and its sources the same way.
    `graph_routing=False` keeps the offline agent on search even when the organization has a graph.
    """
    from graphs.agent import build_agent

    verify = citation_verifier()
    agent = build_agent(lambda: stack, graph_routing=graph_routing)
    tally = AnswerTally()
    for n, item in enumerate(items, start=1):
        tally.add(item, ask(agent, item.question, verify))
        if n % PROGRESS_EVERY == 0:
            progress(f"answered {n}/{len(items)}")
    return answers_report(stack, items, name, tally)


def answers_report(stack: Stack, items: list[QAItem], name: str, tally: AnswerTally) -> dict[str, Any]:
    """The report `librarian.evaluation.report` renders as text, JSON or HTML."""
    metrics = tally.metrics()
    return {
        "kind": "answers",
        "title": f"librarian eval answers: {name}",
        "summary": {
            "questions": len(items),
            "answers by": stack.settings.chat_model or "extractive (no chat model)",
            "reranker": stack.settings.reranker,
            "answered from": ", ".join(f"{mode} {n}" for mode, n in sorted(tally.modes.items())),
        },
        "metrics": metrics,
        "tables": [
            {
                "name": "answers",
                "columns": ["metric", "value"],
                "rows": [[k, v] for k, v in metrics.items()],
                "chart": "value",
            },
            {
                "name": "first answers",
                "columns": ["question", "gold", "answer", "seconds"],
                "rows": tally.examples,
            },
        ],
    }
