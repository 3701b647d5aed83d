"""`librarian ask --mode`: choose (or take) a retrieval path, retrieve, answer, with sources.

Above the graphs because the search path runs the agent graph itself (with graph routing off: the
path is already chosen); the graph paths run the engines of `librarian.graph.query.runs` and shape
their answers with `librarian.answers.modes`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from graphs.agent import build_agent
from librarian.answers.modes import ModeAnswer, cite_communities, has_graph, local_answer, resolve_mode
from librarian.chat_model import chat_model_from_settings
from librarian.graph.query.runs import NO_GRAPH, run_global, run_local


async def answer_with_mode(
    stack: Any, organization_id: str, question: str, mode: str = "auto", *, model: Any | None = None
) -> ModeAnswer:
    """`librarian ask --mode`: choose (or take) the path, retrieve, answer, with sources."""
    chosen, chosen_by = resolve_mode(question, mode)
    model = model if model is not None else chat_model_from_settings(stack.settings)
    if chosen != "search" and chosen_by == "auto" and not await has_graph(stack, organization_id):
        chosen, chosen_by = "search", "auto (no knowledge graph yet)"
    if chosen == "search":
        agent = build_agent(lambda: stack, model=model, graph_routing=False)  # the path is chosen
        state = await agent.ainvoke(
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
