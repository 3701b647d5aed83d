"""Node functions of the ingest graph, shared with the re-embed graph (`graphs/reindex.py`).

Nodes get the providers from a `Stack` supplier rather than from state: state is checkpointed JSON,
and file bytes or clients must never flow through it. Only small structured data moves between
steps; the parse result itself stays in the parse cache beside the file and is referenced by hash.
"""

from __future__ import annotations

import asyncio
import io
import re
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Command, Overwrite, Send

from graphs.context import LibrarianContext, organization_of
from graphs.ingest_state import ChunkRecord, IngestState, ParseJobRef, UpsertJob
from librarian.errors import DocumentError, InvalidPathError, LibrarianError
from librarian.files.paths import filename_of, validate_document_path
from librarian.index.base import VectorRecord, record_id
from librarian.parsing import media
from librarian.parsing.cache import ParseCache, content_hash
from librarian.parsing.job_wait import acall_rate_limited, await_job, call_rate_limited, wait_for_job
from librarian.parsing.jobs import JobPolicy, JobPoll, ParseJobClient, SupportsParseJobs
from librarian.parsing.media import guess_media_type
from librarian.parsing.types import Chunk, ParseResult
from librarian.runs.cancellation import raise_if_cancelled
from librarian.runs.coordination import coordination_for
from librarian.stack import Stack

if TYPE_CHECKING:
    from librarian.runs.ingest_worker import IngestOffload

StackSupplier = Callable[[], Stack]
SLIDE_NAME = re.compile(r"ppt/slides/slide\d+\.xml")
CLEANUP_REASONS = {
    "deleted": "the document was deleted (vectors removed)",
    "cancelled": "the ingest was cancelled; nothing of it remains in the index",
}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def chunk_records(result: ParseResult) -> list[ChunkRecord]:
    """Reducto chunks → flat chunk records; `chunkIndex` is the array index (stable ids)."""
    return [_chunk_record(index, chunk) for index, chunk in enumerate(result["chunks"])]


def _chunk_record(index: int, chunk: Chunk) -> ChunkRecord:
    blocks = chunk.get("blocks") or []
    first = blocks[0] if blocks else None
    page = int(first["bbox"]["page"]) if first else 1
    # The citation region is the union of the chunk's blocks on its first page.
    same_page = [b["bbox"] for b in blocks if int(b["bbox"]["page"]) == page]
    bbox = None
    if same_page:
        left = min(b["left"] for b in same_page)
        top = min(b["top"] for b in same_page)
        right = max(b["left"] + b["width"] for b in same_page)
        bottom = max(b["top"] + b["height"] for b in same_page)
        bbox = {"left": left, "top": top, "width": right - left, "height": bottom - top}
    return {
        "chunkIndex": index,
        "text": chunk["content"],
        "embedText": chunk.get("embed") or chunk["content"],
        "page": page,
        "blockType": first["type"] if first else "Text",
        "bbox": bbox,
    }


def vector_record(job: UpsertJob, chunk: ChunkRecord, dense: list[float], sparse: Any) -> VectorRecord:
    """One index record: id `{path}:{chunkIndex}`, flat metadata (bbox flattened), text stored."""
    bbox = chunk["bbox"] or {}
    metadata = {
        "path": job["path"],
        "filename": job["filename"],
        "chunkIndex": chunk["chunkIndex"],
        "page": chunk["page"],
        "blockType": chunk["blockType"],
        "text": chunk["text"],
        "mediaType": job["mediaType"],
        "contentHash": job["contentHash"],
        **{f"bbox_{key}": float(bbox[key]) for key in ("left", "top", "width", "height") if key in bbox},
    }
    record: VectorRecord = {
        "id": record_id(job["path"], chunk["chunkIndex"]),
        "values": dense,
        "metadata": metadata,
    }
    if sparse and sparse.get("indices"):
        record["sparse_values"] = sparse
    return record


def page_count(data: bytes, media_type: str) -> int | None:
    """Pages (slides) of a PDF or PPTX without parsing them; None for other formats or unreadable files
    (the parser then reports what is wrong with them)."""
    try:
        if media_type == media.PDF:
            import pypdfium2 as pdfium

            document = pdfium.PdfDocument(data)
            try:
                return len(document)
            finally:
                document.close()
        if media_type == media.PPTX:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                return sum(1 for n in archive.namelist() if SLIDE_NAME.fullmatch(n))
    except Exception:  # a corrupt file is the parser's to describe
        return None
    return None


def pages_over_limit(pages: int | None, limit: int) -> dict[str, Any] | None:
    if pages is None or pages <= limit:
        return None
    reason = (
        f"the document has {pages} pages; the limit LIBRARIAN_MAX_PAGES_PER_DOCUMENT is {limit} "
        "(nothing was embedded)"
    )
    return _stop("skipped", "too_many_pages", reason)


@dataclass(frozen=True)
class _ParseJob:
    """What the parser needs, and the state update it completes (between `parse`'s two halves)."""

    org: str
    path: str
    filename: str
    media_type: str
    data: bytes
    base: dict[str, Any]

    def failed(self, exc: DocumentError) -> Command:
        return Command(goto="delete_vectors", update={**self.base, **_stop(exc.status, exc.code, str(exc))})


def run_reset() -> dict[str, Any]:
    """Per-run fields every run starts from; `indexedCount` too, since reducers add across runs."""
    return {
        "indexedCount": Overwrite(0),
        "status": "running",
        "reason": None,
        "error": None,
        "chunkCount": 0,
        "chunks": [],
        "parseCacheHit": False,
        "parseJob": None,
        "cleanup": None,
        "startedAt": now(),
    }


def _stop(status: str, error: str, reason: str) -> dict[str, Any]:
    """State update for a document that will not be indexed (vectors still get deleted)."""
    return {"status": status, "error": error, "reason": reason, "chunks": []}


def job_policy(stack: Stack) -> JobPolicy:
    s = stack.settings
    return JobPolicy(
        poll_interval=s.reducto_poll_interval_s,
        max_wait=s.reducto_job_max_wait_s,
        rate_limit_attempts=s.reducto_rate_limit_attempts,
    )


def job_client(stack: Stack) -> ParseJobClient | None:
    """The parser's job API when it has one and job mode is on (Reducto); None: parse synchronously."""
    parser = stack.parser
    if stack.settings.reducto_mode == "job" and isinstance(parser, SupportsParseJobs):
        return parser.jobs()
    return None


class IngestNodes:
    """The node functions, bound to a stack supplier so tests and the server can choose providers."""

    def __init__(self, stack: StackSupplier, offload: IngestOffload | None = None) -> None:
        self._stack = stack
        self._offload = offload  # the server's low-priority worker; None: parse and embed inline

    @property
    def offloaded(self) -> bool:
        return self._offload is not None

    # --- load_file ---------------------------------------------------------------------------
    def load_file(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> Command:
        """Check the file and route: missing/empty/invalid → delete_vectors (skip), else parse.

        Also resets the per-run fields, `indexedCount` included, because reducers keep adding
        across runs of the same thread.
        """
        org = organization_of(config, runtime)
        # A run superseded before it started (a replica restarted after a crash runs its lost runs
        # again) stops here, before it resets anything or deletes a newer version's vectors.
        coordination = coordination_for(self._stack().settings)
        raise_if_cancelled(runtime, coordination, org, state.get("path", ""), state.get("epoch"))
        reset = run_reset()
        try:
            path = validate_document_path(state.get("path", ""))
        except InvalidPathError as exc:
            return Command(goto="finalize", update={**reset, **_stop("failed", exc.code, str(exc))})
        filename = state.get("filename") or filename_of(path)
        cleanup = state.get("cleanup")
        if cleanup in CLEANUP_REASONS:
            update = _stop(cleanup, cleanup, CLEANUP_REASONS[cleanup])
            return Command(goto="delete_vectors", update={**reset, "filename": filename, **update})
        stored = self._stack().files.stat(org, path)
        if stored is None:
            update = _stop("skipped", "file_not_found", "the file does not exist (vectors removed)")
            return Command(goto="delete_vectors", update={**reset, "filename": filename, **update})
        if stored.size == 0:
            update = _stop("skipped", "empty_document", "the file is empty")
            return Command(goto="delete_vectors", update={**reset, "filename": filename, **update})
        return Command(
            goto="parse",
            update={**reset, "path": path, "filename": filename, "sizeBytes": stored.size},
        )

    # --- parse -----------------------------------------------------------------------------------
    def parse(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> Command:
        """Parse once per (content hash, parser settings): a hit in the cache beside the file wins.

        Retries of this node and re-embeds therefore never pay for a second parse.
        """
        job = self._parse_start(state, config, runtime)
        if isinstance(job, Command):
            return job
        jobs = job_client(self._stack())
        if jobs is not None:
            return self._submit(job, jobs, runtime, state.get("epoch"))
        try:
            result = self._stack().parser.parse(job.data, job.filename, job.media_type)
        except DocumentError as exc:
            return job.failed(exc)
        return self._parse_done(job, result)

    async def aparse(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> Command:
        """`parse` for the server: the parser runs in the low-priority ingest worker process."""
        job = await asyncio.to_thread(self._parse_start, state, config, runtime)
        if isinstance(job, Command):
            return job
        jobs = await asyncio.to_thread(job_client, self._stack())  # a first use builds the parser
        if jobs is not None:
            return await self._asubmit(job, jobs, runtime, state.get("epoch"))
        assert self._offload is not None
        try:
            result = await self._offload.parse(
                self._stack().settings, job.org, job.data, job.filename, job.media_type
            )
        except DocumentError as exc:
            return job.failed(exc)
        return await asyncio.to_thread(self._parse_done, job, result)

    def _parse_start(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> Command | _ParseJob:
        """Everything before the parser: read, hash, page limit, cache lookup (a hit ends here)."""
        org = organization_of(config, runtime)
        stack = self._stack()
        path = state["path"]
        raise_if_cancelled(runtime, coordination_for(stack.settings), org, path, state.get("epoch"))
        try:
            data = stack.files.read(org, path)
        except FileNotFoundError:
            update = _stop("skipped", "file_not_found", "the file was deleted during ingest")
            return Command(goto="delete_vectors", update=update)
        digest = content_hash(data)
        media_type = state.get("mediaType") or guess_media_type(state["filename"], data)
        parser_key = stack.parser.cache_key
        base = {"contentHash": digest, "parser": parser_key, "mediaType": media_type}
        over = pages_over_limit(page_count(data, media_type), stack.settings.max_pages_per_document)
        if over:  # known before parsing a single page
            return Command(goto="delete_vectors", update={**base, **over})
        if ParseCache(stack.files).get(org, path, digest, parser_key) is not None:
            return Command(goto="map_chunks", update={**base, "parseCacheHit": True})
        return _ParseJob(org, path, state["filename"], media_type, data, base)

    def _parse_done(self, job: _ParseJob, result: ParseResult) -> Command:
        base = job.base
        ParseCache(self._stack().files).put(job.org, job.path, base["contentHash"], base["parser"], result)
        return Command(goto="map_chunks", update={**base, "parseCacheHit": False})

    # --- parse as a job: submit in `parse`, wait in `await_parse` ---------------------------------
    def _submit(
        self, job: _ParseJob, jobs: ParseJobClient, runtime: Runtime[LibrarianContext], epoch: int | None
    ) -> Command:
        """Submit the parse and end the step: the checkpoint then holds the job id before any wait."""
        coordination = coordination_for(self._stack().settings)

        def check() -> None:
            raise_if_cancelled(runtime, coordination, job.org, job.path, epoch)

        def submit() -> str:
            return jobs.submit(job.data, job.filename, job.media_type)

        try:
            job_id = call_rate_limited("the parse submission", submit, job_policy(self._stack()), check)
        except DocumentError as exc:
            return job.failed(exc)
        return self._submitted(job, job_id)

    async def _asubmit(
        self, job: _ParseJob, jobs: ParseJobClient, runtime: Runtime[LibrarianContext], epoch: int | None
    ) -> Command:
        coordination = coordination_for(self._stack().settings)

        async def check() -> None:
            await asyncio.to_thread(raise_if_cancelled, runtime, coordination, job.org, job.path, epoch)

        async def submit() -> str:
            return await jobs.asubmit(job.data, job.filename, job.media_type)

        try:
            job_id = await acall_rate_limited(
                "the parse submission", submit, job_policy(self._stack()), check
            )
        except DocumentError as exc:
            return job.failed(exc)
        return self._submitted(job, job_id)

    @staticmethod
    def _submitted(job: _ParseJob, job_id: str) -> Command:
        ref = ParseJobRef(jobId=job_id, submittedAt=time.time())
        return Command(goto="await_parse", update={**job.base, "parseJob": ref})

    def await_parse(self, state: IngestState, config: RunnableConfig) -> Command:
        """Poll the checkpointed job until it is done; plain Python's blocking form (its own thread).

        A resumed run starts here with the job id of its checkpoint, so the document is never
        submitted twice. The run's `Runtime` comes from `get_runtime` because this node is a
        `RunnableLambda` with both forms (see `build_ingest_graph`).
        """
        runtime = get_runtime(LibrarianContext)
        org, path, ref, jobs = self._pending_job(state, config, runtime)
        coordination = coordination_for(self._stack().settings)

        def check() -> None:
            raise_if_cancelled(runtime, coordination, org, path, state.get("epoch"))

        def poll() -> JobPoll:
            return jobs.poll(ref["jobId"], state["filename"])

        try:
            result = wait_for_job(poll, job_policy(self._stack()), check, ref["submittedAt"])
        except DocumentError as exc:
            return self._job_failed(exc)
        return self._job_done(org, state, result)

    async def aawait_parse(self, state: IngestState, config: RunnableConfig) -> Command:
        """`await_parse` for async runs (the server): it awaits between polls and holds no thread, no
        ingest worker and no organization slot, and cancelling the run's task stops it at once."""
        runtime = get_runtime(LibrarianContext)
        org, path, ref, jobs = await asyncio.to_thread(self._pending_job, state, config, runtime)
        coordination = coordination_for(self._stack().settings)

        async def check() -> None:
            await asyncio.to_thread(raise_if_cancelled, runtime, coordination, org, path, state.get("epoch"))

        async def poll() -> JobPoll:
            return await jobs.apoll(ref["jobId"], state["filename"])

        try:
            result = await await_job(poll, job_policy(self._stack()), check, ref["submittedAt"])
        except DocumentError as exc:
            return self._job_failed(exc)
        return await asyncio.to_thread(self._job_done, org, state, result)

    def _pending_job(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> tuple[str, str, ParseJobRef, ParseJobClient]:
        org = organization_of(config, runtime)
        ref = state.get("parseJob")
        jobs = job_client(self._stack())
        if not ref or jobs is None:
            raise LibrarianError(
                "a parse job is pending but the configured parser has no job API "
                "(LIBRARIAN_PARSER or LIBRARIAN_REDUCTO_MODE changed); upload the document again"
            )
        return org, state["path"], ref, jobs

    @staticmethod
    def _job_failed(exc: DocumentError) -> Command:
        return Command(
            goto="delete_vectors", update={**_stop(exc.status, exc.code, str(exc)), "parseJob": None}
        )

    def _job_done(self, org: str, state: IngestState, result: ParseResult) -> Command:
        cache = ParseCache(self._stack().files)
        cache.put(org, state["path"], state["contentHash"], state["parser"], result)
        return Command(goto="map_chunks", update={"parseCacheHit": False, "parseJob": None})

    # --- map_chunks ------------------------------------------------------------------------------
    def map_chunks(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Cached parse result → flat chunk records (no re-chunking of the parser's chunks)."""
        org = organization_of(config, runtime)
        stack = self._stack()
        cache = ParseCache(stack.files)
        result = cache.get(org, state["path"], state["contentHash"], state["parser"])
        if result is None:
            raise RuntimeError("parse cache entry vanished between parse and map_chunks")
        chunks = [c for c in chunk_records(result) if c["embedText"].strip()]
        if not chunks:
            return _stop("skipped", "empty_document", "the document has no text to index")
        settings = stack.settings
        over = pages_over_limit(max(c["page"] for c in chunks), settings.max_pages_per_document)
        if over:  # formats whose pages are only known once parsed
            return over
        if len(chunks) > settings.max_chunks_per_document:
            reason = (
                f"the document has {len(chunks)} chunks; the limit LIBRARIAN_MAX_CHUNKS_PER_DOCUMENT "
                f"is {settings.max_chunks_per_document} (nothing was embedded)"
            )
            return _stop("skipped", "too_many_chunks", reason)
        return {"chunks": chunks}

    # --- delete_vectors --------------------------------------------------------------------------
    def delete_vectors(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Delete the path's vectors: overwrite and skip both start here (invariant 3)."""
        org = organization_of(config, runtime)
        stack = self._stack()
        coordination = coordination_for(stack.settings)
        with coordination.fence(org, state["path"]):
            raise_if_cancelled(runtime, coordination, org, state["path"], state.get("epoch"))
            stack.index.delete(namespace=org, filter={"path": state["path"]})
        return {}

    # --- plan_batches (conditional edge) -----------------------------------------------------
    def plan_batches(self, state: IngestState) -> list[Send] | str:
        """Fan out one `upsert_batch` per batch of chunks, or go straight to finalize."""
        chunks = state.get("chunks") or []
        if state.get("status") != "running" or not chunks:
            return "finalize"
        size = self._stack().settings.upsert_batch_size
        return [
            Send(
                "upsert_batch",
                UpsertJob(
                    path=state["path"],
                    filename=state["filename"],
                    mediaType=state.get("mediaType", "application/octet-stream"),
                    contentHash=state.get("contentHash", ""),
                    chunks=chunks[offset : offset + size],
                    epoch=state.get("epoch"),
                ),
            )
            for offset in range(0, len(chunks), size)
        ]

    # --- upsert_batch ------------------------------------------------------------------------------
    def upsert_batch(
        self, job: UpsertJob, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Embed `embedText` (dense + sparse) and upsert with `text` stored in metadata."""
        org = organization_of(config, runtime)
        stack = self._stack()
        raise_if_cancelled(runtime, coordination_for(stack.settings), org, job["path"], job.get("epoch"))
        texts = [c["embedText"] for c in job["chunks"]]
        dense = stack.dense.embed_documents(texts)
        sparse = stack.sparse.embed_documents(texts)
        return self._write(org, job, dense, sparse, runtime)

    async def aupsert_batch(
        self, job: UpsertJob, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """`upsert_batch` for the server: embedding runs in the low-priority ingest worker process."""
        org = organization_of(config, runtime)
        coordination = coordination_for(self._stack().settings)
        await asyncio.to_thread(raise_if_cancelled, runtime, coordination, org, job["path"], job.get("epoch"))
        assert self._offload is not None
        texts = [c["embedText"] for c in job["chunks"]]
        dense, sparse = await self._offload.embed(self._stack().settings, org, texts)
        return await asyncio.to_thread(self._write, org, job, dense, sparse, runtime)

    def _write(
        self, org: str, job: UpsertJob, dense: list, sparse: list, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        records = [vector_record(job, c, d, s) for c, d, s in zip(job["chunks"], dense, sparse, strict=True)]
        # A cancelled run writes nothing from here on; the fence orders this write against the
        # follow-up run's delete, so what was written before the cancel is deleted after it.
        stack = self._stack()
        coordination = coordination_for(stack.settings)
        with coordination.fence(org, job["path"]):
            raise_if_cancelled(runtime, coordination, org, job["path"], job.get("epoch"))
            written = stack.index.upsert(records, namespace=org)
        return {"indexedCount": written}

    # --- finalize ----------------------------------------------------------------------------------
    def finalize(self, state: IngestState) -> dict[str, Any]:
        """Status from the summed count; chunks are dropped so status reads stay small."""
        expected = len(state.get("chunks") or [])
        indexed = state.get("indexedCount", 0)
        update: dict[str, Any] = {"chunkCount": indexed, "updatedAt": now(), "chunks": [], "cleanup": None}
        if state.get("status") == "running":
            if indexed == expected and indexed > 0:
                update.update(status="indexed", reason=None, error=None)
            else:
                update.update(
                    status="failed",
                    error="incomplete_upsert",
                    reason=f"indexed {indexed} of {expected} chunks",
                )
        return update
