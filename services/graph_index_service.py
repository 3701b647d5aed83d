"""Plain-Python front door of the graph index build (CLI, tests, notebooks).

Builds of one organization are serialized (a thread lock plus a file lock in the data directory, so a
CLI build and a notebook build of the same organization queue instead of racing). The status report
is `services.graph_index_status`, read here off this process's checkpointer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.types import Checkpointer

from graphs.graph_index import build_graph_index_graph
from librarian.errors import ConfigError, ContractMismatchError, TenantError
from librarian.locks import KeyedLocks
from librarian.runs.threads import graph_thread_id
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id
from services.graph_index_status import build_status, published_facts, status_report

ProgressCallback = Callable[[str, dict[str, Any]], None]


class GraphIndexService:
    """Run and report an organization's graph build with a given stack and checkpointer."""

    def __init__(self, stack: Stack, checkpointer: Checkpointer) -> None:
        self.stack = stack
        self.graph = build_graph_index_graph(lambda: stack, checkpointer)
        self._locks = KeyedLocks(stack.settings.data_dir / "locks")

    @staticmethod
    def config(org: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": graph_thread_id(org)}}

    def build(
        self, org: str, *, force: bool = False, on_update: ProgressCallback | None = None
    ) -> dict[str, Any]:
        """Run one build to the end and return the status report. Errors are in the report, not raised,
        except a wrong setup (configuration, tenancy), which no status can describe."""
        validate_organization_id(org)
        with self._locks.hold(graph_thread_id(org)):
            stream = self.graph.stream(
                {"force": force}, self.config(org), context={"organization_id": org}, stream_mode="updates"
            )
            try:
                for update in stream:
                    if on_update:
                        for node, value in update.items():
                            on_update(node, value if isinstance(value, dict) else {"value": value})
            except (ConfigError, ContractMismatchError, TenantError):
                raise
            except Exception:  # the failure is in the checkpoint; the report shows it
                pass
        return self.status(org)

    def last_build(self, org: str) -> dict[str, Any]:
        snapshot = self.graph.get_state(self.config(org))
        errors = [t.error for t in snapshot.tasks if getattr(t, "error", None)]
        return build_status(dict(snapshot.values or {}), snapshot.next, errors)

    def status(self, org: str) -> dict[str, Any]:
        validate_organization_id(org)
        published, published_docs, indexed = published_facts(self.stack, org)
        return status_report(org, published, published_docs, indexed, self.last_build(org))
