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

Every other JSON body of a POST, PUT or PATCH outside Librarian's own `/orgs/` routes (the Platform
API, MCP, A2A) is checked for nesting before the platform parses it: arrays or objects nested deeper
than `MAX_JSON_DEPTH` are refused (400 `too_deep`). The platform's parser and the code behind it
recurse per level, and a body like `[[[[...]]]]` a thousand levels deep made them fail with a 500.
The check counts brackets outside strings at C speed (a regular expression, `bytes.translate` and
a running sum, no recursion, no parse), so it costs little on bodies of any shape. Bodies are
read whole first (up to `MAX_PLATFORM_BODY_BYTES`, larger ones are 413), then replayed.

`loopback_error` maps a refusal from the platform's own loopback calls (MCP `tools/call` and A2A
run the assistant through an in-process client) to that refusal's status, instead of a 500.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import httpx
import numpy as np
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webapi.errors import code_for, error_response

logger = logging.getLogger("librarian.server")

#: Bodies of the guarded routes are small JSON; a larger one is not read into memory here.
MAX_GUARDED_BODY_BYTES = 1024 * 1024
#: Deepest nesting of arrays and objects accepted in a Platform API JSON body. A chat run's input
#: (messages, content blocks, config, metadata) nests under 10 levels; the platform fails near 1000.
MAX_JSON_DEPTH = 64
#: Other Platform API bodies are read whole for the depth check; larger ones are refused (413).
MAX_PLATFORM_BODY_BYTES = 16 * 1024 * 1024
#: Bodies at least this large are scanned off the event loop.
_SCAN_IN_THREAD_BYTES = 256 * 1024
_DEPTH_CHECKED_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Librarian's own routes: multipart uploads and query parameters, not JSON the platform parses.
_OWN_PREFIXES = ("/orgs/",)

# A JSON string (escapes included), or the rest of the body after an unterminated quote: brackets
# inside strings do not nest. Possessive, so a long string is consumed without backtracking.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as int8: +1 opening, -1 closing
_SCAN_BLOCK = 1 << 20  # brackets summed at once (8 MiB of int64)

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


def _history_limit_is_a_small_number(query: dict[str, list[str]]) -> Refusal | None:
    """`GET /threads/{id}/history?limit=` is passed to the checkpointer unchecked; a huge or negative
    one makes SQLite fail (500). The POST form is validated by the platform (1 to 1000)."""
    for limit in query.get("limit", []):
        if not (limit.isascii() and limit.isdecimal() and 1 <= int(limit[:6]) <= 1000 and len(limit) <= 4):
            return 400, "bad_request", "limit must be a whole number from 1 to 1000"
    return None


def _storage_is_not_reported(query: dict[str, list[str]]) -> Refusal | None:
    """`GET /threads/{id}/storage` reports only the platform's built-in checkpointer (a 501 here)."""
    return 404, "not_found", "checkpoint storage is not reported by this server"


#: (method, path pattern) → the check of its query string.
QUERY_CHECKS: list[tuple[str, re.Pattern[str], Callable[[dict[str, list[str]]], Refusal | None]]] = [
    ("GET", re.compile(r"/threads/[^/]+/history"), _history_limit_is_a_small_number),
    ("GET", re.compile(r"/threads/[^/]+/storage"), _storage_is_not_reported),
]


def query_refusal(scope: Scope) -> Refusal | None:
    """The refusal of a Platform API query the platform would answer with a 5xx, if any."""
    method, path = scope.get("method", ""), scope.get("path", "").rstrip("/")
    check = next((c for m, pattern, c in QUERY_CHECKS if m == method and pattern.fullmatch(path)), None)
    if check is None:
        return None
    raw = scope.get("query_string", b"").decode("latin-1")
    return check(parse_qs(raw, keep_blank_values=True))


def _check_for(scope: Scope) -> Callable[[Any], Refusal | None] | None:
    method, path = scope.get("method", ""), scope.get("path", "").rstrip("/")
    return next((c for m, pattern, c in BODY_CHECKS if m == method and pattern.fullmatch(path)), None)


def json_depth(body: bytes) -> int:
    """How deep arrays and objects nest in `body`, counting brackets outside JSON strings.

    Exact for valid JSON; for anything else a count a parser would refuse anyway. No recursion and no
    Python loop per character: strings are cut out by a regular expression, the brackets kept by
    `bytes.translate`, and the depth is the running sum of +1 (opening) and -1 (closing), in blocks.
    """
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    steps = np.frombuffer(brackets.translate(_STEPS), dtype=np.int8)
    depth = level = 0
    for start in range(0, len(steps), _SCAN_BLOCK):
        running = np.cumsum(steps[start : start + _SCAN_BLOCK], dtype=np.int64) + level
        depth, level = max(depth, int(running.max())), int(running[-1])
    return depth


def _depth_checked(scope: Scope) -> bool:
    return scope.get("method", "") in _DEPTH_CHECKED_METHODS and not str(scope.get("path", "")).startswith(
        _OWN_PREFIXES
    )


async def _too_deep(body: bytes) -> Refusal | None:
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return None  # cannot nest deeper than it has brackets
    depth = (
        await asyncio.to_thread(json_depth, body) if len(body) >= _SCAN_IN_THREAD_BYTES else json_depth(body)
    )
    if depth > MAX_JSON_DEPTH:
        return 400, "too_deep", f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels"
    return None


class PlatformBodyGuardMiddleware:
    """Refuse Platform API bodies the platform would mishandle: client-chosen ids of new threads and
    assistants (an existence oracle), history queries it would answer with a 500, and JSON nested
    deeper than `MAX_JSON_DEPTH` (which it would answer with a 500)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        http = scope["type"] == "http" and not str(scope.get("root_path", "")).startswith("/noauth")
        refused_query = query_refusal(scope) if http else None
        if refused_query is not None:
            await error_response(*refused_query)(scope, receive, send)
            return
        check = _check_for(scope) if http else None
        deep = http and _depth_checked(scope)
        if check is None and not deep:
            await self.app(scope, receive, send)
            return
        limit = MAX_GUARDED_BODY_BYTES if check is not None else MAX_PLATFORM_BODY_BYTES
        body, replay = await buffer_body(receive, limit)
        if body is None:
            await error_response(413, "too_large", "the request body is too large")(scope, receive, send)
            return
        refusal = await _too_deep(body) if deep else None
        if refusal is None and check is not None:
            refusal = check(json_or_none(body))
        if refusal is not None:
            await error_response(*refusal)(scope, replay, send)
            return
        await self.app(scope, replay, send)


async def buffer_body(receive: Receive, limit: int = MAX_GUARDED_BODY_BYTES) -> tuple[bytes | None, Receive]:
    """Read the whole request body (at most `limit` bytes) and return a `receive` that replays it."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
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


def json_or_none(body: bytes) -> Any:
    """The body as JSON, or None when it is empty or malformed (the platform refuses those)."""
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
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
