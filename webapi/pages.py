"""Page images of PDF documents, for citations: `GET /orgs/{org}/documents/docs/{name}/pages/{n}.png`.

A citation names a page and a bbox in page fractions (top-left origin, `librarian.parsing.types.BBox`);
the browser draws the bbox over this image. The route checks membership, the path, the page and the
width first (`webapi.access`, `webapi.params`: a width is one of a few fixed sizes); this module
renders (pdfium, in worker processes: `webapi.page_render`, `webapi.page_workers`) and caches.

Rendering is shared fairly and bounded:

- at most `LIBRARIAN_PAGE_RENDER_CONCURRENCY_PER_ORG` renders of one organization run at once, on
  `LIBRARIAN_PAGE_RENDER_WORKERS` processes; the rest of its requests wait, never another
  organization's (`webapi.page_workers.FairGate`);
- a request that waits and renders longer than `LIBRARIAN_PAGE_RENDER_TIMEOUT_S` is answered 503
  `render_timeout`, and one whose client goes away is dropped; either way its render is stopped (its
  worker process killed) and its slot freed;
- an image has at most `LIBRARIAN_PAGE_MAX_PIXELS` pixels (a larger page comes out smaller).

Rendered PNGs are kept in a cache bounded per organization and overall, least recently used first
(`librarian.page_cache`). An image's name carries the file's size and modification time, so a
replaced file never shows an old page, and its width, which is one of `webapi.params.PAGE_WIDTHS_PX`,
so a client cannot fill the disk with one page at many widths.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable
from pathlib import PurePosixPath

from fastapi import Request, Response
from starlette.types import Receive

from librarian.page_cache import PageCache, image_name
from librarian.page_cache import page_cache as page_cache_of
from librarian.settings import get_settings
from librarian.stack import get_stack
from webapi.access import Reader
from webapi.errors import ApiError
from webapi.page_render import PageOutOfRange, UnreadablePdf, render_page_png
from webapi.page_workers import RenderPool, WorkerCrashed
from webapi.params import DEFAULT_WIDTH_PX, DocumentPath, PageNumber, PageWidth
from webapi.routing import librarian_router, refusals

router = librarian_router()

# The route's own response class is the plain `Response` (no media type), so FastAPI documents the
# refusals as JSON and the page only as this.
PNG_PAGE = {
    "description": "The page.",
    "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
}
#: What a request whose client has gone is answered (nobody reads it; nginx's code for the case).
CLIENT_GONE = 499

cache_name = image_name

_pool: RenderPool | None = None
_pool_lock = threading.Lock()


def renderer() -> RenderPool:
    """The server's renderer processes, sized by the settings on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            settings = get_settings()
            _pool = RenderPool(settings.page_render_workers, settings.page_render_concurrency_per_org)
        return _pool


def reset_renderer() -> None:
    """Stop the idle renderer processes and forget the pool (tests, benchmarks)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.close()


def warm_up() -> None:
    """Start the renderer processes in the background, so a first citation click does not wait for
    one. Called when the web app's page is served."""
    threading.Thread(target=renderer().warm, daemon=True).start()


def page_cache() -> PageCache:
    return page_cache_of(get_stack())


async def render(data: bytes, page: int, width: int) -> bytes:
    """The PNG of a page, rendered in a worker process (call it inside `renderer().admit(org)`)."""
    max_pixels = get_stack().settings.page_max_pixels
    try:
        rendered = await renderer().run(render_page_png, data, page, width, max_pixels)
    except PageOutOfRange as exc:
        raise ApiError(404, "page_not_found", str(exc)) from None
    except (UnreadablePdf, WorkerCrashed):
        raise ApiError(422, "unreadable_pdf", "this PDF could not be rendered") from None
    return rendered.png


async def page_image(org: str, path: str, number: int, width: int) -> Response:
    """PNG of one page of a PDF document of `org` (membership and parameters already checked)."""
    if PurePosixPath(path).suffix.lower() != ".pdf":
        raise ApiError(404, "no_page_images", "page images exist only for PDF documents")
    stack = get_stack()
    files, cache = stack.files, page_cache()
    stored = await asyncio.to_thread(files.stat, org, path)
    if stored is None:
        await asyncio.to_thread(cache.forget, org, path)  # deleted: its pages go too
        raise ApiError(404, "not_found", f"no document {path!r} in this organization")
    name = cache_name(number, width, stored.size, int(stored.modified.timestamp() * 1_000_000))
    headers = {"Cache-Control": "private, max-age=300", "ETag": f'"{name}"'}
    png = await asyncio.to_thread(cache.get, org, path, name)
    if png is None:
        timeout_s = stack.settings.page_render_timeout_s
        try:
            async with asyncio.timeout(timeout_s), renderer().admit(org):
                # A request that waited behind the same page of its organization finds it cached.
                png = await asyncio.to_thread(cache.get, org, path, name)
                if png is None:
                    png = await _render_and_keep(org, path, number, width, name)
        except TimeoutError:
            message = f"the page was not rendered within {timeout_s:g} s; try again later or a smaller width"
            raise ApiError(503, "render_timeout", message) from None
    return Response(png, media_type="image/png", headers=headers)


async def _render_and_keep(org: str, path: str, number: int, width: int, name: str) -> bytes:
    files, cache = get_stack().files, page_cache()
    try:
        data = await asyncio.to_thread(files.read, org, path)
    except FileNotFoundError:
        raise ApiError(404, "not_found", f"no document {path!r} in this organization") from None
    png = await render(data, number, width)
    await asyncio.to_thread(cache.put, org, path, name, png)
    return png


async def _disconnected(receive: Receive) -> None:
    """Returns when the client has gone (the request's body, empty here, is read and dropped).

    After the body a server's `receive` waits for the hang-up; the pause keeps one that does not
    from spinning."""
    while (await receive())["type"] != "http.disconnect":
        await asyncio.sleep(0.05)


async def unless_client_leaves(request: Request, answer: Awaitable[Response]) -> Response:
    """`answer`, unless the client goes away first: then it is cancelled (a render it waits for is
    stopped and its slot freed) and nobody is answered."""
    work = asyncio.ensure_future(answer)
    gone = asyncio.ensure_future(_disconnected(request.receive))
    try:
        await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not work.done():
            work.cancel()
            with contextlib.suppress(BaseException):
                await work
    if work.cancelled():
        return Response(status_code=CLIENT_GONE)
    return work.result()


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
                503: "The page was not rendered within LIBRARIAN_PAGE_RENDER_TIMEOUT_S.",
            }
        ),
    },
)
async def document_page(
    request: Request,
    access: Reader,
    path: DocumentPath,
    page: PageNumber,
    width: PageWidth = DEFAULT_WIDTH_PX,
) -> Response:
    """One page of a PDF document as PNG (`?width=` pixels, snapped to a fixed set), for citation viewers."""
    return await unless_client_leaves(request, page_image(access.org, path, page, width))
