"""Serve the browser app (`web/dist`, built by Vite and committed) at `/` and `/assets/...`.

With `enable_custom_route_auth` the LangGraph server wraps every route of `server.py` in its auth
middleware, so a route could not serve a page to a browser that has no token yet. This middleware
sits in front of routing and answers exactly `GET|HEAD /` and `GET|HEAD /assets/<file>` from the
built files, and nothing else: the page holds no data, and every API call it makes carries the
user's token and meets the same checks as any other client's. Text assets go out compressed when the
browser accepts it (`webapi.asset_encoding`).
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from webapi.asset_encoding import VARY, compressed_response, is_compressible
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
        self.assets_dir = directory / "assets"
        self.assets = StaticFiles(directory=self.assets_dir, check_dir=False)

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
        relative = scope["path"][len("/assets") :]
        child = {**scope, "path": relative, "root_path": ""}
        vary = is_compressible(relative)  # its answer depends on Accept-Encoding, raw or not

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"vary"]
                headers.append((b"cache-control", b"public, max-age=31536000, immutable"))
                headers.append((b"x-content-type-options", b"nosniff"))
                if vary:
                    headers.append((b"vary", VARY["Vary"].encode()))
                message = {**message, "headers": headers}
            await send(message)

        accept = dict(scope.get("headers") or []).get(b"accept-encoding", b"").decode("latin-1")
        compressed = await compressed_response(
            self.assets_dir, relative, accept, head=scope["method"] == "HEAD"
        )
        if compressed is not None:
            await compressed(scope, receive, send_with_headers)
            return
        try:
            await self.assets(child, receive, send_with_headers)
        except HTTPException as exc:  # missing, or outside the folder (routing's handler is inside us)
            await PlainTextResponse(exc.detail, exc.status_code)(scope, receive, send)
