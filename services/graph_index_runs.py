"""Graph builds on the LangGraph server: coalesced scheduling and the status report.

Each organization has one build thread (`uuid5("{org}:graph")`). Scheduling enqueues a run on it unless
one is already *pending* (queued, not started): that queued run will see every change made before it
starts, so a second one would only repeat it. Hence at most one running and one queued build per
organization, however many documents are uploaded or deleted. The check-and-enqueue is serialized per
organization in this process (the server's routes share it). Across replicas (`LIBRARIAN_POSTGRES_URL`)
the organization's requests are counted in PostgreSQL: a build queued on any live process absorbs a
new request, a build covers every request made before it started, and the organization's graph run
lock lets one build run at a time (`librarian.runs.coordination`).

Builds scheduled by document changes wait, in their first node, until the organization's ingest runs
are idle (`waitForIngests`, `librarian.runs.ingest_idle`), so a build never races the ingest that
triggered it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from graphs.graph_index import GRAPH_NAME
from librarian.errors import LibrarianError
from librarian.runs import cancellation
from librarian.runs.server_client import sdk_client, thread_runs
from librarian.runs.threads import graph_server_thread_id, graph_thread_id
from librarian.stack import get_stack
from services.graph_index_status import build_status, published_facts, status_report, with_costs
from services.run_admission import RANK_GRAPH, Job, RunAdmission

logger = logging.getLogger(__name__)

ACTIVE = ("pending", "running")
ENDED_BADLY = ("error", "timeout", "interrupted")
_locks: dict[str, asyncio.Lock] = {}


async def schedule_build(
    org: str, *, owner: str, wait_for_ingests: bool = False, force: bool = False, client: Any = None
) -> dict[str, Any]:
    """Enqueue a build of `org`'s graph, or return the one already queued (coalesced).

    Queued means pending on the server, or waiting for admission to its run slots
    (`services.run_admission`: an organization's build waits until none of its documents do); a
    waiting build's `run_id` is its job's id.
    """
    client = sdk_client(client)
    thread = graph_server_thread_id(org)
    admission = RunAdmission(client)
    lock = _locks.setdefault(org, asyncio.Lock())
    async with lock:
        runs = await thread_runs(client, thread)
        pending = [r for r in runs if r["status"] == "pending"]
        if pending:
            return {"thread_id": thread, "run_id": pending[0]["run_id"], "coalesced": True}
        waiting = await admission.waiting_on(thread)
        if waiting is not None:
            return {"thread_id": thread, "run_id": waiting.job_id, "coalesced": True}
        job = Job(
            org=org,
            thread=thread,
            graph=GRAPH_NAME,
            input={"force": force, "waitForIngests": wait_for_ingests},
            owner=owner,
            kind="graph",
            rank=RANK_GRAPH,
            stamp={"organization_id": org, "graph_key": graph_thread_id(org), "kind": "graph"},
        )
        # Across replicas the organization's queued build may be another process's (PostgreSQL).
        request, queued = await asyncio.to_thread(admission.coordination.request_graph_build, org, job.job_id)
        if queued is not None:
            return {"thread_id": thread, "run_id": queued, "coalesced": True}
        if request:
            job = replace(job, input={**job.input, "request": request})
        run_id = await admission.submit(job)
    return {"thread_id": thread, "run_id": run_id, "coalesced": False}


async def _last_build(client: Any, thread: str) -> dict[str, Any]:
    """The last build from the build thread's state, corrected by its runs still queued or running."""
    from langgraph_sdk.errors import NotFoundError

    try:
        state = await client.threads.get_state(thread)
    except NotFoundError:
        state = {}
    runs = await thread_runs(client, thread)
    runs, cancelled = after_cancel(await _thread_metadata(client, thread), runs)  # cancel_build's record
    errors = [t.get("error") for t in state.get("tasks") or [] if t.get("error")]
    last = build_status(dict(state.get("values") or {}), state.get("next") or [], errors)
    active = [r for r in runs if r["status"] in ACTIVE]
    if active:
        last["status"] = "running" if any(r["status"] == "running" for r in active) else "queued"
        last["queuedRuns"] = sum(1 for r in active if r["status"] == "pending")
    elif cancelled:
        last.update(cancelled)
    elif runs and runs[0]["status"] in ENDED_BADLY and last["status"] != "failed":
        last.update(status="failed", error="run_failed", reason=f"the build run ended: {runs[0]['status']}")
    last["threadId"] = thread
    return last


async def server_status(org: str, *, client: Any = None) -> dict[str, Any]:
    """The status report of `org`, with the last build read from the server's build thread."""
    client = sdk_client(client)
    last = await _last_build(client, graph_server_thread_id(org))
    stack = get_stack()
    published, published_docs, indexed = await asyncio.to_thread(published_facts, stack, org)
    report = status_report(org, published, published_docs, indexed, last)
    return await asyncio.to_thread(with_costs, report, stack, org)


# --- an admin's cancel --------------------------------------------------------------------------------

REMOTE_BUILD = "another-replica"  # in `stopping`: the build runs on another server process
CANCEL_RECORD = "build_cancel"  # build thread metadata: what the last cancel did, for `_last_build`
CANCELLED_REASON = "the build was cancelled by an organization admin before it started"


class NoActiveBuildError(LibrarianError):
    """Cancel was asked for an organization with no graph build queued or running."""

    code = "no_active_build"


async def cancel_build(org: str, *, owner: str, client: Any = None) -> dict[str, Any]:
    """Stop `org`'s running build at its next stage boundary and remove its queued one; what it did.

    The running build is flagged (`librarian.runs.cancellation`): its next stage ends it `cancelled`
    and drops the version it was writing; the published version stays, since only the last stage
    switches it (a build already publishing is past its last boundary and publishes). A queued build
    never starts: the one waiting for admission is withdrawn, a pending run is cancelled on the server
    (and flagged too, should it start meanwhile). `NoActiveBuildError` when nothing was queued or
    running. The build thread's metadata keeps a record, so the status report shows the cancel.
    """
    client = sdk_client(client)
    thread = graph_server_thread_id(org)
    async with _locks.setdefault(org, asyncio.Lock()):  # not between schedule_build's check and enqueue
        waiting = await RunAdmission(client).withdraw(thread)
        runs = await thread_runs(client, thread)
        running = [r["run_id"] for r in runs if r["status"] == "running"]
        pending = [r["run_id"] for r in runs if r["status"] == "pending"]
        for run_id in running + pending:
            cancellation.cancel_run(run_id)
        removed = [run_id for run_id in pending if await _cancel_pending(client, thread, run_id)]
        removed = [waiting.job_id, *removed] if waiting is not None else removed
        # Across replicas, the build may run, or wait, on another process (PostgreSQL).
        elsewhere, voided = await asyncio.to_thread(RunAdmission(client).coordination.cancel_graph_build, org)
        if elsewhere and not running:
            running = [REMOTE_BUILD]
        if voided is not None and voided not in removed:
            removed.append(voided)
        if not running and not removed:
            raise NoActiveBuildError(f"no graph build of {org} is queued or running")
        newest = next((r["run_id"] for r in runs if r["run_id"] not in removed), None)
        at = datetime.now(UTC).isoformat(timespec="milliseconds")
        record = {"at": at, "by": owner, "stopping": running, "removed": removed, "newestRun": newest}
        await client.threads.update(thread, metadata={CANCEL_RECORD: record})
    logger.info("graph build of %s cancelled by %s: stopping %s, removed %s", org, owner, running, removed)
    return {"organization_id": org, "thread_id": thread, "stopping": running, "removed": removed}


async def _cancel_pending(client: Any, thread: str, run_id: str) -> bool:
    """Cancel a run that has not started; False when it is no longer pending (it ended meanwhile)."""
    import httpx

    try:
        await client.runs.cancel(thread, run_id, action="interrupt")
    except httpx.HTTPStatusError as error:  # the SDK's NotFoundError is one too
        if error.response.status_code != 404:
            raise
        return False
    return True


async def _thread_metadata(client: Any, thread: str) -> dict[str, Any]:
    from langgraph_sdk.errors import NotFoundError

    try:
        return dict((await client.threads.get(thread)).get("metadata") or {})
    except NotFoundError:
        return {}


def after_cancel(
    metadata: dict[str, Any], runs: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The build thread's runs without those a cancel removed (they never ran: not failures), and the
    last build's fields when a cancel removed everything queued with nothing running and no build has
    run since (a build that was running reports its own end: `cancelled`, or `published`)."""
    record = metadata.get(CANCEL_RECORD)
    if not isinstance(record, dict):
        return runs, None
    removed = set(record.get("removed") or [])
    kept = [r for r in runs if r["run_id"] not in removed]
    newest = kept[0]["run_id"] if kept else None
    if record.get("stopping") or newest != record.get("newestRun"):
        return kept, None
    fields = {"status": "cancelled", "error": "cancelled", "reason": CANCELLED_REASON}
    return kept, {**fields, "cancelledAt": record.get("at")}
