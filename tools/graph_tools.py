"""The agent's graph tools, `graph_local_search` and `graph_global_search`, and the runs behind them.

Like `search_documents`, the model sees only the question (and, for global, an optional community
level): the organization comes from trusted run configuration through the injected `ToolRuntime`
(`librarian.tenancy.resolve_organization`), never from an argument. Both tools are coroutines, so
cancelling the run (server) or the task (notebook) cancels the retrieval: no further stage, model
call or map worker starts.

With a chat model configured (LIBRARIAN_CHAT_MODEL) query parsing, the community filter and the
global map/reduce use it; without one the offline paths run (rules, no filter, `OfflineMapper`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command
from pydantic import BaseModel, Field

from librarian.stack import Stack, get_stack
from librarian.tenancy import organization_of, validate_organization_id
from tools.graph_global import (
    GlobalOptions,
    LLMMapper,
    OfflineMapper,
    cited_chunks,
    global_search,
    live_inputs,
    llm_reducer,
    load_communities,
    offline_reducer,
    provenance_probes,
)
from tools.graph_live import Liveness
from tools.graph_local import LocalOptions, chunk_source, local_search
from tools.retrieval import Source
from tools.search import Renderer, number_sources

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
NO_GRAPH = (
    "This organization has no knowledge graph yet (run `librarian graph build`); "
    "use search_documents instead."
)


def chat_model(stack: Stack) -> Any | None:
    """The configured chat model for parsing, filtering and map/reduce; None offline."""
    from graphs.agent import chat_model_from_settings  # lazy: graphs.agent imports this module

    return chat_model_from_settings(stack.settings)


def make_reranker(stack: Stack) -> Any:
    from tools.rerankers import make_reranker as make

    return make(stack)


async def run_local(
    stack: Stack,
    organization_id: str,
    question: str,
    *,
    model: Any | None = None,
    options: LocalOptions | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    return dict(
        await local_search(
            stack,
            organization_id,
            question,
            options,
            model=model,
            reranker=await asyncio.to_thread(make_reranker, stack),
            should_stop=should_stop,
        )
    )


async def run_global(
    stack: Stack,
    organization_id: str,
    question: str,
    *,
    model: Any | None = None,
    options: GlobalOptions | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Global search in the organization's published graph; sources are the cited chunks."""
    org = validate_organization_id(organization_id)
    options = options or GlobalOptions()
    graph = await asyncio.to_thread(lambda: stack.graph_store.scope(org))  # may open files: off the loop
    published = await asyncio.to_thread(graph.published_version)
    if published is None:
        return {"status": "no_graph", "answer": NO_GRAPH, "sources": [], "communities": [], "batches": []}
    version = published.version
    inputs = await asyncio.to_thread(load_communities, graph, published, options.level)
    # Only what the index still holds (`tools.graph_live`): one probe per document the communities
    # draw on; then the cited chunks themselves, so a citation never points at a deleted document.
    liveness = await asyncio.to_thread(Liveness.of, stack, org, graph, version)
    inputs = live_inputs(inputs, await asyncio.to_thread(liveness.paths, provenance_probes(inputs)))
    if model is None:
        dense = await asyncio.to_thread(lambda: stack.dense)  # loading the model reads files
        mapper: Any = OfflineMapper(dense.embed_query, dense.embed_documents)
        reducer = offline_reducer()
    else:
        mapper, reducer = LLMMapper(model), llm_reducer(model)
    result = await global_search(question, inputs, mapper, reducer, options, should_stop=should_stop)
    pairs = cited_chunks(result, inputs)
    cited = await asyncio.to_thread(liveness.chunks, [c for _, c in pairs])
    pairs = [(community_id, chunk_id) for community_id, chunk_id in pairs if chunk_id in cited]
    chunks = await asyncio.to_thread(graph.chunks, [c for _, c in pairs], version=version)
    by_id = {c.chunk_id: c for c in chunks}
    sources: list[Source] = []
    community_of: dict[str, list[str]] = {}
    for community_id, chunk_id in pairs:
        if chunk_id in by_id and chunk_id not in community_of:
            sources.append(chunk_source(by_id[chunk_id], 0.0))
        if chunk_id in by_id:
            community_of.setdefault(chunk_id, []).append(community_id)
    return {
        "status": result.status,
        "answer": result.answer,
        "version": version,
        "level": result.level,
        "failedMapBatches": result.failed_batches,
        "communities": result.communities,
        "citedCommunities": result.cited_communities,
        "selectedMapAnswers": [
            {"answer": a.answer, "usefulness": a.usefulness, "communityIds": a.community_ids}
            for a in result.selected
        ],
        "batches": [{"communityIds": b.community_ids, "tokens": b.tokens} for b in result.batches],
        "mapBudget": options.map_budget - options.map_reserve,
        "sources": sources,
        "sourceCommunities": community_of,
    }


# ------------------------------------------------------------------------------------------- tools


class GraphLocalArgs(BaseModel):
    """Model-visible arguments. Extra keys a model invents (namespace, org...) are dropped."""

    query: str = Field(description="The question, naming the entities it is about.")


class GraphGlobalArgs(BaseModel):
    query: str = Field(description="The broad question (themes, overview, trends, changes).")
    level: int | None = Field(
        default=None, ge=0, le=8, description="Community level (0 = coarsest); omit for the finest."
    )


def _render(numbered: list[tuple[int, Source]], head: str) -> str:
    body = "\n\n".join(f"[{n}] {s['filename']}, page {s['page']}:\n{s['text']}" for n, s in numbered)
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


# The agent re-renders tool messages with their final `[n]` once parallel calls' sources are merged
# (`tools.search.renumber_search_results`): without these, a graph tool called beside
# `search_documents` in one turn would number its excerpts from the same start and collide.
RENDERERS: dict[str, Renderer] = {"graph_local_search": render_local, "graph_global_search": render_global}


def _organization(config: RunnableConfig, runtime: Any) -> tuple[str, ToolRuntime | None]:
    trusted = runtime if isinstance(runtime, ToolRuntime) else None  # plain Python: no runtime
    return organization_of(config, trusted), trusted


def _command(runtime: ToolRuntime, content: str, artifact: dict[str, Any], sources: list[Source]) -> Command:
    message = ToolMessage(content=content, tool_call_id=runtime.tool_call_id, artifact=artifact)
    return Command(update={"messages": [message], "sources": sources})


def _known(runtime: ToolRuntime | None) -> list[Source]:
    state = runtime.state if runtime is not None and isinstance(runtime.state, dict) else {}
    return state.get("sources") or []


def make_graph_tools(stack: Callable[[], Stack] = get_stack) -> list[BaseTool]:
    """`graph_local_search` and `graph_global_search` over a stack supplier."""

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
        result = await run_global(
            current, organization_id, query, model=chat_model(current), options=GlobalOptions(level=level)
        )
        if trusted is None:
            return result
        numbered = number_sources(_known(trusted), result["sources"])
        return _command(trusted, render_global(result, numbered), result, result["sources"])

    return [graph_local_search, graph_global_search]
