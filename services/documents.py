"""The document operations: upload, ingest, status, list, delete, cancel (and reindex, resume).

One set of operations serves the server, the CLI and notebooks, so they answer the same way: a path
that never existed is a `DocumentNotFoundError` (the CLI's "no such document", the server's 404), a
deleted document's status is `deleted` everywhere, a cancelled one's `cancelled`.

The split:

    document_status    how a status is read (`services/document_status.py`): the latest checkpoint of
                       the document's (organization, path) thread, corrected by that thread's runs
                       that are still queued or running. Status is never stored apart.
    run_backend        what the operations need from a runs backend (`services/run_backend.py`).
    DocumentOps        the operations' logic, async: validation, size limit, existence, the order
                       of effects (cancel the path's running ingest, vectors first, then the file,
                       then a follow-up run on the path's thread). The writes of one path (upload,
                       delete, cancel) take turns (`Coordination.turn`), so racing requests each
                       see the path as the previous one left it, and the newest run on the path's
                       thread is the last write's. With `LIBRARIAN_POSTGRES_URL` the turns, the
                       runs' exclusion and their supersession hold across processes
                       (`librarian/runs/coordination.py`).
    runs backend       where ingest runs execute (`services/document_runs.py`):
        LocalRuns      plain Python: runs the graphs directly, serialized per path, cancelled by a flag.
        ServerRuns     the LangGraph server: enqueues runs with the in-process SDK client and cancels
                       them with `runs.cancel`; `server.py` only translates HTTP to `DocumentOps`.
    DocumentService    the plain-Python front door (CLI, tests, notebooks): `DocumentOps` over
                       `LocalRuns`, with blocking methods and their `a`-prefixed async twins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from librarian.errors import FileTooLargeError, LibrarianError
from librarian.files.paths import document_path, validate_document_path
from librarian.page_cache import page_cache
from librarian.receipts.counting import Footprint
from librarian.receipts.model import Receipt
from librarian.runs.coordination import Coordination, coordination_for
from librarian.runs.threads import thread_id
from librarian.stack import Stack
from librarian.sync import run_sync
from librarian.tenancy import validate_organization_id
from services.delete_receipts import GraphBuild, complete_receipt, footprint
from services.document_status import DocumentStatus, document_status
from services.run_backend import ACTIVE_RUN_STATES, RunBackend, RunRef

if TYPE_CHECKING:
    from langgraph.types import Checkpointer

# Follow-up runs: the ingest graph deletes the path's vectors and ends with this status.
CLEANUPS = ("deleted", "cancelled")
# Statuses of a document with a run still queued or running on its thread.
ACTIVE_STATUSES = ("queued", "running")


class DocumentNotFoundError(LibrarianError, LookupError):
    """No such document in this organization: no file, and no ingest record that is not deleted."""

    code = "not_found"


class NoActiveIngestError(LibrarianError):
    """Cancel was asked for a document with no queued or running ingest."""

    code = "no_active_ingest"


#: Final statuses that only a document with a stored file can have (`skipped` can: file_not_found).
FINAL_WITH_A_FILE = frozenset({"indexed", "failed", "cancelled"})


class DocumentOps:
    """The operations, async, over a runs backend. The organization is always trusted input."""

    def __init__(self, stack: Stack, runs: RunBackend) -> None:
        self.stack = stack
        self.runs = runs

    @property
    def coordination(self) -> Coordination:
        return coordination_for(self.stack.settings)

    def turn(self, org: str, path: str) -> Any:
        """The turn of one path's writes: without it racing writes interleave their steps (a delete
        removes the file an upload has just stored, before that upload's ingest starts), and the
        caller whose request succeeded last does not get the document it asked for."""
        return self.coordination.turn(org, path)

    async def _supersede(self, org: str, path: str) -> dict[str, Any]:
        """Raise the path's epoch, so its runs on any process stop; the new runs' input carries it."""
        epoch = await asyncio.to_thread(self.coordination.bump, org, path)
        return {} if epoch is None else {"epoch": epoch}

    async def _current(self, org: str, path: str) -> dict[str, Any]:
        epoch = await asyncio.to_thread(self.coordination.epoch, org, path)
        return {} if epoch is None else {"epoch": epoch}

    def _checked(self, org: str, path: str) -> tuple[str, str]:
        return validate_organization_id(org), validate_document_path(path)

    def _upload_path(self, org: str, filename: str, data: bytes) -> str:
        validate_organization_id(org)
        settings = self.stack.settings
        path = document_path(filename, max_length=settings.max_filename_length)
        if len(data) > settings.max_upload_bytes:
            raise FileTooLargeError(
                f"file is {len(data)} bytes; the limit is {settings.max_upload_bytes} bytes"
            )
        return path

    async def _store(self, org: str, path: str, data: bytes) -> dict[str, Any]:
        """Supersede and cancel the path's runs, then store the file; the next run's epoch."""
        epoch = await self._supersede(org, path)
        await self.runs.cancel_active(org, path)
        await asyncio.to_thread(self.stack.files.write, org, path, data)
        return epoch

    async def upload(self, org: str, filename: str, data: bytes) -> str:
        """Store the file and return its path. A running ingest of that path is cancelled first:
        its follow-up is the next ingest, which deletes the old vectors before writing new ones."""
        path = self._upload_path(org, filename, data)
        async with self.turn(org, path):
            await self._store(org, path, data)
        return path

    async def upload_and_ingest(
        self, org: str, filename: str, data: bytes, *, owner: str | None = None
    ) -> tuple[str, RunRef]:
        """`upload`, then start its ingest, in one turn of the path (the server's upload route): no
        delete or cancel of the same path can slip in between the stored file and its ingest."""
        path = self._upload_path(org, filename, data)
        async with self.turn(org, path):
            epoch = await self._store(org, path, data)
            return path, await self.runs.start(org, path, {"path": path, **epoch}, owner=owner)

    async def ingest(self, org: str, path: str, *, owner: str | None = None) -> RunRef:
        org, path = self._checked(org, path)
        epoch = await self._current(org, path)
        return await self.runs.start(org, path, {"path": path, **epoch}, owner=owner)

    async def reindex(self, org: str, path: str, *, owner: str | None = None) -> RunRef:
        org, path = self._checked(org, path)
        epoch = await self._current(org, path)
        return await self.runs.start(org, path, {"path": path, **epoch}, graph="reindex", owner=owner)

    async def status(self, org: str, path: str) -> DocumentStatus:
        """The document's status; `DocumentNotFoundError` if it has neither a file nor a record."""
        org, path = self._checked(org, path)
        stored, (snapshot, runs) = await asyncio.gather(
            asyncio.to_thread(self.stack.files.stat, org, path), self.runs.state(org, path)
        )
        if self.coordination.shared:
            snapshot, runs = await self._shared_view(org, path, snapshot, runs)
        status = document_status(path, snapshot, runs)
        if stored is None and status.status == "not_ingested":
            raise DocumentNotFoundError(f"no document {path!r} in this organization")
        if stored is None and status.status in FINAL_WITH_A_FILE:
            # A delete removes the vectors, then the file, then starts its follow-up run: no file
            # under a final status means the delete happened and only the follow-up was lost (a crash).
            status.status, status.error, status.chunkCount = "deleted", "deleted", 0
        if stored is not None:
            status.sizeBytes = stored.size
        status.threadId = self.runs.thread_of(org, path)
        return status

    async def _shared_view(
        self, org: str, path: str, snapshot: Any, runs: list[dict[str, Any]]
    ) -> tuple[Any, list[dict[str, Any]]]:
        """The thread's state as every process sees it, when runs of a path may live on any of them.

        The checkpoint is shared; this process's runs are not the whole story. A run that holds the
        path's run lock is live somewhere (running); a checkpoint older than the path's epoch has a
        newer run to come (queued). Ended runs of this process say nothing the checkpoint does not:
        a run stopped because another process superseded it is not the document's failure.
        """
        coordination = self.coordination
        live, current = await asyncio.gather(
            asyncio.to_thread(coordination.run_lock_held, org, path),
            asyncio.to_thread(coordination.epoch, org, path),
        )
        seen = int(((getattr(snapshot, "values", None) or {}).get("epoch")) or 0)
        active = [r for r in runs if r.get("status") in ACTIVE_RUN_STATES]
        if not active and live:
            active = [{"status": "running"}]
        elif not active and current > seen:
            # The newest checkpoint is older than the path's epoch: either the current epoch's run is
            # still to come (queued), or it has run and a run superseded before it started (one a
            # restarted replica ran again) stopped on top of it; then its own last checkpoint counts.
            found = await self.runs.state_of_epoch(org, path, current)
            if found is None:
                active = [{"status": "pending"}]
            else:
                snapshot = SimpleNamespace(
                    values=found.values, next=found.next, tasks=found.tasks, interrupted=bool(found.next)
                )
        if snapshot is not None and active:  # a live or coming run: not one a crash cut off
            snapshot = SimpleNamespace(
                values=snapshot.values, next=snapshot.next, tasks=snapshot.tasks, interrupted=False
            )
        return snapshot, active

    async def list(self, org: str) -> list[DocumentStatus]:
        """Files in the organization's store, each with its latest status."""
        org = validate_organization_id(org)
        files = await asyncio.to_thread(self.stack.files.list, org)
        found = await asyncio.gather(*(self.status(org, f.path) for f in files), return_exceptions=True)
        for outcome in found:  # a file deleted since the listing is simply not listed
            if isinstance(outcome, BaseException) and not isinstance(outcome, DocumentNotFoundError):
                raise outcome
        return [s for s in found if isinstance(s, DocumentStatus)]

    async def _existing(self, org: str, path: str) -> DocumentStatus:
        """`DocumentNotFoundError` unless the document is there to delete or cancel.

        Gone: never uploaded, or deleted, whether or not the delete's follow-up run has run yet (no
        file and that run still queued or running). So a second delete is a 404 however soon it
        follows the first, and a cancel never cancels a delete's follow-up.
        """
        status = await self.status(org, path)
        if status.status in ("deleted", *ACTIVE_STATUSES) and not await asyncio.to_thread(
            self.stack.files.exists, org, path
        ):
            raise DocumentNotFoundError(f"no document {path!r} in this organization")
        return status

    async def delete(self, org: str, path: str, *, owner: str | None = None) -> RunRef:
        """Cancel its ingest, delete vectors first, then the file, then a follow-up run.

        The follow-up run deletes the path's vectors once more, after any cancelled run has ended
        (so nothing it wrote survives) and leaves the status `deleted`.
        """
        run, _ = await self._delete(org, path, owner=owner, measure=False)
        return run

    async def delete_with_receipt(
        self, org: str, path: str, *, owner: str | None = None, graph_build: GraphBuild | None = None
    ) -> tuple[RunRef, Receipt]:
        """`delete`, and its receipt (`services.delete_receipts`): every place the document lived,
        counted before (inside the path's turn) and after, the graph build that removes what remains
        of it in the graph (`graph_build` schedules it, if the caller does), and the probes of every
        retrieval channel. The receipt is kept in the organization's receipt store."""
        run, before = await self._delete(org, path, owner=owner, measure=True)
        assert before is not None
        receipt = await complete_receipt(
            self.stack, org, validate_document_path(path), before, owner=owner, graph_build=graph_build
        )
        return run, receipt

    async def _delete(
        self, org: str, path: str, *, owner: str | None, measure: bool
    ) -> tuple[RunRef, Footprint | None]:
        org, path = self._checked(org, path)
        async with self.turn(org, path):
            await self._existing(org, path)
            before = await footprint(self.stack, org, path) if measure else None
            epoch = await self._supersede(org, path)
            await self.runs.cancel_active(org, path)
            await asyncio.to_thread(self._delete_vectors, org, path)
            await asyncio.to_thread(self.stack.files.delete, org, path)
            await asyncio.to_thread(page_cache(self.stack).forget, org, path)  # its page images too
            cleanup = {"path": path, "cleanup": "deleted", **epoch}
            return await self.runs.start(org, path, cleanup, owner=owner), before

    def _delete_vectors(self, org: str, path: str) -> None:
        """Under the path's fence: a run on another process writes its batch before or not at all."""
        with self.coordination.fence(org, path):
            self.stack.index.delete(namespace=org, filter={"path": path})

    async def cancel(self, org: str, path: str, *, owner: str | None = None) -> RunRef:
        """Cancel the path's queued or running ingest; a follow-up run removes what it wrote.

        The status ends `cancelled` with no vectors (the cancelled run had already deleted the
        previous version's, as every ingest does first). `NoActiveIngestError` if none was active.
        """
        org, path = self._checked(org, path)
        async with self.turn(org, path):
            status = await self._existing(org, path)
            # Only what is queued or running anywhere is superseded: a cancel of nothing changes nothing.
            if status.status not in ACTIVE_STATUSES:
                raise NoActiveIngestError(f"{path!r} has no queued or running ingest")
            epoch = await self._supersede(org, path)
            if await self.runs.cancel_active(org, path) == 0 and not self.coordination.shared:
                raise NoActiveIngestError(f"{path!r} has no queued or running ingest")
            cleanup = {"path": path, "cleanup": "cancelled", **epoch}
            return await self.runs.start(org, path, cleanup, owner=owner)


class DocumentService:
    """Plain-Python front door (CLI, tests, notebooks): `DocumentOps` over in-process runs.

    Every method blocks until done; `a`-prefixed twins are the same operations as coroutines.
    `ingest`, `delete` and `cancel` return the document's status once their run has ended.
    """

    def __init__(self, stack: Stack, checkpointer: Checkpointer) -> None:
        # Imported here, not above: `LocalRuns` compiles the graphs (seconds of imports), and the CLI
        # imports this module for `DocumentNotFoundError` on paths that never build a graph.
        from services.document_runs import LocalRuns

        self.stack = stack
        self.runs = LocalRuns(stack, checkpointer)
        self.ops = DocumentOps(stack, self.runs)
        # Kept for callers that inspect the graphs (tests, notebooks).
        self.ingest_graph = self.runs.ingest_graph
        self.reindex_graph = self.runs.reindex_graph

    @staticmethod
    def config(org: str, path: str) -> dict[str, Any]:
        """The plain-Python run config of a document's thread (for `get_state` in tests/notebooks)."""
        return {"configurable": {"thread_id": thread_id(org, path)}}

    # --- async twins --------------------------------------------------------------------------
    async def aupload(self, org: str, filename: str, data: bytes) -> str:
        return await self.ops.upload(org, filename, data)

    async def aingest(
        self, org: str, path: str, *, on_update: Callable[[str, dict[str, Any]], None] | None = None
    ) -> DocumentStatus:
        with self.runs.observing(on_update):
            await self.ops.ingest(org, path)
        return await self.ops.status(org, path)

    async def areindex(self, org: str, path: str) -> DocumentStatus:
        await self.ops.reindex(org, path)
        return await self.ops.status(org, path)

    async def astatus(self, org: str, path: str) -> DocumentStatus:
        return await self.ops.status(org, path)

    async def alist(self, org: str) -> list[DocumentStatus]:
        return await self.ops.list(org)

    async def adelete(self, org: str, path: str) -> DocumentStatus:
        await self.ops.delete(org, path)
        return await self.ops.status(org, path)

    async def adelete_with_receipt(self, org: str, path: str) -> tuple[DocumentStatus, Receipt]:
        """`adelete`, and the delete's receipt (no graph build is scheduled: plain Python leaves it
        to `librarian graph build`, which the receipt's pending entries name)."""
        _, receipt = await self.ops.delete_with_receipt(org, path)
        return await self.ops.status(org, path), receipt

    async def acancel(self, org: str, path: str) -> DocumentStatus:
        await self.ops.cancel(org, path)
        return await self.ops.status(org, path)

    # --- blocking ------------------------------------------------------------------------------
    def upload(self, org: str, filename: str, data: bytes) -> str:
        """Store the file (same name replaces it, cancelling its running ingest); returns its path."""
        return run_sync(self.aupload(org, filename, data))

    def ingest(
        self, org: str, path: str, *, on_update: Callable[[str, dict[str, Any]], None] | None = None
    ) -> DocumentStatus:
        """Run the ingest graph for one document (serialized per path) and return its status."""
        return run_sync(self.aingest(org, path, on_update=on_update))

    def reindex(self, org: str, path: str) -> DocumentStatus:
        """Re-embed from the cached parse (no re-parse) and return the status."""
        return run_sync(self.areindex(org, path))

    def status(self, org: str, path: str) -> DocumentStatus:
        """Latest status; `DocumentNotFoundError` if the path never existed."""
        return run_sync(self.astatus(org, path))

    def list(self, org: str) -> list[DocumentStatus]:
        return run_sync(self.alist(org))

    def delete(self, org: str, path: str) -> DocumentStatus:
        """Vectors first, then the file; status `deleted`. `DocumentNotFoundError` if never there."""
        return run_sync(self.adelete(org, path))

    def delete_with_receipt(self, org: str, path: str) -> tuple[DocumentStatus, Receipt]:
        """`delete`, and its receipt (kept in the organization's receipt store)."""
        return run_sync(self.adelete_with_receipt(org, path))

    def cancel(self, org: str, path: str) -> DocumentStatus:
        """Cancel the path's running ingest (from another thread); status `cancelled`, no vectors."""
        return run_sync(self.acancel(org, path))

    def resume(self, org: str, path: str) -> DocumentStatus:
        """Finish an interrupted run from its last checkpoint (finished work is not redone)."""
        org, path = self.ops._checked(org, path)
        self.runs.resume(org, path)
        return self.status(org, path)
