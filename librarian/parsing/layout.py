"""Positioned words to typed blocks: lines, paragraphs, headings by font size, list items.

Shared by the PDF text layer and OCR output, which both come down to words with boxes. Geometry is in
points with the origin at the page's top-left; blocks leave with Reducto's page-fraction bboxes.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from librarian.parsing.blocks import LIST_ITEM, SECTION_HEADER, TEXT, TITLE, ParsedBlock
from librarian.parsing.types import BBox

_CID = re.compile(r"\(cid:\d+\)")
_LEADING_CIDS = re.compile(r"^(?:\(cid:\d+\)\s*)+")
_BRACKET_SPACE = re.compile(r"([(\[])\s+|\s+([)\]])")
_BULLET = re.compile(r"^(?:[•●○◦▪▫■□‣⁃∙·*»➢➤►✓–—-]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s+\S")
_BOLD_FONT = re.compile(r"bold|black|heavy|demi|semibold|bx\d", re.IGNORECASE)

HEADING_RATIO = 1.15  # a line this much larger than body text is a heading
MAX_HEADING_CHARS = 200
MIN_COLUMN_GAP = 4.0  # points; narrower gaps are word spaces (a cheap test before the full one)
OPEN_BLOCKS = 6  # a line may continue any of the last few blocks: side-by-side columns interleave lines
CUT_TOLERANCE = 0.002  # page fraction by which boxes may overlap and still be cut apart in reading order


@dataclass
class Line:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    bold: bool


@dataclass
class PageLayout:
    number: int  # 1-based
    width: float
    height: float
    lines: list[Line] = field(default_factory=list)
    tables: list[ParsedBlock] = field(default_factory=list)


def to_bbox(page: PageLayout, x0: float, top: float, x1: float, bottom: float) -> BBox:
    def frac(value: float, whole: float) -> float:
        return round(min(max(value / whole, 0.0), 1.0), 4) if whole else 0.0

    left, upper = frac(x0, page.width), frac(top, page.height)
    return BBox(
        page=page.number,
        left=left,
        top=upper,
        width=round(frac(x1, page.width) - left, 4),
        height=round(frac(bottom, page.height) - upper, 4),
    )


def clean_text(text: str) -> str:
    """Undo extraction artefacts: unmapped glyphs at a line start are bullets, elsewhere noise."""
    text = _LEADING_CIDS.sub("• ", text)
    text = " ".join(_CID.sub("", text).split())
    return _BRACKET_SPACE.sub(lambda m: m.group(1) or m.group(2), text)  # "( X )" from tight kerning


def _line_from(words: Sequence[dict[str, Any]]) -> Line | None:
    text = clean_text(" ".join(w["text"] for w in words))
    if not text:
        return None
    sizes = [float(w.get("size") or (w["bottom"] - w["top"])) for w in words]
    return Line(
        text=text,
        x0=min(w["x0"] for w in words),
        x1=max(w["x1"] for w in words),
        top=min(w["top"] for w in words),
        bottom=max(w["bottom"] for w in words),
        size=round(statistics.median(sizes), 1),
        bold=all(_BOLD_FONT.search(str(w.get("fontname", ""))) for w in words),
    )


def _size_of(word: dict[str, Any]) -> float:
    return float(word.get("size") or (word["bottom"] - word["top"]))


def _column_gap(left: dict[str, Any], right: dict[str, Any]) -> bool:
    """Whether the space between two words on one baseline separates columns: wide, or wider than an
    em where the type size changes after a word (a side heading next to body text; not a bullet,
    which is often set in another size)."""
    gap = right["x0"] - left["x1"]
    size, before = _size_of(right), _size_of(left)
    if gap > max(3 * size, 20):
        return True
    changes = abs(size - before) > 0.1 * max(size, before)
    return changes and gap > max(size, before) and sum(c.isalpha() for c in left["text"]) >= 2


def group_lines(words: Iterable[dict[str, Any]]) -> list[Line]:
    """Words to lines by vertical overlap, split where a gap is wide enough to separate columns."""
    rows: list[list[dict[str, Any]]] = []
    for word in sorted(words, key=lambda w: (w["top"], w["x0"])):
        middle = (word["top"] + word["bottom"]) / 2
        if rows and rows[-1][0]["top"] - 1 <= middle <= rows[-1][0]["bottom"] + 1:
            rows[-1].append(word)
        else:
            rows.append([word])
    lines: list[Line] = []
    for row in rows:
        row.sort(key=lambda w: w["x0"])
        segment = [row[0]]
        for word in row[1:]:
            if word["x0"] - segment[-1]["x1"] > MIN_COLUMN_GAP and _column_gap(segment[-1], word):
                lines.extend(filter(None, [_line_from(segment)]))
                segment = []
            segment.append(word)
        lines.extend(filter(None, [_line_from(segment)]))
    return lines


def body_size(pages: Iterable[PageLayout]) -> float:
    """The font size carrying the most characters: what the document's prose is set in."""
    weights: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 10.0


def _is_heading(line: Line, body: float) -> bool:
    if len(line.text) > MAX_HEADING_CHARS or not any(c.isalpha() for c in line.text):
        return False
    if line.size >= body * HEADING_RATIO:
        return True
    return line.bold and line.size >= body * 0.95 and len(line.text) <= 120 and not line.text.endswith(".")


def heading_levels(pages: Iterable[PageLayout], body: float) -> dict[float, int]:
    """Level per heading font size, largest first; bold body-size headings sit one level deeper."""
    sizes = sorted(
        {line.size for page in pages for line in page.lines if line.size >= body * HEADING_RATIO},
        reverse=True,
    )
    return {size: index + 1 for index, size in enumerate(sizes)}


@dataclass
class _Open:
    kind: str  # "heading", "text" or "list"
    lines: list[Line]


def _continues(block: _Open, line: Line, kind: str, body: float) -> bool:
    last = block.lines[-1]
    gap = line.top - last.bottom
    if gap > max(last.size, line.size) * 0.7 or gap < -last.size:
        return False
    if line.x1 < block.lines[0].x0 or line.x0 > max(item.x1 for item in block.lines):
        return False  # no horizontal overlap: another column
    if kind == "list":
        return False  # a bullet always opens an item
    if block.kind == "heading":
        return kind == "heading" and abs(line.size - last.size) < 0.5 and line.bold == last.bold
    if kind == "heading":
        return False
    if block.kind == "list":
        return line.x0 > block.lines[0].x0 + 1
    if abs(line.size - last.size) > body * 0.1:
        return False
    return not line.x0 > last.x0 + 0.8 * line.size  # an indented first line opens a paragraph


def _join(lines: Sequence[Line]) -> str:
    text = ""
    for line in lines:
        if text.endswith("-") and line.text[:1].islower():
            text += line.text  # "self-" + "publishing": keep the hyphen, drop the break
        else:
            text = f"{text} {line.text}" if text else line.text
    return text


def page_blocks(page: PageLayout, body: float, levels: dict[float, int]) -> list[ParsedBlock]:
    """Paragraphs, headings and list items of one page, interleaved with its tables by position."""
    opened: list[_Open] = []
    for line in sorted(page.lines, key=lambda item: (item.top, item.x0)):
        kind = "heading" if _is_heading(line, body) else "list" if _BULLET.match(line.text) else "text"
        target = next((b for b in reversed(opened[-OPEN_BLOCKS:]) if _continues(b, line, kind, body)), None)
        if target is None:
            opened.append(_Open(kind, [line]))
        else:
            target.lines.append(line)
    deepest = max(levels.values(), default=0) + 1
    blocks = []
    for block in opened:
        lines = block.lines
        bbox = to_bbox(
            page,
            min(x.x0 for x in lines),
            min(x.top for x in lines),
            max(x.x1 for x in lines),
            max(x.bottom for x in lines),
        )
        if block.kind == "heading":
            kind, level = SECTION_HEADER, levels.get(lines[0].size, deepest)
        else:
            kind, level = (LIST_ITEM if block.kind == "list" else TEXT), 0
        blocks.append(ParsedBlock(type=kind, content=_join(lines), bbox=bbox, level=level))
    return reading_order([*blocks, *page.tables])


def _bands(blocks: list[ParsedBlock], start: str, extent: str) -> list[list[ParsedBlock]]:
    """Blocks grouped into runs along one axis that no block bridges (rows for "top", columns for
    "left")."""
    ordered = sorted(blocks, key=lambda b: b.bbox[start])
    groups: list[list[ParsedBlock]] = []
    end = -1.0
    for block in ordered:
        if not groups or block.bbox[start] >= end - CUT_TOLERANCE:
            groups.append([])
        groups[-1].append(block)
        end = max(end, block.bbox[start] + block.bbox[extent])
    return groups


def reading_order(blocks: list[ParsedBlock]) -> list[ParsedBlock]:
    """Blocks in reading order by recursive XY-cut: first into horizontal bands no block bridges,
    then each band into side-by-side columns, so a side column or sidebar is read after the text
    beside it rather than line by line into its sentences. Bands come first: a list of terms with
    their descriptions beside them is read row by row."""
    if len(blocks) > 1:
        for start, extent in (("top", "height"), ("left", "width")):
            groups = _bands(blocks, start, extent)
            if len(groups) > 1:
                return [block for group in groups for block in reading_order(group)]
    return sorted(blocks, key=lambda b: (b.bbox["top"], b.bbox["left"]))


def document_blocks(pages: Sequence[PageLayout]) -> list[ParsedBlock]:
    """All blocks in reading order; the first heading near the top of page 1 becomes the Title."""
    body = body_size(pages)
    levels = heading_levels(pages, body)
    blocks = [block for page in pages for block in page_blocks(page, body, levels)]
    for block in blocks[:3]:
        if block.is_heading and block.bbox["page"] == 1:
            block.type, block.level = TITLE, 0
            break
    return blocks
