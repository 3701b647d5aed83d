"""State of the ingest graph: one thread per (organization, path); its latest checkpoint is the status.

Keys are camelCase because they are the status contract clients read (`status`, `chunkCount`, ...).
Only `indexedCount` has a reducer: it is the one key written by the parallel `upsert_batch` workers.
Reducers accumulate across runs of a thread, so `load_file` resets it with `Overwrite(0)`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, NotRequired

from typing_extensions import TypedDict  # pydantic (Studio's schemas) needs it on Python < 3.12

Status = Literal["running", "indexed", "skipped", "failed", "deleted", "cancelled"]


class ChunkRecord(TypedDict):
    chunkIndex: int
    text: str  # display text, stored with the vector
    embedText: str  # what gets embedded (differs from text for tables)
    page: int
    blockType: str
    bbox: dict[str, float] | None  # {left, top, width, height} on `page`


class ParseJobRef(TypedDict):
    """A parse job submitted to the provider and not yet collected (Reducto's job API).

    Checkpointed by `parse` before `await_parse` starts waiting, so a run resumed after a restart
    polls this job instead of submitting (and paying for) the document again.
    """

    jobId: str
    submittedAt: float  # epoch seconds; the maximum wait counts from here, across restarts


class IngestInput(TypedDict):
    """What a caller provides. The organization is not here: it comes from trusted run context."""

    path: str  # "docs/{filename}"
    filename: NotRequired[str]
    mediaType: NotRequired[str]
    # Set only by `DocumentOps` for the follow-up run of a delete or a cancel: the run deletes the
    # path's vectors and ends with this status. Clients cannot run this graph directly.
    cleanup: NotRequired[Literal["deleted", "cancelled"]]
    # Set by `DocumentOps` when runs coordinate across processes: the path's epoch this run was
    # started for; a newer one (upload, delete or cancel anywhere) stops it before its next write.
    epoch: NotRequired[int]


class IngestState(TypedDict, total=False):
    path: str
    filename: str
    mediaType: str
    cleanup: str | None
    epoch: int | None
    sizeBytes: int
    contentHash: str
    parser: str
    parseCacheHit: bool
    parseJob: ParseJobRef | None  # set while a parse job is pending
    chunks: list[ChunkRecord]
    indexedCount: Annotated[int, operator.add]
    status: Status
    reason: str | None  # why a document was skipped or failed, for people
    error: str | None  # stable error code when status is failed/skipped
    chunkCount: int
    startedAt: str
    updatedAt: str


class IngestOutput(TypedDict, total=False):
    path: str
    status: Status
    chunkCount: int
    reason: str | None
    error: str | None
    contentHash: str
    parser: str
    updatedAt: str


class UpsertJob(TypedDict):
    """Payload of one `Send` to `upsert_batch`: a slice of chunks plus what the records need."""

    path: str
    filename: str
    mediaType: str
    contentHash: str
    chunks: list[ChunkRecord]
    epoch: NotRequired[int | None]
