"""The bodies of a delete's receipt (`librarian.receipts.model.Receipt.as_dict`) as the routes send them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ReceiptPlace(BaseModel):
    """One place the document lived, counted before and after the delete."""

    place: str = Field(description="e.g. stored_file, vectors_dense, parse_cache, graph_claims")
    unit: str
    before: int
    after: int
    removed: int
    action: Literal["removed", "pending_rebuild", "nothing_there"]
    note: str = ""


class ReceiptProbe(BaseModel):
    """One post-condition check: a retrieval channel asked the document's own words."""

    channel: str = Field(
        description="search, vector_query_tool, graph_local, graph_global, graph_drift, page_route"
    )
    found: bool
    query: str
    detail: str = ""


class PendingContribution(BaseModel):
    """Graph rows that stay in the published version (never cited: liveness) until `removedBy` runs."""

    model_config = ConfigDict(populate_by_name=True)

    place: str
    count: int
    removedBy: dict[str, Any] = Field(description="The graph build that removes it (thread and run ids)")


class DeleteReceipt(BaseModel):
    """What a delete removed, what stays pending until the next graph build, and whether any channel
    still returns the document (`verified` false names them in `foundIn`)."""

    id: str
    organizationId: str
    path: str
    deletedAt: str
    deletedBy: str | None
    verified: bool
    foundIn: list[str]
    places: list[ReceiptPlace]
    pending: list[PendingContribution]
    probes: list[ReceiptProbe]


class ReceiptList(BaseModel):
    organization_id: str
    receipts: list[DeleteReceipt]
