"""Input checks for Platform API requests that the auth handlers cannot make.

The server generates a thread's or assistant's id before it calls the auth handler, so a handler
cannot tell a client-chosen id from a fresh one. A client-chosen id is an existence oracle: creating
a thread with another organization's id answers 409 (it exists) where a fresh id answers 200. So
`POST /threads` and `POST /assistants` bodies that name an id are refused here, before the request
reaches the platform, with the same answer whether or not the id exists. Clients that let the server
pick ids (the LangGraph SDKs and the Agent Chat UI by default) are unaffected. The server's own
in-process calls (`get_client()`, ASGI `root_path` "/noauth", which no HTTP request can set) pass:
the document routes name their threads by design.

`POST /threads/{id}/history` with a `before` object that is not a checkpoint config (no
`configurable` mapping) makes the platform fail with a 500; it is refused here as a bad request.

`loopback_error` maps a refusal from the platform's own loopback calls (MCP `tools/call` and A2A
run the assistant through an in-process client) to that refusal's status, instead of a 500.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webapi.errors import code_for, error_response

logger = logging.getLogger("librarian.server")

#: Bodies of the guarded routes are small JSON; a larger one is not read into memory here.
MAX_GUARDED_BODY_BYTES = 1024 * 1024

#: A refusal: (status, code, message).
Refusal = tuple[int, str, str]


def _no_client_chosen(key: str) -> Callable[[Any], Refusal | None]:
    def check(payload: Any) -> Refusal | None:
        if isinstance(payload, dict) and payload.get(key) not in (None, ""):
            message = f"{key} cannot be chosen by the client: omit it and the server assigns one"
            return 403, "forbidden", message
        return None

    return check


def _before_is_a_checkpoint_config(payload: Any) -> Refusal | None:
    before = payload.get("before") if isinstance(payload, dict) else None
    if isinstance(before, dict) and not isinstance(before.get("configurable"), dict):
        return 400, "bad_request", "before must be a checkpoint config with a configurable object"
    return None


#: (method, path pattern) → the check of its JSON body (malformed JSON is the platform's to refuse).
BODY_CHECKS: list[tuple[str, re.Pattern[str], Callable[[Any], Refusal | None]]] = [
    ("POST", re.compile(r"/threads"), _no_client_chosen("thread_id")),
    ("POST", re.compile(r"/assistants"), _no_client_chosen("assistant_id")),
    ("POST", re.compile(r"/threads/[^/]+/history"), _before_is_a_checkpoint_config),
]


def _check_for(scope: Scope) -> Callable[[Any], Refusal | None] | None:
    method, path = scope.get("method", ""), scope.get("path", "").rstrip("/")
    return next((c for m, pattern, c in BODY_CHECKS if m == method and pattern.fullmatch(path)), None)


class PlatformBodyGuardMiddleware:
    """Refuse Platform API bodies the platform would mishandle: client-chosen ids of new threads and
    assistants (an existence oracle), and history queries it would answer with a 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        check = _check_for(scope) if scope["type"] == "http" else None
        in_process = str(scope.get("root_path", "")).startswith("/noauth")
        if check is None or in_process:
            await self.app(scope, receive, send)
            return
        body, replay = await _buffer(receive)
        if body is None:
            await error_response(413, "too_large", "the request body is too large")(scope, receive, send)
            return
        refusal = check(_json(body))
        if refusal is not None:
            await error_response(*refusal)(scope, replay, send)
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


def _json(body: bytes) -> Any:
    """The body as JSON, or None when it is empty or malformed (the platform refuses those)."""
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


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
