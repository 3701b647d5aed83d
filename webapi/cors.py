"""Cross-origin access: only the browser origins in `LIBRARIAN_CORS_ORIGINS` may call the API.

The LangGraph server's own CORS layer answers every origin with `Access-Control-Allow-Origin: *`
(and lets any site's preflight reach a private-network server). Tokens travel in headers, never in
cookies, so no site could act as a user without the token; still, the API's answers are nobody
else's page's business. `CorsMiddleware` is the custom app's outermost middleware, which the server
runs before its own, so it owns CORS for every route (ours, the Platform API, MCP, A2A):

- a preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here and never reaches
  the server's layer: allowed origins get the usual grants (the requested headers, so
  `Authorization` and `X-Api-Key` too), any other origin a 403 without them;
- every other response loses whatever `access-control-*` headers the server added, and an allowed
  origin gets its own `Access-Control-Allow-Origin` (and the pagination headers exposed).

The web app at `/` is same-origin and needs no CORS; the default allows Agent Chat UI's dev server
(`http://localhost:3000`) and LangGraph Studio (`https://smith.langchain.com`), the clients the docs
name. `*` allows every origin; an empty value none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from librarian.settings import get_settings
from webapi.errors import error_response

#: Response headers a cross-origin caller may read (the server exposes the same ones).
EXPOSED_HEADERS = "x-pagination-total, x-pagination-next, content-location"
ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
PREFLIGHT_MAX_AGE_S = 600


def _configured_origins() -> Sequence[str]:
    return get_settings().cors_origin_list()


class CorsMiddleware:
    """Grant CORS to the configured origins only, whatever the layers inside would grant."""

    def __init__(self, app: ASGIApp, origins: Callable[[], Sequence[str]] = _configured_origins) -> None:
        self.app = app
        self._origins_source = origins
        self._origins: frozenset[str] | None = None

    def _allowed(self, origin: str) -> bool:
        if self._origins is None:  # read on first use: settings are validated at start-up by auth.py
            self._origins = frozenset(self._origins_source())
        return "*" in self._origins or origin in self._origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is None:
            await self.app(scope, receive, send)
            return
        allowed = self._allowed(origin)
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await self._preflight(scope, receive, send, headers, origin if allowed else None)
            return
        await self.app(scope, receive, _granting(send, origin if allowed else None))

    async def _preflight(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers, origin: str | None
    ) -> None:
        if origin is None:
            refusal = error_response(403, "forbidden", "this origin may not call the API cross-origin")
            refusal.headers["vary"] = "Origin"
            await refusal(scope, receive, send)
            return
        grants = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
            (b"access-control-max-age", str(PREFLIGHT_MAX_AGE_S).encode()),
            (b"vary", b"Origin"),
            (b"content-length", b"0"),
        ]
        requested = headers.get("access-control-request-headers")
        if requested:
            grants.append((b"access-control-allow-headers", requested.encode("latin-1")))
        if headers.get("access-control-request-private-network", "").lower() == "true":
            grants.append((b"access-control-allow-private-network", b"true"))
        await send({"type": "http.response.start", "status": 204, "headers": grants})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _granting(send: Send, origin: str | None) -> Send:
    """`send`, with the inner layers' CORS headers replaced by this origin's grant (or none)."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [
                (k, v) for k, v in message.get("headers", []) if not k.lower().startswith(b"access-control-")
            ]
            if origin is not None:
                headers.append((b"access-control-allow-origin", origin.encode("latin-1")))
                headers.append((b"access-control-expose-headers", EXPOSED_HEADERS.encode()))
            if not any(k.lower() == b"vary" for k, _ in headers):
                headers.append((b"vary", b"Origin"))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped
