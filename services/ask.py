"""`librarian ask --mode`: choose (or take) a retrieval path, retrieve, answer, with sources.

Paths: search (the agent), graph local, graph global, graph DRIFT. Above the graphs because the
search path runs the agent graph itself (with graph routing off: the path is already chosen); the
graph paths run the engines of `librarian.graph.query.runs`, shape
their answers with `librarian.answers.modes` and check their citations with
`librarian.answers.checked` (the agent checks its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage

from graphs.agent import build_agent
from librarian.answers.checked import check_draft
from librarian.answers.extractive import Draft
from librarian.answers.modes import (
    ModeAnswer,
    drift_answer,
    global_answer,
    has_graph,
    local_answer,
    resolve_mode,
)
from librarian.chat_model import chat_model_from_settings
from librarian.graph.query.drift_search import DriftOptions
from librarian.graph.query.global_limits import global_options
from librarian.graph.query.runs import NO_GRAPH, run_drift, run_global, run_local
from librarian.retrieval.path_filter import (
    SearchPathError,
    normalise_search_paths,
    unknown_paths,
    unknown_paths_message,
)


def restricted_mode(stack: Any, organization_id: str, mode: str, paths: list[str]) -> str:
    """The mode a search restricted to `paths` takes: search (only it can honour them)."""
    if mode not in ("auto", "search"):
        raise SearchPathError(f"--in restricts search only; mode {mode!r} searches the whole knowledge graph")
    unknown = unknown_paths(stack.files, organization_id, paths)
    if unknown:
        raise SearchPathError(unknown_paths_message(unknown))
    return "search"


async def search_answer(
    stack: Any, organization_id: str, question: str, model: Any, chosen_by: str, paths: list[str] | None
) -> ModeAnswer:
    """The search path: the agent itself, without graph tools (the path is already chosen)."""
    agent = build_agent(lambda: stack, model=model, graph_routing=False)
    state = await agent.ainvoke(
        {"messages": [HumanMessage(question)]},
        context={"organization_id": organization_id, "paths": paths},
    )
    return ModeAnswer(
        mode="search",
        chosenBy=chosen_by,
        answer=str(state["messages"][-1].content),
        status="completed",
        sources=list(state.get("sources") or []),
        details={"citations": state.get("citations") or []},
    )


async def answer_with_mode(
    stack: Any,
    organization_id: str,
    question: str,
    mode: str = "auto",
    *,
    model: Any | None = None,
    global_overrides: Mapping[str, Any] | None = None,
    paths: list[str] | None = None,
) -> ModeAnswer:
    """`librarian ask --mode`: choose (or take) the path, retrieve, answer, with sources.

    Every path's answer is checked the same way (`details["citations"]`, unsupported sentences marked
    or dropped): search by the agent's own check, the graph paths by `check_draft`.
    `global_overrides` (mapBudget, mapReserve, reduceBudget, reduceReserve, concurrency) tune the
    global path within the server's limits (`librarian.graph.query.global_limits`); they are checked
    before anything runs, so a mistake costs no retrieval. `paths` (`librarian ask --in`) restrict
    the search to those documents of the organization; only the search path can honour them, so
    `auto` then takes it and a graph mode is refused.
    """
    paths = normalise_search_paths(paths)
    if paths:
        mode = restricted_mode(stack, organization_id, mode, paths)
    chosen, chosen_by = resolve_mode(question, mode)
    options = global_options(global_overrides, stack.settings, where="global search options")
    model = model if model is not None else chat_model_from_settings(stack.settings)
    if chosen != "search" and chosen_by == "auto" and not await has_graph(stack, organization_id):
        chosen, chosen_by = "search", "auto (no knowledge graph yet)"
    if chosen == "search":
        return await search_answer(stack, organization_id, question, model, chosen_by, paths)
    if chosen == "local":
        result = await run_local(stack, organization_id, question, model=model)
        if result["status"] == "no_graph":
            draft = Draft(NO_GRAPH, [], mode="local")
        else:
            draft = await local_answer(stack, question, result, model)
        answer, citations = await check_draft(stack, draft, model)
        keys = ("parsed", "matchedEntities", "bridgeEntities", "communities", "evidence")
        details = {k: result[k] for k in keys if k in result}  # shown on request (`--details`)
        return ModeAnswer(
            mode=chosen,
            chosenBy=chosen_by,
            answer=answer,
            status=result["status"],
            sources=list(result["sources"]),
            details={**details, "citations": citations},
        )
    if chosen == "drift":  # primer, local follow-ups, reduce: `librarian.graph.query.drift_search`
        options_drift = DriftOptions.from_settings(stack.settings)
        result = await run_drift(stack, organization_id, question, model=model, options=options_drift)
        answer, citations = await check_draft(stack, drift_answer(result), model)
        details = {k: result[k] for k in result if k not in ("answer", "sources", "status")}
        return ModeAnswer(
            mode=chosen,
            chosenBy=chosen_by,
            answer=answer,
            status=result["status"],
            sources=list(result["sources"]),
            details={**details, "citations": citations},
        )
    result = await run_global(stack, organization_id, question, model=model, options=options)
    answer, citations = await check_draft(stack, global_answer(result), model)
    details = {k: result[k] for k in result if k not in ("answer", "sources", "status")}
    return ModeAnswer(
        mode=chosen,
        chosenBy=chosen_by,
        answer=answer,
        status=result["status"],
        sources=list(result["sources"]),
        details={**details, "citations": citations},
    )
