"""Input checks for Platform API requests that the auth handlers cannot make.

The server generates a thread's or assistant's id before it calls the auth handler, so a handler
cannot tell a client-chosen id from a fresh one. A client-chosen id is an existence oracle: creating
a thread with another organization's id answers 409 (it exists) where a fresh id answers 200. So
`POST /threads` and `POST /assistants` bodies that name an id are refused here, before the request
reaches the platform, with the same answer whether or not the id exists. Clients that let the server
pick ids (the LangGraph SDKs and the Agent Chat UI by default) are unaffected. The server's own
in-process calls (`get_client()`, ASGI `root_path` "/noauth", which no HTTP request can set) pass:
the document routes name their threads by design.

`loopback_error` maps a refusal from the platform's own loopback calls (MCP `tools/call` and A2A
run the assistant through an in-process client) to that refusal's status, instead of a 500.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webapi.errors import code_for, error_response

logger = logging.getLogger("librarian.server")

#: (method, path) → body keys a client may not set.
CLIENT_CHOSEN_IDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("POST", "/threads"): ("thread_id",),
    ("POST", "/assistants"): ("assistant_id",),
}
#: Bodies of the guarded routes are small JSON; a larger one is not read into memory here.
MAX_GUARDED_BODY_BYTES = 1024 * 1024


class ClientIdGuardMiddleware:
    """Refuse `POST /threads` / `POST /assistants` bodies that choose the new resource's id."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        keys = CLIENT_CHOSEN_IDS.get((scope.get("method", ""), scope.get("path", "").rstrip("/")))
        in_process = str(scope.get("root_path", "")).startswith("/noauth")
        if scope["type"] != "http" or keys is None or in_process:
            await self.app(scope, receive, send)
            return
        body, replay = await _buffer(receive)
        if body is None:
            await error_response(413, "too_large", "the request body is too large")(scope, receive, send)
            return
        chosen = [key for key in keys if _named(body, key)]
        if chosen:
            message = f"{chosen[0]} cannot be chosen by the client: omit it and the server assigns one"
            await error_response(403, "forbidden", message)(scope, replay, send)
            return
        await self.app(scope, replay, send)


async def _buffer(receive: Receive) -> tuple[bytes | None, Receive]:
    """Read the whole request body (bounded) and return a `receive` that replays it."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_GUARDED_BODY_BYTES:
            return None, receive
        chunks.append(chunk)
        more = message.get("more_body", False)
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


def _named(body: bytes, key: str) -> bool:
    """Whether a JSON object body sets `key` to something (malformed bodies are the platform's)."""
    try:
        payload: Any = json.loads(body) if body else None
    except ValueError:
        return False
    return isinstance(payload, dict) and payload.get(key) not in (None, "")


async def loopback_error(request: Request, exc: Exception) -> Response:
    """A platform route's in-process call was refused: answer with that refusal, not a 500."""
    status = exc.response.status_code if isinstance(exc, httpx.HTTPStatusError) else 500
    if not 400 <= status < 500:
        logger.error("loopback call failed in %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal_error", "the server could not complete the request")
    try:
        body = exc.response.json()  # type: ignore[union-attr]
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    message = detail if isinstance(detail, str) and detail else "the request was refused"
    return error_response(status, code_for(status), message)
