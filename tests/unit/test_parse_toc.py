"""Tables of contents, indexes and lists of figures never become chunk text, in any format."""

from __future__ import annotations

import io
import re
import zipfile

from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.errors import DocumentError
from librarian.parsing.blocks import TABLE
from librarian.parsing.layout import Line, PageLayout
from librarian.parsing.local import LocalParser
from librarian.parsing.tables import table_block
from librarian.parsing.toc import Kind, classify, drop_toc, strip_toc_markdown
from librarian.parsing.toc_layout import remove_toc_lines, strip_toc_rows

LEADER_RUN = re.compile(r"\.{5,}|(?:\. ){4,}")

FHS_STYLE = """Dedication

This release is dedicated to the memory of a friend.

Table of Contents
1. Introduction .................................................. 1
1.1. Purpose ...................................................... 1
3.4. /bin : Essential user command binaries (for use by all users) ... 5
3.5. /boot : Static files of the boot loader ..................... 7

Chapter 1. Introduction

The /bin directory contains commands that may be used by both the system administrator and users.
"""

REDBOOK_STYLE = """Redpaper
Contents
Notices . . . . . . . . . . . . . . . . . . . . . . . vii
Trademarks . . . . . . . . . . . . . . . . . . . . . viii
Chapter 1. Securing and protecting IBM DB2 data . . . . . . 1
1.1 Security fundamentals. . . . . . . . . . . . . . . . . . 2
Preface
This paper is intended for database engineers.
"""


def kept(text: str) -> list[str]:
    lines = text.split("\n")
    drop = drop_toc(lines)
    return [line for i, line in enumerate(lines) if i not in drop and line.strip()]


def test_dot_leader_entries_and_their_heading_go_and_the_prose_stays() -> None:
    assert kept(FHS_STYLE) == [
        "Dedication",
        "This release is dedicated to the memory of a friend.",
        "Chapter 1. Introduction",
        "The /bin directory contains commands that may be used by both the system administrator and users.",
    ]


def test_spaced_leaders_and_roman_page_numbers_are_entries() -> None:
    assert kept(REDBOOK_STYLE) == ["Redpaper", "Preface", "This paper is intended for database engineers."]


def test_contents_without_leaders_goes_only_under_a_contents_heading() -> None:
    listing = "1 Introduction 3\n2 Installing the pump 5\n3 Maintenance 9"
    assert kept(f"Contents\n{listing}\nThe pump moves water.") == ["The pump moves water."]
    assert kept(f"Steps\n{listing}") == ["Steps", *listing.split("\n")]


def test_index_with_letters_and_page_lists_goes() -> None:
    index = "Index\nA\naccess control, 12, 45-47\nadministrator 3\nB\nbackup, 101\n"
    assert kept(index + "Notes\nWritten in 2014.") == ["Notes", "Written in 2014."]


def test_list_of_figures_goes() -> None:
    text = "List of Figures\nFigure 1-1 The pump ........ 4\nFigure 1-2 The valve ........ 6\nBody text."
    assert kept(text) == ["Body text."]


def test_a_wrapped_entry_goes_whole() -> None:
    text = "3.4. /bin : Essential user command binaries (for use\nby all users) ............ 5\nThe text."
    assert kept(text) == ["The text."]


def test_numbered_prose_and_tables_of_numbers_are_kept() -> None:
    prose = [
        "To install it:",
        "1. Unpack the archive into /opt 2",
        "2. Run the installer 3",
        "Sales in 2014 rose to 1200",
        "Contents of the box are listed below.",
        "Wait... then press the button.",
    ]
    assert kept("\n".join(prose)) == prose


def test_a_contents_heading_followed_by_prose_is_kept() -> None:
    text = "Contents\nThe package holds a pump, a valve and a manual."
    assert kept(text) == text.split("\n")


def test_the_rule_in_words() -> None:
    assert classify("Specific Options ........ 20") is Kind.ENTRY
    assert classify("........ 20") is Kind.ENTRY
    assert classify("Table of Contents") is Kind.HEADING
    assert classify("List of Tables") is Kind.HEADING
    assert classify("Preface xi") is Kind.CANDIDATE
    assert classify("Loading takes 20 seconds, as described below.") is Kind.OTHER
    assert classify("") is Kind.BLANK


def test_markdown_contents_of_anchor_links_goes_but_code_and_other_lists_stay() -> None:
    markdown = (
        "# Guide\n\n## Contents\n\n1. [Install](#install)\n    1. [Upgrade](#upgrade)\n2. [Use](#use)\n\n"
        "## Install\n\nRun `pip install pump`.\n\n```\nstep one ........ 1\n```\n\n"
        "- [Pump docs](https://example.org/pump)\n- [Valve docs](https://example.org/valve)\n"
    )
    cleaned, removed = strip_toc_markdown(markdown)
    assert removed == 4
    assert "Contents" not in cleaned and "(#install)" not in cleaned and "(#upgrade)" not in cleaned
    assert "step one ........ 1" in cleaned  # code is quoted verbatim
    assert "[Pump docs](https://example.org/pump)" in cleaned


def _docx(body: str) -> bytes:
    """A minimal real .docx (markitdown reads it as Word would write it)."""
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    document = f'<?xml version="1.0" encoding="UTF-8"?><w:document {w}><w:body>{body}</w:body></w:document>'
    types = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType='
        '"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Target="word/document.xml" Type='
        '"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/>'
        "</Relationships>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", types)
        archive.writestr("_rels/.rels", rels)
        archive.writestr("word/document.xml", document)
    return buffer.getvalue()


def _paragraph(text: str) -> str:
    return f'<w:p><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def _toc_entry(title: str, page: int, anchor: str) -> str:
    return (
        f'<w:p><w:pPr><w:pStyle w:val="TOC1"/></w:pPr><w:hyperlink w:anchor="{anchor}">'
        f"<w:r><w:t>{title}</w:t></w:r><w:r><w:tab/></w:r><w:r><w:t>{page}</w:t></w:r></w:hyperlink></w:p>"
    )


def test_word_table_of_contents_is_in_no_chunk() -> None:
    body = (
        _paragraph("Contents")
        + _toc_entry("1 Introduction", 3, "_Toc101")
        + _toc_entry("2 Installing the pump", 5, "_Toc102")
        + _paragraph("The pump moves water uphill at 3 litres per second.")
    )
    result = LocalParser().parse(_docx(body), "pump.docx", "")
    text = "\n".join(chunk["content"] for chunk in result["chunks"])
    assert text == "The pump moves water uphill at 3 litres per second."
    assert any("table-of-contents" in note for note in result["notes"])


def test_plain_text_contents_is_in_no_chunk() -> None:
    result = LocalParser().parse(FHS_STYLE.encode(), "fhs.txt", "text/plain")
    text = "\n".join(chunk["content"] for chunk in result["chunks"])
    assert not LEADER_RUN.search(text) and "Table of Contents" not in text
    assert "The /bin directory contains commands" in text


def _line(text: str, top: float) -> Line:
    return Line(text=text, x0=72.0, x1=500.0, top=top, bottom=top + 10, size=10.0, bold=False)


def test_pdf_lines_of_a_contents_list_over_two_pages_go() -> None:
    first = PageLayout(number=1, width=612, height=792)
    first.lines = [
        _line("Purpose ...................... 3", 120),  # out of order: read by position
        _line("Table of Contents", 100),
        _line("Requirements ................. 4", 140),
    ]
    second = PageLayout(number=2, width=612, height=792)
    second.lines = [_line("Specific Options ............. 4", 100), _line("Chapter 1. Introduction", 200)]
    assert remove_toc_lines([first, second]) == 4
    assert first.lines == [] and [line.text for line in second.lines] == ["Chapter 1. Introduction"]


def test_table_rows_that_are_entries_go_and_the_table_keeps_its_structure() -> None:
    box = {"page": 1, "left": 0.0, "top": 0.0, "width": 1.0, "height": 1.0}
    table = table_block(
        [["Directory", "Purpose"], ["/bin ........", "12"], ["/etc", "Host-specific configuration"]],
        box,  # type: ignore[arg-type]
    )
    contents = table_block([["Purpose ......", "1"], ["Requirements ......", "2"]], box)  # type: ignore[arg-type]
    assert table is not None and contents is not None
    blocks, removed = strip_toc_rows([table, contents])
    assert removed == 3 and len(blocks) == 1
    assert blocks[0].type == TABLE
    assert blocks[0].rows == [["Directory", "Purpose"], ["/etc", "Host-specific configuration"]]


_WORDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=30))
def test_lines_without_a_leader_or_contents_pattern_are_never_dropped(lines: list[str]) -> None:
    drop = drop_toc(lines)
    for index in drop:
        assert classify(lines[index]) is not Kind.OTHER or (
            index + 1 < len(lines) and classify(lines[index + 1]) is Kind.ENTRY
        ), lines[index]
    if not any(classify(line) in (Kind.ENTRY, Kind.HEADING) for line in lines):
        assert drop == set()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            _WORDS,
            st.builds(
                lambda title, dots, page: f"{title} {'.' * dots} {page}",
                _WORDS,
                st.integers(4, 80),
                st.integers(1, 9999),
            ),
            st.sampled_from(["Contents", "Index", "List of Figures", "", "A", "Preface xi"]),
        ),
        max_size=30,
    )
)
def test_every_dot_leader_entry_goes_and_nothing_crashes(lines: list[str]) -> None:
    drop = drop_toc(lines)
    assert drop <= set(range(len(lines)))
    for index, line in enumerate(lines):
        if re.search(r"\.{4,} \d{1,4}$", line):
            assert index in drop, line
    markdown = "\n".join(lines)
    cleaned, removed = strip_toc_markdown(markdown)
    assert 0 <= removed <= len(lines)
    assert cleaned == markdown if removed == 0 else len(cleaned) < len(markdown)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(_WORDS, st.sampled_from(["Contents", "# Index", "| a ..... | 3 |", "```", "x ...... 9"])),
        max_size=20,
    ),
    st.sampled_from(["notes.md", "notes.txt"]),
)
def test_any_text_parses_or_is_empty_and_no_chunk_keeps_an_entry(lines: list[str], name: str) -> None:
    try:
        result = LocalParser(chunk_size=200).parse("\n".join(lines).encode(), name, "")
    except DocumentError:  # binary-looking or empty input has its own clear error
        return
    for chunk in result["chunks"]:
        for line in chunk["content"].split("\n"):
            assert classify(line) is not Kind.ENTRY or "```" in chunk["content"], chunk["content"]
