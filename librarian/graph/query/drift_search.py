"""DRIFT search: a primer over community reports, ranked local follow-ups, then a reduced answer.

MS GraphRAG's third query mode (GRAPHRAG-NOTES.md "DRIFT search"; its docs "query/drift_search"),
for questions broad but about something specific ("How does X affect the rest of the system?"),
where local search starts too narrow and global search is too coarse:

1. **primer**: the question is compared with the community reports by embedding; the top
   `primer_k` reports give a broad first answer, a few follow-up questions and a confidence;
2. **follow-ups**: the best-ranked pending follow-ups (`followups` per step) are each answered by
   local search (`librarian.graph.query.local_search`); each answer may raise further follow-ups,
   ranked with the rest by score; this repeats for `depth` steps, so the cost is fixed:
   at most `depth * followups` local searches;
3. **reduce**: one answer from the question/answer tree, citing (as `[n]`) the evidence the local
   searches used, numbered in the order the follow-ups were answered.

Each step is a `DriftEngine` call: `drift_llm.LLMDrift` (a chat model, JSON prompts) or
`drift_offline.OfflineDrift` (no model, the default: extractive). This module runs the steps and
owns what both share: ranking, the evidence list, its numbering, and cancellation. `should_stop` is
checked before every step and every local search (and handed to local search for its own stages);
cancelling the awaiting task cancels whatever is in flight, since everything here is a coroutine.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from librarian.graph.query.global_search import SearchCancelled
from librarian.retrieval.search import Source

PRIMER_K = 5
FOLLOWUPS = 3
DEPTH = 2
SOURCES_LIMIT = 12  # evidence the reduce reads and the answer may cite
CHILD_DECAY = 0.5  # offline: a follow-up raised by a follow-up ranks below its parent

StopCheck = Callable[[], bool]


class DriftCancelled(SearchCancelled):
    """The caller asked to stop: no further step, local search or model call starts."""


@dataclass(frozen=True)
class DriftOptions:
    """The knobs of MS GraphRAG's DRIFT: reports the primer reads, follow-ups per step, steps."""

    primer_k: int = PRIMER_K
    followups: int = FOLLOWUPS
    depth: int = DEPTH
    sources_limit: int = SOURCES_LIMIT

    def __post_init__(self) -> None:
        for name in ("primer_k", "followups", "depth", "sources_limit"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DRIFT option {name} must be a whole number of at least 1, got {value!r}")

    @classmethod
    def from_settings(cls, settings: Any) -> DriftOptions:
        return cls(
            primer_k=settings.graph_drift_primer_k,
            followups=settings.graph_drift_followups,
            depth=settings.graph_drift_depth,
        )


@dataclass
class Report:
    """A community report as the primer reads it: title, summary, the source sentences (claims)
    of its members, and its cosine to the question."""

    id: str
    title: str
    summary: str
    claims: list[str]
    score: float
    members: list[str] = field(default_factory=list)  # display names, most connected first


@dataclass
class FollowUp:
    """A question to answer with local search, with the score that ranks it among the pending ones."""

    question: str
    score: float


@dataclass
class Primer:
    answer: str
    followups: list[FollowUp]
    confidence: int  # 0-100
    community_ids: list[str]


@dataclass
class StepAnswer:
    """One follow-up answered: its intermediate answer cites `[n]` of its own local result's sources."""

    answer: str
    followups: list[FollowUp]
    score: int  # 0-100: how much it helps answer the original question


@dataclass
class Step:
    """A follow-up as asked, answered and placed in the tree (depth 1 = raised by the primer)."""

    question: str
    score: float
    depth: int
    answer: str = ""
    helpfulness: int = 0
    sources: list[Source] = field(default_factory=list)  # its local search's, in their order


@dataclass
class DriftResult:
    answer: str
    primer: Primer
    steps: list[Step]
    sources: list[Source]  # the reduce's evidence, numbered from 1 in this order


class DriftEngine(Protocol):
    """The three model-shaped steps; the driver does the ranking, searching and numbering."""

    async def primer(self, question: str, reports: Sequence[Report]) -> Primer: ...

    async def follow_up(self, question: str, step: Step, local: dict[str, Any]) -> StepAnswer: ...

    async def reduce(
        self, question: str, primer: Primer, steps: Sequence[Step], sources: Sequence[Source]
    ) -> str: ...


LocalRun = Callable[[str], Awaitable[dict[str, Any]]]


def check(should_stop: StopCheck | None) -> None:
    if should_stop is not None and should_stop():
        raise DriftCancelled("the DRIFT search was cancelled")


def normalized(question: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", question.lower()).split())


def next_followups(pending: list[FollowUp], asked: set[str], count: int) -> list[FollowUp]:
    """The `count` best-scored pending follow-ups not asked yet (ties keep their order), removed
    from `pending`; a question asked before in other words (case, punctuation) counts as asked."""
    ranked = sorted(enumerate(pending), key=lambda item: (-item[1].score, item[0]))
    chosen: list[FollowUp] = []
    for _, followup in ranked:
        key = normalized(followup.question)
        if not key or key in asked:
            continue
        asked.add(key)
        chosen.append(followup)
        if len(chosen) == count:
            break
    pending[:] = [f for f in pending if normalized(f.question) not in asked]
    return chosen


def merged_sources(steps: Sequence[Step], limit: int) -> list[Source]:
    """The evidence of every step, deduplicated by id: the most helpful steps' sources first
    (each step's own ranking kept), then round-robin so every step's best evidence makes the cut."""
    ordered = sorted(steps, key=lambda s: (-s.helpfulness, -s.score))
    seen: dict[str, Source] = {}
    rank = 0
    while len(seen) < limit and any(rank < len(s.sources) for s in ordered):
        for step in ordered:
            if rank < len(step.sources) and step.sources[rank]["id"] not in seen:
                seen[step.sources[rank]["id"]] = step.sources[rank]
                if len(seen) == limit:
                    break
        rank += 1
    return list(seen.values())


_MARKER = re.compile(r"\[(\d+)\]")


def renumber(text: str, local_sources: Sequence[Source], merged: Sequence[Source]) -> str:
    """A step's answer with its local `[n]` rewritten to the merged numbering; a marker whose source
    did not make the merged list is dropped (it would point at nothing)."""
    number = {s["id"]: n for n, s in enumerate(merged, start=1)}

    def swap(match: re.Match[str]) -> str:
        n = int(match.group(1))
        if 1 <= n <= len(local_sources) and local_sources[n - 1]["id"] in number:
            return f"[{number[local_sources[n - 1]['id']]}]"
        return ""

    return _MARKER.sub(swap, text)


async def drift_search(
    question: str,
    reports: Sequence[Report],
    local: LocalRun,
    engine: DriftEngine,
    options: DriftOptions | None = None,
    *,
    should_stop: StopCheck | None = None,
) -> DriftResult:
    """Primer over `reports` (already the top `primer_k`, best first), `depth` steps of local
    follow-ups, then the reduce. Raises `DriftCancelled` at the first check after a stop request."""
    options = options or DriftOptions()
    check(should_stop)
    primer = await engine.primer(question, reports)
    pending = list(primer.followups)
    asked: set[str] = set()
    steps: list[Step] = []
    for depth in range(1, options.depth + 1):
        batch = next_followups(pending, asked, options.followups)
        if not batch:
            break
        for followup in batch:
            check(should_stop)
            step = Step(followup.question, followup.score, depth)
            result = await local(followup.question)
            if result.get("status") != "completed":
                continue
            step.sources = list(result["sources"])
            check(should_stop)
            answered = await engine.follow_up(question, step, result)
            step.answer, step.helpfulness = answered.answer, answered.score
            steps.append(step)
            pending.extend(answered.followups)
    check(should_stop)
    sources = merged_sources(steps, options.sources_limit)
    answer = await engine.reduce(question, primer, steps, sources) if sources else ""
    return DriftResult(answer, primer, steps, sources)
