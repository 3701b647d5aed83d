"""Which retrieval path answers a question: `search`, graph `local` or graph `global`.

The notes' table (GRAPHRAG-NOTES.md, "Questions each path fits"):

| query goal | path |
| --- | --- |
| relations, local facts, source support for an entity | local |
| cross-topic overview, trends, synthesis | global |

and a question that names no entity and asks no overview is a plain lookup: `search`.

`choose_mode` reads the parsed query: overview cues (themes) → global; else named entities →
local; else search. The rules are the query parser's (`tools.graph_query`), not fitted to data; the
labelled set in `tests/fixtures/graph_mode_questions.jsonl` was written by hand by the same person as
the rules, so its accuracy is a sanity check, not a held-out measure.

`answer_with_mode` is what `librarian ask --mode` runs: the chosen path, then an answer with its
sources (chat model when configured, quoted sentences offline).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from tools.graph_query import ParsedQuery, parse_rules

Mode = Literal["search", "local", "global"]
MODES: tuple[str, ...] = ("auto", "search", "local", "global")


def choose_mode(question: str, parsed: ParsedQuery | None = None) -> Mode:
    parsed = parsed or parse_rules(question)
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


LOCAL_ANSWER_PROMPT = """Answer the question from the graph context and evidence below only. Cite every
claim with the number of its evidence in square brackets, e.g. [2]. If the evidence does not answer the
question, say so plainly.

Question: {question}

{context}"""


def cite_communities(
    answer: str, sources: list[dict[str, Any]], source_communities: dict[str, list[str]]
) -> str:
    """Follow each `[Community ID: x]` of a global answer with the `[n]` of the chunks it stands on."""
    import re

    numbers: dict[str, list[int]] = {}
    for n, source in enumerate(sources, start=1):
        for community_id in source_communities.get(source["id"], []):
            numbers.setdefault(community_id, []).append(n)

    def add(match: re.Match[str]) -> str:
        refs = "".join(f"[{n}]" for n in numbers.get(match.group(1).strip(), []))
        return match.group(0) + refs

    return re.sub(r"\[Community ID: ([^\]|]+?)\]", add, answer)


async def local_answer(stack: Any, question: str, result: dict[str, Any], model: Any | None) -> str:
    """A model's answer from the local context, or quoted sentences of the evidence offline."""
    from tools.search import number_sources

    numbered = number_sources([], result["sources"])
    if not numbered:
        return "I found nothing relevant in this organization's knowledge graph."
    if model is not None:
        reply = await model.ainvoke(
            LOCAL_ANSWER_PROMPT.format(question=question, context=result["relevantContext"])
        )
        return str(getattr(reply, "content", reply))
    import asyncio

    from graphs.extractive import ANSWER_FLOOR, abstain, choose_quotes, compose, scored_units

    floor = getattr(stack.settings, "answer_floor", None)
    units = await asyncio.to_thread(scored_units, stack, question, numbered)
    quotes = choose_quotes(units, ANSWER_FLOOR if floor is None else floor)
    return compose(quotes, dict(numbered)) if quotes else abstain(numbered)


async def _has_graph(stack: Any, organization_id: str) -> bool:
    import asyncio

    from librarian.tenancy import validate_organization_id

    org = validate_organization_id(organization_id)
    return await asyncio.to_thread(lambda: stack.graph_store.scope(org).published_version() is not None)


async def answer_with_mode(
    stack: Any, organization_id: str, question: str, mode: str = "auto", *, model: Any | None = None
) -> ModeAnswer:
    """`librarian ask --mode`: choose (or take) the path, retrieve, answer, with sources."""
    from graphs.agent import build_agent, chat_model_from_settings
    from tools.graph_tools import run_global, run_local

    chosen, chosen_by = resolve_mode(question, mode)
    model = model if model is not None else chat_model_from_settings(stack.settings)
    if chosen != "search" and chosen_by == "auto" and not await _has_graph(stack, organization_id):
        chosen, chosen_by = "search", "auto (no knowledge graph yet)"
    if chosen == "search":
        from langchain_core.messages import HumanMessage

        state = await build_agent(lambda: stack, model=model).ainvoke(
            {"messages": [HumanMessage(question)]}, context={"organization_id": organization_id}
        )
        answer = str(state["messages"][-1].content)
        details = {"citations": state.get("citations") or []}
        return ModeAnswer(
            mode=chosen,
            chosenBy=chosen_by,
            answer=answer,
            status="completed",
            sources=list(state.get("sources") or []),
            details=details,
        )
    if chosen == "local":
        result = await run_local(stack, organization_id, question, model=model)
        if result["status"] == "no_graph":
            from tools.graph_tools import NO_GRAPH

            answer = NO_GRAPH
        else:
            answer = await local_answer(stack, question, result, model)
        details = {k: result[k] for k in ("parsed", "matchedEntities", "bridgeEntities", "communities")}
        return ModeAnswer(
            mode=chosen,
            chosenBy=chosen_by,
            answer=answer,
            status=result["status"],
            sources=list(result["sources"]),
            details=details,
        )
    result = await run_global(stack, organization_id, question, model=model)
    answer = cite_communities(result["answer"], result["sources"], result.get("sourceCommunities") or {})
    details = {k: result[k] for k in result if k not in ("answer", "sources", "status")}
    return ModeAnswer(
        mode=chosen,
        chosenBy=chosen_by,
        answer=answer,
        status=result["status"],
        sources=list(result["sources"]),
        details=details,
    )
