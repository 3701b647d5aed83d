"""What `DocumentOps` needs from wherever document runs execute, and the run states both sides read.

The operations (`services.documents`) and the backends (`services.document_runs`) both depend on this
small contract and not on each other, so neither module has to import the other to agree on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

# Run states of the LangGraph server that mean "not finished yet" (local runs report `running` only).
ACTIVE_RUN_STATES = ("pending", "running")


@dataclass(frozen=True)
class RunRef:
    """Where a started run lives: the document's thread and the run's id."""

    thread_id: str
    run_id: str


class RunBackend(Protocol):
    """Where ingest runs execute: `LocalRuns` (plain Python) or `ServerRuns` (LangGraph server)."""

    def thread_of(self, org: str, path: str) -> str: ...

    async def start(
        self,
        org: str,
        path: str,
        run_input: dict[str, Any],
        *,
        graph: str = "ingest",
        owner: str | None = None,
    ) -> RunRef:
        """Start a run on the path's thread; runs of one path execute one at a time, in order."""
        ...

    async def cancel_active(self, org: str, path: str) -> int:
        """Cancel the path's queued and running runs; how many there were."""
        ...

    async def state(self, org: str, path: str) -> tuple[Any, list[dict[str, Any]]]:
        """The thread's latest snapshot (or None) and its runs, newest first."""
        ...

    async def state_of_epoch(self, org: str, path: str, epoch: int) -> Any:
        """The thread's latest snapshot written by a run of `epoch` (None if there is none): with
        replicas, a run superseded before it started may still write its checkpoint last."""
        ...
