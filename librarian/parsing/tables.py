"""Tables as Reducto's embedding-optimised mode presents them: Markdown to show, sentences to embed.

A Markdown grid embeds poorly (pipes and dashes dominate short cells, and a cell loses its column
name), so each row is also flattened into "Row 1: Column A is x; Column B is y." for the vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

from librarian.parsing.blocks import TABLE, ParsedBlock
from librarian.parsing.types import BBox

MAX_STACKED_WORDS = 3  # a cell line longer than this is wrapped prose, not one of several stacked values


def clean_cell(value: object) -> str:
    """One-line cell text: merged cells arrive as None and wrapped cells with newlines."""
    if value is None:
        return ""
    return " ".join(str(value).replace("/\n", "/").split())  # a path wrapped after a slash is one path


def unstack_rows(rows: Sequence[Sequence[str | None]]) -> list[list[str | None]]:
    """Split a row whose cells stack the same number of short lines into one row per line.

    Booktabs-style tables rule only between groups of rows, so the table finder sees a group as one
    row and each cell holds a value per real row ("OTSL\nHTML", "0.965\n0.969"); joined, a cell would
    mix two rows' values. A cell with one line spans the group and is repeated in each row. Lines of
    more than a few words are wrapped text, not stacked values, so such rows are left as they are, and
    so is the header row, whose names wrap in narrow columns.
    """
    result: list[list[str | None]] = [list(row) for row in rows[:1]]
    for row in rows[1:]:
        lines = [cell.split("\n") if cell else [] for cell in row]
        tall = [cell_lines for cell_lines in lines if len(cell_lines) > 1]
        heights = {len(cell_lines) for cell_lines in tall}
        short = all(len(line.split()) <= MAX_STACKED_WORDS for cell_lines in tall for line in cell_lines)
        if len(tall) < 2 or len(heights) != 1 or not short:
            result.append(list(row))
            continue
        height = heights.pop()
        for index in range(height):
            result.append(
                [
                    cell_lines[index] if len(cell_lines) == height else cell
                    for cell_lines, cell in zip(lines, row, strict=True)
                ]
            )
    return result


def normalize_rows(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    """Rectangular rows without empty rows or columns; a blank header row gives way to the next row."""
    cleaned = [[clean_cell(c) for c in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return []
    width = max(len(row) for row in cleaned)
    cleaned = [row + [""] * (width - len(row)) for row in cleaned]
    keep = [i for i in range(width) if any(row[i] for row in cleaned)]
    return [[row[i] for i in keep] for row in cleaned]


def to_markdown(rows: list[list[str]]) -> str:
    header, *body = rows
    width = len(header)

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "| " + " | ".join(["---"] * width) + " |", *map(line, body)])


def column_names(header: list[str]) -> list[str]:
    return [name or f"Column {i + 1}" for i, name in enumerate(header)]


def flatten(rows: list[list[str]], first_row_number: int = 1) -> str:
    """Sentence form of a table for embedding; empty cells are left out rather than said as blank."""
    header, *body = rows
    names = column_names(header)
    if not body:  # a header-only table: its cells are the content
        return "Table: " + "; ".join(c for c in header if c) + "."
    sentences = []
    for number, row in enumerate(body, start=first_row_number):
        facts = [f"{name} is {cell}" for name, cell in zip(names, row, strict=True) if cell]
        if facts:
            sentences.append(f"Row {number}: " + "; ".join(facts) + ".")
    return "\n".join(sentences)


def table_block(rows: list[list[str]], bbox: BBox) -> ParsedBlock | None:
    """A Table block, or None when the rows hold no table (fewer than two non-empty cells)."""
    rows = normalize_rows(rows)
    if sum(1 for row in rows for c in row if c) < 2:
        return None
    return ParsedBlock(type=TABLE, content=to_markdown(rows), embed=flatten(rows), bbox=bbox, rows=rows)


def split_table(block: ParsedBlock, max_chars: int) -> list[ParsedBlock]:
    """Split an oversized table by rows, repeating the header so every part reads on its own."""
    rows = block.rows or []
    if len(block.content) <= max_chars or len(rows) < 3:
        return [block]
    header, body = rows[0], rows[1:]
    parts: list[ParsedBlock] = []
    group: list[list[str]] = []
    first = 1
    for row in body:
        candidate = [header, *group, row]
        if group and len(to_markdown(candidate)) > max_chars:
            parts.append(_part(block, [header, *group], first))
            first += len(group)
            group = []
        group.append(row)
    if group:
        parts.append(_part(block, [header, *group], first))
    return parts


def _part(block: ParsedBlock, rows: list[list[str]], first_row_number: int) -> ParsedBlock:
    return ParsedBlock(
        type=TABLE,
        content=to_markdown(rows),
        embed=flatten(rows, first_row_number),
        bbox=block.bbox,
        rows=rows,
    )
