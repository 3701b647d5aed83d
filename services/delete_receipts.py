"""A delete's receipt: measured footprint before and after, the pending graph build, the probes, kept.

Why a separate step after the delete's effects: the delete itself (`DocumentOps.delete`) keeps its
order (cancel, vectors under the fence, file, page images, follow-up run) and its turn of the path;
the receipt only reads. `before` is measured inside that turn, right before the first effect, so no
write of the same path can slip between the count and the delete.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from librarian.receipts.counting import Footprint, measure, pending, places
from librarian.receipts.model import Receipt
from librarian.receipts.store import ReceiptStore, receipt_store
from librarian.stack import Stack

#: Who removes pending graph contributions: a build the caller scheduled, or none yet.
GraphBuild = Callable[[], Awaitable[dict[str, Any] | None]]


def receipts_of(stack: Stack) -> ReceiptStore:
    """The stack's receipt store (one per stack, so per settings)."""
    return stack.memo("delete-receipts", lambda: receipt_store(stack.settings))


def removing_build(org: str, before: Footprint, scheduled: dict[str, Any] | None) -> dict[str, Any]:
    """The build that removes the pending contributions, as the receipt names it.

    Scheduled (the server's coalesced rebuild): its thread and run ids. Not scheduled (the CLI leaves
    builds to `librarian graph build`): the command that removes them. Either way, the published
    version that still holds them; the next version the build publishes no longer does.
    """
    build: dict[str, Any] = {"publishedVersion": before.graph_version}
    if scheduled:
        return {
            **build,
            "scheduled": True,
            "threadId": scheduled.get("thread_id"),
            "runId": scheduled.get("run_id"),
            "coalesced": bool(scheduled.get("coalesced")),
        }
    return {**build, "scheduled": False, "command": f"librarian graph build --org {org}"}


async def footprint(stack: Stack, org: str, path: str, like: Footprint | None = None) -> Footprint:
    return await asyncio.to_thread(measure, stack, org, path, like=like)


async def complete_receipt(
    stack: Stack,
    org: str,
    path: str,
    before: Footprint,
    *,
    owner: str | None,
    graph_build: GraphBuild | None = None,
) -> Receipt:
    """Measure again, name the removing build, probe every channel, keep the receipt and return it."""
    # Imported here: the probes import the tools and graph search (seconds), which a module that
    # only needs `DocumentNotFoundError` (the CLI) must not pay for.
    from services.receipt_probes import probe_all

    after = await footprint(stack, org, path, like=before)
    found = places(before, after)
    has_pending = any(p.action == "pending_rebuild" for p in found)
    scheduled = await graph_build() if graph_build is not None else None
    build = removing_build(org, before, scheduled) if has_pending or scheduled else {}
    receipt = Receipt(
        id=uuid.uuid4().hex,
        organization_id=org,
        path=path,
        deleted_at=datetime.now(UTC).isoformat(timespec="microseconds"),
        deleted_by=owner,
        places=found,
        pending=pending(found, build),
        probes=await probe_all(stack, org, path, before.texts),
    )
    await asyncio.to_thread(lambda: receipts_of(stack).put(receipt))  # opening it touches files
    return receipt
