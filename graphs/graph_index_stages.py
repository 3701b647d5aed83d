"""The CPU-bound work of a graph index build, as functions of a `Stack` (`graphs/graph_index_nodes.py`).

Plain Python calls them inline; on the server the build's `a`-prefixed nodes await them in the
low-priority ingest worker (`librarian.runs.ingest_worker`), which runs them on its own stack over
the same stores. Each writes what it built to the graph store and returns a few numbers, so the
result is the same wherever it runs. They are module-level so the worker can receive them by name.

Which documents are indexed is read from the facts, not from other threads' checkpoints: a document is
in the graph when the organization's vector index holds its chunks, all written from one content
(the `contentHash` on every record); its chunks are read back from those records.

Each stage that may call a model opens a cost scope (`librarian.costs`) for its phase and the build's
id, wherever it runs, so the cost ledger records the calls (extract, summarise, embed) against the
organization and the build, and the build's budget can read what it has spent so far.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import numpy as np

from graphs.graph_index_state import (
    DocumentInfo,
    ExtractResult,
    SkippedDocument,
)
from librarian.costs.ledger import ledger_of
from librarian.costs.scope import cost_scope
from librarian.graph.communities import (
    CommunityDetectionError,
    annotate,
    detect_communities,
    index_claims,
    member_claims,
)
from librarian.graph.extract import extractor_key, get_extractor
from librarian.graph.merge import merge_extractions
from librarian.graph.model import ChunkRef, Community, DocumentRef
from librarian.graph.summarize import CommunityContext, get_summarizer
from librarian.index.base import record_id_prefix
from librarian.stack import Stack

log = logging.getLogger(__name__)

SUMMARY_WORKERS = 4


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def path_of_record(record: str) -> str:
    """`{quoted path}:{chunkIndex}` → path."""
    return unquote(record.rsplit(":", 1)[0])


def indexed_documents(stack: Stack, org: str) -> tuple[list[DocumentInfo], list[SkippedDocument]]:
    """Documents whose chunks are in the organization's index, with the content hash they were indexed at."""
    ids = stack.index.list_ids(namespace=org)
    by_path: dict[str, list[str]] = defaultdict(list)
    for rid in ids:
        by_path[path_of_record(rid)].append(rid)
    firsts = [sorted(rids)[0] for rids in by_path.values()]
    fetched = stack.index.fetch(firsts, namespace=org) if firsts else {}
    documents: list[DocumentInfo] = []
    skipped: list[SkippedDocument] = []
    for path in sorted(by_path):
        record = fetched.get(sorted(by_path[path])[0])
        digest = str((record or {}).get("metadata", {}).get("contentHash") or "")
        if not digest:
            skipped.append({"path": path, "reason": "its index records carry no content hash; re-ingest it"})
            continue
        documents.append({"path": path, "contentHash": digest, "chunkCount": len(by_path[path])})
    return documents, skipped


def stale_paths(stack: Stack, org: str, documents: list[DocumentInfo], *, force: bool = False) -> list[str]:
    """Documents whose cached extraction is missing or was made from other content or settings (all of
    them with `force`): what `collect` sends to extraction and what a dry run estimates. Reads only."""
    key = extractor_key(stack.settings)
    cached = stack.graph_store.scope(org).cached_extractions()
    return [d["path"] for d in documents if force or cached.get(d["path"]) != (d["contentHash"], key)]


def index_chunks(stack: Stack, org: str, path: str, content_hash: str) -> list[ChunkRef] | None:
    """The document's chunks read back from the vector index records (text, page and bbox are stored)."""
    ids = stack.index.list_ids(namespace=org, prefix=record_id_prefix(path))
    records = stack.index.fetch(ids, namespace=org) if ids else {}
    chunks = []
    for rid, record in records.items():
        meta = record.get("metadata") or {}
        if meta.get("contentHash") != content_hash or meta.get("path") != path:
            return None  # mid-reingest: another version's records
        box = {k: float(meta[f"bbox_{k}"]) for k in ("left", "top", "width", "height") if f"bbox_{k}" in meta}
        chunks.append(
            ChunkRef(
                chunk_id=rid,
                path=path,
                chunk_index=int(meta.get("chunkIndex", 0)),
                page=int(meta.get("page", 1)),
                bbox=box if len(box) == 4 else None,
                text=str(meta.get("text") or ""),
                content_hash=content_hash,
            )
        )
    return sorted(chunks, key=lambda c: c.chunk_index) or None


def document_chunks(stack: Stack, org: str, path: str, content_hash: str) -> list[ChunkRef] | None:
    """The document's chunks exactly as the ingest graph indexed them: its vector index records.

    The records are the truth of what search serves (ids, text, page, bbox), and `collect` has the index
    open already. The parse cache would also hold them, but reading it needs the parser's settings
    key, and building the local parser imports markitdown and friends (~1 s of a fresh process) only
    to compute that key. None while the index holds another version of the document (mid-reingest).
    """
    return index_chunks(stack, org, path, content_hash)


def _unit(vectors: list[list[float]]) -> list[np.ndarray]:
    out = []
    for v in vectors:
        a = np.asarray(v, dtype=np.float32)
        n = float(np.linalg.norm(a))
        out.append(a / n if n > 0 else a)
    return out


# --- the stages' work: a function of a stack, run inline or in the server's worker ------------------


def never_cancelled() -> bool:
    """The cancel check of a stage running in the worker, which cannot see this process's flags: its
    node checks at the stage boundary instead."""
    return False


def _extract_failed(path: str, seconds: float, reason: str) -> ExtractResult:
    return ExtractResult(
        path=path, status="failed", entities=0, relations=0, claims=0, seconds=seconds, reason=reason
    )


def extract_stage(stack: Stack, org: str, path: str, content_hash: str, build: str = "") -> ExtractResult:
    """Extract one document from its indexed chunks and cache the result; a failure is reported in the
    result (it costs this document, not the build). Model calls go to the ledger as `extract`."""
    with cost_scope(ledger_of(stack), org, "extract", build=build):
        return _extract(stack, org, path, content_hash)


def _extract(stack: Stack, org: str, path: str, content_hash: str) -> ExtractResult:
    started = time.perf_counter()
    graph = stack.graph_store.scope(org)
    chunks = document_chunks(stack, org, path, content_hash)
    if chunks is None:
        return _extract_failed(path, 0.0, "its indexed chunks could not be read (re-run its ingest)")
    extractor = get_extractor(stack.settings)
    try:
        if hasattr(extractor, "extract_chunks"):  # local: unchanged chunks of the document are reused
            reuse = graph.get_chunk_extractions(path, extractor.cache_key)
            payload, observations = extractor.extract_chunks(chunks, reuse)
            graph.put_chunk_extractions(path, extractor.cache_key, observations)
        else:
            payload = extractor.extract(chunks)
    except Exception as exc:  # a model or NLP failure costs this document, not the build
        log.warning("graph extraction of %s in %s failed: %s", path, org, exc)
        return _extract_failed(path, round(time.perf_counter() - started, 3), str(exc))
    graph.put_chunks(path, content_hash, chunks)
    graph.put_extraction(path, content_hash, extractor.cache_key, dict(payload))
    return ExtractResult(
        path=path,
        status="extracted",
        chunks=len(chunks),
        chunksReused=int(payload["stats"].get("chunksReused", 0)),
        entities=len(payload["entities"]),
        relations=len(payload["relations"]),
        claims=len(payload["claims"]),
        seconds=round(time.perf_counter() - started, 3),
        reason=None,
    )


def merge_stage(stack: Stack, org: str, documents: list[DocumentInfo], build: str = "") -> dict[str, int]:
    """Cached extractions of `documents` → a new (building) version with provenance and entity-name
    embeddings; its number and counts."""
    graph = stack.graph_store.scope(org)
    key = extractor_key(stack.settings)
    summarizer = get_summarizer(stack.settings)
    payloads: list[tuple[str, dict[str, Any]]] = []
    refs: list[DocumentRef] = []
    for doc in documents:
        payload = graph.get_extraction(doc["path"], doc["contentHash"], key)
        if payload is None:
            continue  # its extraction failed: listed in `extracted` with the reason
        if not graph.has_chunks(doc["path"], doc["contentHash"]):
            chunks = document_chunks(stack, org, doc["path"], doc["contentHash"]) or []
            graph.put_chunks(doc["path"], doc["contentHash"], chunks)
        payloads.append((doc["path"], payload))
        refs.append(DocumentRef(doc["path"], doc["contentHash"], key, doc["chunkCount"]))
    merged = merge_extractions(payloads)
    for stale in graph.versions():  # a retried merge must not leave its first attempt behind
        if stale.status == "building":
            graph.abort(stale.version)
    model = stack.dense.model_id
    version = graph.begin_version(extractor=key, summarizer=summarizer.cache_key, embedding_model=model)
    names = [e.name for e in merged.entities]
    embeddings = graph.reusable_entity_embeddings(names, model)
    missing = [e for e in merged.entities if e.name not in embeddings]
    if missing:
        with cost_scope(ledger_of(stack), org, "embed", build=build):
            vectors = _unit(stack.dense.embed_documents([e.display_name for e in missing]))
        embeddings.update({e.name: v for e, v in zip(missing, vectors, strict=True)})
    graph.write_version(
        version,
        documents=refs,
        entities=merged.entities,
        edges=merged.edges,
        claims=merged.claims,
        entity_embeddings=embeddings,
    )
    return {
        "version": version,
        "entityCount": len(merged.entities),
        "edgeCount": len(merged.edges),
        "claimCount": len(merged.claims),
    }


def communities_stage(stack: Stack, org: str, version: int) -> dict[str, int]:
    """Hierarchical Leiden over the version's edges, started from the published partition, written
    with fingerprints; how many communities each level has."""
    graph = stack.graph_store.scope(org)
    found = graph.communities(version=version)
    if not found:  # else a retry: the worker that wrote them died before it could say so
        entities = graph.entities(version=version)
        edges = graph.edges(version=version)
        claims = graph.claims_for([e.name for e in entities], version=version)
        settings = stack.settings
        try:
            found = detect_communities(
                edges,
                seed=settings.graph_leiden_seed,
                max_cluster_size=settings.graph_max_cluster_size,
                previous=graph.communities(),  # the published partition: unchanged parts stay as they are
            )
        except CommunityDetectionError:  # Leiden failed even from scratch: this version cannot publish
            log.exception("community detection for version %s in %s failed", version, org)
            graph.abort(version)
            raise
        annotate(found, entities, edges, claims)
        graph.write_communities(version, found)
    per_level: dict[str, int] = defaultdict(int)
    for community in found:
        per_level[str(community.level)] += 1
    return dict(per_level)


def summarize_stage(
    stack: Stack, org: str, version: int, cancelled: Callable[[], bool] = never_cancelled, build: str = ""
) -> tuple[int, int] | None:
    """Reuse summaries whose fingerprint is unchanged, write the rest (finest level first, so a parent
    may use its children's); (reused, written), or None when `cancelled` turned true on the way (then
    nothing is written, and no further summary is asked for: a model call each with the LLM)."""
    graph = stack.graph_store.scope(org)
    summarizer = get_summarizer(stack.settings)
    ledger = ledger_of(stack)
    communities = graph.communities(version=version)
    reuse = graph.reusable_summaries([c.fingerprint for c in communities], summarizer.cache_key)
    entities = {e.name: e for e in graph.entities(version=version)}
    edges = graph.edges(version=version)
    by_subject = index_claims(graph.claims_for(list(entities), version=version))
    claim_chunks = sorted({c.chunk_id for claims in by_subject.values() for c in claims})
    chunk_texts = {c.chunk_id: c.text for c in graph.chunks(claim_chunks, version=version)}  # headings
    by_id = {c.id: c for c in communities}
    todo: list[Community] = []
    for community in communities:
        old = reuse.get(community.fingerprint)
        if old is None:
            todo.append(community)
            continue
        community.title, community.summary = old.title, old.summary
        community.summary_embedding = old.summary_embedding
        community.summarizer = summarizer.cache_key

    def context_of(community: Community) -> CommunityContext:
        members = set(community.members)
        return CommunityContext(
            community=community,
            entities=entities,
            edges=[e for e in edges if e.source in members and e.target in members],
            claims=member_claims(community.members, by_subject),
            children=[by_id[k] for k in community.children if k in by_id],
            chunk_texts=chunk_texts,
        )

    def run(community: Community) -> None:
        if cancelled():
            return
        with cost_scope(ledger, org, "summarise", build=build):  # in the pool's thread: its own context
            community.title, community.summary = summarizer.summarize(context_of(community))
        community.summarizer = summarizer.cache_key
        community.summary_embedding = None

    with ThreadPoolExecutor(max_workers=SUMMARY_WORKERS) as pool:  # finest level first
        for level in sorted({c.level for c in todo}, reverse=True):
            list(pool.map(run, [c for c in todo if c.level == level]))
    if cancelled():
        return None
    graph.update_summaries(version, communities)
    return len(communities) - len(todo), len(todo)


def embed_stage(stack: Stack, org: str, version: int, build: str = "") -> int:
    """Embed the summaries that are new in this version (reused ones kept their vectors); how many."""
    graph = stack.graph_store.scope(org)
    communities = graph.communities(version=version, with_embeddings=True)
    missing = [c for c in communities if c.summary and c.summary_embedding is None]
    if missing:
        texts = [f"{c.title}\n{c.summary}" for c in missing]
        with cost_scope(ledger_of(stack), org, "embed", build=build):
            vectors = _unit(stack.dense.embed_documents(texts))
        for community, vector in zip(missing, vectors, strict=True):
            community.summary_embedding = vector
        graph.update_summaries(version, missing)
    return len(missing)
