"""One error shape for Librarian's routes: `{"error": {"code": ..., "message": ...}}`.

Clients branch on `code`, so codes are stable identifiers; messages are for people and never carry
tracebacks, tokens or file system paths.

The server's auth middleware answers 401/403 itself, as `{"detail": ...}`, before a route runs.
`ErrorShapeMiddleware` rewrites those answers on Librarian's own paths so that a client of the
document routes sees one shape whatever layer refused it; the Platform API keeps its own shape.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
}


class ApiError(Exception):
    """A refusal with an HTTP status, raised inside route handlers."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="librarian"'} if status == 401 else None
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


class ErrorShapeMiddleware:
    """Rewrite `{"detail": ...}` error bodies (from layers outside our handlers) on our paths."""

    def __init__(self, app: ASGIApp, prefixes: Sequence[str]) -> None:
        self.app = app
        self.prefixes = tuple(prefixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if message["status"] < 400:
                    await send(message)
                    return
                start = message
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                await _send_reshaped(send, start, b"".join(chunks))

        await self.app(scope, receive, capture)


async def _send_reshaped(send: Send, start: Message, body: bytes) -> None:
    """Send an error response, converting a `{"detail": ...}` body into the error shape."""
    status = int(start["status"])
    try:
        payload = json.loads(body) if body else {}
    except ValueError:
        payload = {"detail": body.decode("utf-8", "replace")[:200]}
    if isinstance(payload, dict) and "error" not in payload:
        detail = payload.get("detail") or payload.get("message") or "request refused"
        payload = error_body(_CODES.get(status, "error" if status < 500 else "internal_error"), str(detail))
        body = json.dumps(payload).encode()
        headers = [
            (k, v)
            for k, v in start.get("headers", [])
            if k.lower() not in (b"content-length", b"content-type")
        ]
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        start = {**start, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body, "more_body": False})
