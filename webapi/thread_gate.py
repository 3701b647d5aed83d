"""The ownership checks the platform does not make on some thread routes.

The auth handlers (`auth.py`) filter every thread the platform looks up through them. Three kinds of
request escape that, and this middleware checks them against the same rule (`librarian.ownership`)
before the platform sees them:

- **Event streams and commands.** `POST /threads/{id}/stream/events`, its WebSocket and `POST
  /threads/{id}/commands` never consult the handlers about the thread, so any caller could follow
  any thread's events, another organization's included. Following needs read access (the owner, or
  any member for a document thread); commands need the owner.
- **Copies.** The platform checks a copy's source with the read filter, so a member could copy a
  document thread into a thread the whole organization lists as a document. Copying needs the owner.
- **Runs that create their thread.** A run with `if_not_exists: "create"` on an id that is someone
  else's answers 404 where a fresh id answers 200: an existence oracle. Over HTTP such a run may
  only name the caller's own thread (create threads with `POST /threads`, which picks the id); the
  answer is the same 403 whether the id is taken or fresh. A2A, whose new contexts are threads made
  by their first run, calls the platform in-process with a server-made id, and is not affected.

Everything refused is answered the same whether or not the thread exists. A missing or bad token,
and the server's own in-process calls, pass to the platform (which answers 401 to the former).
"""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

import httpx
from langgraph_sdk.errors import NotFoundError
from starlette.types import ASGIApp, Receive, Scope, Send

from librarian.auth import AuthenticationError, Principal, presented_token, server_verifier
from librarian.ownership import can_read, can_write
from librarian.runs.server_client import sdk_client
from webapi.errors import error_response
from webapi.guard import MAX_PLATFORM_BODY_BYTES, buffer_body, json_or_none

GATED = re.compile(
    r"/threads/(?P<thread>[^/]+)/(?P<route>stream/events|commands|copy|runs(?:/stream|/wait)?)/?"
)
NOT_FOUND = (404, "not_found", "thread not found")
NO_CREATION = (
    403,
    "forbidden",
    "runs cannot create threads here: create the thread first with POST /threads",
)


def _principal(scope: Scope) -> Principal | None:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
    try:
        return server_verifier().verify(
            presented_token(headers.get("authorization"), headers.get("x-api-key"))
        )
    except AuthenticationError:
        return None


async def _thread_metadata(thread: str) -> dict[str, Any] | None:
    try:
        UUID(thread)
        found = await sdk_client().threads.get(thread)
    except (ValueError, NotFoundError, httpx.HTTPStatusError):  # not an id, or not a thread
        return None
    return dict(found.get("metadata") or {})


async def permitted(thread: str, principal: Principal, *, write: bool) -> bool:
    """Whether the thread exists and the caller may follow it (or, `write`, command or run on it)."""
    metadata = await _thread_metadata(thread)
    check = can_write if write else can_read
    return metadata is not None and check(metadata, principal.organization_id, principal.user_id)


class ThreadGateMiddleware:
    """Refuse what the platform would let through on threads the caller may not use (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        external = not str(scope.get("root_path", "")).startswith("/noauth")
        typed = scope["type"] == "websocket" or (scope["type"] == "http" and scope.get("method") == "POST")
        match = GATED.fullmatch(scope.get("path", "")) if external and typed else None
        principal = _principal(scope) if match else None
        if match is None or principal is None:
            await self.app(scope, receive, send)
            return
        route, thread = match["route"], match["thread"]
        if route.startswith("runs"):  # only a run that would create its thread is checked
            body, receive = await buffer_body(receive, MAX_PLATFORM_BODY_BYTES)
            if body is None:
                await error_response(413, "too_large", "the request body is too large")(scope, receive, send)
                return
            payload = json_or_none(body)
            creates = isinstance(payload, dict) and payload.get("if_not_exists") == "create"
            refusal = NO_CREATION if creates and not await permitted(thread, principal, write=True) else None
        else:
            write = route != "stream/events"
            refusal = None if await permitted(thread, principal, write=write) else NOT_FOUND
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": refusal[2]})
        else:
            await error_response(*refusal)(scope, receive, send)
