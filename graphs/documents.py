"""Document operations for plain Python and the CLI: upload, ingest, status, delete, reindex.

The status of a document is the latest checkpoint of its (organization, path) thread; there is no
documents table. Ingests of one path are serialized (a thread lock per path, plus a file lock for
other processes on the same data directory), and each run reads the file as it is when it starts,
so concurrent re-uploads end with the last upload indexed.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from filelock import FileLock
from langgraph.types import Checkpointer

from graphs.ingest import build_ingest_graph, thread_id
from graphs.reindex import build_reindex_graph
from librarian.errors import ConfigError, ContractMismatchError, FileTooLargeError, TenantError
from librarian.files.paths import document_path, validate_document_path
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id

logger = logging.getLogger(__name__)


@dataclass
class DocumentStatus:
    path: str
    status: str  # indexed | skipped | failed | running | deleted | not_ingested
    chunkCount: int = 0
    reason: str | None = None
    error: str | None = None
    contentHash: str | None = None
    parser: str | None = None
    updatedAt: str | None = None
    sizeBytes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_from_snapshot(path: str, snapshot: Any) -> DocumentStatus:
    """Read a document status off its thread's latest checkpoint.

    A checkpoint with pending tasks is either running or died; a task error means failed.
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


class DocumentService:
    """Plain-Python front door to the write path, used by the CLI, tests and notebooks."""

    def __init__(self, stack: Stack, checkpointer: Checkpointer) -> None:
        self.stack = stack
        self.ingest_graph = build_ingest_graph(lambda: stack, checkpointer)
        self.reindex_graph = build_reindex_graph(lambda: stack, checkpointer)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    # --- serialization --------------------------------------------------------------------
    @contextmanager
    def _serialized(self, key: str) -> Iterator[None]:
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        lock_dir = self.stack.settings.data_dir / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        with lock, FileLock(str(lock_dir / f"{digest}.lock")):
            yield

    @staticmethod
    def config(org: str, path: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id(org, path)}}

    # --- operations -------------------------------------------------------------------------
    def upload(self, org: str, filename: str, data: bytes) -> str:
        """Store the file (same name overwrites) and return its document path; size is checked."""
        validate_organization_id(org)
        path = document_path(filename)
        limit = self.stack.settings.max_upload_bytes
        if len(data) > limit:
            raise FileTooLargeError(f"file is {len(data)} bytes; the limit is {limit} bytes")
        self.stack.files.write(org, path, data)
        return path

    def ingest(
        self, org: str, path: str, *, on_update: Callable[[str, dict[str, Any]], None] | None = None
    ) -> DocumentStatus:
        """Run the ingest graph for one document (serialized per path) and return its status."""
        validate_organization_id(org)
        path = validate_document_path(path)
        with self._serialized(thread_id(org, path)):
            self._run(self.ingest_graph, {"path": path}, org, path, on_update)
        return self.status(org, path)

    def resume(self, org: str, path: str) -> DocumentStatus:
        """Finish an interrupted run from its last checkpoint (finished work is not redone)."""
        with self._serialized(thread_id(org, path)):
            snapshot = self.ingest_graph.get_state(self.config(org, path))
            if snapshot.next:
                self._run(self.ingest_graph, None, org, path, None)
        return self.status(org, path)

    def reindex(self, org: str, path: str) -> DocumentStatus:
        with self._serialized(thread_id(org, path)):
            self._run(self.reindex_graph, {"path": path}, org, path, None)
        return self.status(org, path)

    def _run(self, graph: Any, run_input: Any, org: str, path: str, on_update: Any) -> None:
        config = self.config(org, path)
        context = {"organization_id": org}
        try:
            for update in graph.stream(run_input, config, context=context, stream_mode="updates"):
                if on_update:
                    for node, value in update.items():
                        on_update(node, value if isinstance(value, dict) else {})
        except (ConfigError, ContractMismatchError, TenantError):
            raise  # the caller's setup is wrong: no status could describe that
        except Exception as exc:  # the failure is in the checkpoint; `status` reports it
            logger.warning("ingest of %s in %s failed: %s", path, org, exc)

    def status(self, org: str, path: str) -> DocumentStatus:
        validate_organization_id(org)
        snapshot = self.ingest_graph.get_state(self.config(org, path))
        return status_from_snapshot(path, snapshot)

    def list(self, org: str) -> list[DocumentStatus]:
        """Files in the organization's store, each with its latest ingest status."""
        return [self.status(org, f.path) for f in self.stack.files.list(org)]

    def delete(self, org: str, path: str) -> bool:
        """Vectors first, then the file: an orphaned file is acceptable, a searchable ghost is not."""
        validate_organization_id(org)
        path = validate_document_path(path)
        with self._serialized(thread_id(org, path)):
            existed = self.stack.files.exists(org, path)
            self.stack.index.delete(namespace=org, filter={"path": path})
            self.stack.files.delete(org, path)
            config = self.config(org, path)
            if self.ingest_graph.get_state(config).values:
                self.ingest_graph.update_state(
                    config,
                    {"status": "deleted", "chunkCount": 0, "reason": "deleted", "error": None, "chunks": []},
                    as_node="finalize",
                )
        return existed
