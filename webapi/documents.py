"""The document routes: upload, list, status, delete, and an admin's cancel of a running ingest.

The handlers only translate HTTP: the operations, their order of effects and their outcomes are
`services.documents.DocumentOps`, the same ones the CLI and notebooks call, here over `ServerRuns`.
An upload or a delete also schedules the organization's graph rebuild (coalesced).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import JSONResponse

from librarian.errors import FileTooLargeError
from librarian.files.multipart import ENVELOPE_BYTES, read_file_field
from librarian.receipts.store import DEFAULT_LIMIT, MAX_LIMIT
from librarian.settings import get_settings
from librarian.stack import get_stack
from services.delete_receipts import receipts_of
from services.document_runs import ServerRuns
from services.documents import DocumentOps
from services.graph_index_runs import schedule_build
from webapi.access import Access, Reader, Writer, admin
from webapi.errors import ApiError
from webapi.models import (
    DocumentDeleted,
    DocumentList,
    DocumentStatus,
    IngestCancelled,
    UploadAccepted,
    UploadForm,
)
from webapi.params import DocumentPath, check_document_path, whole_number
from webapi.receipt_models import DeleteReceipt, ReceiptList
from webapi.routing import librarian_router, refusals

logger = logging.getLogger("librarian.server")

router = librarian_router()

# FastAPI would read a declared `File` parameter whole before the handler runs; the handler streams
# the body with its own size limit instead, so the form is only described here, from its model.
UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": UploadForm.model_json_schema()}},
    }
}


def documents() -> DocumentOps:
    """The same operations as `services.documents.DocumentService`, with runs on this server."""
    return DocumentOps(get_stack(), ServerRuns())


async def _schedule_graph_after_change(org: str, owner: str) -> dict[str, Any] | None:
    """A document changed: rebuild the organization's graph once its ingests are done (coalesced).

    Returns the scheduled (or coalesced) build's ids, which a delete's receipt names as the build
    that removes the document's graph contributions; None when nothing was scheduled. A failure to
    schedule is logged, never the upload's or delete's failure: the next change or an admin's
    POST /orgs/{org}/graph schedules it again. Off with LIBRARIAN_GRAPH_AUTO_BUILD=false.
    """
    if not get_settings().graph_auto_build:
        return None
    try:
        return await schedule_build(org, owner=owner, wait_for_ingests=True)
    except Exception:
        logger.exception("could not schedule the graph build of %s", org)
        return None


@router.post(
    "/orgs/{org}/documents",
    status_code=202,
    response_model=UploadAccepted,
    operation_id="uploadDocument",
    summary="Upload a document (same name replaces) and enqueue its ingest.",
    response_description="Stored; ingest enqueued.",
    responses=refusals({413: "The file is larger than LIBRARIAN_MAX_UPLOAD_BYTES; nothing was written."}),
    openapi_extra=UPLOAD_BODY,
)
async def upload_document(request: Request, access: Writer) -> UploadAccepted:
    """Store the file, then enqueue its ingest; the status routes report progress."""
    limit = get_settings().max_upload_bytes
    declared = request.headers.get("content-length")
    if declared is not None:
        # ASCII digits only, and few of them: `int()` refuses "²" (which isdigit accepts) and a
        # 5000-digit number is not a length anyone sends.
        if not (declared.isascii() and declared.isdecimal() and len(declared) <= 20):
            raise ApiError(400, "malformed_upload", "Content-Length is not a number")
        if int(declared) > limit + ENVELOPE_BYTES:
            raise FileTooLargeError(f"the upload is larger than the limit of {limit} bytes")
    upload = await read_file_field(request.headers.get("content-type"), request.stream(), limit=limit)
    # cancels the path's running ingest, stores the file and enqueues its ingest, in the path's turn
    path, run = await documents().upload_and_ingest(
        access.org, upload.filename, upload.data, owner=access.owner
    )
    await _schedule_graph_after_change(access.org, access.owner)
    return UploadAccepted(path=path, thread_id=run.thread_id, run_id=run.run_id, size_bytes=len(upload.data))


@router.get(
    "/orgs/{org}/documents",
    response_model=DocumentList,
    operation_id="listDocuments",
    summary="Every file of the organization with its latest ingest status.",
    response_description="Documents.",
)
async def list_documents(access: Reader) -> JSONResponse:
    statuses = await documents().list(access.org)
    return JSONResponse({"organization_id": access.org, "documents": [s.as_dict() for s in statuses]})


@router.post(
    "/orgs/{org}/documents/{path:path}/cancel",
    status_code=202,
    response_model=IngestCancelled,
    operation_id="cancelDocumentIngest",
    summary="Organization admins: cancel the document's queued or running ingest.",
    description="The run ends cancelled and a follow-up run removes every vector it wrote; the "
    "document's status becomes `cancelled`.",
    response_description="Cancelled; the follow-up run is enqueued.",
    responses=refusals(
        {
            403: "Not an admin of the organization.",
            404: "No such document.",
            409: "The document has no queued or running ingest.",
        }
    ),
)
async def cancel_document_ingest(
    access: Annotated[Access, admin("cancel an ingest")], path: DocumentPath
) -> IngestCancelled:
    run = await documents().cancel(access.org, path, owner=access.owner)
    return IngestCancelled(path=path, cancelled=True, thread_id=run.thread_id, run_id=run.run_id)


@router.get(
    "/orgs/{org}/documents/receipts",
    response_model=ReceiptList,
    operation_id="listDeleteReceipts",
    summary="Organization admins: the receipts of the organization's deletes, newest first.",
    response_description="Receipts.",
    responses=refusals({400: "A bad `path` or `limit`.", 403: "Not an admin of the organization."}),
)
async def list_delete_receipts(
    access: Annotated[Access, admin("list delete receipts")],
    path: Annotated[str | None, Query(description="Only the receipts of this document path.")] = None,
    limit: Annotated[
        str | None, Query(description=f"At most this many (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}).")
    ] = None,
) -> ReceiptList:
    wanted = check_document_path(path) if path is not None else None
    count = DEFAULT_LIMIT if limit is None else whole_number(limit)
    if count is None or not 1 <= count <= MAX_LIMIT:
        raise ApiError(400, "bad_limit", f"limit must be a whole number from 1 to {MAX_LIMIT}")
    stack = get_stack()
    kept = await asyncio.to_thread(lambda: receipts_of(stack).list(access.org, path=wanted, limit=count))
    return ReceiptList(
        organization_id=access.org, receipts=[DeleteReceipt.model_validate(r.as_dict()) for r in kept]
    )


@router.get(
    "/orgs/{org}/documents/{path:path}",
    response_model=DocumentStatus,
    operation_id="getDocument",
    summary="One document's latest ingest status (a deleted one: `deleted`).",
    response_description="Status.",
    responses=refusals({404: "No such document."}),
)
async def get_document(access: Reader, path: DocumentPath) -> JSONResponse:
    return JSONResponse((await documents().status(access.org, path)).as_dict())


@router.delete(
    "/orgs/{org}/documents/{path:path}",
    response_model=DocumentDeleted,
    operation_id="deleteDocument",
    summary="Cancel its ingest, delete its vectors, then its file (status `deleted`).",
    response_description="Deleted.",
    responses=refusals({404: "No such document (never uploaded, or already deleted)."}),
)
async def delete_document(access: Writer, path: DocumentPath) -> DocumentDeleted:
    """200 with the receipt even when a probe still found the document: the delete's effects happened
    and cannot be undone; `receipt.verified` is false and `receipt.foundIn` names the channels."""
    # Graph answers stop citing it now (query-time liveness against the index,
    # librarian/graph/query/liveness.py); the graph keeps listing it as removed, so `graph status` is
    # not up to date until the coalesced rebuild removes its contribution: the receipt names that build.
    run, receipt = await documents().delete_with_receipt(
        access.org,
        path,
        owner=access.owner,
        graph_build=lambda: _schedule_graph_after_change(access.org, access.owner),
    )
    if not receipt.verified:
        logger.warning("the delete of %s in %s is not verified: %s", path, access.org, receipt.found_in)
    return DocumentDeleted(
        path=path,
        deleted=True,
        thread_id=run.thread_id,
        run_id=run.run_id,
        receipt=DeleteReceipt.model_validate(receipt.as_dict()),
    )
