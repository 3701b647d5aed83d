"""Node functions of the ingest graph, shared with the re-embed graph (`graphs/reindex.py`).

Nodes get the providers from a `Stack` supplier rather than from state: state is checkpointed JSON,
and file bytes or clients must never flow through it. Only small structured data moves between
steps; the parse result itself stays in the parse cache beside the file and is referenced by hash.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Overwrite, Send

from graphs.context import organization_of
from graphs.ingest_state import ChunkRecord, IngestState, UpsertJob
from librarian.errors import DocumentError, InvalidPathError
from librarian.files.paths import filename_of, validate_document_path
from librarian.index.base import VectorRecord, record_id
from librarian.parsing.cache import ParseCache, content_hash
from librarian.parsing.media import guess_media_type
from librarian.parsing.types import Chunk, ParseResult
from librarian.stack import Stack

StackSupplier = Callable[[], Stack]


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
        "startedAt": now(),
    }


def _stop(status: str, error: str, reason: str) -> dict[str, Any]:
    """State update for a document that will not be indexed (vectors still get deleted)."""
    return {"status": status, "error": error, "reason": reason, "chunks": []}


class IngestNodes:
    """The node functions, bound to a stack supplier so tests and the server can choose providers."""

    def __init__(self, stack: StackSupplier) -> None:
        self._stack = stack

    # --- load_file ---------------------------------------------------------------------------
    def load_file(self, state: IngestState, config: RunnableConfig, runtime: Any) -> Command:
        """Check the file and route: missing/empty/invalid → delete_vectors (skip), else parse.

        Also resets the per-run fields, `indexedCount` included, because reducers keep adding
        across runs of the same thread.
        """
        org = organization_of(config, runtime)
        reset = run_reset()
        try:
            path = validate_document_path(state.get("path", ""))
        except InvalidPathError as exc:
            return Command(goto="finalize", update={**reset, **_stop("failed", exc.code, str(exc))})
        filename = state.get("filename") or filename_of(path)
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
    def parse(self, state: IngestState, config: RunnableConfig, runtime: Any) -> Command:
        """Parse once per (content hash, parser settings): a hit in the cache beside the file wins.

        Retries of this node and re-embeds therefore never pay for a second parse.
        """
        org = organization_of(config, runtime)
        stack = self._stack()
        path = state["path"]
        try:
            data = stack.files.read(org, path)
        except FileNotFoundError:
            update = _stop("skipped", "file_not_found", "the file was deleted during ingest")
            return Command(goto="delete_vectors", update=update)
        digest = content_hash(data)
        media_type = state.get("mediaType") or guess_media_type(state["filename"], data)
        parser_key = stack.parser.cache_key
        cache = ParseCache(stack.files)
        base = {"contentHash": digest, "parser": parser_key, "mediaType": media_type}
        if cache.get(org, path, digest, parser_key) is not None:
            return Command(goto="map_chunks", update={**base, "parseCacheHit": True})
        try:
            result = stack.parser.parse(data, state["filename"], media_type)
        except DocumentError as exc:
            return Command(goto="delete_vectors", update={**base, **_stop(exc.status, exc.code, str(exc))})
        cache.put(org, path, digest, parser_key, result)
        return Command(goto="map_chunks", update={**base, "parseCacheHit": False})

    # --- map_chunks ------------------------------------------------------------------------------
    def map_chunks(self, state: IngestState, config: RunnableConfig, runtime: Any) -> dict[str, Any]:
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
        return {"chunks": chunks}

    # --- delete_vectors --------------------------------------------------------------------------
    def delete_vectors(self, state: IngestState, config: RunnableConfig, runtime: Any) -> dict[str, Any]:
        """Delete the path's vectors: overwrite and skip both start here (invariant 3)."""
        org = organization_of(config, runtime)
        self._stack().index.delete(namespace=org, filter={"path": state["path"]})
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
                ),
            )
            for offset in range(0, len(chunks), size)
        ]

    # --- upsert_batch ------------------------------------------------------------------------------
    def upsert_batch(self, job: UpsertJob, config: RunnableConfig, runtime: Any) -> dict[str, Any]:
        """Embed `embedText` (dense + sparse) and upsert with `text` stored in metadata."""
        org = organization_of(config, runtime)
        stack = self._stack()
        texts = [c["embedText"] for c in job["chunks"]]
        dense = stack.dense.embed_documents(texts)
        sparse = stack.sparse.embed_documents(texts)
        records = [vector_record(job, c, d, s) for c, d, s in zip(job["chunks"], dense, sparse, strict=True)]
        written = stack.index.upsert(records, namespace=org)
        return {"indexedCount": written}

    # --- finalize ----------------------------------------------------------------------------------
    def finalize(self, state: IngestState) -> dict[str, Any]:
        """Status from the summed count; chunks are dropped so status reads stay small."""
        expected = len(state.get("chunks") or [])
        indexed = state.get("indexedCount", 0)
        update: dict[str, Any] = {"chunkCount": indexed, "updatedAt": now(), "chunks": []}
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
