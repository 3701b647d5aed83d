"""Render one PDF page to PNG with pdfium. Runs in a worker process, never in the server's threads.

PDFium is not thread-safe, not even across different documents, and the server already runs the
parser's pdfium calls in ingest worker threads; a hostile PDF can also crash the native library. A
separate process makes both harmless to the server, so this module imports only what rendering
needs and keeps its functions picklable (module-level, plain arguments).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

MAX_HEIGHT_PX = 4000  # a very tall page is scaled down further, so one image stays a few MB at most
#: Largest image, width x height (the `LIBRARIAN_PAGE_MAX_PIXELS` default): a larger page comes out smaller.
MAX_PIXELS = 6_000_000


class PageOutOfRange(Exception):
    def __init__(self, page: int, pages: int) -> None:
        super().__init__(f"page {page} does not exist: the document has {pages} page(s)")
        self.page, self.pages = page, pages

    def __reduce__(self) -> tuple[type, tuple[int, int]]:  # crosses the process boundary intact
        return PageOutOfRange, (self.page, self.pages)


class UnreadablePdf(Exception):
    """pdfium could not open the file (corrupt, encrypted or not a PDF)."""


@dataclass(frozen=True)
class RenderedPage:
    png: bytes
    pages: int  # pages in the document, so the viewer can offer the neighbours
    width_px: int
    height_px: int


def scale_for(width_pt: float, height_pt: float, width_px: int, max_pixels: int = MAX_PIXELS) -> float:
    """Pixels per point: `width_px` wide, unless that makes the page taller than `MAX_HEIGHT_PX` or
    larger than `max_pixels` (width x height), when it is scaled down to fit both."""
    scale = width_px / width_pt if width_pt > 0 else 1.0
    if height_pt * scale > MAX_HEIGHT_PX:
        scale = MAX_HEIGHT_PX / height_pt
    if (width_pt * scale + 1) * (height_pt * scale + 1) > max_pixels:  # each side is rounded up
        # the largest scale s with (w s + 1)(h s + 1) <= max_pixels
        area, sides = width_pt * height_pt, width_pt + height_pt
        scale = (math.sqrt(sides * sides + 4 * area * (max_pixels - 1)) - sides) / (2 * area)
    return scale


def render_page_png(data: bytes, page: int, width_px: int, max_pixels: int = MAX_PIXELS) -> RenderedPage:
    """Page `page` (1-based) of the PDF `data`, `width_px` wide (less if the page is very tall, or if
    the image would have more than `max_pixels` pixels)."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise UnreadablePdf(str(exc)) from None
    try:
        pages = len(pdf)
        if not 1 <= page <= pages:
            raise PageOutOfRange(page, pages)
        pdf_page = pdf[page - 1]
        try:
            scale = scale_for(*pdf_page.get_size(), width_px, max_pixels)
            bitmap = pdf_page.render(scale=scale)  # page rotation applied, white background
            image = bitmap.to_pil()
            out = io.BytesIO()
            image.save(out, format="PNG", compress_level=1)  # zlib level 1: about the size of 6, faster
            return RenderedPage(out.getvalue(), pages, image.width, image.height)
        finally:
            pdf_page.close()
    finally:
        pdf.close()
