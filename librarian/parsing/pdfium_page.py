"""The fast path for PDF pages: words and ruling lines read through pdfium.

pdfplumber reads a page by running pdfminer's content-stream interpreter in Python, which cost about
0.07 s a page here and most of a large PDF's ingest time; it also holds every character as a Python
layout object. pdfium (already installed as pdfplumber's renderer) reads the same text layer in C. This
module gives pdfplumber-compatible character dicts for pdfplumber's own `WordExtractor`, so the words
are grouped by the same rules either way, and a cheap test for ruling lines that could form a table:
only pages that pass it need pdfplumber's table finder.
"""

from __future__ import annotations

import ctypes
import math
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
        chars = []
        for index in range(count):
            # One call per character: FPDFText_GetText's buffer drifts from the character indices
            # on some files, and it turns line-end hyphens into 0xFFFE.
            code = pdfium_c.FPDFText_GetUnicode(textpage, index)
            if code in _SKIPPED_CODES or code in (0x0A, 0x0D):
                continue
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
            if key in seen:
                continue
            seen.add(key)
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


def page_words(page: pdfium.PdfPage, options: dict[str, Any]) -> list[dict[str, Any]]:
    """Upright words, grouped by pdfplumber's WordExtractor with the caller's options."""
    words = WordExtractor(**options).extract_words(page_chars(page))
    return [w for w in words if w["upright"]]


def _distinct(values: list[float]) -> int:
    count, last = 0, -math.inf
    for value in sorted(values):
        if value - last > GRID_SNAP:
            count += 1
        last = value
    return count


def may_hold_ruled_table(page: pdfium.PdfPage) -> bool:
    """Whether the page's drawn lines could make a grid of at least two rows or two columns.

    A table the finder can see needs vertical and horizontal rules that cross; one box around a code
    listing (two of each) makes a single cell, which is not a table. Rectangles and multi-segment
    paths count by their axis-parallel segments, as pdfplumber counts them.
    """
    xs: list[float] = []
    ys: list[float] = []
    point_x, point_y = ctypes.c_float(), ctypes.c_float()
    matrix = pdfium_c.FS_MATRIX()
    for index in range(pdfium_c.FPDFPage_CountObjects(page)):
        obj = pdfium_c.FPDFPage_GetObject(page, index)
        if pdfium_c.FPDFPageObj_GetType(obj) != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        pdfium_c.FPDFPageObj_GetMatrix(obj, matrix)
        start = previous = None
        for seg_index in range(pdfium_c.FPDFPath_CountSegments(obj)):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, seg_index)
            pdfium_c.FPDFPathSegment_GetPoint(segment, point_x, point_y)
            px, py = point_x.value, point_y.value
            point = (matrix.a * px + matrix.c * py + matrix.e, matrix.b * px + matrix.d * py + matrix.f)
            if pdfium_c.FPDFPathSegment_GetType(segment) == pdfium_c.FPDF_SEGMENT_MOVETO or previous is None:
                start = previous = point
                continue
            edges = [(previous, point)]
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                edges.append((point, start))
            for (x0, y0), (x1, y1) in edges:
                if abs(x0 - x1) <= MAX_RULE_SLANT and abs(y0 - y1) > MIN_RULE_LENGTH:
                    xs.append((x0 + x1) / 2)
                elif abs(y0 - y1) <= MAX_RULE_SLANT and abs(x0 - x1) > MIN_RULE_LENGTH:
                    ys.append((y0 + y1) / 2)
            previous = point
    columns, rows = _distinct(xs), _distinct(ys)
    return columns >= 2 and rows >= 2 and max(columns, rows) >= 3
