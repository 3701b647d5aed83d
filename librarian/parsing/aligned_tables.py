"""Tables without ruling lines: rows of short entries whose columns start at the same x on every row.

The FHS lists files as "name | description" in two text-aligned columns with no lines to find. Read
as prose, the names merge into one paragraph and the descriptions into another, and every row loses
its name. A run of at least MIN_ROWS lines (bands) whose pieces start at the same column positions
becomes a Table block instead; a line that starts at the last column's position alone continues the
description above it. Two-column prose also aligns, so the first column must hold short entries,
not lines that fill it.
"""

from __future__ import annotations

import statistics

from librarian.parsing.blocks import ParsedBlock
from librarian.parsing.layout import Line, PageLayout, to_bbox
from librarian.parsing.tables import table_block

ALIGN = 2.0  # points by which column starts (and a band's tops) may differ
MIN_ROWS = 3  # header plus two rows: fewer is a label and its value, not a table
MAX_LEAD_FILL = 0.7  # the first column's entries fill at most this share of the space to the second
ROW_GAP = 2.0  # rows further apart than this many line heights end the table

Cell = list[Line]


def _bands(lines: list[Line]) -> list[list[Line]]:
    """Lines on the same baseline, left to right, top to bottom."""
    bands: list[list[Line]] = []
    for line in sorted(lines, key=lambda item: (item.top, item.x0)):
        if bands and abs(line.top - bands[-1][0].top) <= ALIGN:
            bands[-1].append(line)
        else:
            bands.append([line])
    for band in bands:
        band.sort(key=lambda item: item.x0)
    return bands


def _aligned(band: list[Line], starts: list[float]) -> bool:
    return len(band) == len(starts) and all(
        abs(line.x0 - x) <= ALIGN for line, x in zip(band, starts, strict=True)
    )


def _bottom(row: list[Cell]) -> float:
    return max(line.bottom for cell in row for line in cell)


def _run(bands: list[list[Line]], first: int) -> list[list[Cell]]:
    """Rows of the table starting at band `first`: aligned bands, with continuation lines."""
    starts = [line.x0 for line in bands[first]]
    rows: list[list[Cell]] = [[[line] for line in bands[first]]]
    for band in bands[first + 1 :]:
        gap = band[0].top - _bottom(rows[-1])
        if gap > ROW_GAP * band[0].size:
            break
        if _aligned(band, starts):
            rows.append([[line] for line in band])
        elif len(band) == 1 and abs(band[0].x0 - starts[-1]) <= ALIGN and gap <= 0.7 * band[0].size:
            rows[-1][-1].append(band[0])  # a wrapped last cell
        else:
            break
    return rows


def _is_tabular(rows: list[list[Cell]]) -> bool:
    """Short entries in the first column; prose would fill it up to the next column."""
    if len(rows) < MIN_ROWS:
        return False
    room = rows[0][1][0].x0 - rows[0][0][0].x0
    fills = [max(line.x1 for line in row[0]) - row[0][0].x0 for row in rows]
    return room > 0 and statistics.median(fills) <= MAX_LEAD_FILL * room


def aligned_tables(page: PageLayout) -> list[ParsedBlock]:
    """Take the page's text-aligned tables out of `page.lines` and return them as Table blocks."""
    bands = _bands(page.lines)
    taken: set[int] = set()
    found: list[ParsedBlock] = []
    index = 0
    while index < len(bands):
        rows = _run(bands, index) if len(bands[index]) >= 2 else []
        if not _is_tabular(rows):
            index += 1
            continue
        lines = [line for row in rows for cell in row for line in cell]
        cells = [[" ".join(line.text for line in cell) for cell in row] for row in rows]
        box = (
            min(x.x0 for x in lines),
            min(x.top for x in lines),
            max(x.x1 for x in lines),
            _bottom(rows[-1]),
        )
        block = table_block(cells, to_bbox(page, *box))
        if block is not None:
            found.append(block)
            taken.update(id(line) for line in lines)
        index += sum(1 + sum(len(cell) - 1 for cell in row) for row in rows)
    if taken:
        page.lines = [line for line in page.lines if id(line) not in taken]
    return found
