"""Node functions of the graph index build (`graphs/graph_index.py`).

Which documents are indexed is read from the facts, not from other threads' checkpoints: a document is
in the graph when the organization's vector index holds its chunks, all written from one content
(the `contentHash` on every record); its chunks are read back from those records. The graph therefore
mirrors what search serves, and the build runs the same in the CLI and on the server.

Every stage starts by asking whether its run was cancelled (`librarian.runs.cancellation`, an admin's
POST /orgs/{org}/graph/cancel): if so it does nothing but end the build `cancelled` (`stopped`),
dropping the version this build was writing; the published version is only ever switched by
`publish`, the last stage, so it stays as it was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import numpy as np
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Overwrite, Send

from graphs.context import LibrarianContext, organization_of
from graphs.graph_index_state import DocumentInfo, ExtractJob, GraphIndexState, SkippedDocument
from librarian.graph.communities import annotate, detect_communities, index_claims, member_claims
from librarian.graph.extract import extractor_key, get_extractor
from librarian.graph.merge import merge_extractions
from librarian.graph.model import ChunkRef, Community, DocumentRef
from librarian.graph.store import OrgGraph
from librarian.graph.summarize import CommunityContext, get_summarizer
from librarian.index.base import record_id_prefix
from librarian.runs.cancellation import is_run_cancelled
from librarian.runs.ingest_idle import wait_for_ingests
from librarian.stack import Stack

log = logging.getLogger(__name__)

StackSupplier = Callable[[], Stack]
SUMMARY_WORKERS = 4
CANCEL_POLL_S = 0.5  # how often a build waiting for ingests looks for its cancel
CANCELLED_REASON = "the build was cancelled by an organization admin; the published graph is unchanged"


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


class GraphIndexNodes:
    def __init__(self, stack: StackSupplier) -> None:
        self._stack = stack

    def _graph(
        self, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> tuple[Stack, str, OrgGraph]:
        org = organization_of(config, runtime)
        stack = self._stack()
        return stack, org, stack.graph_store.scope(org)

    # --- cancellation -----------------------------------------------------------------------------
    def stopped(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """The update of a stage that found its build cancelled: drop the version this build was
        writing (`version` is set by `merge`, reset by `collect`), and end `cancelled`."""
        version = state.get("version")
        if version is not None:
            _stack, org, graph = self._graph(config, runtime)
            if any(v.version == version and v.status == "building" for v in graph.versions()):
                graph.abort(version)
            log.info("graph build of %s cancelled; building version %s dropped", org, version)
        return {
            "status": "cancelled",
            "version": None,
            "error": "cancelled",
            "reason": CANCELLED_REASON,
            "updatedAt": now(),
        }

    # --- await_ingests ----------------------------------------------------------------------------
    def await_ingests(self, state: GraphIndexState, config: RunnableConfig) -> dict[str, Any]:
        """Plain Python: ingests run in the caller's own process and have finished; nothing to wait for."""
        return {"status": "running"}  # over the last build's status

    async def await_ingests_async(self, state: GraphIndexState, config: RunnableConfig) -> dict[str, Any]:
        """On the server, a build scheduled by a document change waits for the organization's ingests
        (and stops waiting when it is cancelled)."""
        # a RunnableLambda (sync and async twins) is not handed the runtime: read the current one
        runtime = get_runtime(LibrarianContext)
        if is_run_cancelled(runtime):
            return self.stopped({}, config, runtime)
        if not state.get("waitForIngests"):
            return {"status": "running"}
        org = organization_of(config, runtime)
        waiting = asyncio.ensure_future(wait_for_ingests(org))
        try:
            while not waiting.done():
                if is_run_cancelled(runtime):
                    return self.stopped({}, config, runtime)
                await asyncio.wait({waiting}, timeout=CANCEL_POLL_S)
        finally:
            waiting.cancel()
        if not waiting.result():
            log.warning("graph build of %s starts while ingests are still running (deadline passed)", org)
        return {"status": "running"}

    # --- collect --------------------------------------------------------------------------------
    def collect(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Indexed documents, and which of them need (re-)extraction. Resets the per-run fields."""
        if is_run_cancelled(runtime):
            return self.stopped({}, config, runtime)  # `version` is still the last build's
        started = time.perf_counter()
        stack, org, graph = self._graph(config, runtime)
        for version in graph.versions():
            if version.status == "building":  # an earlier build died: its half-written version goes
                graph.abort(version.version)
        documents, skipped = indexed_documents(stack, org)
        key = extractor_key(stack.settings)
        # deleted documents (and replaced versions) leave their cached extractions behind: drop them
        pruned = graph.prune_extractions({d["path"]: d["contentHash"] for d in documents})
        cached = graph.cached_extractions()
        force = bool(state.get("force"))
        stale = [d["path"] for d in documents if force or cached.get(d["path"]) != (d["contentHash"], key)]
        return {
            "status": "running",
            "startedAt": now(),
            "documents": documents,
            "skippedDocuments": skipped,
            "stale": stale,
            "extracted": Overwrite([]),
            "version": None,
            "reason": None,
            "error": None,
            "summariesReused": 0,
            "summariesWritten": 0,
            "extractionsPruned": pruned,
            "timings": {"collect": round(time.perf_counter() - started, 3)},
        }

    def route_extraction(self, state: GraphIndexState) -> list[Send] | str:
        """`Send` one extraction per stale document, or go straight to merge (or end, cancelled)."""
        if state.get("status") == "cancelled":
            return END
        hashes = {d["path"]: d["contentHash"] for d in state.get("documents") or []}
        jobs = [
            Send("extract_document", ExtractJob(path=p, contentHash=hashes[p]))
            for p in state.get("stale") or []
        ]
        return jobs or "merge"

    # --- extract_document -------------------------------------------------------------------------
    def extract_document(
        self, job: ExtractJob, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Extract one document from its cached parse and cache the result; never fails the build."""
        if is_run_cancelled(runtime):
            return {}  # the build stops at `merge`
        started = time.perf_counter()
        stack, org, graph = self._graph(config, runtime)
        path, digest = job["path"], job["contentHash"]
        result: dict[str, Any] = {"path": path, "entities": 0, "relations": 0, "claims": 0}
        chunks = document_chunks(stack, org, path, digest)
        if chunks is None:
            reason = "its indexed chunks could not be read (re-run its ingest)"
            return {"extracted": [{**result, "status": "failed", "seconds": 0.0, "reason": reason}]}
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
            seconds = round(time.perf_counter() - started, 3)
            return {"extracted": [{**result, "status": "failed", "seconds": seconds, "reason": str(exc)}]}
        graph.put_chunks(path, digest, chunks)
        graph.put_extraction(path, digest, extractor.cache_key, dict(payload))
        result.update(
            status="extracted",
            chunks=len(chunks),
            chunksReused=int(payload["stats"].get("chunksReused", 0)),
            entities=len(payload["entities"]),
            relations=len(payload["relations"]),
            claims=len(payload["claims"]),
            seconds=round(time.perf_counter() - started, 3),
            reason=None,
        )
        return {"extracted": [result]}

    # --- merge ------------------------------------------------------------------------------------
    def merge(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Cached extractions of the indexed documents → a new (building) version with provenance."""
        if is_run_cancelled(runtime):
            return self.stopped(state, config, runtime)
        started = time.perf_counter()
        stack, org, graph = self._graph(config, runtime)
        key = extractor_key(stack.settings)
        summarizer = get_summarizer(stack.settings)
        payloads: list[tuple[str, dict[str, Any]]] = []
        documents: list[DocumentRef] = []
        for doc in state.get("documents") or []:
            payload = graph.get_extraction(doc["path"], doc["contentHash"], key)
            if payload is None:
                continue  # its extraction failed: listed in `extracted` with the reason
            if not graph.has_chunks(doc["path"], doc["contentHash"]):
                chunks = document_chunks(stack, org, doc["path"], doc["contentHash"]) or []
                graph.put_chunks(doc["path"], doc["contentHash"], chunks)
            payloads.append((doc["path"], payload))
            documents.append(DocumentRef(doc["path"], doc["contentHash"], key, doc["chunkCount"]))
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
            vectors = _unit(stack.dense.embed_documents([e.display_name for e in missing]))
            embeddings.update({e.name: v for e, v in zip(missing, vectors, strict=True)})
        graph.write_version(
            version,
            documents=documents,
            entities=merged.entities,
            edges=merged.edges,
            claims=merged.claims,
            entity_embeddings=embeddings,
        )
        timings = dict(state.get("timings") or {})
        timings["extract"] = round(sum(r.get("seconds", 0.0) for r in state.get("extracted") or []), 3)
        timings["merge"] = round(time.perf_counter() - started, 3)
        return {
            "version": version,
            "entityCount": len(merged.entities),
            "edgeCount": len(merged.edges),
            "claimCount": len(merged.claims),
            "timings": timings,
        }

    # --- communities ------------------------------------------------------------------------------
    def communities(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Hierarchical Leiden over the new version's edges, started from the published partition (so
        communities the change does not reach keep their members); fingerprints for summary reuse."""
        if is_run_cancelled(runtime):
            return self.stopped(state, config, runtime)
        started = time.perf_counter()
        stack, _org, graph = self._graph(config, runtime)
        version = state["version"]
        assert version is not None
        entities = graph.entities(version=version)
        edges = graph.edges(version=version)
        claims = graph.claims_for([e.name for e in entities], version=version)
        settings = stack.settings
        found = detect_communities(
            edges,
            seed=settings.graph_leiden_seed,
            max_cluster_size=settings.graph_max_cluster_size,
            previous=graph.communities(),  # the published partition: unchanged parts stay as they are
        )
        annotate(found, entities, edges, claims)
        graph.write_communities(version, found)
        per_level: dict[str, int] = defaultdict(int)
        for community in found:
            per_level[str(community.level)] += 1
        timings = {**(state.get("timings") or {}), "communities": round(time.perf_counter() - started, 3)}
        return {"communitiesPerLevel": dict(per_level), "timings": timings}

    # --- summarize ----------------------------------------------------------------------------------
    def summarize(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Reuse summaries whose fingerprint is unchanged; write the rest, finest level first. A cancel
        stops it before the next summary (a model call each, with the LLM summarizer)."""
        if is_run_cancelled(runtime):
            return self.stopped(state, config, runtime)
        started = time.perf_counter()
        stack, _org, graph = self._graph(config, runtime)
        version = state["version"]
        assert version is not None
        summarizer = get_summarizer(stack.settings)
        communities = graph.communities(version=version)
        reuse = graph.reusable_summaries([c.fingerprint for c in communities], summarizer.cache_key)
        entities = {e.name: e for e in graph.entities(version=version)}
        edges = graph.edges(version=version)
        by_subject = index_claims(graph.claims_for(list(entities), version=version))
        by_id = {c.id: c for c in communities}
        reused = written = 0
        todo: list[Community] = []
        for community in communities:
            old = reuse.get(community.fingerprint)
            if old is not None:
                community.title, community.summary = old.title, old.summary
                community.summary_embedding = old.summary_embedding
                community.summarizer = summarizer.cache_key
                reused += 1
            else:
                todo.append(community)

        def context_of(community: Community) -> CommunityContext:
            members = set(community.members)
            return CommunityContext(
                community=community,
                entities=entities,
                edges=[e for e in edges if e.source in members and e.target in members],
                claims=member_claims(community.members, by_subject),
                children=[by_id[k] for k in community.children if k in by_id],
            )

        def run(community: Community) -> None:
            if is_run_cancelled(runtime):
                return
            community.title, community.summary = summarizer.summarize(context_of(community))
            community.summarizer = summarizer.cache_key
            community.summary_embedding = None

        # finest level first: a parent may use its children's summaries
        with ThreadPoolExecutor(max_workers=SUMMARY_WORKERS) as pool:
            for level in sorted({c.level for c in todo}, reverse=True):
                list(pool.map(run, [c for c in todo if c.level == level]))
        if is_run_cancelled(runtime):
            return self.stopped(state, config, runtime)
        written = len(todo)
        graph.update_summaries(version, communities)
        timings = {**(state.get("timings") or {}), "summarize": round(time.perf_counter() - started, 3)}
        return {"summariesReused": reused, "summariesWritten": written, "timings": timings}

    # --- embed ----------------------------------------------------------------------------------------
    def embed(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Embed the summaries that are new in this version (reused ones kept their vectors)."""
        if is_run_cancelled(runtime):
            return self.stopped(state, config, runtime)
        started = time.perf_counter()
        stack, _org, graph = self._graph(config, runtime)
        version = state["version"]
        assert version is not None
        communities = graph.communities(version=version, with_embeddings=True)
        missing = [c for c in communities if c.summary and c.summary_embedding is None]
        if missing:
            texts = [f"{c.title}\n{c.summary}" for c in missing]
            for community, vector in zip(missing, _unit(stack.dense.embed_documents(texts)), strict=True):
                community.summary_embedding = vector
            graph.update_summaries(version, missing)
        timings = {**(state.get("timings") or {}), "embed": round(time.perf_counter() - started, 3)}
        return {"timings": timings}

    # --- publish ----------------------------------------------------------------------------------------
    def publish(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Switch the published version in one transaction (readers saw the old one until now). The
        last stage boundary: a cancel that arrives once it has begun is too late."""
        if is_run_cancelled(runtime):
            return self.stopped(state, config, runtime)
        started = time.perf_counter()
        _stack, _org, graph = self._graph(config, runtime)
        version = state["version"]
        assert version is not None
        timings = {**(state.get("timings") or {}), "publish": 0.0}
        stats = {
            "timings": timings,
            "summariesReused": state.get("summariesReused", 0),
            "summariesWritten": state.get("summariesWritten", 0),
            "extracted": [r["path"] for r in state.get("extracted") or [] if r["status"] == "extracted"],
            "failed": [
                {"path": r["path"], "reason": r.get("reason")}
                for r in state.get("extracted") or []
                if r["status"] == "failed"
            ],
        }
        published = graph.publish(version, stats)
        timings["publish"] = round(time.perf_counter() - started, 3)
        return {
            "status": "published",
            "publishedVersion": published.version,
            "updatedAt": now(),
            "timings": timings,
        }
