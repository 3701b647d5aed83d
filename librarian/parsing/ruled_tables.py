"""Ruled tables on a PDF page: pdfplumber's table finder run on the characters and edges pdfium read.

The finder only needs a page's characters, edges and box, so `RuledPage` hands it those without a
pdfplumber `Page`, whose objects come from pdfminer interpreting the whole page in Python again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pdfplumber.table import Table, TableFinder, TableSettings
from pdfplumber.utils import crop_to_bbox

from librarian.parsing.blocks import ParsedBlock
from librarian.parsing.layout import PageLayout, to_bbox
from librarian.parsing.tables import table_block, unstack_rows

BBox = tuple[float, float, float, float]  # x0, top, x1, bottom in points
JOIN = 1.0  # points; rule segments this close are one rule
MIN_GRID_FILL = 0.5
# A cell of this many lines or words is a paragraph in a frame, not a table cell (the Redbook's back
# cover frames a 15-line blurb; the example documents' table cells are far shorter).
FRAME_LINES = 10
FRAME_WORDS = 80  # share of a table's grid that must be real cells (not spans) to count as a table


@dataclass
class RuledPage:
    """What pdfplumber's TableFinder and Table.extract read of a page: `chars`, `edges`, `bbox`."""

    bbox: BBox
    chars: list[dict[str, Any]]
    edges: list[dict[str, Any]]

    @property
    def horizontal_edges(self) -> list[dict[str, Any]]:
        return [e for e in self.edges if e["orientation"] == "h"]

    def crop(self, bbox: BBox) -> RuledPage:
        """Objects clipped to `bbox`, as pdfplumber's non-strict `Page.crop` clips them."""
        return RuledPage(bbox, crop_to_bbox(self.chars, bbox), crop_to_bbox(self.edges, bbox))

    def find_tables(self, settings: dict[str, Any] | None = None) -> list[Table]:
        return TableFinder(self, TableSettings.resolve(settings)).tables


def _widened(page: RuledPage, bbox: BBox) -> BBox:
    """Stretch a table's box to the rules that bound it.

    Booktabs-style tables draw full-width rules but inner column lines only, so the finder's grid
    misses the outer columns; their cells would otherwise leak out as stray text lines. Rules are
    often drawn cell by cell, so touching segments are joined first. Column lines that run past the
    top or bottom rule (a header row without a rule above it, a last row without one below) extend
    the box to where they end.
    """
    x0, top, x1, bottom = bbox
    spans = sorted((e["x0"], e["x1"]) for e in page.horizontal_edges if top - 1 <= e["top"] <= bottom + 1)
    left, right = x0, x1
    while True:  # grows on each pass, to ends of finitely many segments, so it stops
        joined = [(a, b) for a, b in spans if b >= left - JOIN and a <= right + JOIN]
        wider = min([left, *(a for a, _ in joined)]), max([right, *(b for _, b in joined)])
        if wider == (left, right):
            break
        left, right = wider
    columns = [e for e in page.edges if e["orientation"] == "v" and left - 1 <= e["x0"] <= right + 1]
    columns = [e for e in columns if e["bottom"] >= top - 1 and e["top"] <= bottom + 1]
    top = min([top, *(e["top"] for e in columns)])
    bottom = max([bottom, *(e["bottom"] for e in columns)])
    return left, top, right, bottom


def _is_grid(rows: list[list[str | None]]) -> bool:
    """Reject layout boxes the finder mistakes for tables (figures, sidebars, one-column frames)."""
    if len(rows) < 2 or max((len(r) for r in rows), default=0) < 2:
        return False
    cells = [cell for row in rows for cell in row]
    return sum(cell is not None for cell in cells) / len(cells) >= MIN_GRID_FILL


def _is_text_frame(rows: list[list[str | None]]) -> bool:
    """A box drawn around prose (a cover's blurb, a sidebar): some cell holds a whole paragraph."""
    return any(
        cell.count("\n") + 1 >= FRAME_LINES or len(cell.split()) >= FRAME_WORDS
        for row in rows
        for cell in row
        if cell
    )


def ruled_tables(page: RuledPage, layout: PageLayout) -> list[tuple[BBox, ParsedBlock]]:
    """Each table found on the page: its box in points, and its Table block."""
    found = []
    for table in page.find_tables():
        bbox, rows = table.bbox, table.extract()
        if _is_text_frame(rows):  # widening a frame around text would only take in more frames
            continue
        wide = _widened(page, bbox)
        if any(abs(a - b) > 2 for a, b in zip(wide, bbox, strict=True)):
            region = page.crop((wide[0] - 1, wide[1] - 1, wide[2] + 1, wide[3] + 1))
            redone = region.find_tables(
                {
                    "explicit_vertical_lines": [wide[0], wide[2]],
                    "explicit_horizontal_lines": [wide[1], wide[3]],
                }
            )
            if redone:
                best = max(redone, key=lambda t: (t.bbox[2] - t.bbox[0]) * (t.bbox[3] - t.bbox[1]))
                bbox, rows = best.bbox, best.extract()
        if not _is_grid(rows) or _is_text_frame(rows):
            continue
        block = table_block(unstack_rows(rows), to_bbox(layout, *bbox))
        if block is not None:
            found.append((bbox, block))
    return found
