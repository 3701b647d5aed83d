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
# The pipeline stage a running ingest is in, named by the graph's next node, for people (the web app's
# "parsing → embedding → indexing"). `upsert_batch` embeds and writes each batch of chunks, so
# `chunkCount` (written so far) out of `chunkTotal` is the embedding progress.
STAGE_OF_NODE = {
    "load_file": "parsing",
    "parse": "parsing",
    "await_parse": "parsing",
    "map_chunks": "embedding",
    "delete_vectors": "embedding",
    "upsert_batch": "embedding",
    "finalize": "indexing",
}
STAGE_ORDER = ("parsing", "embedding", "indexing")


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
    stage: str | None = None  # running: parsing | embedding | indexing
    chunkTotal: int | None = None  # running: chunks the document has (once parsed)
    queuedSince: str | None = None  # queued: when its oldest waiting run was enqueued (its place in line)

    def as_dict(self) -> dict[str, Any]:
        """JSON shape: optional run details are left out rather than sent as null."""
        data = asdict(self)
        for key in ("threadId", "queuedRuns", "stage", "chunkTotal", "queuedSince"):
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
        indexed = values.get("indexedCount", 0)
        return DocumentStatus(status="running", chunkCount=indexed, **common, **_progress(snapshot, values))
    return DocumentStatus(
        status=values.get("status", "not_ingested"),
        chunkCount=values.get("chunkCount", 0),
        reason=values.get("reason"),
        error=values.get("error"),
        **common,
    )


def _progress(snapshot: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The stage of a pending checkpoint (the furthest of its next nodes) and, once parsed, its chunks."""
    if values.get("cleanup"):  # a delete's or cancel's follow-up: it removes, parses nothing
        return {"stage": None, "chunkTotal": None}
    stages = [STAGE_OF_NODE[node] for node in snapshot.next or () if node in STAGE_OF_NODE]
    stage = max(stages, key=STAGE_ORDER.index) if stages else None
    chunks = values.get("chunks")
    total = len(chunks) if isinstance(chunks, list) and stage in ("embedding", "indexing") else None
    return {"stage": stage, "chunkTotal": total}


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
        if status.status == "queued":
            # a queued run is not in the old checkpoint's stage; its place in line is its enqueue time
            status.stage, status.chunkTotal = None, None
            since = [str(r["created_at"]) for r in active if r.get("created_at")]
            status.queuedSince = min(since) if since else None
    elif getattr(snapshot, "interrupted", False) and status.status == "running":
        status.status, status.error, status.chunkCount = "failed", "interrupted", 0
        status.reason = INTERRUPTED_REASON
    elif runs and runs[0].get("status") in FAILED_RUN_STATES and status.status != "failed":
        status.status, status.error = "failed", "run_failed"
        status.reason = f"the ingest run ended: {runs[0]['status']}"
    return status
