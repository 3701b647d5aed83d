"""The response bodies of Librarian's routes, declared once: the routes build or return them, and the
OpenAPI document is generated from them.

Bodies the routes compose (an accepted upload, a scheduled build) are built from these models. Bodies
that come whole from the services (a document's status, the graph's status and views) are sent as the
services made them, so nothing is dropped or renamed on the way; their models allow extra keys, and
`tests/unit/test_webapi.py` checks the services' bodies against them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from webapi.receipt_models import DeleteReceipt

RunId = Annotated[str, Field(json_schema_extra={"format": "uuid"})]


class Open(BaseModel):
    """A body whose producer may add keys: the listed ones are the contract."""

    model_config = ConfigDict(extra="allow")


# --- documents -----------------------------------------------------------------------------------


# Only described: the upload route streams the form itself, with its own size limit.
class UploadForm(BaseModel):
    """The multipart form of an upload."""

    file: bytes = Field(description="The document; its file name becomes its name under `docs/`.")


class UploadAccepted(BaseModel):
    path: str
    thread_id: RunId
    run_id: RunId
    size_bytes: int


IngestState = Literal[
    "indexed", "skipped", "failed", "running", "queued", "deleted", "cancelled", "not_ingested"
]


class DocumentStatus(Open):
    path: str
    status: IngestState
    chunkCount: int
    reason: str | None = None
    error: str | None = None
    contentHash: str | None = None
    parser: str | None = None
    updatedAt: str | None = None
    sizeBytes: int | None = None
    threadId: RunId | None = None
    queuedRuns: int | None = None
    stage: Literal["parsing", "embedding", "indexing"] | None = None
    chunkTotal: int | None = None
    queuedSince: str | None = None


class DocumentList(Open):
    organization_id: str
    documents: list[DocumentStatus]


class DocumentDeleted(BaseModel):
    path: str
    deleted: bool
    thread_id: RunId
    run_id: RunId
    receipt: DeleteReceipt = Field(description="Every place the document lived, counted before and after.")


class IngestCancelled(BaseModel):
    path: str
    cancelled: bool
    thread_id: RunId
    run_id: RunId


# --- the graph index -----------------------------------------------------------------------------


class GraphBuildScheduled(BaseModel):
    organization_id: str
    thread_id: RunId
    run_id: RunId
    coalesced: bool = Field(description="A build was already queued: that one is returned.")


class GraphBuildCancelled(BaseModel):
    organization_id: str
    thread_id: RunId
    stopping: list[RunId] = Field(
        description="The running build, told to stop at its next stage (it ends `cancelled`; the "
        "published graph stays)."
    )
    removed: list[RunId] = Field(description="Queued builds removed before they started (run or job ids).")


class ConversationsErased(BaseModel):
    organization_id: str
    member: str
    deleted: int = Field(description="Conversations (chat threads) deleted.")


class FailedDocument(Open):
    path: str
    reason: str | None = None


class LastBuild(Open):
    status: Literal["never", "queued", "running", "published", "failed", "cancelled", "stopped"]
    startedAt: str | None = None
    updatedAt: str | None = None
    publishedVersion: int | None = None
    documents: int = 0
    extracted: list[str] = []
    chunksExtracted: int = 0
    chunksReused: int = 0
    failedDocuments: list[FailedDocument] = []
    skippedDocuments: list[Any] = []
    summariesReused: int = 0
    summariesWritten: int = 0
    extractionsPruned: int = 0
    timings: dict[str, float] = {}
    error: str | None = None
    reason: str | None = None
    queuedRuns: int | None = None
    cancelledAt: str | None = Field(
        default=None, description="When an admin cancelled it, if it was cancelled before it started."
    )
    threadId: RunId | None = None
    buildTokens: int = Field(default=0, description="Tokens the build's model calls spent (the cost ledger).")
    budget: dict[str, Any] | None = Field(
        default=None, description="`stopped` over its token budget: limit, spent, estimated, stage."
    )


class GraphStatus(Open):
    organization_id: str
    version: int | None = Field(description="Published version; null before the first build.")
    publishedAt: str | None = None
    documents: int = 0
    entities: int = 0
    edges: int = 0
    claims: int = 0
    communitiesPerLevel: dict[str, int] = Field(
        description="Communities per level; level 0 is the root (coarsest)."
    )
    extractor: str | None = None
    summarizer: str | None = None
    lastBuild: LastBuild
    staleDocuments: list[str] = Field(
        description="Indexed documents the published version does not reflect (new or changed)."
    )
    removedDocuments: list[str] = []
    upToDate: bool = False
    costs: dict[str, Any] | None = Field(default=None, description="The cost ledger (GET .../graph/costs).")


class GraphCommunity(Open):
    id: int
    level: int
    parent: int | None = None
    title: str
    summary: str
    size: int
    members: list[str] = Field(description="Display names of its first members.")
    memberKeys: list[str] = Field(
        default=[], description="Entity keys of those members, same order: look members up by these."
    )
    rank: float


class GraphCommunities(Open):
    organization_id: str
    version: int
    communities: list[GraphCommunity] = Field(description="Coarsest level first.")


class GraphNode(Open):
    name: str
    label: str
    type: str
    degree: int


class GraphEdge(Open):
    source: str
    target: str
    relation: str
    weight: float


class EntityNeighbourhood(Open):
    organization_id: str
    version: int
    center: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class LocalSource(Open):
    id: str
    path: str
    filename: str
    page: int
    bbox: dict[str, float] | None = Field(description="Page fractions, top-left origin.")
    text: str
    score: float


class LocalEvidence(Open):
    kind: Literal["chunk", "claim"]
    text: str
    source: int = Field(description="1-based number of its source in `sources`.")
    subject: str | None = None
    object: str | None = None


class LocalNeighbourhood(Open):
    matched: list[str]
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class LocalAnswer(Open):
    organization_id: str
    version: int
    status: str
    question: str
    matchedEntities: list[dict[str, Any]]
    communities: list[dict[str, Any]]
    evidence: list[LocalEvidence]
    relevantContext: str
    sources: list[LocalSource]
    neighbourhood: LocalNeighbourhood | None
    brief: list[dict[str, Any]] = []  # [{"text", "sources": [n], "score"}], most relevant first
