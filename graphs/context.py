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


def organization_of(
    config: RunnableConfig | None, runtime: Runtime[LibrarianContext] | ToolRuntime | None = None
) -> str:
    """The organization (= namespace) of the current run, from trusted sources only.

    Nodes and tools both call this (`librarian.tenancy.organization_of`, which tools import directly);
    only a `Runtime` or `ToolRuntime` made by LangGraph is read, never another object named `runtime`.
    """
    return tenancy.organization_of(config, runtime)
