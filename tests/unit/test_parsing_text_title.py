"""Plain text: a lone first line before more text is the document's title and names later chunks."""

from __future__ import annotations

from librarian.parsing.blocks import TEXT, TITLE
from librarian.parsing.local import LocalParser
from librarian.parsing.text import text_blocks

ABSTRACT = " ".join(f"Finding {i} links duck migration to lake temperature." for i in range(60))


def test_a_lone_first_line_is_the_title() -> None:
    blocks = text_blocks("Migration of northern ducks.\n\n" + ABSTRACT)
    assert [b.type for b in blocks] == [TITLE, TEXT]
    assert blocks[0].level == 0 and blocks[0].content == "Migration of northern ducks."


def test_later_chunks_embed_the_title_but_do_not_display_it() -> None:
    data = ("Migration of northern ducks.\n\n" + ABSTRACT).encode()
    chunks = LocalParser(chunk_size=1000).parse(data, "ducks.txt", "text/plain")["chunks"]
    assert len(chunks) >= 3
    assert chunks[0]["content"].startswith("Migration of northern ducks.\n\nFinding 0 ")
    for chunk in chunks[1:]:
        assert chunk["embed"].startswith("Section: Migration of northern ducks.\n")
        assert "Migration" not in chunk["content"]


def test_what_is_not_a_title() -> None:
    assert [b.type for b in text_blocks("Only one paragraph here.")] == [TEXT]
    assert text_blocks("Dear team,\n\n" + ABSTRACT)[0].type == TEXT
    assert text_blocks("Agenda:\n\n" + ABSTRACT)[0].type == TEXT
    assert text_blocks("- first item\n\n" + ABSTRACT)[0].type != TITLE
    assert text_blocks("line one\nline two\n\n" + ABSTRACT)[0].type == TEXT
    assert text_blocks("x" * 201 + "\n\n" + ABSTRACT)[0].type == TEXT
