"""How a document's status is read: the latest checkpoint of its thread, corrected by the thread's runs.

Status is never stored apart. This module stays light (no graphs, no SDK): the CLI's `status` and
`delete` read statuses straight from a checkpointer through `read_status`, without compiling a graph.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import SimpleNamespace
from typing import Any

from librarian.runs.threads import thread_id
from services.run_backend import ACTIVE_RUN_STATES

FAILED_RUN_STATES = ("error", "timeout")
INTERRUPTED_REASON = "the server stopped during the ingest and its run was lost; upload the file again"


@dataclass
class DocumentStatus:
    path: str
    status: str  # indexed | skipped | failed | running | queued | deleted | cancelled | not_ingested
    chunkCount: int = 0
    reason: str | None = None
    error: str | None = None
    contentHash: str | None = None
    parser: str | None = None
    updatedAt: str | None = None
    sizeBytes: int | None = None
    threadId: str | None = None
    queuedRuns: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON shape: optional run details are left out rather than sent as null."""
        data = asdict(self)
        for key in ("threadId", "queuedRuns"):
            if data[key] is None:
                del data[key]
        return data


def _is_cancel_error(error: Any) -> bool:
    return "IngestCancelledError" in f"{type(error).__name__} {error!r}"


def status_from_snapshot(path: str, snapshot: Any) -> DocumentStatus:
    """Read a document status off its thread's latest checkpoint.

    A checkpoint with pending tasks is either running or died; a task error means failed (or
    cancelled, when the error is the cancel flag).
    """
    values = dict(snapshot.values or {}) if snapshot is not None else {}
    if not values:
        return DocumentStatus(path=path, status="not_ingested")
    common = {
        "path": path,
        "contentHash": values.get("contentHash"),
        "parser": values.get("parser"),
        "updatedAt": values.get("updatedAt") or values.get("startedAt"),
        "sizeBytes": values.get("sizeBytes"),
    }
    if snapshot.next:
        errors = [t.error for t in snapshot.tasks if getattr(t, "error", None)]
        if errors and all(_is_cancel_error(e) for e in errors):
            return DocumentStatus(
                status="cancelled", error="cancelled", reason="the ingest was cancelled", **common
            )
        if errors:
            return DocumentStatus(status="failed", error="ingest_error", reason=str(errors[0]), **common)
        return DocumentStatus(status="running", chunkCount=values.get("indexedCount", 0), **common)
    return DocumentStatus(
        status=values.get("status", "not_ingested"),
        chunkCount=values.get("chunkCount", 0),
        reason=values.get("reason"),
        error=values.get("error"),
        **common,
    )


def read_status(checkpointer: Any, org: str, path: str) -> DocumentStatus:
    """A document's status straight from a checkpointer, without importing or compiling the graphs.

    For fast readers (the CLI's `status`): the latest checkpoint's values, with its error writes as
    failed tasks. A run still in progress (or one that died) shows `running`, as `get_state` would.
    """
    found = checkpointer.get_tuple({"configurable": {"thread_id": thread_id(org, path), "checkpoint_ns": ""}})
    if found is None:
        return status_from_snapshot(path, None)
    values = dict(found.checkpoint.get("channel_values") or {})
    tasks = [
        SimpleNamespace(error=v) for (_, channel, v) in found.pending_writes or () if channel == "__error__"
    ]
    pending = values.get("status") == "running" or bool(tasks)
    return status_from_snapshot(
        path, SimpleNamespace(values=values, next=("pending",) if pending else (), tasks=tasks)
    )


def document_status(path: str, snapshot: Any, runs: list[dict[str, Any]]) -> DocumentStatus:
    """The checkpoint's status, corrected by the thread's runs (newest first) still queued or running.

    A snapshot marked `interrupted` (by `ServerRuns.state`: its run was lost in a crash of the server,
    so nothing will finish it) reads `failed` with error `interrupted` rather than `running` forever.
    """
    status = status_from_snapshot(path, snapshot)
    active = [r for r in runs if r.get("status") in ACTIVE_RUN_STATES]
    if active:
        status.status = "running" if any(r["status"] == "running" for r in active) else "queued"
        status.queuedRuns = len(active)
    elif getattr(snapshot, "interrupted", False) and status.status == "running":
        status.status, status.error, status.chunkCount = "failed", "interrupted", 0
        status.reason = INTERRUPTED_REASON
    elif runs and runs[0].get("status") in FAILED_RUN_STATES and status.status != "failed":
        status.status, status.error = "failed", "run_failed"
        status.reason = f"the ingest run ended: {runs[0]['status']}"
    return status
