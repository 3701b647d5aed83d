"""DRIFT without a chat model (the default): every step quotes sentences instead of writing them.

- primer: the top reports' sentences (summary sentences and their members' source sentences)
  most similar to the question, quoted with `[Community ID: x]`; confidence = round(100 * best
  cosine). Follow-ups: the question itself first (local search around what it names), then the
  reports' most connected members, as "How does <member> relate to <what the question names>?",
  ranked by their report's cosine and their place among its members;
- follow-up: the local evidence's sentences most similar to the follow-up question, citing the local
  `[n]`; helpfulness = round(100 * best cosine); further follow-ups: the bridge and matched entities
  the local search found, ranked below the step that raised them (`CHILD_DECAY`);
- reduce: the merged evidence's sentences most similar to the question (a document's own words,
  never a report's), each citing its source `[n]`; none above the floor gives an empty answer.

Cosines come from the stack's dense model (MiniLM by default), with a bounded process-wide cache of
sentence vectors, and run in worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from librarian.answers.quotes import clean_quote, near_identical, quote_units
from librarian.graph.query.drift_search import CHILD_DECAY, FollowUp, Primer, Report, Step, StepAnswer
from librarian.graph.query.parse import rule_entities
from librarian.retrieval.search import Source
from librarian.text.sentences import SUMMARY, sentences

OFFLINE_DRIFT_NOTICE = (
    "Extractive DRIFT answer (no chat model is configured): the documents' sentences most relevant to "
    "the question, found by following up on the closest communities, quoted."
)
RELEVANCE_FLOOR = 0.2  # the cosine below which a sentence is not quoted (global's offline map's floor)
MIN_QUOTE_WORDS = 8  # "'Yes,' said Scrooge." names the subject and says nothing: not an answer
PRIMER_SENTENCES = 3
STEP_SENTENCES = 2
ANSWER_SENTENCES = 5
MEMBERS_PER_REPORT = 4
SOURCES_QUOTED = 8  # the reduce quotes from the top merged sources only


def _quotable(text: str) -> bool:
    return len(text.split()) >= MIN_QUOTE_WORDS


def quotable_units(text: str) -> list[str]:
    """The sentences of a chunk worth quoting, whole: hard-wrapped prose (a book, a PDF column) is
    joined before it is split, so a quote never stops at a line end; a table keeps its rows with
    their header cells (`librarian.answers.quotes`)."""
    if "|" in text:
        units = [unit.text for unit in quote_units(text)]
    else:
        # cleaned like every quote: a footnote marker such as "[3]" would read as a citation
        units = sentences(clean_quote(" ".join(text.split())), SUMMARY)
    return [u.strip() for u in units if _quotable(u)]


def focus_of(question: str) -> str:
    """What the question names ("Scrooge", "Marley and Fezziwig"); empty when it names nothing."""
    names = rule_entities(question)
    return " and ".join(names[:2])


def names_the_same(name: str, named: set[str]) -> bool:
    """ "Ebenezer Scrooge" when the question says "Scrooge" (or the reverse): no new follow-up."""
    words = f" {' '.join(name.lower().split())} "
    return any(f" {n} " in words or words.strip() in f" {n} " for n in named)


def followup_question(name: str, focus: str) -> str:
    return f"How does {name} relate to {focus}?" if focus else f"What do the documents say about {name}?"


_VECTOR_CACHE: dict[str, np.ndarray] = {}
_CACHE_LIMIT = 50_000  # sentence vectors kept (~75 MB of MiniLM vectors at most)


class OfflineDrift:
    """The three DRIFT steps by cosine to the question (see the module docstring)."""

    def __init__(
        self,
        embed_query: Callable[[str], list[float]],
        embed_documents: Callable[[list[str]], list[list[float]]],
        *,
        floor: float = RELEVANCE_FLOOR,
        cache: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.embed_query = embed_query
        self.embed_documents = embed_documents
        self.floor = floor
        self.cache = _VECTOR_CACHE if cache is None else cache  # sentences recur across questions

    def _cosines(self, question: str, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing and len(self.cache) + len(missing) > _CACHE_LIMIT:
            self.cache.clear()  # a bounded cache: start over rather than grow without end
        if missing:
            for text, vector in zip(missing, self.embed_documents(missing), strict=True):
                v = np.asarray(vector, dtype=np.float32)
                self.cache[text] = v / (np.linalg.norm(v) or 1.0)
        q = np.asarray(self.embed_query(question), dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        return np.stack([self.cache[t] for t in texts]) @ q

    def _best(
        self, question: str, candidates: list[tuple[str, Any]], limit: int
    ) -> list[tuple[str, Any, float]]:
        """The `limit` best distinct candidates (text, tag) above the floor, best first (sync)."""
        cosines = self._cosines(question, [text for text, _ in candidates])
        chosen: list[tuple[str, Any, float]] = []
        for i in np.argsort(-cosines, kind="stable"):
            text, tag = candidates[int(i)]
            if float(cosines[i]) < self.floor or len(chosen) == limit:
                break
            if any(near_identical(text, other) for other, _, _ in chosen):
                continue
            chosen.append((text, tag, float(cosines[i])))
        return chosen

    async def primer(self, question: str, reports: Sequence[Report]) -> Primer:
        candidates: list[tuple[str, Any]] = []
        for report in reports:
            summary = [clean_quote(s) for s in sentences(report.summary, SUMMARY)]
            claims = [clean_quote(" ".join(c.split())) for c in report.claims]
            summary, claims = [s for s in summary if _quotable(s)], [c for c in claims if _quotable(c)]
            candidates.extend((s, report.id) for s in dict.fromkeys([*claims, *summary]))
        best = await asyncio.to_thread(self._best, question, candidates, PRIMER_SENTENCES)
        answer = "\n".join(f'- "{text}" [Community ID: {cid}]' for text, cid, _ in best)
        confidence = round(100 * max(0.0, min(1.0, best[0][2]))) if best else 0
        focus = focus_of(question)
        named = {" ".join(n.lower().split()) for n in rule_entities(question)}
        followups = [FollowUp(question, 1.0)]
        for report in reports:
            members = [m for m in report.members if not names_the_same(m, named)][:MEMBERS_PER_REPORT]
            for rank, member in enumerate(members):
                weight = 1.0 - rank / (len(members) + 1)
                followups.append(FollowUp(followup_question(member, focus), max(0.0, report.score) * weight))
        return Primer(answer, followups, confidence, [r.id for r in reports])

    async def follow_up(self, question: str, step: Step, local: dict[str, Any]) -> StepAnswer:
        candidates = [
            (unit, n)
            for n, source in enumerate(step.sources, start=1)
            for unit in quotable_units(source["text"])
        ]
        # the step's own question picks its sentences, so each step adds its own view of the evidence
        best = await asyncio.to_thread(self._best, step.question, candidates, STEP_SENTENCES)
        answer = " ".join(f'"{text}" [{n}]' for text, n, _ in best)
        score = round(100 * max(0.0, min(1.0, best[0][2]))) if best else 0
        focus = focus_of(question)
        names = [
            *(m["displayName"] for m in local.get("matchedEntities") or []),
            # bridges are entity keys (lower case): title-cased to read as names in the question
            *(b.title() if b.islower() else b for b in local.get("bridgeEntities") or []),
        ]
        named = {" ".join(n.lower().split()) for n in rule_entities(question)}
        followups = [
            FollowUp(followup_question(name, focus), step.score * CHILD_DECAY)
            for name in dict.fromkeys(names)
            if not names_the_same(name, named)
        ]
        return StepAnswer(answer, followups, score)

    async def reduce(
        self, question: str, primer: Primer, steps: Sequence[Step], sources: Sequence[Source]
    ) -> str:
        candidates = [
            (unit, n)
            for n, source in enumerate(sources[:SOURCES_QUOTED], start=1)
            for unit in quotable_units(source["text"])
        ]
        best = await asyncio.to_thread(self._best, question, candidates, ANSWER_SENTENCES)
        if not best:
            return ""
        in_reading_order = sorted(best, key=lambda item: (item[1], candidates.index((item[0], item[1]))))
        lines = [f'- "{text}" [{n}]' for text, n, _ in in_reading_order]
        return OFFLINE_DRIFT_NOTICE + "\n" + "\n".join(lines)
