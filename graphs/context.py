"""Run context shared by Librarian's graphs (LangGraph `context_schema`).

`organization_id` is trusted configuration: plain-Python callers and the server's own routes set it
after checking membership. On the LangGraph server an authenticated user always wins over it (see
`librarian.tenancy.resolve_organization`), so a client cannot pick another organization through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig

from librarian import tenancy

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolRuntime
    from langgraph.runtime import Runtime


@dataclass
class LibrarianContext:
    organization_id: str | None = None
    vector_query: dict[str, Any] | None = (
        None  # per-run overrides of the vector query tool (never the namespace)
    )
    # per-run global search budgets and map concurrency, within the server's limits
    # (`librarian.graph.query.global_limits`): mapBudget, mapReserve, reduceBudget, reduceReserve, concurrency
    graph_global: dict[str, Any] | None = None
    # per-run answer path, as `librarian ask --mode`: auto (None), search, local, global or drift
    mode: str | None = None
    # per-run restriction of search to named documents of the organization (`docs/NAME`, or NAME);
    # checked by `requested_paths`: paths never name an organization, the server's is searched
    paths: list[str] | None = None


ANSWER_MODES = ("auto", "search", "local", "global", "drift")


def requested_mode(context: Any) -> str:
    """The run's chosen answer path (`LibrarianContext.mode`), checked: a typo is an error that names
    the valid paths, never a silent fallback to another path."""
    mode = context.get("mode") if isinstance(context, dict) else getattr(context, "mode", None)
    mode = mode or "auto"
    if mode not in ANSWER_MODES:
        raise ValueError(f"mode must be one of {', '.join(ANSWER_MODES)}; got {mode!r}")
    return mode


def organization_of(
    config: RunnableConfig | None, runtime: Runtime[LibrarianContext] | ToolRuntime | None = None
) -> str:
    """The organization (= namespace) of the current run, from trusted sources only.

    Nodes and tools both call this (`librarian.tenancy.organization_of`, which tools import directly);
    only a `Runtime` or `ToolRuntime` made by LangGraph is read, never another object named `runtime`.
    """
    return tenancy.organization_of(config, runtime)
