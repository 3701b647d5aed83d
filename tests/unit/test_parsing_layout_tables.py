"""PDF layout on synthetic pages: stacked table rows, text-aligned tables, column reading order."""

from __future__ import annotations

from librarian.parsing.aligned_tables import aligned_tables
from librarian.parsing.blocks import TEXT, ParsedBlock
from librarian.parsing.layout import Line, PageLayout, group_lines, reading_order, to_bbox
from librarian.parsing.tables import unstack_rows


def line(text: str, x0: float, top: float, width: float = 40.0, size: float = 10.0) -> Line:
    return Line(text=text, x0=x0, x1=x0 + width, top=top, bottom=top + size, size=size, bold=False)


def word(text: str, x0: float, x1: float, top: float, size: float) -> dict:
    return {"text": text, "x0": x0, "x1": x1, "top": top, "bottom": top + size, "size": size, "fontname": "F"}


def test_a_row_group_with_one_value_per_line_becomes_one_row_per_line() -> None:
    rows = [["# layers", "Language", "TEDs"], ["6", "OTSL\nHTML", "0.965\n0.969"]]
    assert unstack_rows(rows) == [
        ["# layers", "Language", "TEDs"],
        ["6", "OTSL", "0.965"],
        ["6", "HTML", "0.969"],
    ]


def test_wrapped_prose_cells_and_the_header_are_not_unstacked() -> None:
    rows = [
        ["Column\nname", "Data\ntype"],
        ["USER_NAME", "Name of the user profile that\nhas a usage setting"],
    ]
    assert unstack_rows(rows) == rows
    mixed = [["a", "b"], ["x\ny", "p\nq\nr"]]  # different line counts: not one value per row
    assert unstack_rows(mixed) == mixed


def test_text_aligned_columns_become_a_table_with_wrapped_cells_joined() -> None:
    page = PageLayout(number=1, width=612, height=792)
    page.lines = [
        line("The following files are required:", 120, 80, width=300),
        line("File", 122, 100),
        line("Description", 332, 100),
        line("exports", 122, 116),
        line("NFS filesystem access control list", 332, 116, width=180),
        line("gettydefs", 122, 132),
        line("Speed and terminal settings used by getty", 332, 132, width=190),
        line("(optional)", 332, 144),
        line("group", 122, 160),
        line("User group file (optional)", 332, 160, width=120),
        line("A paragraph after the table.", 120, 200, width=300),
    ]
    [table] = aligned_tables(page)
    assert table.rows == [
        ["File", "Description"],
        ["exports", "NFS filesystem access control list"],
        ["gettydefs", "Speed and terminal settings used by getty (optional)"],
        ["group", "User group file (optional)"],
    ]
    assert [x.text for x in page.lines] == [
        "The following files are required:",
        "A paragraph after the table.",
    ]


def test_two_columns_of_prose_are_not_a_table() -> None:
    page = PageLayout(number=1, width=612, height=792)
    page.lines = [line(f"left column line {i} of prose", 72, 100 + 12 * i, width=220) for i in range(6)]
    page.lines += [line(f"right column line {i} of prose", 320, 100 + 12 * i, width=220) for i in range(6)]
    assert aligned_tables(page) == [] and len(page.lines) == 12


def test_a_side_heading_in_a_larger_size_is_not_glued_to_the_body_line() -> None:
    words = [
        word("Implement", 26.7, 77.5, 240.9, 12.0),
        word("and", 106.8, 124.6, 240.9, 12.0),
        word("This", 152.9, 168.3, 241.6, 9.96),
        word("IBM", 170.2, 184.5, 241.6, 9.96),
    ]
    assert [x.text for x in group_lines(words)] == ["Implement and", "This IBM"]
    bullet = [word("•", 100, 104, 100, 8.0), word("Text", 116, 140, 100, 10.0)]
    assert [x.text for x in group_lines(bullet)] == ["• Text"]


def test_side_by_side_columns_are_read_one_after_the_other() -> None:
    page = PageLayout(number=1, width=600, height=800)

    def block(text: str, x0: float, top: float, x1: float, bottom: float) -> ParsedBlock:
        return ParsedBlock(type=TEXT, content=text, bbox=to_bbox(page, x0, top, x1, bottom))

    blocks = [
        block("title", 20, 20, 580, 40),
        block("side 1", 20, 100, 140, 120),
        block("body", 150, 100, 440, 300),
        block("side 2", 20, 200, 140, 220),
        block("sidebar", 450, 90, 590, 280),
        block("footer text", 20, 400, 580, 420),
    ]
    order = [b.content for b in reading_order(sorted(blocks, key=lambda b: b.bbox["top"]))]
    assert order == ["title", "side 1", "side 2", "body", "sidebar", "footer text"]
    rows = [block("term", 20, 100, 60, 110), block("its description", 200, 100, 500, 110)]
    rows += [block("term 2", 20, 120, 60, 130), block("description 2", 200, 120, 500, 130)]
    assert [b.content for b in reading_order(rows)] == ["term", "its description", "term 2", "description 2"]
