"""`search_documents`: the agent's only way to read an organization's documents.

The model sees two arguments, `query` and `top_k`. Which organization is searched comes from trusted
run configuration (`librarian.tenancy.resolve_organization` via the injected `ToolRuntime`), and how
dense and sparse signals mix (alpha) comes from settings: invariant 4.

The tool returns a `Command` that appends its sources to the agent state (`sources`) and numbers
them globally, so the `[n]` markers of an answer map to `state["sources"][n-1]` across several
searches in one conversation. Called outside an agent (`tool.invoke(args, config=...)`, with the
organization in `configurable`), it returns `{relevantContext, sources}` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command
from pydantic import BaseModel, Field

from librarian.stack import Stack, get_stack
from librarian.tenancy import organization_of
from tools.rerank_base import Reranker
from tools.retrieval import SearchOptions, SearchResult, Source, search

DESCRIPTION = (
    "Search this organization's uploaded documents for excerpts relevant to a question. "
    "Returns numbered excerpts with file names and page numbers; cite them as [n]."
)


class SearchDocumentsArgs(BaseModel):
    """Model-visible arguments. Extra keys a model invents (namespace, org, filter...) are dropped."""

    query: str = Field(description="What to look for, in natural language or exact terms.")
    # None, not 8: an omitted top_k means the server's LIBRARIAN_TOP_K, not a number fixed here.
    top_k: int | None = Field(
        default=None, ge=1, le=20, description="How many excerpts to return (1-20); omit for the default."
    )


def merge_sources(existing: list[Source] | None, new: list[Source] | None) -> list[Source]:
    """Reducer for the agent's `sources`: append unseen ids, keep first-seen numbering."""
    merged = list(existing or [])
    seen = {s["id"] for s in merged}
    for source in new or []:
        if source["id"] not in seen:
            merged.append(source)
            seen.add(source["id"])
    return merged


def number_sources(known: list[Source], found: list[Source]) -> list[tuple[int, Source]]:
    """Citation numbers for `found`, reusing the number of a source already cited earlier."""
    numbers = {s["id"]: i for i, s in enumerate(known, start=1)}
    next_number = len(known) + 1
    numbered = []
    for source in found:
        if source["id"] not in numbers:
            numbers[source["id"]] = next_number
            next_number += 1
        numbered.append((numbers[source["id"]], source))
    return numbered


def render(numbered: list[tuple[int, Source]]) -> str:
    if not numbered:
        return "No relevant excerpts were found in this organization's documents."
    return "\n\n".join(f"[{n}] {s['filename']}, page {s['page']}:\n{s['text']}" for n, s in numbered)


# Renders a tool's message from its artifact (a dict with `sources`) and the numbered sources.
Renderer = Callable[[dict[str, Any], list[tuple[int, Source]]], str]


def renumber_search_results(
    messages: list[Any], sources: list[Source], renderers: Mapping[str, Renderer] | None = None
) -> list[ToolMessage]:
    """The trailing search results re-rendered with their numbers in `sources`, where they differ.

    Each call numbers its excerpts from the state it was given, so calls the model makes in
    parallel all start after the same number and would give different excerpts the same `[n]`.
    Once their sources are merged (in call order), the final numbering is known; the agent runs
    this before the model reads the results (`graphs.agent`). `renderers` adds other citing tools
    by name (the graph tools: `tools.graph_tools.RENDERERS`); `search_documents` is always one.
    """
    by_name: dict[str, Renderer] = {"search_documents": lambda _artifact, numbered: render(numbered)}
    by_name.update(renderers or {})
    numbers = {s["id"]: n for n, s in enumerate(sources, start=1)}
    fixed: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        artifact = message.artifact
        renderer = by_name.get(message.name or "")
        if renderer is None or not isinstance(artifact, dict):
            continue
        found = artifact.get("sources") or []
        if not all(s["id"] in numbers for s in found):
            continue  # not merged yet: nothing reliable to renumber against
        content = renderer(artifact, [(numbers[s["id"]], s) for s in found])
        if content != message.content:
            fixed.append(message.model_copy(update={"content": content}))
    return fixed[::-1]


def make_search_tool(
    stack: Callable[[], Stack] = get_stack,
    reranker: Callable[[Stack], Reranker | None] | None = None,
) -> BaseTool:
    """Build the tool over a stack supplier (tests and the server pick providers)."""

    def _reranker(current: Stack) -> Reranker | None:
        if reranker is not None:
            return reranker(current)
        from tools.rerankers import make_reranker

        return make_reranker(current)

    @tool("search_documents", args_schema=SearchDocumentsArgs, description=DESCRIPTION)
    def search_documents(
        query: str,
        config: RunnableConfig,
        top_k: int | None = None,
        runtime: ToolRuntime = None,  # type: ignore[assignment]  # injected inside agents only
    ) -> Command | SearchResult:
        """Inside an agent: a Command that records the sources. Called directly: the result itself."""
        organization_id = organization_of(config, runtime)
        if not isinstance(runtime, ToolRuntime):  # plain Python: `tool.invoke(args, config=...)`
            runtime = None  # whatever a caller passed as `runtime` is not trusted
        current = stack()
        options = SearchOptions.from_settings(current, top_k=top_k)
        result = search(current, organization_id, query, options, _reranker(current))
        if runtime is None:
            return result
        state: dict[str, Any] = runtime.state if isinstance(runtime.state, dict) else {}
        numbered = number_sources(state.get("sources") or [], result["sources"])
        message = ToolMessage(
            content=render(numbered),
            tool_call_id=runtime.tool_call_id,
            artifact={"relevantContext": result["relevantContext"], "sources": result["sources"]},
        )
        return Command(update={"messages": [message], "sources": result["sources"]})

    return search_documents


search_documents = make_search_tool()
