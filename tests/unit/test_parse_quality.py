"""Parse quality on the shared example documents: what a reader of search results sees.

Per file, strings that must appear intact within ONE chunk (a table row with its cells, a sentence
whose page has side columns) and strings that must appear in NO chunk (link targets, footnote markers,
a table of contents, text glued across columns). Mark a known gap `xfail(strict=True)` rather than
dropping its expectation: the check stays honest and turns red (XPASS) the day the gap is fixed.
Each document is parsed once per session, shared with test_parsing_examples.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.test_parsing_examples import ALL_FILES, SCANNED, flat, parsed

HTML_FILES = [f for f in ALL_FILES if f.endswith(".html")]
PARSED_FILES = [f for f in ALL_FILES if f != SCANNED]

# (file, string that must appear intact within one chunk's content)
INTACT = [
    # Table 1: the OTSL and HTML rows each keep their own values (the PDF rules only row groups).
    ("pdf/docling/2305.03393v1-pg9.pdf", "| 6 | 6 | OTSL | 0.965 | 0.934 | 0.955 | 0.88 | 2.73 |"),
    ("pdf/docling/2305.03393v1-pg9.pdf", "| 6 | 6 | HTML | 0.969 | 0.927 | 0.955 | 0.857 | 5.39 |"),
    ("pdf/docling/2305.03393v1-pg9.pdf", "| 4 | 2 | HTML | 0.944 | 0.903 | 0.931 | 0.824 | 2 |"),
    # The man-page locale table (no outer column lines, header and last row without rules), p. 33-34.
    ("pdf/fhs-3.0.pdf", "| Language | Territory | Character Set | Directory |"),
    ("pdf/fhs-3.0.pdf", "| English | United Kingdom | Unicode UTF-8 | /usr/share/man/en_GB.10646 |"),
    ("pdf/fhs-3.0.pdf", "| German | Germany | ISO 646 | /usr/share/man/de_DE.646 |"),
    ("pdf/fhs-3.0.pdf", "| Japanese | Japan | UJIS (or EUC-J) | /usr/share/man/ja_JP.ujis |"),
    ("pdf/fhs-3.0.pdf", "| Japanese | Japan | Unicode UTF-16 | /usr/share/man/ja_JP.10646 |"),
    ("pdf/fhs-3.0.pdf", "| static | /usr | /etc |"),
    ("html/fhs-3.0.html", "| English | United Kingdom | Unicode UTF-8 | /usr/share/man/en_GB.10646 |"),
    ("html/fhs-3.0.html", "| exports | NFS filesystem access control list (optional) |"),
    # The Redbook's back cover: side headings and a sidebar beside the blurb.
    (
        "pdf/docling/redp5110_sampled.pdf",
        "This IBM Redpaper publication provides information about the IBM i 7.2 feature of IBM DB2 for i "
        "Row and Column Access Control (RCAC). It offers a broad description of the function",
    ),
    ("pdf/docling/redp5110_sampled.pdf", "Implement roles and separation of duties"),
    (
        "pdf/docling/redp5110_sampled.pdf",
        "IBM Redbooks are developed by the IBM International Technical Support",
    ),
    ("pdf/docling/redp5110_sampled.pdf", "can help you achieve—perhaps reexamine and exceed—your business"),
    ("pdf/docling/redp5110_sampled.pdf", "| USER_NAME | VARCHAR(10) | Name of the user profile"),
    ("pdf/docling/multi_page.pdf", "• IBM MT/ST (Magnetic Tape/Selectric Typewriter) : Introduced in 1964"),
    (
        "html/docling/wiki_duck.html",
        "A duckling is a young duck in downy plumage or baby duck, but in the food trade",
    ),
    (
        "html/docling/wiki_duck.html",
        "A male is called a drake and the female is called a duck, or in ornithology a hen.",
    ),
    ("html/docling/wiki_duck.html", "| Order: | Anseriformes |"),
    ("docx/word_tables.docx", "Merged Cell 1.1 1.2"),
    # Unruled two-column lists (file | description) keep each row whole.
    ("pdf/fhs-3.0.pdf", "| exports | NFS filesystem access control list (optional) |"),
    ("pdf/fhs-3.0.pdf", "| gettydefs | Speed and terminal settings used by getty (optional) |"),
    ("pdf/fhs-3.0.pdf", "| cat | Utility to concatenate files to standard output |"),
]

# (file, pattern that must match in NO chunk's content; paragraphs are separated by blank lines)
ABSENT = [
    ("pdf/docling/redp5110_sampled.pdf", r"Implement roles and This IBM"),  # side heading glued to the blurb
    ("pdf/docling/redp5110_sampled.pdf", r"It offers a broad description .{0,40}separation of duties"),
    ("pdf/docling/2305.03393v1-pg9.pdf", r"OTSL HTML|0\.965 0\.969"),  # two rows' values in one cell
    ("pdf/fhs-3.0.pdf", r"\| — \| ASCII \|\s+\| --- \|"),  # the locale table without its outer columns
    (
        "html/fhs-3.0.html",
        r"3\.2\. Requirements\]?(?:\(#\w+\))?\s+\[?3\.3\. Specific",
    ),  # the table of contents
    ("html/fhs-3.0.html", r"\w[.,;:)]? ?\[?\[\d+\]"),  # DocBook footnote markers in the text
    ("html/docling/wiki_duck.html", r"\w[.,;:)\]]?\[\d+\]|cite_note|\[citation needed\]"),  # Wikipedia refs
    ("html/docling/wiki_duck.html", r"Jump to content|Main menu|Categories:|Hidden categories"),
]


def _chunks(relative: str) -> list[str]:
    return [flat(chunk["content"]) for chunk in parsed(relative)["chunks"]]


@pytest.fixture(autouse=True)
def _need_docs(docs_dir: Path) -> None:
    """Skips (with the reason from conftest) when the shared documents are missing."""


@pytest.mark.parametrize(("relative", "expected"), INTACT)
def test_expected_text_is_intact_within_one_chunk(relative: str, expected: str) -> None:
    chunks = _chunks(relative)
    assert any(expected in chunk for chunk in chunks), f"{relative}: no chunk holds {expected!r}"


@pytest.mark.parametrize(("relative", "pattern"), ABSENT)
def test_unwanted_text_is_in_no_chunk(relative: str, pattern: str) -> None:
    contents = [chunk["content"] for chunk in parsed(relative)["chunks"]]
    hits = [m.group(0) for content in contents for m in [re.search(pattern, content)] if m]
    assert not hits, f"{relative}: {pattern!r} matched {hits[:3]}"


@pytest.mark.parametrize("relative", PARSED_FILES)
def test_no_chunk_embeds_a_link_target(relative: str) -> None:
    for chunk in parsed(relative)["chunks"]:
        assert not re.search(r"\]\((?:https?:|#|/)", chunk["embed"]), chunk["embed"][:200]


@pytest.mark.parametrize("relative", HTML_FILES)
def test_html_chunks_show_link_text_without_targets(relative: str) -> None:
    for chunk in parsed(relative)["chunks"]:
        assert not re.search(r"\]\(|https?://\S+\)", chunk["content"]), chunk["content"][:200]


@pytest.mark.parametrize("relative", HTML_FILES)
def test_no_html_chunk_is_a_list_of_links(relative: str) -> None:
    """A table of contents or navbox would be chunks of short entries; prose has sentences."""
    for chunk in parsed(relative)["chunks"]:
        entries = [line for line in chunk["content"].splitlines() if line.strip()]
        short = [line for line in entries if len(line) < 60 and not line.startswith("|")]
        assert not (len(entries) >= 12 and len(short) > 0.9 * len(entries)), chunk["content"][:300]
