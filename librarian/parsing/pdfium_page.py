"""PDF pages read through pdfium: characters, ruling lines and images, in pdfplumber's shapes.

pdfplumber reads a page by running pdfminer's content-stream interpreter in Python: 0.07 s a page of
prose here, 0.15-0.25 s a page with tables, and most of a PDF's parse time. pdfium (already installed
as pdfplumber's renderer) reads the same page in C. This module gives pdfplumber-compatible character
and edge dicts, so that pdfplumber's own `WordExtractor` and table finder still do the grouping, by the
same rules as before, on what pdfium read.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Iterator
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pdfplumber.utils.text import WordExtractor

_SKIPPED_CODES = {0, 0xFFFE, 0xFFFF}
_SOFT_HYPHEN = 0x02  # pdfium's code for a hyphen it judged to end a line
_FONT_NAME_BYTES = 256
GRID_SNAP = 3.0  # points; pdfplumber's default snap tolerance for ruling lines
MIN_RULE_LENGTH = 2.0
MAX_RULE_SLANT = 1.0


class _FontRun:
    """What pdfium reports per text object (font, size, orientation), looked up once per object."""

    __slots__ = ("fontname", "size", "upright")

    def __init__(self, fontname: str, size: float, upright: bool) -> None:
        self.fontname = fontname
        self.size = size
        self.upright = upright


def _font_run(textpage: Any, index: int, names: dict[bytes, str]) -> _FontRun:
    """`names` caches font names by font handle: a page has a few fonts and thousands of runs."""
    font = pdfium_c.FPDFTextObj_GetFont(pdfium_c.FPDFText_GetTextObject(textpage, index))
    key = bytes(font)
    fontname = names.get(key)
    if fontname is None:
        fontname = names[key] = _base_font_name(font)
    matrix = pdfium_c.FS_MATRIX()
    pdfium_c.FPDFText_GetMatrix(textpage, index, matrix)
    # pdfminer's char size is the font size times the text space's vertical scale; pdfium reports
    # the unscaled font size (1.0 in TeX output, which scales the text matrix instead).
    scale = math.hypot(matrix.c, matrix.d) or 1.0
    size = float(pdfium_c.FPDFText_GetFontSize(textpage, index)) * scale
    upright = matrix.a * matrix.d > 0 and abs(matrix.b * matrix.c) < 1e-9
    return _FontRun(fontname, size, upright)


def _base_font_name(font: Any) -> str:
    """The PDF's own font name (as pdfminer reports it, minus any subset prefix), not the substitute
    pdfium rendered a non-embedded font with: bold detection reads this name."""
    if not font:
        return ""
    name = ctypes.create_string_buffer(_FONT_NAME_BYTES)
    length = pdfium_c.FPDFFont_GetBaseFontName(font, name, _FONT_NAME_BYTES)
    raw = name.raw[: max(min(length, _FONT_NAME_BYTES) - 1, 0)].decode("utf-8", "replace")
    prefix, plus, rest = raw.partition("+")
    return rest if plus and len(prefix) == 6 else raw


def page_chars(page: pdfium.PdfPage) -> list[dict[str, Any]]:
    """Characters with pdfplumber's keys (text, x0, x1, top, bottom, doctop, upright, size, fontname).

    Coordinates are points from the crop box's top-left, as pdfplumber gives them. Characters pdfium
    generated itself (inferred spaces and line breaks) are dropped: word breaks come from the gaps,
    as with pdfplumber. Glyphs printed twice at one spot (fake bold) are kept once.
    """
    left, _, _, top = page.get_cropbox()
    textpage = page.get_textpage()
    try:
        count = pdfium_c.FPDFText_CountChars(textpage)
        if count <= 0:
            return []
        box = pdfium_c.FS_RECTF()
        runs: dict[bytes, _FontRun] = {}
        names: dict[bytes, str] = {}
        seen: set[tuple[str, int, int]] = set()
        previous: tuple[bytes, float, float, float] | None = None
        chars = []
        for index in range(count):
            # One call per character: FPDFText_GetText's buffer drifts from the character indices
            # on some files, and it turns line-end hyphens into 0xFFFE.
            code = pdfium_c.FPDFText_GetUnicode(textpage, index)
            if code in _SKIPPED_CODES or (code < 0x20 and code != _SOFT_HYPHEN):
                continue  # line breaks, and raw codes of a font without a Unicode map (pdfminer's "(cid:n)")
            if code == 0x20 and pdfium_c.FPDFText_IsGenerated(textpage, index):
                continue
            text = "-" if code == _SOFT_HYPHEN else chr(code)
            obj = bytes(pdfium_c.FPDFText_GetTextObject(textpage, index))  # the pointer, hashable
            run = runs.get(obj)
            if run is None:
                run = runs[obj] = _font_run(textpage, index, names)
            pdfium_c.FPDFText_GetLooseCharBox(textpage, index, box)
            # Vertically, pdfminer's box: from the font's descent below the baseline (where the
            # loose box's bottom is too), one font size tall. The loose box's top comes from the
            # font's ascent instead, a point or so off, which would move running headers between
            # the position slots furniture detection uses.
            lower = top - box.bottom
            upper = lower - run.size
            x0, x1 = box.left - left, box.right - left
            key = (text, round(x0), round(upper))
            glyph = (obj, box.left, box.right, box.bottom)
            if key in seen and glyph != previous:
                continue  # printed twice at one spot; a ligature's letters ("ffi") share one glyph's box
            seen.add(key)
            previous = glyph
            chars.append(
                {
                    "text": text,
                    "x0": x0,
                    "x1": x1,
                    "top": upper,
                    "bottom": lower,
                    "doctop": upper,
                    "upright": run.upright,
                    "size": run.size,
                    "fontname": run.fontname,
                }
            )
        return chars
    finally:
        textpage.close()


def words_of(chars: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
    """Upright words from `page_chars`, grouped by pdfplumber's WordExtractor with the caller's options."""
    return [w for w in WordExtractor(**options).extract_words(chars) if w["upright"]]


def page_words(page: pdfium.PdfPage, options: dict[str, Any]) -> list[dict[str, Any]]:
    return words_of(page_chars(page), options)


def _distinct(values: list[float]) -> int:
    count, last = 0, -math.inf
    for value in sorted(values):
        if value - last > GRID_SNAP:
            count += 1
        last = value
    return count


Matrix = tuple[float, float, float, float, float, float]  # a, b, c, d, e, f as in PDF's `cm`
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _object_matrix(obj: Any, outer: Matrix) -> Matrix:
    """The object's matrix followed by its enclosing form's: form XObjects nest their own space."""
    m = pdfium_c.FS_MATRIX()
    pdfium_c.FPDFPageObj_GetMatrix(obj, m)
    a, b, c, d, e, f = outer
    return (
        a * m.a + c * m.b,
        b * m.a + d * m.b,
        a * m.c + c * m.d,
        b * m.c + d * m.d,
        a * m.e + c * m.f + e,
        b * m.e + d * m.f + f,
    )


def _page_objects(page: pdfium.PdfPage) -> Iterator[tuple[Any, int, Matrix]]:
    """Every path and image object, its type, and its enclosing forms' matrix to page space: inside form
    XObjects too (pdfminer reads those, so a table drawn in a form is still a table)."""
    stack: list[tuple[Any, int, Matrix]] = [(page, pdfium_c.FPDFPage_CountObjects(page), _IDENTITY)]
    while stack:
        owner, count, outer = stack.pop()
        for index in range(count):
            if owner is page:
                obj = pdfium_c.FPDFPage_GetObject(page, index)
            else:
                obj = pdfium_c.FPDFFormObj_GetObject(owner, index)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
                stack.append((obj, pdfium_c.FPDFFormObj_CountObjects(obj), _object_matrix(obj, outer)))
            elif kind in (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE):
                yield obj, kind, outer


def has_images(page: pdfium.PdfPage) -> bool:
    """Whether anything is drawn as an image: a page without text but with images may be a scan."""
    return any(kind == pdfium_c.FPDF_PAGEOBJ_IMAGE for _, kind, _ in _page_objects(page))


def _edge(x0: float, y0: float, x1: float, y1: float) -> dict[str, Any] | None:
    """An axis-parallel segment (top-down coordinates) as the edge dict pdfplumber's table finder reads."""
    if abs(x0 - x1) <= MAX_RULE_SLANT:
        x = (x0 + x1) / 2
        return _line("v", x, min(y0, y1), x, max(y0, y1))
    if abs(y0 - y1) <= MAX_RULE_SLANT:
        y = (y0 + y1) / 2
        return _line("h", min(x0, x1), y, max(x0, x1), y)
    return None  # a slanted line or a curve: never part of a ruled grid


def _line(orientation: str, left: float, top: float, right: float, bottom: float) -> dict[str, Any]:
    return {
        "object_type": "line",
        "orientation": orientation,
        "x0": left,
        "x1": right,
        "top": top,
        "bottom": bottom,
        "doctop": top,
        "width": right - left,
        "height": bottom - top,
    }


def ruling_edges(page: pdfium.PdfPage) -> list[dict[str, Any]]:
    """Horizontal and vertical segments of every drawn path, in the page frame `page_chars` uses.

    Rectangles and multi-segment paths count by their sides, as pdfplumber counts them; filled
    shapes count too (table rows are often shaded boxes rather than stroked rules).
    """
    left, _, _, top = page.get_cropbox()
    point_x, point_y = ctypes.c_float(), ctypes.c_float()
    edges: list[dict[str, Any]] = []
    for obj, kind, outer in _page_objects(page):
        if kind != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        a, b, c, d, e, f = _object_matrix(obj, outer)
        start = previous = None
        for seg_index in range(pdfium_c.FPDFPath_CountSegments(obj)):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, seg_index)
            pdfium_c.FPDFPathSegment_GetPoint(segment, point_x, point_y)
            px, py = point_x.value, point_y.value
            point = (a * px + c * py + e - left, top - (b * px + d * py + f))
            if pdfium_c.FPDFPathSegment_GetType(segment) == pdfium_c.FPDF_SEGMENT_MOVETO or previous is None:
                start = previous = point
                continue
            sides = [(previous, point)]
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                sides.append((point, start))
            for (x0, y0), (x1, y1) in sides:
                edge = _edge(x0, y0, x1, y1)
                if edge is not None:
                    edges.append(edge)
            previous = point
    return edges


def may_hold_ruled_table(edges: list[dict[str, Any]]) -> bool:
    """Whether ruling lines could make a grid of at least two rows or two columns.

    A table the finder can see needs vertical and horizontal rules that cross; one box around a code
    listing (two of each) makes a single cell, which is not a table.
    """
    xs = [e["x0"] for e in edges if e["orientation"] == "v" and e["height"] > MIN_RULE_LENGTH]
    ys = [e["top"] for e in edges if e["orientation"] == "h" and e["width"] > MIN_RULE_LENGTH]
    columns, rows = _distinct(xs), _distinct(ys)
    return columns >= 2 and rows >= 2 and max(columns, rows) >= 3
