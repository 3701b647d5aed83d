"""Librarian's document routes, served by the LangGraph server next to its own API (`langgraph.json`).

    POST   /orgs/{org}/documents          multipart `file` → stored, ingest run enqueued (202)
    GET    /orgs/{org}/documents          files with their latest ingest status
    GET    /orgs/{org}/documents/{path}   one document's status
    DELETE /orgs/{org}/documents/{path}   cancel its ingest; vectors first, then the file
    POST   /orgs/{org}/documents/{path}/cancel   admins: cancel the document's running ingest
    POST   /orgs/{org}/graph              admins: schedule a rebuild of the GraphRAG index (coalesced)
    GET    /orgs/{org}/graph              GraphRAG index status: version, counts per level, last build
    GET    /openapi-librarian.json        OpenAPI document of these routes

The server authenticates every route (`enable_custom_route_auth`); the caller is
`request.scope["user"]`. A route's `{org}` must be one of the caller's memberships, and from then on
that checked org is the only one used: runs are started through the in-process client, which skips
the auth handlers, so the route passes the org itself as trusted run context.

The handlers only translate HTTP: the operations, their order of effects and their outcomes are
`services.documents.DocumentOps`, the same ones the CLI and notebooks call, here over `ServerRuns`.

Errors are `{"error": {"code", "message"}}` with no internals; unexpected failures are logged here
and answered with a generic 500.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.document_runs import ServerRuns
from services.documents import DocumentNotFoundError, DocumentOps, NoActiveIngestError
from services.graph_index_runs import schedule_build, server_status
from librarian.runs.threads import server_thread_id
from librarian.auth import is_member
from librarian.errors import FileTooLargeError, InvalidPathError, LibrarianError, TenantError
from librarian.files.multipart import ENVELOPE_BYTES, MalformedUploadError, read_file_field
from librarian.files.paths import validate_document_path
from librarian.settings import get_settings
from librarian.stack import get_stack
from librarian.tenancy import validate_organization_id
from webapi.errors import ApiError, ErrorShapeMiddleware, error_response
from webapi.graph_view import communities_view, local_answer, neighbourhood_view
from webapi.guard import ClientIdGuardMiddleware, loopback_error
from webapi.openapi import openapi_document
from webapi.pages import page_image
from webapi.webapp import WebAppMiddleware

logger = logging.getLogger("librarian.server")

__all__ = ["app", "server_thread_id"]


# --- who may do what -----------------------------------------------------------------------------


def _field(user: Any, name: str) -> Any:
    try:
        return user[name]
    except (KeyError, TypeError, AttributeError):
        return getattr(user, name, None)


def authorize(request: Request, *, write: bool, admin_to: str | None = None) -> str:
    """The route's organization, once the caller is shown to be a member (a writer, an admin, if asked).

    `admin_to` names what only the organization's admins may do, for the refusal's message.
    """
    user = request.scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        raise ApiError(401, "unauthenticated", "a bearer token is required")
    try:
        org = validate_organization_id(request.path_params["org"])
    except TenantError:
        raise ApiError(404, "not_found", "no such organization") from None
    if not is_member(user, org):
        raise ApiError(403, "forbidden", "you are not a member of this organization")
    if write and "documents:write" not in (_field(user, "permissions") or []):
        raise ApiError(403, "forbidden", "your role cannot change this organization's documents")
    if admin_to is not None and _field(user, "role") != "admin":
        raise ApiError(403, "forbidden", f"only an organization admin can {admin_to}")
    return org


def _path_param(request: Request) -> str:
    return validate_document_path(request.path_params["path"])


# --- the document operations --------------------------------------------------------------------


def documents() -> DocumentOps:
    """The same operations as `services.documents.DocumentService`, with runs on this server."""
    return DocumentOps(get_stack(), ServerRuns())


def _owner(request: Request) -> str:
    return str(_field(request.scope["user"], "identity"))


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
        except DocumentNotFoundError as exc:
            return error_response(404, exc.code, str(exc))
        except NoActiveIngestError as exc:
            return error_response(409, exc.code, str(exc))
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
    ops = documents()
    path = await ops.upload(org, upload.filename, upload.data)  # cancels the path's running ingest
    run = await ops.ingest(org, path, owner=_owner(request))
    await _schedule_graph_after_change(org, _owner(request))
    body = {"path": path, "thread_id": run.thread_id, "run_id": run.run_id, "size_bytes": len(upload.data)}
    return JSONResponse(body, status_code=202)


@endpoint
async def list_documents(request: Request) -> Response:
    org = authorize(request, write=False)
    statuses = await documents().list(org)
    return JSONResponse({"organization_id": org, "documents": [s.as_dict() for s in statuses]})


@endpoint
async def get_document(request: Request) -> Response:
    org = authorize(request, write=False)
    status = await documents().status(org, _path_param(request))  # a deleted one: status `deleted`
    return JSONResponse(status.as_dict())


@endpoint
async def delete_document(request: Request) -> Response:
    """Cancel its ingest, vectors first, then the file, then a follow-up run (status `deleted`)."""
    org = authorize(request, write=True)
    path = _path_param(request)
    run = await documents().delete(org, path, owner=_owner(request))
    # Graph answers stop citing it now (query-time liveness against the index, librarian/graph/query/liveness.py);
    # the graph keeps listing it as removed, so `graph status` is not up to date until the coalesced
    # rebuild removes its contribution.
    await _schedule_graph_after_change(org, _owner(request))
    return JSONResponse({"path": path, "deleted": True, "thread_id": run.thread_id, "run_id": run.run_id})


async def _schedule_graph_after_change(org: str, owner: str) -> None:
    """A document changed: rebuild the organization's graph once its ingests are done (coalesced).

    A failure to schedule is logged, never the upload's or delete's failure: the next change or an
    admin's POST /orgs/{org}/graph schedules it again. Off with LIBRARIAN_GRAPH_AUTO_BUILD=false.
    """
    if not get_settings().graph_auto_build:
        return
    try:
        await schedule_build(org, owner=owner, wait_for_ingests=True)
    except Exception:
        logger.exception("could not schedule the graph build of %s", org)


@endpoint
async def rebuild_graph(request: Request) -> Response:
    """Organization admins schedule a rebuild of the GraphRAG index (at most one queued per organization)."""
    org = authorize(request, write=True, admin_to="rebuild the graph")
    scheduled = await schedule_build(org, owner=_owner(request))
    return JSONResponse({"organization_id": org, **scheduled}, status_code=202)


@endpoint
async def graph_status(request: Request) -> Response:
    """The organization's GraphRAG index: published version, counts per level, last build, staleness."""
    org = authorize(request, write=False)
    return JSONResponse(await server_status(org))


@endpoint
async def cancel_document_ingest(request: Request) -> Response:
    """Organization admins cancel a document's queued or running ingest; nothing of it stays indexed."""
    org = authorize(request, write=True, admin_to="cancel an ingest")
    path = _path_param(request)
    run = await documents().cancel(org, path, owner=_owner(request))
    body = {"path": path, "cancelled": True, "thread_id": run.thread_id, "run_id": run.run_id}
    return JSONResponse(body, status_code=202)


@endpoint
async def document_page(request: Request) -> Response:
    """One page of a PDF document as PNG (`?width=` pixels), for citation viewers."""
    org = authorize(request, write=False)
    return await page_image(org, _path_param(request), request.path_params["page"], request.query_params)


@endpoint
async def graph_communities(request: Request) -> Response:
    """The published graph's communities with their summaries (the web app's Graph page)."""
    org = authorize(request, write=False)
    return JSONResponse(await communities_view(org))


@endpoint
async def graph_neighbourhood(request: Request) -> Response:
    """One entity of the published graph with its nearest neighbours (`?entity=`)."""
    org = authorize(request, write=False)
    return JSONResponse(await neighbourhood_view(org, request.query_params))


@endpoint
async def graph_local(request: Request) -> Response:
    """A local GraphRAG retrieval (`?q=`): matched entities, evidence with sources, their neighbourhood."""
    org = authorize(request, write=False)
    return JSONResponse(await local_answer(org, request.query_params))


async def openapi(request: Request) -> Response:
    return JSONResponse(openapi_document())


app = Starlette(
    routes=[
        Route("/orgs/{org}/documents", upload_document, methods=["POST"]),
        Route("/orgs/{org}/documents", list_documents, methods=["GET"]),
        Route("/orgs/{org}/documents/{path:path}/pages/{page}.png", document_page, methods=["GET"]),
        Route("/orgs/{org}/documents/{path:path}/cancel", cancel_document_ingest, methods=["POST"]),
        Route("/orgs/{org}/documents/{path:path}", get_document, methods=["GET"]),
        Route("/orgs/{org}/documents/{path:path}", delete_document, methods=["DELETE"]),
        Route("/orgs/{org}/graph", rebuild_graph, methods=["POST"]),
        Route("/orgs/{org}/graph", graph_status, methods=["GET"]),
        Route("/orgs/{org}/graph/communities", graph_communities, methods=["GET"]),
        Route("/orgs/{org}/graph/neighbourhood", graph_neighbourhood, methods=["GET"]),
        Route("/orgs/{org}/graph/local", graph_local, methods=["GET"]),
        Route("/openapi-librarian.json", openapi, methods=["GET"]),
    ],
    middleware=[
        Middleware(WebAppMiddleware),  # `/` and `/assets/`: the browser app, no token needed
        Middleware(ErrorShapeMiddleware, prefixes=("/orgs/", "/openapi-librarian.json")),
        Middleware(ClientIdGuardMiddleware),  # POST /threads, /assistants: no client-chosen ids
    ],
    # The server merges these into its own app: MCP and A2A call the platform in-process, and a
    # refusal there (403, 404, 422) must reach the client as that refusal, not as a 500.
    exception_handlers={httpx.HTTPStatusError: loopback_error},
)
