"""Librarian's document routes, served by the LangGraph server next to its own API (`langgraph.json`).

    POST   /orgs/{org}/documents          multipart `file` → stored, ingest run enqueued (202)
    GET    /orgs/{org}/documents          files with their latest ingest status
    GET    /orgs/{org}/documents/{path}   one document's status
    DELETE /orgs/{org}/documents/{path}   vectors first, then the file
    GET    /openapi-librarian.json        OpenAPI document of these routes

The server authenticates every route (`enable_custom_route_auth`); the caller is
`request.scope["user"]`. A route's `{org}` must be one of the caller's memberships, and from then on
that checked org is the only one used: runs are started through the in-process client, which skips
the auth handlers, so the route passes the org itself as trusted run context.

Errors are `{"error": {"code", "message"}}` with no internals; unexpected failures are logged here
and answered with a generic 500.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graphs.documents import status_from_snapshot
from graphs.ingest import thread_id as document_key
from librarian.errors import FileTooLargeError, InvalidPathError, LibrarianError, TenantError
from librarian.files.multipart import ENVELOPE_BYTES, MalformedUploadError, read_file_field
from librarian.files.paths import document_path, validate_document_path
from librarian.settings import get_settings
from librarian.stack import get_stack
from librarian.tenancy import validate_organization_id
from webapi.errors import ApiError, ErrorShapeMiddleware, error_response
from webapi.openapi import openapi_document

logger = logging.getLogger("librarian.server")

ACTIVE_RUN_STATES = ("pending", "running")
FAILED_RUN_STATES = ("error", "timeout", "interrupted")


def server_thread_id(org: str, path: str) -> str:
    """Server thread ids must be UUIDs; the readable `org:path` key goes into thread metadata."""
    return str(uuid5(NAMESPACE_URL, document_key(org, path)))


# --- who may do what -----------------------------------------------------------------------------


def _field(user: Any, name: str) -> Any:
    try:
        return user[name]
    except (KeyError, TypeError, AttributeError):
        return getattr(user, name, None)


def authorize(request: Request, *, write: bool) -> str:
    """The route's organization, once the caller is shown to be a member (and a writer, if asked)."""
    user = request.scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        raise ApiError(401, "unauthenticated", "a bearer token is required")
    try:
        org = validate_organization_id(request.path_params["org"])
    except TenantError:
        raise ApiError(404, "not_found", "no such organization") from None
    memberships = _field(user, "orgs") or []
    if org not in memberships:
        raise ApiError(403, "forbidden", "you are not a member of this organization")
    if write and "documents:write" not in (_field(user, "permissions") or []):
        raise ApiError(403, "forbidden", "your role cannot change this organization's documents")
    return org


def _path_param(request: Request) -> str:
    return validate_document_path(request.path_params["path"])


# --- ingest runs and status ----------------------------------------------------------------------


async def start_ingest(org: str, path: str, owner: str) -> tuple[str, str]:
    """Enqueue an ingest run on the document's thread; runs of one path execute one at a time."""
    client = get_client()
    thread = server_thread_id(org, path)
    await client.threads.create(
        thread_id=thread,
        if_exists="do_nothing",
        metadata={"organization_id": org, "document_key": document_key(org, path), "kind": "document"},
    )
    run = await client.runs.create(
        thread,
        "ingest",
        input={"path": path},
        context={"organization_id": org},
        metadata={"organization_id": org, "owner": owner},
        multitask_strategy="enqueue",
    )
    return thread, run["run_id"]


def _snapshot(state: dict[str, Any]) -> SimpleNamespace:
    """The SDK's thread state as the attribute-style snapshot `status_from_snapshot` reads."""
    tasks = [SimpleNamespace(**task) for task in state.get("tasks") or []]
    return SimpleNamespace(values=state.get("values") or {}, next=state.get("next") or [], tasks=tasks)


async def document_status(org: str, path: str) -> dict[str, Any]:
    """Latest checkpoint of the document's thread, corrected by its runs that are still queued."""
    client = get_client()
    thread = server_thread_id(org, path)
    try:
        state = await client.threads.get_state(thread)
        runs = await client.runs.list(thread, limit=10)
    except NotFoundError:
        return {**status_from_snapshot(path, None).as_dict(), "threadId": thread}
    status = status_from_snapshot(path, _snapshot(state)).as_dict()
    status["threadId"] = thread
    active = [r for r in runs if r["status"] in ACTIVE_RUN_STATES]
    if active:
        running = any(r["status"] == "running" for r in active)
        status.update(status="running" if running else "queued", queuedRuns=len(active))
    elif runs and runs[0]["status"] in FAILED_RUN_STATES and status["status"] != "failed":
        status.update(
            status="failed", error="run_failed", reason=f"the ingest run ended: {runs[0]['status']}"
        )
    return status


# --- route handlers ------------------------------------------------------------------------------

Handler = Callable[[Request], Awaitable[Response]]


def endpoint(handler: Handler) -> Handler:
    """Map library errors to JSON error responses; never let a traceback reach the client."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(exc.status, exc.code, exc.message)
        except FileTooLargeError as exc:
            return error_response(413, exc.code, str(exc))
        except (InvalidPathError, MalformedUploadError) as exc:
            return error_response(400, exc.code, str(exc))
        except TenantError as exc:
            return error_response(403, exc.code, str(exc))
        except LibrarianError as exc:
            logger.warning("request failed: %s", exc)
            return error_response(500, exc.code, str(exc))
        except Exception:
            logger.exception("unexpected error in %s %s", request.method, request.url.path)
            return error_response(500, "internal_error", "the server could not complete the request")

    # The docstring stays on `handler`: Starlette would parse a copied one as OpenAPI YAML.
    wrapped.__name__ = handler.__name__
    return wrapped


@endpoint
async def upload_document(request: Request) -> Response:
    """Store the file, then enqueue its ingest; the status routes report progress."""
    org = authorize(request, write=True)
    settings = get_settings()
    limit = settings.max_upload_bytes
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(400, "malformed_upload", "Content-Length is not a number")
        if int(declared) > limit + ENVELOPE_BYTES:
            raise FileTooLargeError(f"the upload is larger than the limit of {limit} bytes")
    upload = await read_file_field(request.headers.get("content-type"), request.stream(), limit=limit)
    path = document_path(upload.filename, max_length=settings.max_filename_length)
    await asyncio.to_thread(get_stack().files.write, org, path, upload.data)
    owner = str(_field(request.scope["user"], "identity"))
    thread, run = await start_ingest(org, path, owner)
    body = {"path": path, "thread_id": thread, "run_id": run, "size_bytes": len(upload.data)}
    return JSONResponse(body, status_code=202)


@endpoint
async def list_documents(request: Request) -> Response:
    org = authorize(request, write=False)
    files = await asyncio.to_thread(get_stack().files.list, org)
    statuses = await asyncio.gather(*(document_status(org, f.path) for f in files))
    return JSONResponse({"organization_id": org, "documents": list(statuses)})


@endpoint
async def get_document(request: Request) -> Response:
    org = authorize(request, write=False)
    path = _path_param(request)
    stored = await asyncio.to_thread(get_stack().files.stat, org, path)
    if stored is None:
        raise ApiError(404, "not_found", f"no document {path!r} in this organization")
    status = await document_status(org, path)
    status["sizeBytes"] = stored.size
    return JSONResponse(status)


@endpoint
async def delete_document(request: Request) -> Response:
    """Vectors first, then the file, then a cleanup run on the path's thread.

    The cleanup run finds the file gone and deletes the path's vectors again: it queues behind any
    ingest of the same path that was already running, so that ingest cannot leave a ghost behind.
    """
    org = authorize(request, write=True)
    path = _path_param(request)
    stack = get_stack()
    existed = await asyncio.to_thread(stack.files.exists, org, path)
    await asyncio.to_thread(stack.index.delete, namespace=org, filter={"path": path})
    if not existed:
        raise ApiError(404, "not_found", f"no document {path!r} in this organization")
    await asyncio.to_thread(stack.files.delete, org, path)
    owner = str(_field(request.scope["user"], "identity"))
    thread, run = await start_ingest(org, path, owner)
    return JSONResponse({"path": path, "deleted": True, "thread_id": thread, "run_id": run})


async def openapi(request: Request) -> Response:
    return JSONResponse(openapi_document())


app = Starlette(
    routes=[
        Route("/orgs/{org}/documents", upload_document, methods=["POST"]),
        Route("/orgs/{org}/documents", list_documents, methods=["GET"]),
        Route("/orgs/{org}/documents/{path:path}", get_document, methods=["GET"]),
        Route("/orgs/{org}/documents/{path:path}", delete_document, methods=["DELETE"]),
        Route("/openapi-librarian.json", openapi, methods=["GET"]),
    ],
    middleware=[Middleware(ErrorShapeMiddleware, prefixes=("/orgs/", "/openapi-librarian.json"))],
)
