"""`GET /metrics` for admins only.

The LangGraph server serves `/metrics` (Prometheus text, or JSON with `?format=json`: per-route
request counters, queue depth, worker and pool statistics) as one of its meta routes, which no auth
handler sees. The figures span every organization, so they are not a member's to read: the custom
app's middleware runs for every route, meta routes included, and this one lets a `/metrics` request
through only with a valid token (`Authorization: Bearer` or `X-Api-Key`, verified as `auth.py` does)
whose role is `admin`. No token or a bad one is a 401, another role a 403. `/ok` and `/` stay open.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from librarian.auth import AuthenticationError, TokenVerifier, presented_token, server_verifier
from webapi.errors import error_response

METRICS_PATH = "/metrics"
METRICS_ROLE = "admin"


class MetricsGuardMiddleware:
    """Let `/metrics` through for a verified admin token only."""

    def __init__(self, app: ASGIApp, verifier: Callable[[], TokenVerifier] = server_verifier) -> None:
        self.app = app
        self._verifier = verifier

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).rstrip("/") != METRICS_PATH:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            token = presented_token(headers.get("authorization"), headers.get("x-api-key"))
            principal = self._verifier().verify(token)
        except AuthenticationError as exc:
            await error_response(401, "unauthenticated", str(exc))(scope, receive, send)
            return
        if principal.role != METRICS_ROLE:
            message = "metrics cover every organization: an admin token is required"
            await error_response(403, "forbidden", message)(scope, receive, send)
            return
        await self.app(scope, receive, send)
