"""Page images of PDF documents, for citations: `GET /orgs/{org}/documents/docs/{name}/pages/{n}.png`.

A citation names a page and a bbox in page fractions (top-left origin, `librarian.parsing.types.BBox`);
the browser draws the bbox over this image. The route checks membership, the path, the page and the
width first (`webapi.access`, `webapi.params`); this module renders (pdfium, in a worker process:
`webapi.page_render`) and caches.

Rendered PNGs are cached as sidecars of the document (the file store deletes them with it). The
sidecar name carries the file's size and modification time, so a replaced file never shows an old
page, and the requested width, which is bounded so a client cannot make the server render posters.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import PurePosixPath

from fastapi import Response

from librarian.runs.orphans import exit_with_parent
from librarian.stack import get_stack
from webapi.access import Reader
from webapi.errors import ApiError
from webapi.page_render import PageOutOfRange, RenderedPage, UnreadablePdf, render_page_png
from webapi.params import DEFAULT_WIDTH_PX, DocumentPath, PageNumber, PageWidth
from webapi.routing import librarian_router, refusals

router = librarian_router()

# The route's own response class is the plain `Response` (no media type), so FastAPI documents the
# refusals as JSON and the page only as this.
PNG_PAGE = {
    "description": "The page.",
    "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
}


_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _renderer() -> ProcessPoolExecutor:
    """One worker process, started on first use (spawned: forking a threaded server is unsafe)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=exit_with_parent,  # never outlives the server (SIGTERM skips shutdown)
            )
        return _pool


def _reset_renderer() -> None:
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown(wait=False, cancel_futures=True)
        _pool = None


def warm_up() -> None:
    """Start the renderer process in the background (it takes about 3 s), so a first citation click
    does not wait for it. Called when the web app's page is served."""
    threading.Thread(target=lambda: _renderer().submit(int).result(), daemon=True).start()


def cache_name(page: int, width: int, size: int, modified_us: int) -> str:
    return f"page-{page}-w{width}-{size}-{modified_us}.png"


async def render(data: bytes, page: int, width: int) -> RenderedPage:
    """Render in the worker process; a crashed worker is replaced and the page reported unreadable.

    Submitting starts the process and writes to pipes, so it happens off the event loop.
    """

    def submit_and_wait() -> RenderedPage:
        return _renderer().submit(render_page_png, data, page, width).result()

    try:
        return await asyncio.to_thread(submit_and_wait)
    except BrokenProcessPool:
        _reset_renderer()
        raise UnreadablePdf("the renderer stopped on this file") from None


async def page_image(org: str, path: str, number: int, width: int) -> Response:
    """PNG of one page of a PDF document of `org` (membership and parameters already checked)."""
    if PurePosixPath(path).suffix.lower() != ".pdf":
        raise ApiError(404, "no_page_images", "page images exist only for PDF documents")
    files = get_stack().files
    stored = await asyncio.to_thread(files.stat, org, path)
    if stored is None:
        raise ApiError(404, "not_found", f"no document {path!r} in this organization")
    name = cache_name(number, width, stored.size, int(stored.modified.timestamp() * 1_000_000))
    headers = {"Cache-Control": "private, max-age=300", "ETag": f'"{name}"'}
    png = await asyncio.to_thread(files.read_sidecar, org, path, name)
    if png is None:
        try:
            data = await asyncio.to_thread(files.read, org, path)
        except FileNotFoundError:
            raise ApiError(404, "not_found", f"no document {path!r} in this organization") from None
        try:
            rendered = await render(data, number, width)
        except PageOutOfRange as exc:
            raise ApiError(404, "page_not_found", str(exc)) from None
        except UnreadablePdf:
            raise ApiError(422, "unreadable_pdf", "this PDF could not be rendered") from None
        png = rendered.png
        await asyncio.to_thread(files.write_sidecar, org, path, name, png)
    return Response(png, media_type="image/png", headers=headers)


# Declared before the document routes (`server.py`): their `{path:path}` would match `.../pages/1.png`.
@router.get(
    "/orgs/{org}/documents/{path:path}/pages/{page}.png",
    response_class=Response,
    operation_id="getDocumentPage",
    summary="A PDF page as PNG; draw a source's bbox (page fractions) on it.",
    responses={
        200: PNG_PAGE,
        **refusals(
            {
                404: "No such document or page, or the document is not a PDF.",
                422: "The PDF could not be rendered.",
            }
        ),
    },
)
async def document_page(
    access: Reader, path: DocumentPath, page: PageNumber, width: PageWidth = DEFAULT_WIDTH_PX
) -> Response:
    """One page of a PDF document as PNG (`?width=` pixels), for citation viewers."""
    return await page_image(access.org, path, page, width)
