"""Node functions of the graph index build (`graphs/graph_index.py`).

Which documents are indexed is read from the facts, not from other threads' checkpoints: a document is
in the graph when the organization's vector index holds its chunks, all written from one content
(the `contentHash` on every record); its chunks are read back from those records. The graph therefore
mirrors what search serves, and the build runs the same in the CLI and on the server.

Every stage starts by asking whether its run was cancelled (`librarian.runs.cancellation`, an admin's
POST /orgs/{org}/graph/cancel): if so it does nothing but end the build `cancelled` (`stopped`),
dropping the version this build was writing; the published version is only ever switched by
`publish`, the last stage, so it stays as it was.

The same boundaries enforce the organization's token budget (`librarian.costs.budget`): `collect`
compares the extraction estimate with it before any call, and every later stage the tokens the build
has spent (the cost ledger, by the build's id). Over it, the stage drops the version being built and
ends the build `stopped` with error `budget`, the figures and a reason; the published graph stays.

The work of the stages that cost CPU is a module-level function of a `Stack` in
`graphs/graph_index_stages.py` (`extract_stage`, `merge_stage`, `communities_stage`,
`summarize_stage`, `embed_stage`): plain Python calls it inline;
on the server the `a`-prefixed nodes await it in the low-priority ingest worker
(`librarian.runs.ingest_worker`), which runs it on its own stack over the same stores. It writes what
it built to the graph store and returns a few numbers, so the results are the same wherever it runs,
and the stage boundaries, cancel checks and versions stay in the node. A stage whose provider is a
chat model (the `llm` extractor or summarizer) waits on the network, not the CPU: it stays in the
server process (in a thread), where it also sees a cancel between two model calls.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Overwrite, Send

from graphs.context import LibrarianContext, organization_of
from graphs.graph_index_stages import (
    communities_stage,
    document_chunks,
    embed_stage,
    extract_stage,
    indexed_documents,
    merge_stage,
    never_cancelled,
    now,
    stale_paths,
    summarize_stage,
)
from graphs.graph_index_state import (
    ExtractJob,
    GraphIndexState,
)
from librarian.costs.budget import STOPPED_REASON, BudgetVerdict, build_budget
from librarian.costs.estimate import estimate_stale
from librarian.costs.ledger import ledger_of
from librarian.graph.store import OrgGraph
from librarian.runs.cancellation import is_run_cancelled
from librarian.runs.coordination import coordination_for
from librarian.runs.ingest_idle import wait_for_ingests
from librarian.stack import Stack

if TYPE_CHECKING:
    from librarian.runs.ingest_worker import IngestOffload

log = logging.getLogger(__name__)

StackSupplier = Callable[[], Stack]
CANCEL_POLL_S = 0.5  # how often a build waiting for ingests looks for its cancel
CANCELLED_REASON = "the build was cancelled by an organization admin; the published graph is unchanged"
ENDED = ("cancelled", "stopped")  # statuses a stage boundary ends the build with


def _timed(state: GraphIndexState, stage: str, started: float) -> dict[str, float]:
    return {**(state.get("timings") or {}), stage: round(time.perf_counter() - started, 3)}


def _version(state: GraphIndexState) -> int:
    version = state.get("version")
    assert version is not None, "a stage after merge runs with the version merge began"
    return version


def _build(state: GraphIndexState) -> str:
    """The build's id (set by `collect`): its model calls are recorded against it."""
    return state.get("buildId") or ""


def _merged(state: GraphIndexState, counts: dict[str, int], started: float) -> dict[str, Any]:
    timings = dict(state.get("timings") or {})
    timings["extract"] = round(sum(r.get("seconds", 0.0) for r in state.get("extracted") or []), 3)
    timings["merge"] = round(time.perf_counter() - started, 3)
    return {**counts, "timings": timings}


class GraphIndexNodes:
    """The node functions, bound to a stack supplier; with `offload` (the server) the `a`-prefixed
    twins of the CPU-bound stages run them in its low-priority worker."""

    def __init__(self, stack: StackSupplier, offload: IngestOffload | None = None) -> None:
        self._stack = stack
        self._offload = offload

    @property
    def offloaded(self) -> bool:
        return self._offload is not None

    async def _stage(self, org: str, stage: Callable[..., Any], *args: Any, in_worker: bool = True) -> Any:
        """`stage(stack, org, *args)` in the worker (within the organization's share of it), or in a
        thread of this process when its work is waiting on a model, not on the CPU."""
        stack = self._stack()
        if not in_worker:
            return await asyncio.to_thread(stage, stack, org, *args)
        assert self._offload is not None
        return await self._offload.graph_stage(stack.settings, org, stage, org, *args)

    def _graph(
        self, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> tuple[Stack, str, OrgGraph]:
        org = organization_of(config, runtime)
        stack = self._stack()
        return stack, org, stack.graph_store.scope(org)

    # --- cancellation -----------------------------------------------------------------------------
    def _cancelled(self, config: RunnableConfig, runtime: Runtime[LibrarianContext] | None) -> bool:
        """Cancelled in this process (the run's flag), or by an admin through another replica."""
        if is_run_cancelled(runtime):
            return True
        coordination = coordination_for(self._stack().settings)
        return coordination.shared and coordination.graph_cancel_requested(organization_of(config, runtime))

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

    # --- budget -----------------------------------------------------------------------------------
    def _verdict(self, state: GraphIndexState, org: str, stage: str, estimated: int = 0) -> BudgetVerdict:
        """The build's spending (the ledger, by build id) against the organization's budget."""
        limit = build_budget(self._stack().settings, org)
        spent = self._spent(state, org) if limit else 0
        return BudgetVerdict(limit=limit, spent=spent, estimated=estimated, stage=stage)

    def _spent(self, state: GraphIndexState, org: str) -> int:
        """Tokens this build's model calls have spent so far (0 before `collect` gave it an id)."""
        build = _build(state)
        return ledger_of(self._stack()).build_tokens(org, build) if build else 0

    def over_budget(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext], stage: str
    ) -> dict[str, Any] | None:
        """At the boundary before `stage`: the update that stops the build if it is over its budget."""
        verdict = self._verdict(state, organization_of(config, runtime), stage)
        return self.stopped_by_budget(state, config, runtime, verdict) if verdict.exceeded else None

    def stopped_by_budget(
        self,
        state: GraphIndexState,
        config: RunnableConfig,
        runtime: Runtime[LibrarianContext],
        verdict: BudgetVerdict,
    ) -> dict[str, Any]:
        """Like a cancel (the version being built is dropped, the published one stays), but `stopped`."""
        update = self.stopped(state, config, runtime)
        log.info("graph build of %s stopped over its budget: %s", organization_of(config, runtime), verdict)
        return {
            **update,
            "status": "stopped",
            "error": STOPPED_REASON,
            "reason": verdict.reason(),
            "budget": verdict.figures(),
            "buildTokens": verdict.spent,
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
        if self._cancelled(config, runtime):
            return self.stopped({}, config, runtime)
        if not state.get("waitForIngests"):
            return {"status": "running"}
        org = organization_of(config, runtime)
        waiting = asyncio.ensure_future(wait_for_ingests(org))
        try:
            while not waiting.done():
                if await asyncio.to_thread(self._cancelled, config, runtime):
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
        if self._cancelled(config, runtime):
            return self.stopped({}, config, runtime)  # `version` is still the last build's
        started = time.perf_counter()
        stack, org, graph = self._graph(config, runtime)
        for version in graph.versions():
            if version.status == "building":  # an earlier build died: its half-written version goes
                graph.abort(version.version)
        documents, skipped = indexed_documents(stack, org)
        # deleted documents (and replaced versions) leave their cached extractions behind: drop them
        pruned = graph.prune_extractions({d["path"]: d["contentHash"] for d in documents})
        stale = stale_paths(stack, org, documents, force=bool(state.get("force")))
        build = uuid.uuid4().hex
        update: dict[str, Any] = {
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
            "buildId": build,
            "buildTokens": 0,
            "budget": None,
        }
        if build_budget(stack.settings, org) and stale:  # the first boundary: the estimate, before any call
            estimated = estimate_stale(stack, org, documents, stale, document_chunks)["tokens"]
            verdict = self._verdict({"buildId": build}, org, "extract", estimated)
            if verdict.exceeded:
                stopped = self.stopped_by_budget({}, config, runtime, verdict)
                return {**update, **stopped, "stale": stale}
        return update

    def route_extraction(self, state: GraphIndexState) -> list[Send] | str:
        """`Send` one extraction per stale document, or go straight to merge (or end, cancelled)."""
        if state.get("status") in ENDED:
            return END
        hashes = {d["path"]: d["contentHash"] for d in state.get("documents") or []}
        build = state.get("buildId") or ""
        jobs = [
            Send("extract_document", ExtractJob(path=p, contentHash=hashes[p], build=build))
            for p in state.get("stale") or []
        ]
        return jobs or "merge"

    # --- extract_document -------------------------------------------------------------------------
    def extract_document(
        self, job: ExtractJob, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Extract one document from its indexed chunks and cache the result; never fails the build."""
        if self._cancelled(config, runtime):
            return {}  # the build stops at `merge`
        org = organization_of(config, runtime)
        result = extract_stage(self._stack(), org, job["path"], job["contentHash"], job.get("build", ""))
        return {"extracted": [result]}

    async def aextract_document(
        self, job: ExtractJob, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """`extract_document` on the server: spaCy runs in the low-priority worker."""
        if self._cancelled(config, runtime):
            return {}
        org = organization_of(config, runtime)
        local = self._stack().settings.graph_extractor == "local"
        args = (job["path"], job["contentHash"], job.get("build", ""))
        result = await self._stage(org, extract_stage, *args, in_worker=local)
        return {"extracted": [result]}

    # --- merge ------------------------------------------------------------------------------------
    def merge(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Cached extractions of the indexed documents → a new (building) version with provenance."""
        if self._cancelled(config, runtime):
            return self.stopped(state, config, runtime)
        if (halt := self.over_budget(state, config, runtime, "merge")) is not None:
            return halt
        started = time.perf_counter()
        org = organization_of(config, runtime)
        counts = merge_stage(self._stack(), org, list(state.get("documents") or []), _build(state))
        return _merged(state, counts, started)

    async def amerge(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """`merge` on the server, in the low-priority worker."""
        if self._cancelled(config, runtime):
            return await asyncio.to_thread(self.stopped, state, config, runtime)
        if (halt := await asyncio.to_thread(self.over_budget, state, config, runtime, "merge")) is not None:
            return halt
        started = time.perf_counter()
        org = organization_of(config, runtime)
        counts = await self._stage(org, merge_stage, list(state.get("documents") or []), _build(state))
        return _merged(state, counts, started)

    # --- communities ------------------------------------------------------------------------------
    def communities(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Hierarchical Leiden over the new version's edges, started from the published partition (so
        communities the change does not reach keep their members); fingerprints for summary reuse."""
        if self._cancelled(config, runtime):
            return self.stopped(state, config, runtime)
        if (halt := self.over_budget(state, config, runtime, "communities")) is not None:
            return halt
        started = time.perf_counter()
        per_level = communities_stage(self._stack(), organization_of(config, runtime), _version(state))
        return {"communitiesPerLevel": per_level, "timings": _timed(state, "communities", started)}

    async def acommunities(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """`communities` on the server, in the low-priority worker."""
        if self._cancelled(config, runtime):
            return await asyncio.to_thread(self.stopped, state, config, runtime)
        halt = await asyncio.to_thread(self.over_budget, state, config, runtime, "communities")
        if halt is not None:
            return halt
        started = time.perf_counter()
        per_level = await self._stage(organization_of(config, runtime), communities_stage, _version(state))
        return {"communitiesPerLevel": per_level, "timings": _timed(state, "communities", started)}

    # --- summarize ----------------------------------------------------------------------------------
    def summarize(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Reuse summaries whose fingerprint is unchanged; write the rest, finest level first. A cancel
        stops it before the next summary (a model call each, with the LLM summarizer)."""
        if self._cancelled(config, runtime):
            return self.stopped(state, config, runtime)
        if (halt := self.over_budget(state, config, runtime, "summarize")) is not None:
            return halt
        started = time.perf_counter()
        org = organization_of(config, runtime)
        cancelled = partial(self._cancelled, config, runtime)
        counts = summarize_stage(self._stack(), org, _version(state), cancelled, _build(state))
        return self._summarized(state, config, runtime, counts, started)

    async def asummarize(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """`summarize` on the server: local summaries in the low-priority worker (a stage boundary is
        its cancel point there); LLM summaries here, where a cancel stops them between two calls."""
        if self._cancelled(config, runtime):
            return await asyncio.to_thread(self.stopped, state, config, runtime)
        halt = await asyncio.to_thread(self.over_budget, state, config, runtime, "summarize")
        if halt is not None:
            return halt
        started = time.perf_counter()
        org = organization_of(config, runtime)
        if self._stack().settings.graph_summarizer == "local":
            counts = await self._stage(org, summarize_stage, _version(state), never_cancelled, _build(state))
        else:
            cancelled = partial(self._cancelled, config, runtime)
            args = (_version(state), cancelled, _build(state))
            counts = await self._stage(org, summarize_stage, *args, in_worker=False)
        return await asyncio.to_thread(self._summarized, state, config, runtime, counts, started)

    def _summarized(
        self,
        state: GraphIndexState,
        config: RunnableConfig,
        runtime: Runtime[LibrarianContext],
        counts: tuple[int, int] | None,
        started: float,
    ) -> dict[str, Any]:
        if counts is None:  # cancelled between two summaries
            return self.stopped(state, config, runtime)
        reused, written = counts
        timings = _timed(state, "summarize", started)
        return {"summariesReused": reused, "summariesWritten": written, "timings": timings}

    # --- embed ----------------------------------------------------------------------------------------
    def embed(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Embed the summaries that are new in this version (reused ones kept their vectors)."""
        if self._cancelled(config, runtime):
            return self.stopped(state, config, runtime)
        if (halt := self.over_budget(state, config, runtime, "embed")) is not None:
            return halt
        started = time.perf_counter()
        embed_stage(self._stack(), organization_of(config, runtime), _version(state), _build(state))
        return {"timings": _timed(state, "embed", started)}

    async def aembed(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """`embed` on the server, in the low-priority worker."""
        if self._cancelled(config, runtime):
            return await asyncio.to_thread(self.stopped, state, config, runtime)
        if (halt := await asyncio.to_thread(self.over_budget, state, config, runtime, "embed")) is not None:
            return halt
        started = time.perf_counter()
        await self._stage(organization_of(config, runtime), embed_stage, _version(state), _build(state))
        return {"timings": _timed(state, "embed", started)}

    # --- publish ----------------------------------------------------------------------------------------
    def publish(
        self, state: GraphIndexState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any]:
        """Switch the published version in one transaction (readers saw the old one until now). The
        last stage boundary: a cancel that arrives once it has begun is too late."""
        if self._cancelled(config, runtime):
            return self.stopped(state, config, runtime)
        verdict = self._verdict(state, organization_of(config, runtime), "publish")
        if verdict.exceeded:
            return self.stopped_by_budget(state, config, runtime, verdict)
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
            "buildTokens": verdict.spent if verdict.limit else self._spent(state, _org),
        }
