"""One error shape for Librarian's routes: `{"error": {"code": ..., "message": ...}}`.

Clients branch on `code`, so codes are stable identifiers; messages are for people and never carry
tracebacks, tokens or file system paths.

The server's auth middleware and the Platform API answer errors as `{"detail": ...}`.
`ErrorShapeMiddleware` wraps the whole server (custom-app middleware runs outside every route) and
rewrites each error into this shape, so a client sees one shape whatever layer refused it. Outside
Librarian's own paths the `detail` key is kept too, for LangGraph SDKs that read it.

It is also the last net for exceptions nobody handled: the client gets a generic 500 in this shape
(never a traceback), and the exception is logged with its traceback so real faults stay visible.
Causes that clients can trigger are fixed where they arise (auth handlers, `webapi.guard`); the net
only keeps a missed one from reaching a client raw.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger("librarian.server")

_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
}


class ApiError(Exception):
    """A refusal with an HTTP status, raised inside route handlers."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def code_for(status: int) -> str:
    """The stable error code of an HTTP status."""
    return _CODES.get(status, "error" if status < 500 else "internal_error")


class ErrorDetail(BaseModel):
    """What went wrong: `code` for programs to branch on, `message` for people."""

    code: str
    message: str


class Error(BaseModel):
    """The body of every refusal; the OpenAPI documents it from this model."""

    error: ErrorDetail


def error_body(code: str, message: str) -> dict[str, Any]:
    return Error(error=ErrorDetail(code=code, message=message)).model_dump()


def error_response(status: int, code: str, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="librarian"'} if status == 401 else None
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


class ErrorShapeMiddleware:
    """Rewrite `{"detail": ...}` error bodies into the error shape; answer unhandled errors with 500.

    `prefixes` are Librarian's own paths, whose errors carry only `error`; elsewhere (the Platform
    API) `detail` is kept beside it.
    """

    def __init__(self, app: ASGIApp, prefixes: Sequence[str]) -> None:
        self.app = app
        self.prefixes = tuple(prefixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        keep_detail = not scope["path"].startswith(self.prefixes)
        start: Message | None = None
        started = False
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start, started
            if message["type"] == "http.response.start":
                started = True
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
                await _send_reshaped(send, start, b"".join(chunks), keep_detail=keep_detail)

        try:
            await self.app(scope, receive, capture)
        except Exception:
            if started:
                raise
            logger.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            await error_response(500, "internal_error", "the server could not complete the request")(
                scope, receive, send
            )


async def _send_reshaped(send: Send, start: Message, body: bytes, *, keep_detail: bool = False) -> None:
    """Send an error response, converting a `{"detail": ...}` body into the error shape."""
    status = int(start["status"])
    try:
        payload = json.loads(body) if body else {}
    except ValueError:
        payload = {"detail": body.decode("utf-8", "replace")[:200]}
    if isinstance(payload, dict) and "error" not in payload:
        detail = payload.get("detail") or payload.get("message") or "request refused"
        if not isinstance(detail, str):
            detail = json.dumps(detail)[:500]
        payload = error_body(code_for(status), detail)
        if keep_detail:
            payload["detail"] = detail
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
