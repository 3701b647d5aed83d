"""PDF reading: the text layer (or OCR) and ruled tables per page, as layouts.

Every page is read through pdfium (`pdfium_page`), in C, several times faster than pdfminer and
without its per-character Python objects. pdfplumber still does the grouping: its WordExtractor
makes words of pdfium's characters, and its table finder runs on pdfium's characters and ruling
lines, only on pages whose lines could form a grid; tables without lines are found by the alignment
of their columns (`aligned_tables`). No model downloads (Docling and unstructured's
layout models cannot be fetched offline). Everything pdfium or pdfplumber raises on a damaged file
becomes a CorruptFileError here, so no third-party exception reaches the graph.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pypdfium2 as pdfium

from librarian.errors import CorruptFileError, LibrarianError
from librarian.parsing import ocr
from librarian.parsing.aligned_tables import aligned_tables
from librarian.parsing.layout import PageLayout, group_lines
from librarian.parsing.pdfium_page import has_images, may_hold_ruled_table, page_chars, ruling_edges, words_of
from librarian.parsing.ruled_tables import RuledPage, ruled_tables

log = logging.getLogger(__name__)

_WORD_OPTIONS: dict[str, Any] = {
    "x_tolerance_ratio": 0.15,  # tight justified text: an absolute 3 pt glues words together
    "keep_blank_chars": False,
    "extra_attrs": ["size", "fontname"],
}


@dataclass
class PdfPages:
    pages: list[PageLayout]
    ocr_pages: list[int] = field(default_factory=list)
    scanned_without_ocr: list[int] = field(default_factory=list)
    ocr_failures: list[int] = field(default_factory=list)


def _inside(word: dict[str, Any], boxes: list[tuple[float, float, float, float]]) -> bool:
    x = (word["x0"] + word["x1"]) / 2
    y = (word["top"] + word["bottom"]) / 2
    return any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)


def _read_page(page: pdfium.PdfPage, number: int, use_ocr: bool, result: PdfPages) -> PageLayout:
    left, bottom, right, top = page.get_cropbox()  # the frame page_chars measures from, unrotated
    layout = PageLayout(number=number, width=float(right - left), height=float(top - bottom))
    chars = page_chars(page)
    words = words_of(chars, _WORD_OPTIONS)
    if not words:
        if has_images(page):
            _ocr_page(page, layout, use_ocr, result)
        return layout
    edges = ruling_edges(page)
    if may_hold_ruled_table(edges):
        tables = ruled_tables(RuledPage((0.0, 0.0, layout.width, layout.height), chars, edges), layout)
        boxes = [bbox for bbox, _ in tables]
        layout.tables = [block for _, block in tables]
        words = [w for w in words if not _inside(w, boxes)]
    layout.lines = group_lines(words)
    layout.tables.extend(aligned_tables(layout))
    return layout


def _ocr_page(page: pdfium.PdfPage, layout: PageLayout, use_ocr: bool, result: PdfPages) -> None:
    if not use_ocr:
        result.scanned_without_ocr.append(layout.number)
        return
    image = page.render(scale=ocr.RESOLUTION / 72).to_pil()
    try:
        words = ocr.ocr_words(image, scale=72 / ocr.RESOLUTION)
    except ocr.OcrFailed as exc:
        log.warning("OCR failed on page %d: %s", layout.number, exc)
        result.ocr_failures.append(layout.number)
        return
    layout.lines = group_lines(words)
    result.ocr_pages.append(layout.number)


def read_pdf(data: bytes, use_ocr: bool) -> PdfPages:
    """Layouts of every page; OCR (when `use_ocr`) for pages that are images without a text layer."""
    result = PdfPages(pages=[])
    try:
        document = pdfium.PdfDocument(data)
        try:
            for number in range(1, len(document) + 1):
                page = document[number - 1]
                try:
                    result.pages.append(_read_page(page, number, use_ocr, result))
                finally:
                    page.close()
        finally:
            document.close()
    except LibrarianError:
        raise
    except Exception as exc:  # pdfium and pdfplumber raise many unrelated types on damaged input
        raise CorruptFileError(
            f"the PDF cannot be read ({_describe(exc)}); is it truncated or damaged?"
        ) from exc
    return result


def _describe(exc: Exception) -> str:
    message = str(exc).strip() or type(exc).__name__
    return message[:200]
