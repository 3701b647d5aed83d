"""How Librarian's routes are declared: the route class that answers their refusals, and their routers.

Every refusal of a route is `{"error": {"code", "message"}}` with no internals (`webapi.errors`). The
mapping from library errors to HTTP statuses lives on the route class, not in app-wide exception
handlers, because the app is the whole server: an app-wide handler for `LibrarianError` or `Exception`
would also answer for the Platform API's routes. Unexpected failures are logged here and answered
with a generic 500.

`HEAD` is answered as `GET` without a body, as Starlette routes did before these were FastAPI routes,
without a second operation in the OpenAPI.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import Receive, Scope, Send

from librarian.errors import FileTooLargeError, InvalidPathError, LibrarianError, TenantError
from librarian.files.multipart import MalformedUploadError
from services.documents import DocumentNotFoundError, NoActiveIngestError
from webapi.errors import ApiError, Error, error_response
from webapi.params import refusal_of_invalid

logger = logging.getLogger("librarian.server")

#: Library errors a client can cause, first match wins (a subclass before its base).
STATUS_OF: tuple[tuple[type[Exception], int], ...] = (
    (FileTooLargeError, 413),
    (InvalidPathError, 400),
    (MalformedUploadError, 400),
    (TenantError, 403),
    (DocumentNotFoundError, 404),
    (NoActiveIngestError, 409),
)

COMMON_REFUSALS = {
    400: "Bad input (path, name, parameter or body).",
    401: "Missing, invalid or expired bearer token.",
    403: "Not a member of the organization, or the role cannot write.",
    404: "No such organization.",
    "default": "Any other error, in the same shape.",
}


def refusals(descriptions: dict[int | str, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses for refusals, all in the error shape (route-specific ones override the common)."""
    merged = {**COMMON_REFUSALS, **(descriptions or {})}
    return {status: {"model": Error, "description": text} for status, text in merged.items()}


def refusal(request: Request, exc: Exception) -> Response:
    """The error-shape answer to an exception a route raised; a traceback never reaches the client."""
    if isinstance(exc, RequestValidationError):
        exc = refusal_of_invalid(exc)
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.code, exc.message)
    status = next((status for kind, status in STATUS_OF if isinstance(exc, kind)), None)
    if status is not None:
        return error_response(status, getattr(exc, "code", "error"), str(exc))
    if isinstance(exc, LibrarianError):
        logger.warning("request failed: %s", exc)
        return error_response(500, exc.code, str(exc))
    logger.error("unexpected error in %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal_error", "the server could not complete the request")


class LibrarianRoute(APIRoute):
    """A route whose refusals are in the error shape, and which answers `HEAD` like `GET`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:
                return refusal(request, exc)

        return answer

    def _answers_head(self, scope: Scope) -> bool:
        return scope.get("method") == "HEAD" and "GET" in (self.methods or ())

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = super().matches(scope)
        if match is Match.PARTIAL and self._answers_head(scope):
            match = Match.FULL
        return match, child_scope

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._answers_head(scope):
            await self.app(scope, receive, send)  # the body is dropped by the server for HEAD
            return
        await super().handle(scope, receive, send)


def librarian_router() -> APIRouter:
    """A router of `LibrarianRoute`s that document the common refusals.

    The server adds its routes to the app one by one (`server.py`), never with `include_router`.
    """
    return APIRouter(route_class=LibrarianRoute, responses=refusals())
