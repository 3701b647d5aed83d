"""The agent's graph tools, `graph_local_search`, `graph_global_search` and `graph_drift_search`,
thin over `librarian.graph.query.runs`.

Like `search_documents`, the model sees only the question (and, for global, an optional community
level): the organization comes from trusted run configuration through the injected `ToolRuntime`
(`librarian.tenancy.resolve_organization`), never from an argument. Both tools are coroutines, so
cancelling the run (server) or the task (notebook) cancels the retrieval: no further stage, model
call or map worker starts.

A run may set global search's token budgets and map concurrency (never the organization) under
`graph_global` in its context or `configurable`, within the server's limits
(`librarian.graph.query.global_limits`): a value over a limit fails the call with an error naming the
option and the limit. Sources carry their graph channel scores (`scores["graph"]`) and global ones
the community texts their citations are checked against (`support`); the agent's final answer is
checked by its `VerifyCitations` middleware over the same sources, so a graph route is verified
like a search one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command
from pydantic import BaseModel, Field

from librarian.answers.modes import renumber_citations
from librarian.answers.numbering import Renderer, number_sources
from librarian.graph.query.drift_search import DriftOptions
from librarian.graph.query.global_limits import global_options, run_overrides
from librarian.graph.query.runs import NO_GRAPH, chat_model, run_drift, run_global, run_local
from librarian.retrieval.excerpts import numbered_excerpts
from librarian.retrieval.search import Source
from librarian.stack import Stack, get_stack
from librarian.tenancy import organization_of

LOCAL_DESCRIPTION = (
    "Search this organization's knowledge graph around the people, places, organisations or things a "
    "question names: their relations, the facts stated about them and the passages that support them. "
    "Best for relation and multi-hop fact questions. Returns numbered excerpts; cite them as [n]."
)
GLOBAL_DESCRIPTION = (
    "Answer a broad question over ALL of this organization's documents from the knowledge graph's "
    "community summaries: main themes, overviews, trends, how something changes across the corpus. "
    "Returns a synthesised answer with numbered sources; cite them as [n]."
)
DRIFT_DESCRIPTION = (
    "Answer a broad question about something specific (how X affects, relates to or fits into the rest; "
    "what depends on X) from the knowledge graph: first the closest community summaries, then local "
    "searches on the follow-up questions they raise. Returns an answer with numbered sources; cite "
    "them as [n]."
)
# ------------------------------------------------------------------------------------------- tools


class GraphLocalArgs(BaseModel):
    """Model-visible arguments. Extra keys a model invents (namespace, org...) are dropped."""

    query: str = Field(description="The question, naming the entities it is about.")


class GraphGlobalArgs(BaseModel):
    query: str = Field(description="The broad question (themes, overview, trends, changes).")
    level: int | None = Field(
        default=None, ge=0, le=8, description="Community level (0 = coarsest); omit for the finest."
    )


class GraphDriftArgs(BaseModel):
    query: str = Field(description="The question: what it is about, and the reach it asks about.")


def _render(numbered: list[tuple[int, Source]], head: str) -> str:
    body = numbered_excerpts(numbered)
    return f"{head}\n\n{body}" if body else head


def render_local(result: dict[str, Any], numbered: list[tuple[int, Source]]) -> str:
    """What the model reads of a local result, from the result alone (the message's artifact)."""
    if result.get("status") == "no_graph":
        return NO_GRAPH
    head = "Graph context:\n" + "\n".join(
        f"- {c['title']}: {c['summary']}" for c in result.get("communities") or [] if c["summary"]
    )
    return _render(numbered, head)


def render_global(result: dict[str, Any], numbered: list[tuple[int, Source]]) -> str:
    """What the model reads of a global result, from the result alone (the message's artifact)."""
    head = f"Global answer (status: {result['status']}):\n{result['answer']}"
    if numbered:
        head += "\n\nSources of the cited communities:"
    return _render(numbered, head)


def render_drift(result: dict[str, Any], numbered: list[tuple[int, Source]]) -> str:
    """What the model reads of a DRIFT result: its answer with `[n]` as `numbered` gives them."""
    if result.get("status") == "no_graph":
        return NO_GRAPH
    numbers = {source["id"]: n for n, source in numbered}
    answer = renumber_citations(result["answer"], list(result.get("sources") or []), numbers)
    head = f"DRIFT answer (status: {result['status']}):\n{answer}"
    if numbered:
        head += "\n\nEvidence of the follow-up searches:"
    return _render(numbered, head)


# The agent re-renders tool messages with their final `[n]` once parallel calls' sources are merged
# (`librarian.answers.numbering.renumber_search_results`): without these, a graph tool called beside
# `search_documents` in one turn would number its excerpts from the same start and collide.
RENDERERS: dict[str, Renderer] = {
    "graph_local_search": render_local,
    "graph_global_search": render_global,
    "graph_drift_search": render_drift,
}


def _organization(config: RunnableConfig, runtime: ToolRuntime | None) -> tuple[str, ToolRuntime | None]:
    """The run's organization, and the runtime only if LangGraph injected it.

    Inside an agent LangGraph injects `runtime`; called directly, the tool gets whatever the caller put
    under `"runtime"` in its input (or nothing), so the annotation alone is no proof: only a real
    `ToolRuntime` is trusted, to name the organization or to receive the `Command`.
    """
    trusted = runtime if isinstance(runtime, ToolRuntime) else None
    return organization_of(config, trusted), trusted


def _command(runtime: ToolRuntime, content: str, artifact: dict[str, Any], sources: list[Source]) -> Command:
    message = ToolMessage(content=content, tool_call_id=runtime.tool_call_id, artifact=artifact)
    return Command(update={"messages": [message], "sources": sources})


def _known(runtime: ToolRuntime | None) -> list[Source]:
    state = runtime.state if runtime is not None and isinstance(runtime.state, dict) else {}
    return state.get("sources") or []


def make_graph_tools(stack: Callable[[], Stack] = get_stack) -> list[BaseTool]:
    """`graph_local_search`, `graph_global_search` and `graph_drift_search` over a stack supplier."""

    @tool("graph_local_search", args_schema=GraphLocalArgs, description=LOCAL_DESCRIPTION)
    async def graph_local_search(
        query: str,
        config: RunnableConfig,
        runtime: ToolRuntime = None,  # type: ignore[assignment]  # injected inside agents only
    ) -> Command | dict[str, Any]:
        organization_id, trusted = _organization(config, runtime)
        current = stack()
        result = await run_local(current, organization_id, query, model=chat_model(current))
        if trusted is None:
            return result
        numbered = number_sources(_known(trusted), result["sources"])
        return _command(trusted, render_local(result, numbered), result, result["sources"])

    @tool("graph_global_search", args_schema=GraphGlobalArgs, description=GLOBAL_DESCRIPTION)
    async def graph_global_search(
        query: str,
        config: RunnableConfig,
        level: int | None = None,
        runtime: ToolRuntime = None,  # type: ignore[assignment]
    ) -> Command | dict[str, Any]:
        organization_id, trusted = _organization(config, runtime)
        current = stack()
        overrides = run_overrides(config, trusted.context if trusted is not None else None)
        options = global_options(overrides, current.settings, level=level)
        result = await run_global(current, organization_id, query, model=chat_model(current), options=options)
        if trusted is None:
            return result
        numbered = number_sources(_known(trusted), result["sources"])
        return _command(trusted, render_global(result, numbered), result, result["sources"])

    @tool("graph_drift_search", args_schema=GraphDriftArgs, description=DRIFT_DESCRIPTION)
    async def graph_drift_search(
        query: str,
        config: RunnableConfig,
        runtime: ToolRuntime = None,  # type: ignore[assignment]
    ) -> Command | dict[str, Any]:
        organization_id, trusted = _organization(config, runtime)
        current = stack()
        options = DriftOptions.from_settings(current.settings)
        result = await run_drift(current, organization_id, query, model=chat_model(current), options=options)
        if trusted is None:
            return result
        numbered = number_sources(_known(trusted), result["sources"])
        return _command(trusted, render_drift(result, numbered), result, result["sources"])

    return [graph_local_search, graph_global_search, graph_drift_search]
