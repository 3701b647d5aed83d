"""DRIFT with a chat model: MS GraphRAG's primer, follow-up and reduce steps as JSON prompts.

Replies are read with the repair rules (`librarian.graph.json_repair`) and validated here. A primer
or follow-up reply that cannot be read keeps the search going on what is known (the primer's
follow-up is then the question itself; a step keeps its evidence with no answer and no further
follow-ups); a reduce that cannot be read is an error (`DriftError`), as global search's is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from librarian.chat_model import internal_model
from librarian.costs.scope import Phase, cost_phase
from librarian.errors import LibrarianError
from librarian.graph.json_repair import JsonRepairError, parse_llm_json
from librarian.graph.query.drift_search import FollowUp, Primer, Report, Step, StepAnswer, renumber
from librarian.graph.query.global_llm import _reply_text
from librarian.retrieval.excerpts import excerpt
from librarian.retrieval.search import Source

MAX_FOLLOWUPS = 5  # read from one reply; more would only be cut by the per-step budget

PRIMER_PROMPT = """You are starting a DRIFT search: a first, broad answer to a question from a knowledge
graph's community reports, and the follow-up questions that local searches should answer next.

Question: {question}

Community reports, most similar to the question first:
{reports}

Reply with JSON only:
{{"intermediate_answer": "<a broad first answer from these reports; cite them as [Community ID: n]>",
 "follow_up_queries": [<up to {limit} specific questions about entities in the reports that would
   make the answer precise>],
 "score": <integer 0-100: how well these reports answer the question>}}"""

FOLLOWUP_PROMPT = """You answer one follow-up question of a DRIFT search from a local search's context.

Original question: {question}
Follow-up question: {followup}

{context}

Reply with JSON only:
{{"answer": "<the answer to the follow-up from the context only; cite evidence as [n]>",
 "follow_up_queries": [<up to {limit} further specific questions, only if they would help the
   original question>],
 "score": <integer 0-100: how much this helps answer the original question>}}"""

REDUCE_PROMPT = """You write the final answer of a DRIFT search from its findings and their evidence.

Question: {question}

First, broad answer (from community reports): {primer}

Findings of the follow-up searches, most helpful first:
{findings}

Evidence (cite it as [n]):
{evidence}

Write one answer to the question from these findings and the evidence only. Cite every claim with the
number of its evidence in square brackets, e.g. [2]. Reply with JSON only: {{"answer": "<the answer>"}}"""


class DriftError(LibrarianError):
    """The model's final DRIFT answer could not be read: nothing trustworthy to return."""

    code = "drift_search_failed"


def _score(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise JsonRepairError(f"score must be a number 0-100, got {value!r}")
    return max(0, min(100, round(value)))


def _questions(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise JsonRepairError("follow_up_queries must be a list of questions")
    return [q.strip() for q in value if isinstance(q, str) and q.strip()][:MAX_FOLLOWUPS]


def validate_step(value: Any, answer_key: str) -> tuple[str, list[str], int]:
    """(answer, follow-up questions, score) of a primer or follow-up reply; wrong shapes raise."""
    if not isinstance(value, dict):
        raise JsonRepairError("expected a JSON object")
    answer = value.get(answer_key, "")
    if not isinstance(answer, str):
        raise JsonRepairError(f"{answer_key} must be a string")
    return answer.strip(), _questions(value.get("follow_up_queries")), _score(value.get("score", 0))


def render_reports(reports: Sequence[Report]) -> str:
    return "\n\n".join(f"[Community ID: {r.id}] {r.title}\n{r.summary}" for r in reports) or "(none)"


class LLMDrift:
    """The three DRIFT steps by a LangChain chat model (calls kept out of the run's stream)."""

    def __init__(self, model: Any, *, followups: int = 3) -> None:
        self.model = internal_model(model)
        self.limit = followups

    async def _json(self, prompt: str, phase: Phase = "map") -> Any:
        # primer and follow-ups read communities and local context: the `map` of DRIFT's costs
        with cost_phase(phase):
            reply = await self.model.ainvoke(prompt)
        return parse_llm_json(_reply_text(reply))

    async def primer(self, question: str, reports: Sequence[Report]) -> Primer:
        prompt = PRIMER_PROMPT.format(question=question, reports=render_reports(reports), limit=self.limit)
        try:
            answer, questions, score = validate_step(await self._json(prompt), "intermediate_answer")
        except JsonRepairError:
            answer, questions, score = "", [], 0
        # the question itself first: the primer's questions refine it, they do not replace it
        followups = [FollowUp(question, 1.0)] + [
            FollowUp(q, score / 100 * (1.0 - i / (len(questions) + 1))) for i, q in enumerate(questions)
        ]
        return Primer(answer, followups, score, [r.id for r in reports])

    async def follow_up(self, question: str, step: Step, local: dict[str, Any]) -> StepAnswer:
        prompt = FOLLOWUP_PROMPT.format(
            question=question,
            followup=step.question,
            context=local.get("relevantContext", ""),
            limit=self.limit,
        )
        try:
            answer, questions, score = validate_step(await self._json(prompt), "answer")
        except JsonRepairError:
            return StepAnswer("", [], 0)
        return StepAnswer(answer, [FollowUp(q, score / 100 * step.score) for q in questions], score)

    async def reduce(
        self, question: str, primer: Primer, steps: Sequence[Step], sources: Sequence[Source]
    ) -> str:
        ranked = sorted(steps, key=lambda s: -s.helpfulness)
        findings = "\n".join(
            f"- Q: {s.question}\n  A: {renumber(s.answer, s.sources, sources)}" for s in ranked if s.answer
        )
        evidence = "\n".join(
            excerpt(n, s["text"], s["filename"], s["page"]) for n, s in enumerate(sources, 1)
        )
        prompt = REDUCE_PROMPT.format(
            question=question,
            primer=primer.answer or "(none)",
            findings=findings or "(none)",
            evidence=evidence,
        )
        try:
            value = await self._json(prompt, "reduce")
        except JsonRepairError as exc:
            raise DriftError(f"the model's DRIFT answer could not be read: {exc}") from exc
        if not isinstance(value, dict) or not isinstance(value.get("answer"), str):
            raise DriftError(f"the model's DRIFT answer has the wrong shape: {json.dumps(value)[:200]}")
        return value["answer"].strip()
