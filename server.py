"""Librarian's HTTP routes, served by the LangGraph server next to its own API (`langgraph.json`).

    POST   /orgs/{org}/documents          multipart `file` → stored, ingest run enqueued (202)
    GET    /orgs/{org}/documents          files with their latest ingest status
    GET    /orgs/{org}/documents/{path}   one document's status
    DELETE /orgs/{org}/documents/{path}   cancel its ingest; vectors first, then the file
    POST   /orgs/{org}/documents/{path}/cancel   admins: cancel the document's running ingest
    GET    /orgs/{org}/documents/{path}/pages/{n}.png   a PDF page as PNG, for citations
    POST   /orgs/{org}/graph              admins: schedule a rebuild of the GraphRAG index (coalesced)
    GET    /orgs/{org}/graph              GraphRAG index status: version, counts per level, last build
    GET    /orgs/{org}/graph/{communities,neighbourhood,local}   the web app's views of the graph
    DELETE /orgs/{org}/members/{user}/conversations   admins: erase a member's conversations (retention)
    GET    /openapi-librarian.json        OpenAPI document of these routes
    POST   /mcp                           MCP (streamable HTTP): ask_library, search_documents
    POST   /v1/chat/completions           OpenAI-compatible chat (stream or not); GET /v1/models

The routes live in `webapi/`, one module per resource (`documents`, `pages`, `graph`, `webapp` for the
browser app at `/`); this module assembles them into the app the server loads.

The app is a FastAPI app, so the server (langgraph-api) merges its generated OpenAPI into its own
`/openapi.json`. The server also makes it *the* app: it sets the routes to its meta routes, ours, then
the Platform API's, wraps each of our routes in its auth middleware (`enable_custom_route_auth`), and
adds its exception handlers where the app has none. Hence:

- routes are added to the app one by one, never with `include_router`, whose route dispatches to its
  own copies of the routes, past the auth middleware the server puts on each route's app;
- FastAPI's default `HTTPException` handler is removed, so the server's own keeps answering the
  Platform API's errors as it did (`{"detail": ...}`, which `ErrorShapeMiddleware` reshapes);
- FastAPI's own `/openapi.json` and `/docs` are off: those paths are the server's.

Errors are `{"error": {"code", "message"}}` with no internals (`webapi.errors`, `webapi.routing`).
"""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from librarian.runs.threads import server_thread_id
from services.run_admission import admission_lifespan
from webapi import conversations, documents, eval_gate, graph, graph_costs, mcp, openai_compat, openapi, pages
from webapi.cors import CorsMiddleware
from webapi.errors import ErrorShapeMiddleware
from webapi.guard import PlatformBodyGuardMiddleware, loopback_error
from webapi.metrics_guard import MetricsGuardMiddleware
from webapi.routing import refusal
from webapi.thread_gate import ThreadGateMiddleware
from webapi.webapp import WebAppMiddleware

__all__ = ["app", "server_thread_id"]

app = FastAPI(
    title=openapi.TITLE,
    version=openapi.VERSION,
    description=openapi.DESCRIPTION,
    openapi_url=None,
    docs_url=None,
    redoc_url=None,
    lifespan=admission_lifespan,  # background runs wait their turn for a run slot (services/run_admission.py)
    middleware=[
        Middleware(CorsMiddleware),  # cross-origin grants: LIBRARIAN_CORS_ORIGINS only, not the server's *
        Middleware(MetricsGuardMiddleware),  # /metrics: admin tokens only
        Middleware(WebAppMiddleware),  # `/` and `/assets/`: the browser app, no token needed
        Middleware(ErrorShapeMiddleware, prefixes=("/orgs/", "/openapi-librarian.json")),
        Middleware(PlatformBodyGuardMiddleware),  # no client-chosen ids, no 500-ing history or nesting
        Middleware(ThreadGateMiddleware),  # thread routes the auth handlers miss (webapi/thread_gate.py)
    ],
    exception_handlers={
        # The server merges these into its own: MCP and A2A call the platform in-process, and a
        # refusal there (403, 404, 422) must reach the client as that refusal, not as a 500.
        httpx.HTTPStatusError: loopback_error,
        # Only our routes validate parameters, and `LibrarianRoute` answers them; this is the net.
        RequestValidationError: refusal,
    },
)
del app.exception_handlers[HTTPException]

# The page route first: the document routes' `{path:path}` would also match `.../pages/1.png`.
for module in (pages, documents, graph, graph_costs, eval_gate, conversations, mcp, openai_compat, openapi):
    app.router.routes.extend(module.router.routes)
