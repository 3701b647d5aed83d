"""What the extractive answerer quotes: cleaned sentences, table rows with their headers, one bullet per
fact even when two sources say it, and a separate block naming only the cited sources."""

from __future__ import annotations

import re

from librarian.answers.extractive import EXTRACTIVE_NOTICE, Quote, abstain, choose_quotes, compose
from librarian.answers.quotes import QuoteUnit, clean_quote, near_identical, quote_units
from librarian.retrieval.search import Source

WIKI = (
    "The mallard is a dabbling duck[[45]](#cite_note-45) that breeds throughout the temperate "
    '[Americas](https://en.wikipedia.org/wiki/Americas "Americas") and Eurasia.[3] '
    "![A drake](https://upload.example/drake.jpg) It is **strongly** migratory in the north."
)
TABLE = (
    "Table 2-1 lists the columns of the view.\n\n"
    "| Column name | Data type | Description |\n"
    "| --- | --- | --- |\n"
    "| USER_NAME | VARCHAR(10) | The name of the user profile |\n"
    "| AUTHORIZED | CHAR(3) | Whether the user is authorized to the function |\n"
)


def source(n: int, filename: str, page: int, text: str = "x") -> Source:
    return Source(
        id=f"docs/{filename}:{n}", score=1.0, text=text, path=f"docs/{filename}", filename=filename,
        page=page,
        bbox=None, blockType="Text", scores={"dense": None, "sparse": None, "fused": 1.0, "rerank": None},
    )  # fmt: skip


def test_quotes_carry_no_link_targets_footnote_markers_or_emphasis():
    cleaned = clean_quote(WIKI)
    assert "cite_note" not in cleaned and "](" not in cleaned and "https://" not in cleaned
    assert not re.search(r"\[\d+\]", cleaned)  # a bare [3] would read as one of the answer's citations
    assert "**" not in cleaned
    assert "dabbling duck that breeds throughout the temperate Americas and Eurasia." in cleaned
    assert "It is strongly migratory in the north." in cleaned


def test_each_quote_unit_keeps_the_raw_span_it_came_from():
    units = quote_units(WIKI)
    assert [u.text for u in units] == [
        "The mallard is a dabbling duck that breeds throughout the temperate Americas and Eurasia.",
        "It is strongly migratory in the north.",
    ]
    first = units[0]
    assert WIKI[first.start : first.end].startswith("The mallard is a dabbling duck[[45]]")


def test_table_rows_are_quoted_with_their_header_cells_and_the_header_row_never_alone():
    units = quote_units(TABLE)
    rows = [u for u in units if u.table_row]
    assert [u.text for u in rows] == [
        "Column name: USER_NAME; Data type: VARCHAR(10); Description: The name of the user profile",
        "Column name: AUTHORIZED; Data type: CHAR(3); "
        "Description: Whether the user is authorized to the function",
    ]
    assert all("| Column name |" not in TABLE[u.start : u.end] for u in units)  # no unit is the header line
    assert TABLE[rows[0].start : rows[0].end] == "| USER_NAME | VARCHAR(10) | The name of the user profile |"
    assert units[0].text == "Table 2-1 lists the columns of the view."


def test_pdf_and_html_twins_are_near_identical_and_different_facts_are_not():
    pdf = "/usr/bin : This is the primary directory of executable com- mands on the system."
    html = "`/usr/bin`: This is the primary directory of executable commands on the system."
    assert near_identical(pdf, html)
    assert not near_identical(html, "/usr/sbin: Non-essential standard system binaries are here.")


def quote(text: str, score: float, n: int, start: int = 0) -> Quote:
    return Quote(text, score, [n], QuoteUnit(text, start, start + len(text)), origin=n)


def test_near_identical_quotes_from_two_sources_become_one_bullet_citing_both():
    same = "The /usr/bin directory holds most user commands of the system."
    chosen = choose_quotes(
        [
            quote(same, 0.80, 1),
            quote("The /usr/bin directory holds most user commands of the system", 0.79, 2),
            quote("Games are kept under /usr/games on most systems today.", 0.50, 3),
        ],
        floor=0.35,
    )
    assert [q.markers for q in chosen] == [[1, 2], [3]]


def test_no_quote_clears_the_floor_means_no_quotes():
    assert choose_quotes([quote("Completely unrelated text about ducks.", 0.2, 1)], floor=0.35) == []


def test_sources_form_their_own_block_and_list_only_cited_sources():
    numbered = {
        1: source(1, "fhs-3.0.pdf", 12),
        2: source(2, "fhs-3.0.html", 0),
        3: source(3, "unused.md", 1),
    }
    text = compose([Quote("The /usr/bin directory holds most user commands.", 0.8, [1, 2],
                          QuoteUnit("x", 0, 1), origin=1)], numbered)  # fmt: skip
    assert text.startswith(EXTRACTIVE_NOTICE)
    body, block = text.rsplit("\n\n", 1)
    assert body.splitlines()[-1] == '- "The /usr/bin directory holds most user commands." [1][2]'
    assert block.splitlines() == ["Sources:", "[1] fhs-3.0.pdf, page 12", "[2] fhs-3.0.html"]
    assert "unused.md" not in text


def test_abstention_says_the_documents_do_not_answer_and_names_the_closest_sources():
    text = abstain([(1, source(1, "a.pdf", 3)), (2, source(2, "b.md", 1))])
    assert "do not answer" in text and "organization" in text
    assert text.splitlines()[1:] == ["- a.pdf, page 3", "- b.md, page 1"]
