"""Graph builds on the LangGraph server: coalesced scheduling and the status report.

Each organization has one build thread (`uuid5("{org}:graph")`). Scheduling enqueues a run on it unless
one is already *pending* (queued, not started): that queued run will see every change made before it
starts, so a second one would only repeat it. Hence at most one running and one queued build per
organization, however many documents are uploaded or deleted. The check-and-enqueue is serialized per
organization in this process (the server's routes share it).

Builds scheduled by document changes wait, inside `collect`, until the organization's ingest runs
are idle (`waitForIngests`), so a build never races the ingest that triggered it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from graphs.graph_index import GRAPH_NAME, thread_id
from services.graph_index_service import build_status, status_report

logger = logging.getLogger(__name__)

ACTIVE = ("pending", "running")
_locks: dict[str, asyncio.Lock] = {}


def server_thread_id(org: str) -> str:
    """Server thread ids must be UUIDs; the readable `{org}:graph` key goes into thread metadata."""
    return str(uuid5(NAMESPACE_URL, thread_id(org)))


def _client(client: Any) -> Any:
    if client is not None:
        return client
    from langgraph_sdk import get_client

    return get_client()


async def _runs(client: Any, thread: str) -> list[dict[str, Any]]:
    from langgraph_sdk.errors import NotFoundError

    try:
        return list(await client.runs.list(thread, limit=20))
    except NotFoundError:
        return []


async def schedule_build(
    org: str, *, owner: str, wait_for_ingests: bool = False, force: bool = False, client: Any = None
) -> dict[str, Any]:
    """Enqueue a build of `org`'s graph, or return the one already queued (coalesced)."""
    client = _client(client)
    thread = server_thread_id(org)
    lock = _locks.setdefault(org, asyncio.Lock())
    async with lock:
        runs = await _runs(client, thread)
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
        metadata = {"organization_id": org, "graph_key": thread_id(org), "kind": "graph"}
        await client.threads.update(thread, metadata=metadata)
    return {"thread_id": thread, "run_id": run["run_id"], "coalesced": False}


async def _ingests_active(client: Any, org: str) -> bool:
    """Is any ingest of `org` running or queued? Busy threads first (one call), then queued runs."""
    busy = await client.threads.search(
        metadata={"organization_id": org, "kind": "document"}, status="busy", limit=1, select=["thread_id"]
    )
    if busy:
        return True
    offset = 0
    while True:
        threads = await client.threads.search(
            metadata={"organization_id": org, "kind": "document"},
            limit=100,
            offset=offset,
            select=["thread_id"],
        )
        for thread in threads:
            if await client.runs.list(thread["thread_id"], limit=1, status="pending"):
                return True
        if len(threads) < 100:
            return False
        offset += 100


async def wait_for_ingests(
    org: str, *, deadline_s: float = 900.0, poll_s: float = 1.0, client: Any = None
) -> bool:
    """Poll until no ingest of `org` is running or queued; False if the deadline passed first."""
    client = _client(client)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while await _ingests_active(client, org):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(poll_s)
    return True


async def server_status(org: str, *, client: Any = None) -> dict[str, Any]:
    """The status report of `org`, with the last build read from the server's build thread."""
    from langgraph_sdk.errors import NotFoundError

    from graphs.graph_index_nodes import indexed_documents
    from librarian.stack import get_stack

    client = _client(client)
    thread = server_thread_id(org)
    try:
        state = await client.threads.get_state(thread)
    except NotFoundError:
        state = {}
    runs = await _runs(client, thread)
    errors = [t.get("error") for t in state.get("tasks") or [] if t.get("error")]
    last = build_status(dict(state.get("values") or {}), state.get("next") or [], errors)
    active = [r for r in runs if r["status"] in ACTIVE]
    if active:
        last["status"] = "running" if any(r["status"] == "running" for r in active) else "queued"
        last["queuedRuns"] = sum(1 for r in active if r["status"] == "pending")
    elif runs and runs[0]["status"] in ("error", "timeout", "interrupted") and last["status"] != "failed":
        last.update(status="failed", error="run_failed", reason=f"the build run ended: {runs[0]['status']}")
    last["threadId"] = thread

    stack = get_stack()

    def facts() -> tuple[Any, dict[str, str], dict[str, str]]:
        graph = stack.graph_store.scope(org)
        published = graph.published_version()
        published_docs = {d.path: d.content_hash for d in graph.documents()} if published else {}
        documents, _ = indexed_documents(stack, org)
        return published, published_docs, {d["path"]: d["contentHash"] for d in documents}

    published, published_docs, indexed = await asyncio.to_thread(facts)
    return status_report(org, published, published_docs, indexed, last)
