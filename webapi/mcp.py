"""`/mcp`: Librarian as an MCP server (streamable HTTP, JSON-RPC 2.0), listing only what a caller can use.

It replaces langgraph-api's built-in `/mcp` (our routes come before the Platform API's), which lists
every assistant as a tool, takes the whole state schema as input and answers with a repr of the
final state. Here the tools are `webapi.mcp_tools`: `ask_library` and `search_documents`, each with
a small input schema, readable text and `structuredContent` matching its `outputSchema`.

The transport is the stateless subset of streamable HTTP: each `POST` carries one JSON-RPC message
and, for a request, gets one `application/json` response; notifications and responses get `202`.
No session id is issued, so there is nothing to resume (`GET` is 405) or terminate (`DELETE` is 405).
Methods: `initialize`, `ping`, `tools/list`, `tools/call`; any other is -32601. JSON-RPC errors are
answered with HTTP 200 (what handshake-era clients expect); a body that is not one JSON-RPC message
is a 400.

Why not the `mcp` package's server: its streamable-HTTP session manager needs a task group started in
the app's lifespan, and it runs handlers in that group's tasks, outside the request, where the
caller's auth context (which `webapi.agent_client` sets on the request's task) does not reach. The
protocol surface needed here is five methods of plain JSON, which this module answers directly, and
the official client is what the tests drive it with.

The server's auth middleware checks the bearer token first (401 without one).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from webapi.agent_client import Caller, caller_of, read_body
from webapi.errors import error_response
from webapi.mcp_tools import InvalidArguments, tools_for
from webapi.openapi import VERSION
from webapi.routing import librarian_router

logger = logging.getLogger("librarian.server")

router = librarian_router()

#: Handshake-era protocol revisions, newest first; the newest is offered when a client asks for another.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SERVER_INFO = {"name": "Librarian", "title": "Librarian", "version": VERSION}
INSTRUCTIONS = (
    "Librarian answers from your organization's documents only. Use ask_library for an answer with "
    "citations ([n] file, page p); pass its thread_id back to ask a follow-up. Use search_documents "
    "to read excerpts yourself."
)

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def rpc_error(id_: Any, code: int, message: str, status: int = 200) -> JSONResponse:
    body = {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)


# --- methods ---------------------------------------------------------------------------------------


async def initialize(caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
    }


async def ping(caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
    return {}


async def list_tools(caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
    return {"tools": [tool.listing() for tool in tools_for(caller)]}  # one page: no nextCursor


async def call_tool(caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    tool = next((t for t in tools_for(caller) if t.name == name), None)
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}"[:200])
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "arguments must be an object")
    try:
        return await tool.run(caller, arguments)
    except InvalidArguments as exc:
        raise RpcError(INVALID_PARAMS, f"{tool.name}: {exc}") from None


METHODS = {"initialize": initialize, "ping": ping, "tools/list": list_tools, "tools/call": call_tool}


async def answer(caller: Caller, message: dict[str, Any]) -> JSONResponse:
    """The response to one JSON-RPC request."""
    id_ = message["id"]
    method = METHODS.get(message["method"])
    if method is None:
        return rpc_error(id_, METHOD_NOT_FOUND, f"Method not found: {message['method']}"[:200])
    params = message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return rpc_error(id_, INVALID_PARAMS, "params must be an object")
    try:
        result = await method(caller, params)
    except RpcError as exc:
        return rpc_error(id_, exc.code, exc.message)
    except Exception:
        logger.exception("mcp %s failed", message["method"])
        return rpc_error(id_, INTERNAL_ERROR, "the server could not complete the request")
    return JSONResponse({"jsonrpc": "2.0", "id": id_, "result": result})


def _kind(message: Any) -> str:
    """`request`, `notification`, `response` (from the client), or `invalid`."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "invalid"
    has_id = "id" in message
    id_ok = isinstance(message.get("id"), str | int) and not isinstance(message.get("id"), bool)
    method = message.get("method")
    if isinstance(method, str) and method:
        if not has_id:
            return "notification"
        return "request" if id_ok else "invalid"
    if has_id and ("result" in message or "error" in message):
        return "response"
    return "invalid"


@router.api_route("/mcp", methods=["POST", "GET", "DELETE"], include_in_schema=False)
async def mcp_endpoint(request: Request) -> Response:
    """One JSON-RPC message per POST; no server-sent stream to open or session to end."""
    if request.method != "POST":
        refusal = error_response(
            405, "method_not_allowed", "the MCP endpoint takes POST: it has no event stream"
        )
        refusal.headers["Allow"] = "POST"
        return refusal
    caller = caller_of(request.scope)
    if caller is None:  # the server's auth middleware refuses first; this is the net
        return error_response(401, "unauthenticated", "a bearer token is required")
    body = await read_body(request.stream())
    if body is None:
        return rpc_error(None, INVALID_REQUEST, "the request body is too large", status=413)
    try:
        message = json.loads(body)
    except ValueError:
        return rpc_error(None, PARSE_ERROR, "Parse error: the body is not JSON", status=400)
    kind = _kind(message)
    if kind == "invalid":
        text = "Invalid Request: the body must be one JSON-RPC 2.0 request or notification"
        return rpc_error(None, INVALID_REQUEST, text, status=400)
    if kind != "request":
        return Response(status_code=202)  # notifications (initialized, cancelled) need no answer
    return await answer(caller, message)
