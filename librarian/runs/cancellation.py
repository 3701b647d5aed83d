"""Cancelled runs (ingests and graph builds), as this process knows them, and superseded ones.

A cancelled run must leave nothing in the index. Cancelling stops the run between steps (the server
cancels the run's task; plain Python sets the flag read here), but a node already running in a
worker thread keeps running until it returns. So the nodes that write vectors ask `raise_if_cancelled`
right before they write, while holding the path's fence (`Coordination.fence`); the follow-up run
of a delete, a re-upload or a cancel deletes the path's vectors under the same fence. Whatever the
cancelled run wrote before that delete is deleted; whatever it would write after sees the flag and
writes nothing.

A graph build is cancelled by the same flag, read at its stage boundaries (`is_run_cancelled`): it
stops before its next stage and ends `cancelled`, never halfway through writing a version.

The registry is per process: the dev server and plain Python run their graphs in the process that
cancels them. Run ids are UUIDs, so the set only grows by the runs actually cancelled. Across
processes (`LIBRARIAN_POSTGRES_URL`), a run also stops once its path's epoch has moved on (a newer
upload, a delete or a cancel on any process: `librarian.runs.coordination`), checked under the same
fence, which is then PostgreSQL's.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from librarian.errors import LibrarianError
from librarian.runs.coordination import Coordination

if TYPE_CHECKING:
    from langgraph.runtime import Runtime


class IngestCancelledError(LibrarianError):
    """The run was cancelled (delete, re-upload or an admin's cancel); it wrote nothing more."""

    code = "cancelled"


_cancelled: set[str] = set()
_guard = threading.Lock()


def run_id_of(runtime: Runtime[Any] | None) -> str | None:
    """The id of the run a node belongs to: the server's run id, or the one `LocalRuns` gave it."""
    info = getattr(runtime, "execution_info", None)
    run_id = getattr(info, "run_id", None)
    return str(run_id) if run_id else None


def cancel_run(run_id: str) -> None:
    with _guard:
        _cancelled.add(str(run_id))


def is_cancelled(run_id: str | None) -> bool:
    with _guard:
        return run_id is not None and run_id in _cancelled


def forget_run(run_id: str) -> None:
    """Drop a finished run's flag (plain Python knows when its runs end)."""
    with _guard:
        _cancelled.discard(str(run_id))


def is_run_cancelled(runtime: Runtime[Any] | None) -> bool:
    """Whether the run a node belongs to has been cancelled (a graph build's stage boundary)."""
    return is_cancelled(run_id_of(runtime))


def raise_if_cancelled(
    runtime: Runtime[Any] | None,
    coordination: Coordination | None = None,
    org: str = "",
    path: str = "",
    epoch: int | None = None,
) -> None:
    """Stop the run if it was cancelled here, or superseded anywhere (its path's epoch moved on)."""
    if is_cancelled(run_id_of(runtime)):
        raise IngestCancelledError("the ingest was cancelled")
    if coordination is not None and coordination.superseded(org, path, epoch):
        raise IngestCancelledError("the ingest was superseded by a newer upload, a delete or a cancel")
