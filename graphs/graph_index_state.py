"""State of the graph index build: one thread per organization (`{org}:graph`); its latest checkpoint is the
build status. Keys are camelCase like the ingest status. Only small numbers and lists of paths travel
through state: the graph itself lives in the graph store (`librarian.graph.store`).

`extracted` is the one key written by the parallel `extract_document` workers; reducers add across runs
of a thread, so `collect` resets it with `Overwrite([])`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, NotRequired

from typing_extensions import TypedDict

BuildStatus = Literal["running", "published", "failed", "cancelled", "stopped"]  # stopped: over its budget


class DocumentInfo(TypedDict):
    path: str
    contentHash: str
    chunkCount: int


class SkippedDocument(TypedDict):
    path: str
    reason: str


class ExtractJob(TypedDict):
    """Payload of one `Send` to `extract_document`."""

    path: str
    contentHash: str
    build: NotRequired[str]  # the build's id: its model calls are recorded against it (the budget)


class BudgetFigures(TypedDict):
    """Why a build stopped over its token budget: the limit, what it had spent and still estimated."""

    limit: int
    spent: int
    estimated: int
    stage: str


class ExtractResult(TypedDict):
    path: str
    status: Literal["extracted", "failed"]
    entities: int
    relations: int
    claims: int
    seconds: float
    chunks: NotRequired[int]
    chunksReused: NotRequired[int]  # unchanged chunks of a changed document, not run through the model
    reason: NotRequired[str | None]


class GraphIndexInput(TypedDict, total=False):
    """What a caller provides. The organization is not here: it comes from trusted run context."""

    force: bool  # re-extract every document even when its cached extraction is current
    waitForIngests: bool  # server: first wait until the organization's ingest runs are idle


class GraphIndexState(TypedDict, total=False):
    force: bool
    waitForIngests: bool
    status: BuildStatus
    startedAt: str
    updatedAt: str
    documents: list[DocumentInfo]
    skippedDocuments: list[SkippedDocument]
    stale: list[str]
    extracted: Annotated[list[ExtractResult], operator.add]
    version: int | None
    entityCount: int
    edgeCount: int
    claimCount: int
    communitiesPerLevel: dict[str, int]
    summariesReused: int
    summariesWritten: int
    extractionsPruned: int  # cached extractions of no-longer-indexed document versions dropped by collect
    publishedVersion: int | None
    timings: dict[str, float]
    reason: str | None
    error: str | None
    buildId: str  # set by collect; the cost ledger groups this build's model calls under it
    buildTokens: int  # tokens the build's model calls spent (the ledger), as of its last boundary
    budget: BudgetFigures | None  # set when the build stopped over its budget


class GraphIndexOutput(TypedDict, total=False):
    status: BuildStatus
    publishedVersion: int | None
    documents: list[DocumentInfo]
    skippedDocuments: list[SkippedDocument]
    stale: list[str]
    entityCount: int
    edgeCount: int
    claimCount: int
    communitiesPerLevel: dict[str, int]
    summariesReused: int
    summariesWritten: int
    timings: dict[str, float]
    updatedAt: str
    reason: str | None
    error: str | None
    buildTokens: int
    budget: BudgetFigures | None
