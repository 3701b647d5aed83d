"""`search_documents`: the agent's only way to read an organization's documents.

The model sees three arguments, `query`, `top_k` and `paths` (restrict the search to named documents
of the organization: `librarian.retrieval.path_filter`; a run's context may restrict it too, and then
the model can only narrow that, never widen it). Which organization is searched comes from trusted
run configuration (`librarian.tenancy.resolve_organization` via the injected `ToolRuntime`), and how
dense and sparse signals mix (alpha) comes from settings: invariant 4.

The tool returns a `Command` that appends its sources to the agent state (`sources`) and numbers
them globally, so the `[n]` markers of an answer map to `state["sources"][n-1]` across several
searches in one conversation. Called outside an agent (`tool.invoke(args, config=...)`, with the
organization in `configurable`), it returns `{relevantContext, sources}` itself.
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

from librarian.answers.numbering import number_sources, render
from librarian.retrieval.path_filter import (
    MAX_SEARCH_PATHS,
    SearchPathError,
    normalise_search_paths,
    requested_paths,
    unknown_paths,
    unknown_paths_message,
)
from librarian.retrieval.reranker import Reranker
from librarian.retrieval.search import SearchOptions, SearchResult, search
from librarian.stack import Stack, get_stack
from librarian.tenancy import organization_of

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
    paths: list[str] | None = Field(
        default=None,
        max_length=MAX_SEARCH_PATHS,
        description="Only search these documents of the library, e.g. ['docs/handbook.pdf'] "
        "(when the user mentions a document); omit to search them all.",
    )


def make_search_tool(
    stack: Callable[[], Stack] = get_stack,
    reranker: Callable[[Stack], Reranker | None] | None = None,
) -> BaseTool:
    """Build the tool over a stack supplier (tests and the server pick providers)."""

    def _reranker(current: Stack) -> Reranker | None:
        if reranker is not None:
            return reranker(current)
        from librarian.retrieval.rerankers import make_reranker

        return make_reranker(current)

    @tool("search_documents", args_schema=SearchDocumentsArgs, description=DESCRIPTION)
    def search_documents(
        query: str,
        config: RunnableConfig,
        top_k: int | None = None,
        paths: list[str] | None = None,
        runtime: ToolRuntime = None,  # type: ignore[assignment]  # injected inside agents only
    ) -> Command | SearchResult | str:
        """Inside an agent: a Command that records the sources. Called directly: the result itself.

        A bad or unknown path is answered with a plain message naming it (the model can correct
        itself), never with an exception trace.
        """
        organization_id = organization_of(config, runtime)
        if not isinstance(runtime, ToolRuntime):  # plain Python: `tool.invoke(args, config=...)`
            runtime = None  # whatever a caller passed as `runtime` is not trusted
        current = stack()
        try:
            chosen = searched_paths(paths, runtime)
        except SearchPathError as exc:
            return f"Error: {exc}"
        if chosen:
            unknown = unknown_paths(current.files, organization_id, chosen)
            if unknown:
                return unknown_paths_message(unknown)
        options = SearchOptions.from_settings(current, top_k=top_k, paths=chosen)
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


def searched_paths(requested: list[str] | None, runtime: ToolRuntime | None) -> list[str] | None:
    """The documents to search: the model's `paths`, within the run context's `paths` if it has any.

    The context is the user's restriction (the web app's "mention a document", `librarian ask --in`),
    so a model's path outside it is refused rather than searched.
    """

    allowed = requested_paths(runtime.context) if runtime is not None else None
    asked = normalise_search_paths(requested)
    if asked is None:
        return allowed
    outside = [path for path in asked if allowed is not None and path not in allowed]
    if outside:
        raise SearchPathError(
            f"{', '.join(outside)} is outside the documents this conversation is restricted to "
            f"({', '.join(allowed or [])})"
        )
    return asked


search_documents = make_search_tool()
