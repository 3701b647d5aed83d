"""PDF reading: the text layer (or OCR) and ruled tables per page, as layouts.

Most pages are read through pdfium (`pdfium_page`), several times faster than pdfminer and without
its per-character Python objects. A page whose drawn lines could form a table, or that has no text
layer, goes to pdfplumber, whose table finder and page rendering (for OCR) this needs; both paths
group characters into words with pdfplumber's WordExtractor and the same options, so a page reads the
same either way. No model downloads (Docling and unstructured's layout models cannot be fetched
offline). Everything pdfium, pdfplumber or pdfminer raises on a damaged file becomes a
CorruptFileError here, so no third-party exception reaches the graph.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, field
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
from pdfplumber.page import Page

from librarian.errors import CorruptFileError, LibrarianError
from librarian.parsing import ocr
from librarian.parsing.blocks import ParsedBlock
from librarian.parsing.layout import PageLayout, group_lines, to_bbox
from librarian.parsing.pdfium_page import may_hold_ruled_table, page_words
from librarian.parsing.tables import table_block

log = logging.getLogger(__name__)

_WORD_OPTIONS: dict[str, Any] = {
    "x_tolerance_ratio": 0.15,  # tight justified text: an absolute 3 pt glues words together
    "keep_blank_chars": False,
    "extra_attrs": ["size", "fontname"],
}
MIN_GRID_FILL = 0.5  # share of a table's grid that must be real cells (not spans) to count as a table


@dataclass
class PdfPages:
    pages: list[PageLayout]
    ocr_pages: list[int] = field(default_factory=list)
    scanned_without_ocr: list[int] = field(default_factory=list)
    ocr_failures: list[int] = field(default_factory=list)


def _widened(page: Page, bbox: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """Stretch a table's box to the horizontal rules that bound it.

    Booktabs-style tables draw full-width rules but inner column lines only, so the finder's grid
    misses the outer columns; their cells would otherwise leak out as stray text lines.
    """
    x0, top, x1, bottom = bbox
    rules = [e for e in page.horizontal_edges if top - 1 <= e["top"] <= bottom + 1]
    rules = [e for e in rules if e["x1"] > x0 and e["x0"] < x1]
    if not rules:
        return bbox
    return min(x0, *(e["x0"] for e in rules)), top, max(x1, *(e["x1"] for e in rules)), bottom


def _is_grid(rows: list[list[str | None]]) -> bool:
    """Reject layout boxes the finder mistakes for tables (figures, sidebars, one-column frames)."""
    if len(rows) < 2 or max((len(r) for r in rows), default=0) < 2:
        return False
    cells = [cell for row in rows for cell in row]
    return sum(cell is not None for cell in cells) / len(cells) >= MIN_GRID_FILL


def _tables(page: Page, layout: PageLayout) -> list[tuple[tuple[float, float, float, float], ParsedBlock]]:
    found = []
    for table in page.find_tables():
        bbox, rows = table.bbox, table.extract()
        wide = _widened(page, bbox)
        if wide[0] < bbox[0] - 2 or wide[2] > bbox[2] + 2:
            region = page.crop((wide[0] - 1, wide[1] - 1, wide[2] + 1, wide[3] + 1), strict=False)
            redone = region.find_tables({"explicit_vertical_lines": [wide[0], wide[2]]})
            if redone:
                best = max(redone, key=lambda t: (t.bbox[2] - t.bbox[0]) * (t.bbox[3] - t.bbox[1]))
                bbox, rows = best.bbox, best.extract()
        if not _is_grid(rows):
            continue
        block = table_block(rows, to_bbox(layout, *bbox))
        if block is not None:
            found.append((bbox, block))
    return found


def _inside(word: dict[str, Any], boxes: list[tuple[float, float, float, float]]) -> bool:
    x = (word["x0"] + word["x1"]) / 2
    y = (word["top"] + word["bottom"]) / 2
    return any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)


def _shifted(word: dict[str, Any], page: Page) -> dict[str, Any]:
    """Coordinates relative to the page box, for PDFs whose media box does not start at 0,0."""
    dx, dy = page.bbox[0], page.bbox[1]
    if not dx and not dy:
        return word
    return {
        **word,
        "x0": word["x0"] - dx,
        "x1": word["x1"] - dx,
        "top": word["top"] - dy,
        "bottom": word["bottom"] - dy,
    }


def _without_overprint(page: Page) -> Page:
    """Drop glyphs printed twice at one spot (fake bold), which would read as "EENNFFOORRCCEE".

    pdfplumber's own `dedupe_chars` sorts every character by many keys and took 0.5 s per page here;
    an exact-position set is enough and costs nothing when, as usual, there are no duplicates.
    """
    seen: set[tuple[str, int, int]] = set()
    doubles: set[int] = set()
    for char in page.chars:
        key = (char["text"], round(char["x0"]), round(char["top"]))
        if key in seen:
            doubles.add(id(char))
        seen.add(key)
    if not doubles:
        return page
    return page.filter(lambda obj: obj.get("object_type") != "char" or id(obj) not in doubles)


def _read_page(page: Page, number: int, use_ocr: bool, result: PdfPages) -> PageLayout:
    layout = PageLayout(number=number, width=float(page.width), height=float(page.height))
    original, page = page, _without_overprint(page)
    words = [w for w in page.extract_words(**_WORD_OPTIONS) if w.get("upright", True)]
    if not words:
        if original.images:
            _ocr_page(original, layout, use_ocr, result)
        return layout
    tables = _tables(page, layout)
    boxes = [bbox for bbox, _ in tables]
    layout.tables = [block for _, block in tables]
    layout.lines = group_lines(_shifted(w, page) for w in words if not _inside(w, boxes))
    return layout


def _ocr_page(page: Page, layout: PageLayout, use_ocr: bool, result: PdfPages) -> None:
    if not use_ocr:
        result.scanned_without_ocr.append(layout.number)
        return
    image = page.to_image(resolution=ocr.RESOLUTION).original
    try:
        words = ocr.ocr_words(image, scale=72 / ocr.RESOLUTION)
    except ocr.OcrFailed as exc:
        log.warning("OCR failed on page %d: %s", layout.number, exc)
        result.ocr_failures.append(layout.number)
        return
    layout.lines = group_lines(words)
    result.ocr_pages.append(layout.number)


def _read_fast(document: pdfium.PdfDocument, number: int) -> PageLayout | None:
    """The page through pdfium, or None when it needs pdfplumber (a possible table, no text layer)."""
    page = document[number - 1]
    try:
        if may_hold_ruled_table(page):
            return None
        words = page_words(page, _WORD_OPTIONS)
        if not words:
            return None
        left, bottom, right, top = page.get_cropbox()  # the frame page_words measures from, unrotated
        layout = PageLayout(number=number, width=float(right - left), height=float(top - bottom))
        layout.lines = group_lines(words)
        return layout
    finally:
        page.close()


def read_pdf(data: bytes, use_ocr: bool) -> PdfPages:
    """Layouts of every page; OCR (when `use_ocr`) for pages that are images without a text layer.

    Two passes: pdfium reads every page it can, then pdfplumber opens only the pages left over
    (building all of a long PDF's pdfplumber pages resolved every page dictionary: seconds on 250 pages).
    """
    result = PdfPages(pages=[])
    try:
        document = pdfium.PdfDocument(data)
        try:
            layouts = [_read_fast(document, number) for number in range(1, len(document) + 1)]
        finally:
            document.close()
        slow = [number for number, layout in enumerate(layouts, start=1) if layout is None]
        if slow:
            with pdfplumber.open(io.BytesIO(data), pages=slow) as pdf:
                for number, page in zip(slow, pdf.pages, strict=True):
                    layouts[number - 1] = _read_page(page, number, use_ocr, result)
                    page.close()  # free pdfminer's per-page caches: long PDFs otherwise grow without bound
    except LibrarianError:
        raise
    except Exception as exc:  # pdfium and pdfminer raise many unrelated types on damaged input
        raise CorruptFileError(
            f"the PDF cannot be read ({_describe(exc)}); is it truncated or damaged?"
        ) from exc
    result.pages = [layout for layout in layouts if layout is not None]
    for name in ("ocr_pages", "scanned_without_ocr", "ocr_failures"):
        getattr(result, name).sort()
    return result


def _describe(exc: Exception) -> str:
    message = str(exc).strip() or type(exc).__name__
    return message[:200]
