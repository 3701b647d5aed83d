"""Serve the browser app (`web/dist`, built by Vite and committed) at `/` and `/assets/...`.

With `enable_custom_route_auth` the LangGraph server wraps every route of `server.py` in its auth
middleware, so a route could not serve a page to a browser that has no token yet. This middleware
sits in front of routing and answers exactly `GET|HEAD /` and `GET|HEAD /assets/<file>` from the
built files, and nothing else: the page holds no data, and every API call it makes carries the
user's token and meets the same checks as any other client's.
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from webapi.pages import warm_up

# LIBRARIAN_WEB_DIST serves another build (a developer's `vite build --outDir`) without touching web/dist.
WEB_DIST = Path(os.environ.get("LIBRARIAN_WEB_DIST") or Path(__file__).resolve().parents[1] / "web" / "dist")

# The app loads only its own files; images of pages arrive as blobs fetched with the token.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class WebAppMiddleware:
    def __init__(self, app: ASGIApp, directory: Path = WEB_DIST) -> None:
        self.app = app
        self.index = directory / "index.html"
        self.assets = StaticFiles(directory=directory / "assets", check_dir=False)

    def _serves(self, scope: Scope) -> bool:
        return (
            scope["type"] == "http"
            and scope["method"] in ("GET", "HEAD")
            and (scope["path"] == "/" or scope["path"].startswith("/assets/"))
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._serves(scope):
            await self.app(scope, receive, send)
            return
        if scope["path"] == "/":
            response: Response
            if self.index.is_file():
                warm_up()  # the app's citation viewer will ask for page images
                response = FileResponse(self.index, headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"})
            else:
                response = PlainTextResponse("the web app is not built: run `npm run build` in web/", 404)
            await response(scope, receive, send)
            return
        # Vite names assets by content hash, so they may be cached for good.
        child = {**scope, "path": scope["path"][len("/assets") :], "root_path": ""}

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"cache-control", b"public, max-age=31536000, immutable"))
                headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.assets(child, receive, send_with_headers)
        except HTTPException as exc:  # missing, or outside the folder (routing's handler is inside us)
            await PlainTextResponse(exc.detail, exc.status_code)(scope, receive, send)
