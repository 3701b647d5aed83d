"""Plain-Python front door of the graph index build (CLI, tests, notebooks) and the status report.

Builds of one organization are serialized (a thread lock plus a file lock in the data directory, so a
CLI build and a notebook build of the same organization queue instead of racing). The status combines
the build thread's latest checkpoint (last build) with the store's published version (what queries
see) and the indexed documents the published version does not reflect yet (stale).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from filelock import FileLock
from langgraph.types import Checkpointer

from graphs.graph_index import build_graph_index_graph, thread_id
from graphs.graph_index_nodes import indexed_documents
from librarian.graph.model import GraphVersion
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id

ProgressCallback = Callable[[str, dict[str, Any]], None]


def build_status(values: dict[str, Any], next_nodes: Any, task_errors: list[Any]) -> dict[str, Any]:
    """The last build as its checkpoint describes it (`never` when the thread has no checkpoint)."""
    if not values:
        return {"status": "never"}
    status = values.get("status") or "running"
    if next_nodes:
        status = "failed" if task_errors else "running"
    out = {
        "status": status,
        "startedAt": values.get("startedAt"),
        "updatedAt": values.get("updatedAt"),
        "publishedVersion": values.get("publishedVersion"),
        "documents": len(values.get("documents") or []),
        "extracted": [r["path"] for r in values.get("extracted") or [] if r.get("status") == "extracted"],
        "chunksExtracted": sum(
            int(r.get("chunks", 0)) - int(r.get("chunksReused", 0)) for r in values.get("extracted") or []
        ),
        "chunksReused": sum(int(r.get("chunksReused", 0)) for r in values.get("extracted") or []),
        "failedDocuments": [
            {"path": r["path"], "reason": r.get("reason")}
            for r in values.get("extracted") or []
            if r.get("status") == "failed"
        ],
        "skippedDocuments": values.get("skippedDocuments") or [],
        "summariesReused": values.get("summariesReused", 0),
        "summariesWritten": values.get("summariesWritten", 0),
        "extractionsPruned": values.get("extractionsPruned", 0),
        "timings": values.get("timings") or {},
    }
    if task_errors:
        out["error"] = "build_error"
        out["reason"] = str(task_errors[0])[:500]
    return out


def status_report(
    org: str,
    published: GraphVersion | None,
    published_docs: dict[str, str],
    indexed: dict[str, str],
    last: dict,
) -> dict[str, Any]:
    """GET /orgs/{org}/graph and `librarian graph status`: version, counts, last build, staleness."""
    stale = sorted(p for p, h in indexed.items() if published_docs.get(p) != h)
    removed = sorted(p for p in published_docs if p not in indexed)
    report: dict[str, Any] = {
        "organization_id": org,
        "version": published.version if published else None,
        "publishedAt": published.published_at if published else None,
        "documents": published.documents if published else 0,
        "entities": published.entities if published else 0,
        "edges": published.edges if published else 0,
        "claims": published.claims if published else 0,
        "communitiesPerLevel": (
            {str(k): v for k, v in sorted(published.communities_per_level.items())} if published else {}
        ),
        "extractor": published.extractor if published else None,
        "summarizer": published.summarizer if published else None,
        "lastBuild": last,
        "staleDocuments": stale,
        "removedDocuments": removed,
        "upToDate": published is not None and not stale and not removed,
    }
    return report


class GraphIndexService:
    """Run and report an organization's graph build with a given stack and checkpointer."""

    def __init__(self, stack: Stack, checkpointer: Checkpointer) -> None:
        self.stack = stack
        self.graph = build_graph_index_graph(lambda: stack, checkpointer)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @staticmethod
    def config(org: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id(org)}}

    @contextmanager
    def _serialized(self, org: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(org, threading.Lock())
        lock_dir = self.stack.settings.data_dir / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(thread_id(org).encode()).hexdigest()[:32]
        with lock, FileLock(str(lock_dir / f"{digest}.lock")):
            yield

    def build(
        self, org: str, *, force: bool = False, on_update: ProgressCallback | None = None
    ) -> dict[str, Any]:
        """Run one build to the end and return the status report. Errors are in the report, not raised,
        except a wrong setup (configuration, tenancy), which no status can describe."""
        validate_organization_id(org)
        with self._serialized(org):
            stream = self.graph.stream(
                {"force": force}, self.config(org), context={"organization_id": org}, stream_mode="updates"
            )
            try:
                for update in stream:
                    if on_update:
                        for node, value in update.items():
                            on_update(node, value if isinstance(value, dict) else {"value": value})
            except Exception as exc:
                from librarian.errors import ConfigError, ContractMismatchError, TenantError

                if isinstance(exc, (ConfigError, ContractMismatchError, TenantError)):
                    raise
        return self.status(org)

    def last_build(self, org: str) -> dict[str, Any]:
        snapshot = self.graph.get_state(self.config(org))
        errors = [t.error for t in snapshot.tasks if getattr(t, "error", None)]
        return build_status(dict(snapshot.values or {}), snapshot.next, errors)

    def status(self, org: str) -> dict[str, Any]:
        validate_organization_id(org)
        graph = self.stack.graph_store.scope(org)
        published = graph.published_version()
        published_docs = {d.path: d.content_hash for d in graph.documents()} if published else {}
        documents, _skipped = indexed_documents(self.stack, org)
        indexed = {d["path"]: d["contentHash"] for d in documents}
        return status_report(org, published, published_docs, indexed, self.last_build(org))
