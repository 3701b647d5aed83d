"""Page images of PDF documents, for citations: `GET /orgs/{org}/documents/docs/{name}/pages/{n}.png`.

A citation names a page and a bbox in page fractions (top-left origin, `librarian.parsing.types.BBox`);
the browser draws the bbox over this image. `server.py` checks membership and the path first; this
module renders (pdfium, in a worker process: `webapi.page_render`) and caches.

Rendered PNGs are cached as sidecars of the document (the file store deletes them with it). The
sidecar name carries the file's size and modification time, so a replaced file never shows an old
page, and the requested width, which is bounded so a client cannot make the server render posters.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import PurePosixPath

from starlette.responses import Response

from librarian.stack import get_stack
from webapi.errors import ApiError
from webapi.page_render import PageOutOfRange, RenderedPage, UnreadablePdf, render_page_png

DEFAULT_WIDTH_PX = 1000
MIN_WIDTH_PX, MAX_WIDTH_PX = 200, 2000
MAX_PAGE = 100_000

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _renderer() -> ProcessPoolExecutor:
    """One worker process, started on first use (spawned: forking a threaded server is unsafe)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
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


def parse_page_request(page: str | int, query: Mapping[str, str]) -> tuple[int, int]:
    """The 1-based page and the image width from the URL, or a 400 naming what is wrong."""
    try:
        number = int(page)
    except (TypeError, ValueError):
        raise ApiError(400, "bad_page", "the page must be a whole number, e.g. pages/1.png") from None
    if not 1 <= number <= MAX_PAGE:
        raise ApiError(404, "page_not_found", "pages are numbered from 1")
    raw_width = query.get("width", str(DEFAULT_WIDTH_PX))
    if not raw_width.isdigit() or not MIN_WIDTH_PX <= int(raw_width) <= MAX_WIDTH_PX:
        raise ApiError(
            400, "bad_width", f"width must be a whole number of pixels from {MIN_WIDTH_PX} to {MAX_WIDTH_PX}"
        )
    return number, int(raw_width)


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


async def page_image(org: str, path: str, page: str | int, query: Mapping[str, str]) -> Response:
    """PNG of one page of a PDF document of `org` (membership already checked by the caller)."""
    number, width = parse_page_request(page, query)
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
