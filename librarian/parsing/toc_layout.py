"""Apply the table-of-contents rule (`toc`) to PDF page layouts and to table blocks.

PDF lines are judged before they are joined into paragraphs: joined, a contents page is one long
"paragraph" of entries in which no line boundary is left to decide on. Lines are read page after page
in the order `page_blocks` reads them, so a contents list that runs over several pages stays one run.
Tables are cleaned by rows, so a table keeps its structure and only its contents-entry rows go.
"""

from __future__ import annotations

from collections.abc import Sequence

from librarian.parsing.blocks import TABLE, ParsedBlock
from librarian.parsing.layout import PageLayout
from librarian.parsing.tables import table_block
from librarian.parsing.toc import drop_toc, is_entry_row


def remove_toc_lines(pages: Sequence[PageLayout]) -> int:
    """Remove table-of-contents, index and list-of-figures lines from `pages` in place; returns the
    number of lines removed."""
    ordered = [line for page in pages for line in sorted(page.lines, key=lambda line: (line.top, line.x0))]
    doomed = {id(ordered[i]) for i in drop_toc([line.text for line in ordered])}
    if doomed:
        for page in pages:
            page.lines = [line for line in page.lines if id(line) not in doomed]
    return len(doomed)


def strip_toc_rows(blocks: Sequence[ParsedBlock]) -> tuple[list[ParsedBlock], int]:
    """Blocks with contents-entry rows taken out of their tables (a table of nothing but entries
    goes), and the number of rows removed."""
    kept: list[ParsedBlock] = []
    removed = 0
    for block in blocks:
        if block.type != TABLE or not block.rows:
            kept.append(block)
            continue
        rows = [row for row in block.rows if not is_entry_row(row)]
        if len(rows) == len(block.rows):
            kept.append(block)
            continue
        removed += len(block.rows) - len(rows)
        rebuilt = table_block(rows, block.bbox) if rows else None
        if rebuilt is not None:
            kept.append(rebuilt)
    return kept, removed
