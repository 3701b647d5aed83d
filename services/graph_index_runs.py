"""Graph builds on the LangGraph server: coalesced scheduling and the status report.

Each organization has one build thread (`uuid5("{org}:graph")`). Scheduling enqueues a run on it unless
one is already *pending* (queued, not started): that queued run will see every change made before it
starts, so a second one would only repeat it. Hence at most one running and one queued build per
organization, however many documents are uploaded or deleted. The check-and-enqueue is serialized per
organization in this process (the server's routes share it).

Builds scheduled by document changes wait, in their first node, until the organization's ingest runs
are idle (`waitForIngests`, `librarian.runs.ingest_idle`), so a build never races the ingest that
triggered it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from graphs.graph_index import GRAPH_NAME
from librarian.runs.server_client import sdk_client, thread_runs
from librarian.runs.threads import graph_server_thread_id, graph_thread_id
from librarian.stack import get_stack
from services.graph_index_status import build_status, published_facts, status_report

logger = logging.getLogger(__name__)

ACTIVE = ("pending", "running")
ENDED_BADLY = ("error", "timeout", "interrupted")
_locks: dict[str, asyncio.Lock] = {}


async def schedule_build(
    org: str, *, owner: str, wait_for_ingests: bool = False, force: bool = False, client: Any = None
) -> dict[str, Any]:
    """Enqueue a build of `org`'s graph, or return the one already queued (coalesced)."""
    client = sdk_client(client)
    thread = graph_server_thread_id(org)
    lock = _locks.setdefault(org, asyncio.Lock())
    async with lock:
        runs = await thread_runs(client, thread)
        pending = [r for r in runs if r["status"] == "pending"]
        if pending:
            return {"thread_id": thread, "run_id": pending[0]["run_id"], "coalesced": True}
        run = await client.runs.create(
            thread,
            GRAPH_NAME,
            input={"force": force, "waitForIngests": wait_for_ingests},
            context={"organization_id": org},
            metadata={"organization_id": org, "owner": owner, "kind": "graph"},
            multitask_strategy="enqueue",
            if_not_exists="create",
        )
        metadata = {"organization_id": org, "graph_key": graph_thread_id(org), "kind": "graph"}
        await client.threads.update(thread, metadata=metadata)
    return {"thread_id": thread, "run_id": run["run_id"], "coalesced": False}


async def _last_build(client: Any, thread: str) -> dict[str, Any]:
    """The last build from the build thread's state, corrected by its runs still queued or running."""
    from langgraph_sdk.errors import NotFoundError

    try:
        state = await client.threads.get_state(thread)
    except NotFoundError:
        state = {}
    runs = await thread_runs(client, thread)
    errors = [t.get("error") for t in state.get("tasks") or [] if t.get("error")]
    last = build_status(dict(state.get("values") or {}), state.get("next") or [], errors)
    active = [r for r in runs if r["status"] in ACTIVE]
    if active:
        last["status"] = "running" if any(r["status"] == "running" for r in active) else "queued"
        last["queuedRuns"] = sum(1 for r in active if r["status"] == "pending")
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
    return status_report(org, published, published_docs, indexed, last)
