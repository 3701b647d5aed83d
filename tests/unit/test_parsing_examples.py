"""LocalParser on the shared example documents: every file parses, pages, furniture, tables.

Each document is parsed once per test session (PDF parsing is the slow part of this suite).
"""

from __future__ import annotations

import re
import time
from functools import cache
from pathlib import Path

import pytest

from librarian.errors import NoTextLayerError
from librarian.parsing.local import VERSION, LocalParser
from librarian.parsing.media import guess_media_type
from librarian.parsing.types import ParseResult
from tests.conftest import DOCS_DIR

SCANNED = "pdf/docling/ocr_test_scanned.pdf"
ALL_FILES = sorted(str(p.relative_to(DOCS_DIR)) for p in DOCS_DIR.rglob("*") if p.is_file())
PARSE_SECONDS: dict[str, float] = {}


@cache
def parsed(relative: str, ocr: str = "off") -> ParseResult:
    path = DOCS_DIR / relative
    data = path.read_bytes()
    started = time.perf_counter()
    result = LocalParser(chunk_size=1000, ocr=ocr).parse(data, path.name, guess_media_type(path.name, data))
    PARSE_SECONDS[relative] = time.perf_counter() - started
    return result


def blocks(result: ParseResult) -> list[dict]:
    return [block for chunk in result["chunks"] for block in chunk["blocks"]]


def flat(text: str) -> str:
    return " ".join(text.split())


def pages_with(result: ParseResult, needle: str) -> set[int]:
    return {b["bbox"]["page"] for b in blocks(result) if needle in flat(b["content"])}


@pytest.fixture(autouse=True)
def _need_docs(docs_dir: Path) -> None:
    """Skips (with the reason from conftest) when the shared documents are missing."""


@pytest.mark.parametrize("relative", [f for f in ALL_FILES if f != SCANNED])
def test_every_example_file_parses_into_reducto_shaped_chunks(relative: str) -> None:
    result = parsed(relative)
    assert result["chunks"], relative
    assert result["parser"] == f"local/{VERSION}:chunk=1000:ocr=off"
    assert result["pages"] >= 1
    for chunk in result["chunks"]:
        assert chunk["content"].strip() and chunk["embed"].strip() and chunk["blocks"]
        for block in chunk["blocks"]:
            box = block["bbox"]
            assert 1 <= box["page"] <= result["pages"]
            assert 0 <= box["left"] <= 1 and 0 <= box["top"] <= 1
            assert box["left"] + box["width"] <= 1.0001 and box["top"] + box["height"] <= 1.0001


def test_scanned_pdf_without_ocr_is_a_no_text_layer_error() -> None:
    data = (DOCS_DIR / SCANNED).read_bytes()
    with pytest.raises(NoTextLayerError, match=r"no text layer on pages 1;.*OCR is turned off"):
        LocalParser(ocr="off").parse(data, "scan.pdf", "application/pdf")


@pytest.mark.parametrize(
    ("relative", "needle", "page"),
    [
        ("pdf/docling/multi_page.pdf", "Selectric typewriter", 1),
        ("pdf/docling/multi_page.pdf", "leveraged the Macintosh", 2),
        ("pdf/docling/multi_page.pdf", "Specialized Word Processing Tools", 3),
        ("pdf/docling/multi_page.pdf", "Voice Typing", 4),
        ("pdf/docling/multi_page.pdf", "handwriting has transformed into a powerful ally", 5),
        ("pdf/docling/redp5110_sampled.pdf", "two fundamental steps in securing", 6),
        ("pdf/docling/redp5110_sampled.pdf", "Work Function Usage (WRKFCNUSG)", 8),
        ("pdf/docling/redp5110_sampled.pdf", "Host name of the current client", 12),
        ("pdf/fhs-3.0.pdf", "evades whatever discipline the system administrator", 11),
        ("pdf/fhs-3.0.pdf", "Provisions must be made in the structure of /usr/share/man", 33),
        ("pdf/fhs-3.0.pdf", "Editor-specific lock files are usually quite different", 42),
    ],
)
def test_pdf_blocks_carry_the_page_their_text_is_on(relative: str, needle: str, page: int) -> None:
    assert pages_with(parsed(relative), needle) == {page}


def test_running_footers_of_the_redbook_are_in_no_chunk() -> None:
    result = parsed("pdf/docling/redp5110_sampled.pdf")
    text = "\n".join(flat(c["content"]) for c in result["chunks"])
    assert "Copyright IBM Corp. 2014" not in text
    assert not re.search(r"\b\d+ Row and Column Access Control Support in IBM DB2 for i", text)
    assert not re.search(r"Chapter \d+\. Row and Column Access Control \d+", text)
    assert "two fundamental steps in securing" in text  # body text of a page with a footer survives
    assert "removed" in " ".join(result["notes"])


def test_running_headers_and_page_numbers_of_fhs_are_in_no_chunk() -> None:
    result = parsed("pdf/fhs-3.0.pdf")
    running = {"The Root Filesystem", "The /usr Hierarchy", "The /var Hierarchy", "Appendix"}
    for block in blocks(result):
        content = flat(block["content"])
        assert content not in running, block
        in_band = block["bbox"]["top"] < 0.08 or block["bbox"]["top"] > 0.92
        assert not (in_band and re.fullmatch(r"\d{1,3}|[ivx]{1,5}", content)), block
        if block["bbox"]["page"] >= 5:
            assert content != "Filesystem Hierarchy Standard", block
    assert pages_with(result, "Chapter 3. The Root Filesystem") == {10}  # chapter titles are not furniture


def test_table_cells_stay_in_one_chunk_and_are_not_repeated_as_text() -> None:
    result = parsed("pdf/docling/2305.03393v1-pg9.pdf")
    tables = [(c, b) for c in result["chunks"] for b in c["blocks"] if b["type"] == "Table"]
    assert len(tables) == 1
    chunk, table = tables[0]
    for cell in ("enc-layers", "dec-layers", "OTSL", "0.965", "0.824", "Inference time (secs)", "2.73"):
        assert cell in table["content"]
    assert table["content"].startswith("| ")  # Markdown for display ...
    assert "Inference time (secs) is 2.73" in chunk["embed"]  # ... sentences for the vectors
    others = [b for b in blocks(result) if b["type"] != "Table"]
    assert not any("0.965" in b["content"] or "0.824" in b["content"] for b in others)


def test_fhs_locale_table_is_a_table_on_its_page() -> None:
    tables = [b for b in blocks(parsed("pdf/fhs-3.0.pdf")) if b["type"] == "Table"]
    locale = [b for b in tables if "United Kingdom" in b["content"]]
    assert len(locale) == 1 and locale[0]["bbox"]["page"] == 33
    assert "Unicode UTF-8" in locale[0]["content"]


def test_headings_become_section_headers_and_prefix_later_chunks() -> None:
    result = parsed("pdf/docling/multi_page.pdf")
    headers = {flat(b["content"]) for b in blocks(result) if b["type"] in ("Title", "Section Header")}
    assert "Pre-Digital Era (19th - Early 20th Century)" in headers
    assert any(c["embed"].startswith("Section: ") for c in result["chunks"][1:])
    assert all(not c["content"].startswith("Section: ") for c in result["chunks"])


def test_docx_tables_keep_each_table_whole_in_one_chunk() -> None:
    result = parsed("docx/word_tables.docx")
    tables = [b for b in blocks(result) if b["type"] == "Table"]
    assert len(tables) == 7
    merged = [t for t in tables if "Merged Cell 1.1 1.2" in t["content"]]
    assert merged and "Cell 2.0" in merged[0]["content"]
    for chunk in result["chunks"]:  # no table is cut between chunks
        for table in (b for b in chunk["blocks"] if b["type"] == "Table"):
            assert table["content"] in chunk["content"]


def test_docx_headers_and_footers_are_not_content() -> None:
    result = parsed("docx/docx_page_header_footer_first_page.docx")
    text = "\n".join(c["content"] for c in result["chunks"])
    assert "This is body text on page 2." in text
    assert "HEADER" not in text and "FOOTER" not in text


def test_html_keeps_the_article_and_drops_site_navigation() -> None:
    result = parsed("html/docling/wiki_duck.html")
    text = "\n".join(c["content"] for c in result["chunks"])
    assert "Jump to content" not in text and "Main menu" not in text
    assert "waterfowl" in text.lower()


def test_the_same_fhs_passage_is_found_in_pdf_and_html() -> None:
    needle = "evades whatever discipline the system administrator"
    for relative in ("pdf/fhs-3.0.pdf", "html/fhs-3.0.html"):
        assert any(needle in flat(c["content"]) for c in parsed(relative)["chunks"]), relative


def test_fhs_parse_time_is_reported() -> None:
    parsed("pdf/fhs-3.0.pdf")
    seconds = PARSE_SECONDS["pdf/fhs-3.0.pdf"]
    print(f"fhs-3.0.pdf (50 pages): {seconds:.1f} s")
    assert seconds < 120


LEADER_RUN = re.compile(r"\.{5,}|(?:\. ){4,}\.?")
TOC_LINE = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?|Chapter \d+\.)\s+\S.*?(?:\.\s?){4,}\s*(?:\d{1,4}|[ivxlc]{1,6})\b"
)


@pytest.mark.parametrize("relative", [f for f in ALL_FILES if f != SCANNED])
def test_no_chunk_of_any_example_holds_a_table_of_contents(relative: str) -> None:
    for chunk in parsed(relative)["chunks"]:
        for text in (chunk["content"], chunk["embed"]):
            assert not LEADER_RUN.search(text), text[:300]
            assert not any(TOC_LINE.match(line) for line in text.split("\n")), text[:300]
            assert not re.search(r"^(?:Table of )?Contents$", text, re.MULTILINE), text[:300]


def test_fhs_chapters_survive_the_contents_filter() -> None:
    result = parsed("pdf/fhs-3.0.pdf")
    text = "\n".join(flat(c["content"]) for c in result["chunks"])
    for needle in (
        "Chapter 3. The Root Filesystem",
        "Chapter 4. The /usr Hierarchy",
        "This release is dedicated to the memory of Christopher Yeoh",
        "/bin contains commands that may be used by both the system administrator and by users",
        "Editor-specific lock files are usually quite different",
    ):
        assert needle in text, needle
    assert "removed" in " ".join(n for n in result["notes"] if "table-of-contents" in n)


def test_redbook_contents_pages_are_gone_and_its_preface_stays() -> None:
    text = "\n".join(flat(c["content"]) for c in parsed("pdf/docling/redp5110_sampled.pdf")["chunks"])
    assert "Trademarks" not in text and "Comments welcome" not in text  # only ever in the contents
    assert "This IBM® Redpaper™ publication provides information" in text
    assert "two fundamental steps in securing" in text
