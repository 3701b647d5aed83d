"""Waiting, on the LangGraph server, until an organization's ingest runs are idle.

A graph build scheduled by a document change must not race the ingest that triggered it, so its first
node waits here. Document threads are found by the metadata the document runs stamp on them
(`organization_id`, `kind: document`); across replicas, runs of other processes by the shared lock
each of them holds (`Coordination.ingests_running`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from librarian.runs.coordination import coordination_for
from librarian.runs.server_client import sdk_client
from librarian.settings import get_settings

PAGE = 100


async def ingests_active(client: Any, org: str) -> bool:
    """Is any ingest of `org` running or queued? Busy threads first (one call), then queued runs."""
    documents = {"organization_id": org, "kind": "document"}
    busy = await client.threads.search(metadata=documents, status="busy", limit=1, select=["thread_id"])
    if busy:
        return True
    offset = 0
    while True:
        threads = await client.threads.search(
            metadata=documents, limit=PAGE, offset=offset, select=["thread_id"]
        )
        for thread in threads:
            if await client.runs.list(thread["thread_id"], limit=1, status="pending"):
                return True
        if len(threads) < PAGE:
            return False
        offset += PAGE


async def wait_for_ingests(
    org: str, *, deadline_s: float = 900.0, poll_s: float = 1.0, client: Any = None
) -> bool:
    """Poll until no ingest of `org` is running or queued; False if the deadline passed first."""
    client = sdk_client(client)
    coordination = coordination_for(get_settings())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while await ingests_active(client, org) or await asyncio.to_thread(coordination.ingests_running, org):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(poll_s)
    return True
