"""Which retrieval path answers a question: `search`, graph `local`, graph `global` or graph `drift`.

The notes' table (GRAPHRAG-NOTES.md, "Questions each path fits"):

| query goal | path |
| --- | --- |
| relations, local facts, source support for an entity | local |
| cross-topic overview, trends, synthesis | global |
| broad but about something specific: how X affects / relates to the rest | drift |

and a question that names no entity and asks no overview is a plain lookup: `search`.

`choose_mode` reads the parsed query: a named entity with a reach cue (`DRIFT_CUES`: "how does X
affect / impact / influence ...", "X's role in / effect on / impact on ...", "relate to the rest",
"ripple", "knock-on", "depend on X") → drift; else overview cues (themes) → global; else named
entities → local; else search. DRIFT goes first because its questions name the thing they are
about (local search alone starts too narrow) yet ask about its reach (global search alone is too
coarse: GRAPHRAG-NOTES.md "DRIFT search"). The rules are the query parser's
(`librarian.graph.query.parse`) and the cues above, not fitted to data; the labelled set in
`tests/fixtures/graph_mode_questions.jsonl` was written by hand by the same person as the rules, so
its accuracy is a sanity check, not a held-out measure.

`local_answer`, `global_answer`, `drift_answer` and `cite_communities` shape the answers of
`librarian ask --mode`
(`services.ask`), as `Draft`s that `librarian.answers.checked.check_draft` then verifies like every
other answer.

`graph_draft` is the offline agent's route (`graphs.extractive`): the same chooser, then the same
local/global/DRIFT retrieval and offline answer as `answer_with_mode`, numbered after the
conversation's earlier sources so the agent's state contract holds.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from langchain_core.messages import BaseMessage

from librarian.answers.extractive import Draft, sources_block
from librarian.answers.local_brief import BRIEF_PROMPT_RULES, brief_local_draft
from librarian.answers.numbering import number_sources
from librarian.answers.verify import answer_text
from librarian.graph.query.drift_offline import OFFLINE_DRIFT_NOTICE
from librarian.graph.query.drift_search import DriftOptions
from librarian.graph.query.global_citations import CITATION, ids_in
from librarian.graph.query.global_limits import global_options
from librarian.graph.query.global_offline import OFFLINE_NOTICE
from librarian.graph.query.global_search import GlobalSearchError
from librarian.graph.query.parse import ParsedQuery, parse_rules
from librarian.graph.query.runs import run_drift, run_global, run_local
from librarian.retrieval.search import Source
from librarian.tenancy import validate_organization_id

Mode = Literal["search", "local", "global", "drift"]
MODES: tuple[str, ...] = ("auto", "search", "local", "global", "drift")

DRIFT_CUES = re.compile(
    r"\b(?:how (?:does|do|did|would|will|could|might)\b.{1,80}?\b(?:affects?|affected|impacts?|impacted|"
    r"influences?|influenced|shapes?|shaped|fits? into|ties? into|relates? to (?:the )?(?:rest|others?|"
    r"wider|broader|whole))"
    r"|(?:role|place|effects?|impacts?|influence|consequences?) (?:of \w[\w' -]{0,60} )?(?:in|on|for|across) "
    r"(?:the )?(?:rest|whole|wider|broader|overall|other|system|organi[sz]ation|project|story|book|company)"
    r"|(?:effects?|impacts?|influence) (?:does|do|did|has|have|had) \w.{0,60}? ha(?:ve|s|d) on"
    r"|ripple|knock-on|downstream|depends? on|rel(?:y|ies) on)\b",
    re.IGNORECASE,
)
"""Cues that a question asks about the reach of the thing it names; with a named entity → drift."""
REST_OF = re.compile(r"\bthe rest of\b", re.IGNORECASE)
"""Names its subject without capitals ("how does /usr relate to the rest of ...") but asks its reach."""


def choose_mode(question: str, parsed: ParsedQuery | None = None) -> Mode:
    parsed = parsed or parse_rules(question)
    if DRIFT_CUES.search(question) and (parsed.entities or REST_OF.search(question)):
        return "drift"
    if parsed.themes:
        return "global"
    if parsed.entities:
        return "local"
    return "search"


class ModeAnswer(TypedDict):
    mode: Mode
    chosenBy: str  # "auto", "user", or "auto (no knowledge graph yet)" when auto fell back to search
    answer: str
    status: str
    sources: list[dict[str, Any]]
    details: dict[str, Any]


def resolve_mode(question: str, mode: str) -> tuple[Mode, str]:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    if mode == "auto":
        return choose_mode(question), "auto"
    return mode, "user"  # type: ignore[return-value]


LOCAL_ANSWER_PROMPT = (
    """Answer the question from the graph context and evidence below only. Cite every
claim with the number of its evidence in square brackets, e.g. [2]. If the evidence does not answer the
question, say so plainly. """
    + BRIEF_PROMPT_RULES
    + """

Question: {question}

{context}"""
)


def cite_communities(
    answer: str,
    sources: list[dict[str, Any]],
    source_communities: dict[str, list[str]],
    numbers: Mapping[str, int] | None = None,
) -> str:
    """Follow each `[Community ID: x]` of a global answer with the `[n]` of the chunks it stands on.

    `numbers` maps a source id to its citation number (the agent continues earlier turns' numbering);
    without it the sources are numbered from 1 in order."""
    if numbers is None:
        numbers = {source["id"]: n for n, source in enumerate(sources, start=1)}
    refs_of: dict[str, list[int]] = {}
    for source in sources:
        for community_id in source_communities.get(source["id"], []):
            refs_of.setdefault(community_id, []).append(numbers[source["id"]])

    def add(match: re.Match[str]) -> str:
        numbers = dict.fromkeys(n for cid in ids_in(match.group(1)) for n in refs_of.get(cid, []))
        return match.group(0) + "".join(f"[{n}]" for n in numbers)

    return _citations_before_the_end(CITATION.sub(add, answer))


# "It grew. [Community ID: 2][1]": a community citation after the full stop would start a sentence of
# its own, and the check would read the claim without its citation and the citation without a claim
_AFTER_THE_END = re.compile(r"([.!?]+)[ \t]*((?:\[Community IDs?: [^\]|]+\](?:\[\d+\])*[ \t]*)+)(?=\s|$)")


def _citations_before_the_end(text: str) -> str:
    """Move a community citation that follows a sentence's end to just before it."""
    return _AFTER_THE_END.sub(lambda m: f" {m.group(2).strip()}{m.group(1)}", text)


NOTHING_IN_GRAPH = "I found nothing relevant in this organization's knowledge graph."


def offline_local_draft(stack: Any, question: str, sources: list[Source], known: list[Source]) -> Draft:
    """The few best quoted sentences of the local evidence, numbered after `known` (sync: runs
    MiniLM); `librarian.answers.local_brief` keeps it to a screen."""
    numbered = number_sources(known, sources)
    if not numbered:
        return Draft(NOTHING_IN_GRAPH, [], mode="local")
    return brief_local_draft(stack, question, numbered, sources)


async def local_answer(stack: Any, question: str, result: dict[str, Any], model: Any | None) -> Draft:
    """A model's answer from the local context, or quoted sentences of the evidence offline; the
    draft says which part of it makes cited claims, for the citation check."""
    if not result["sources"]:
        return Draft(NOTHING_IN_GRAPH, [], mode="local")
    if model is not None:
        reply = await model.ainvoke(
            LOCAL_ANSWER_PROMPT.format(question=question, context=result["relevantContext"])
        )
        text = answer_text(reply) if isinstance(reply, BaseMessage) else str(reply)
        return Draft(text, list(result["sources"]), (0, len(text)), "local")
    return await asyncio.to_thread(offline_local_draft, stack, question, result["sources"], [])


def global_answer(result: dict[str, Any]) -> Draft:
    """A global result's answer with the `[n]` of each cited community's chunks (numbered from 1);
    the offline notice is not a claim, so the check starts after it."""
    body = cite_communities(result["answer"], result["sources"], result.get("sourceCommunities") or {})
    if not result["sources"]:
        return Draft(body, [], None, "global")
    notice = len(OFFLINE_NOTICE) if body.startswith(OFFLINE_NOTICE) else 0
    return Draft(body, list(result["sources"]), (notice, len(body)), "global")


def global_draft(result: dict[str, Any], known: list[Source]) -> Draft:
    """A global result as an agent answer: community citations followed by the `[n]` of their
    chunks (numbered after `known`), then a `Sources:` block of the cited ones."""
    found = list(result["sources"])
    numbered = dict(number_sources(known, found))
    numbers = {s["id"]: n for n, s in numbered.items()}
    body = cite_communities(result["answer"], found, result.get("sourceCommunities") or {}, numbers)
    cited = [n for n in dict.fromkeys(int(m) for m in re.findall(r"\[(\d+)\]", body)) if n in numbered]
    if not cited:
        return Draft(body, found, None, "global")
    notice = len(OFFLINE_NOTICE) if body.startswith(OFFLINE_NOTICE) else 0
    return Draft(f"{body}\n\n{sources_block(numbered, cited)}", found, (notice, len(body)), "global")


def renumber_citations(answer: str, found: list[Source], numbers: Mapping[str, int]) -> str:
    """A DRIFT answer's `[n]` (numbered from 1 over `found`) as the numbers `numbers` gives them;
    a marker past the end of `found` is dropped (it would cite nothing)."""

    def swap(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return f"[{numbers[found[n - 1]['id']]}]" if 1 <= n <= len(found) else ""

    return re.sub(r"\[(\d+)\]", swap, answer)


def drift_answer(result: dict[str, Any]) -> Draft:
    """A DRIFT result's answer as a draft (its `[n]` already number `sources` from 1); the offline
    notice is not a claim, so the check starts after it."""
    body = result["answer"]
    if not result["sources"]:
        return Draft(body, [], None, "drift")
    notice = len(OFFLINE_DRIFT_NOTICE) if body.startswith(OFFLINE_DRIFT_NOTICE) else 0
    return Draft(body, list(result["sources"]), (notice, len(body)), "drift")


def drift_draft(result: dict[str, Any], known: list[Source]) -> Draft:
    """A DRIFT result as an agent answer: its citations numbered after `known`, then a `Sources:`
    block of the cited ones."""
    found = list(result["sources"])
    numbered = dict(number_sources(known, found))
    body = renumber_citations(result["answer"], found, {s["id"]: n for n, s in numbered.items()})
    cited = [n for n in dict.fromkeys(int(m) for m in re.findall(r"\[(\d+)\]", body)) if n in numbered]
    if not cited:
        return Draft(body, found, None, "drift")
    notice = len(OFFLINE_DRIFT_NOTICE) if body.startswith(OFFLINE_DRIFT_NOTICE) else 0
    return Draft(f"{body}\n\n{sources_block(numbered, cited)}", found, (notice, len(body)), "drift")


async def has_graph(stack: Any, organization_id: str) -> bool:
    org = validate_organization_id(organization_id)
    return await asyncio.to_thread(lambda: stack.graph_store.scope(org).published_version() is not None)


async def graph_draft(
    stack: Any,
    organization_id: str,
    question: str,
    known: list[Source],
    global_overrides: Mapping[str, Any] | None = None,
    mode: Mode | None = None,
) -> Draft | None:
    """The offline agent's graph route: the chooser's path over the published graph, as a draft.

    None (answer from search instead) when the chooser says `search`, the organization has no
    published graph, or the graph path finds nothing to quote. Everything is awaited in the caller's
    task, so cancelling the run cancels the retrieval (no further stage or map worker starts).
    `global_overrides` are the run's `graph_global` budgets and concurrency, within server limits.
    """
    mode = mode or choose_mode(question)  # a run's chosen path (`LibrarianContext.mode`) wins
    if mode == "search" or not await has_graph(stack, organization_id):
        return None
    if mode == "local":
        result = await run_local(stack, organization_id, question)
        if result["status"] != "completed" or not result["sources"]:
            return None
        return await asyncio.to_thread(offline_local_draft, stack, question, result["sources"], known)
    if mode == "drift":
        options = DriftOptions.from_settings(stack.settings)
        result = await run_drift(stack, organization_id, question, options=options)
        if result["status"] != "completed" or not result["sources"]:
            return None
        return drift_draft(result, known)
    options = global_options(global_overrides, stack.settings)  # the run's `graph_global`, checked
    try:
        result = await run_global(stack, organization_id, question, options=options)
    except GlobalSearchError:  # offline: no quotable sentence survived the reduce
        return None
    if result["status"] not in ("completed", "partial") or not result["sources"]:
        return None
    return global_draft(result, known)
