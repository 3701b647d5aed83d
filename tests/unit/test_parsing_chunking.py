"""Chunking on block boundaries, section context in embed, tables kept whole or split by rows."""

from __future__ import annotations

from librarian.parsing.blocks import SECTION_HEADER, TEXT, TITLE, ParsedBlock, whole_page
from librarian.parsing.chunking import chunk_blocks, split_text
from librarian.parsing.markdown import markdown_blocks
from librarian.parsing.tables import table_block


def text(content: str, page: int = 1) -> ParsedBlock:
    return ParsedBlock(type=TEXT, content=content, bbox=whole_page(page))


def heading(content: str, level: int = 1) -> ParsedBlock:
    return ParsedBlock(
        type=SECTION_HEADER if level else TITLE, content=content, bbox=whole_page(), level=level
    )


def test_blocks_are_packed_up_to_the_size_and_never_split() -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 40 for i in range(12)]  # ~215 chars each
    chunks = chunk_blocks([text(p) for p in paragraphs], chunk_size=500)
    assert len(chunks) == 6
    assert [b["content"] for c in chunks for b in c["blocks"]] == paragraphs
    assert all(len(c["content"]) <= 500 for c in chunks)


def test_an_oversized_block_splits_on_sentences() -> None:
    sentences = [f"Sentence number {i} talks about ducks and lakes." for i in range(40)]
    chunks = chunk_blocks([text(" ".join(sentences))], chunk_size=300)
    assert len(chunks) > 1 and all(len(c["content"]) <= 300 for c in chunks)
    assert all(c["content"].endswith(".") for c in chunks)  # cut between sentences only
    assert " ".join(c["content"] for c in chunks) == " ".join(sentences)


def test_split_text_handles_words_longer_than_the_size() -> None:
    parts = split_text("a" * 250 + " tail", 100)
    assert all(len(p) <= 100 for p in parts) and "".join(parts).replace(" ", "") == "a" * 250 + "tail"


def test_section_path_prefixes_embed_but_not_content() -> None:
    blocks = [
        heading("Guide", 0),
        heading("Install", 1),
        text("x " * 200),
        heading("Linux", 2),
        text("y " * 200),
        heading("Usage", 1),
        text("z " * 200),
    ]
    chunks = chunk_blocks(blocks, chunk_size=450)
    by_first = {c["blocks"][0]["content"]: c for c in chunks}
    assert by_first["Linux"]["embed"].startswith("Section: Guide > Install\nLinux")
    assert by_first["Usage"]["embed"].startswith("Section: Guide\nUsage")  # the sibling is gone
    assert not any(c["content"].startswith("Section:") for c in chunks)


def test_a_chunk_never_ends_on_a_heading() -> None:
    blocks = [text("a" * 380), heading("Next section"), text("b" * 300)]
    chunks = chunk_blocks(blocks, chunk_size=400)
    assert [b["type"] for b in chunks[0]["blocks"]] == [TEXT]
    assert chunks[1]["blocks"][0]["content"] == "Next section"


def test_a_table_stays_in_one_chunk() -> None:
    rows = [["Name", "Value"]] + [[f"item {i}", str(i)] for i in range(10)]
    table = table_block(rows, whole_page())
    assert table is not None
    chunks = chunk_blocks([text("intro " * 60), table, text("outro")], chunk_size=500)
    holding = [c for c in chunks if any(b["type"] == "Table" for b in c["blocks"])]
    assert len(holding) == 1 and "item 9" in holding[0]["content"] and "item 0" in holding[0]["content"]
    assert "Row 10: Name is item 9; Value is 9." in holding[0]["embed"]


def test_a_huge_table_splits_by_rows_with_the_header_repeated() -> None:
    rows = [["Name", "Value"]] + [[f"item {i}", "v" * 20] for i in range(60)]
    table = table_block(rows, whole_page())
    assert table is not None
    chunks = chunk_blocks([table], chunk_size=400)
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk["content"].startswith("| Name | Value |") and len(chunk["content"]) <= 400
    numbers = [line.split(":")[0] for c in chunks for line in c["embed"].splitlines()]
    assert numbers == [f"Row {i}" for i in range(1, 61)]  # row numbers continue across parts


def test_markdown_structure_maps_to_block_types() -> None:
    source = (
        "# Title\n\nIntro text.\n\n## Part\n\n- one\n- two\n  - nested\n\n| A | B |\n|---|---|\n| 1 | 2 |\n"
    )
    blocks, pages = markdown_blocks(source)
    assert pages == 1
    assert [(b.type, b.content) for b in blocks] == [
        ("Title", "Title"),
        ("Text", "Intro text."),
        ("Section Header", "Part"),
        ("List Item", "- one"),
        ("List Item", "- two"),
        ("List Item", "  - nested"),
        ("Table", "| A | B |\n| --- | --- |\n| 1 | 2 |"),
    ]
    assert blocks[-1].embed == "Row 1: A is 1; B is 2."


def test_slide_markers_become_pages() -> None:
    blocks, pages = markdown_blocks(
        "<!-- Slide number: 1 -->\n# Hello\n\n<!-- Slide number: 2 -->\nSecond slide text\n"
    )
    assert pages == 2
    assert [(b.content, b.bbox["page"]) for b in blocks] == [("Hello", 1), ("Second slide text", 2)]


def test_a_long_paragraph_fills_the_chunk_it_follows() -> None:
    """A title before a long abstract opens the abstract's first chunk instead of standing alone."""
    title = "Ducks of the northern lakes."
    sentences = [f"Sentence {i} says something about ducks and lakes." for i in range(40)]
    chunks = chunk_blocks([text(title), text(" ".join(sentences))], chunk_size=400)
    assert chunks[0]["content"].startswith(title + "\n\n" + sentences[0])
    assert all(len(c["content"]) <= 400 for c in chunks)
    assert all(c["content"].endswith(".") for c in chunks)  # still cut between sentences only
    body = " ".join(c["content"] for c in chunks).replace(title + "\n\n", "", 1)
    assert body == " ".join(sentences)


def test_a_nearly_full_chunk_is_not_topped_up_with_a_fragment() -> None:
    first = "Opening paragraph. " + "word " * 66  # ~350 of 400 characters
    long = " ".join(f"Sentence {i} is short." for i in range(60))
    chunks = chunk_blocks([text(first), text(long)], chunk_size=400)
    assert chunks[0]["content"] == first
    assert chunks[1]["content"].startswith("Sentence 0 is short.")


def test_a_block_that_fits_a_chunk_is_never_cut_to_fill_the_previous_one() -> None:
    short, medium = "A short opening paragraph.", "Medium. " * 47  # fits a chunk, not both
    chunks = chunk_blocks([text(short), text(medium.strip())], chunk_size=400)
    assert [c["content"] for c in chunks] == [short, medium.strip()]
