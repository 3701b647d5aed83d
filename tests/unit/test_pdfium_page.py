"""The pdfium fast path reads pages as pdfplumber would, and sends only possible-table pages to pdfplumber."""

from __future__ import annotations

import difflib
import io
from pathlib import Path

import pdfplumber
import pypdfium2 as pdfium
import pytest

from librarian.parsing import pdf as pdf_module
from librarian.parsing.layout import _BOLD_FONT as BOLD
from librarian.parsing.pdf import _WORD_OPTIONS, read_pdf
from librarian.parsing.pdfium_page import may_hold_ruled_table, page_chars, page_words
from tests.conftest import DOCS_DIR

FHS = DOCS_DIR / "pdf" / "fhs-3.0.pdf"
REDBOOK = DOCS_DIR / "pdf" / "docling" / "redp5110_sampled.pdf"
TEX_PAPER = DOCS_DIR / "pdf" / "docling" / "2305.03393v1-pg9.pdf"


def _need(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"example document {path} not present")


def _plumber_words(path: Path, number: int) -> list[dict]:
    with pdfplumber.open(path) as pdf:
        page = pdf.pages[number - 1]
        return [w for w in page.extract_words(**_WORD_OPTIONS) if w.get("upright", True)]


def _pdfium_words(path: Path, number: int) -> list[dict]:
    document = pdfium.PdfDocument(path)
    try:
        return page_words(document[number - 1], _WORD_OPTIONS)
    finally:
        document.close()


@pytest.mark.parametrize(("path", "number"), [(FHS, 3), (FHS, 10), (FHS, 21), (REDBOOK, 6), (TEX_PAPER, 1)])
def test_words_and_boxes_match_pdfplumber(path: Path, number: int) -> None:
    """Same words, boxes and fonts; the few glyphs the two decode differently are a bullet without a
    Unicode map ((cid:n) against a dash) and a spaced-out ligature."""
    _need(path)
    fast, slow = _pdfium_words(path, number), _plumber_words(path, number)
    texts = [w["text"] for w in fast], [w["text"] for w in slow]
    matcher = difflib.SequenceMatcher(None, *texts, autojunk=False)
    assert matcher.ratio() > 0.99
    pairs = [(fast[i + k], slow[j + k]) for i, j, n in matcher.get_matching_blocks() for k in range(n)]
    for a, b in pairs:
        # Same line slots for furniture detection (top/3 rounded), same size, same boldness.
        assert abs(a["top"] - b["top"]) < 0.6, (a, b)
        assert abs(a["x0"] - b["x0"]) < 1.5, (a, b)
        assert abs(a["size"] - b["size"]) < 0.1, (a, b)
        assert bool(BOLD.search(a["fontname"])) == bool(BOLD.search(b["fontname"])), (a, b)


def test_line_end_hyphen_is_kept_as_a_hyphen() -> None:
    _need(FHS)
    document = pdfium.PdfDocument(FHS)
    try:
        text = "".join(c["text"] for c in page_chars(document[9]))
    finally:
        document.close()
    assert "start-up" in text
    assert "\x02" not in text


def test_text_matrix_scaling_gives_the_real_font_size() -> None:
    """TeX output sets 1 pt fonts in a scaled text matrix; a size of 1 would glue or split words."""
    _need(TEX_PAPER)
    sizes = {round(w["size"]) for w in _pdfium_words(TEX_PAPER, 1)}
    assert 1 not in sizes
    assert 9 in sizes


@pytest.mark.parametrize(
    ("path", "number", "expected"),
    [
        (FHS, 33, True),  # a ruled table
        (FHS, 34, True),
        (TEX_PAPER, 1, True),
        (FHS, 2, False),  # header and footer rules only
        (FHS, 12, False),  # boxed code listings: one cell each
        (REDBOOK, 6, False),
    ],
)
def test_ruled_table_precheck(path: Path, number: int, expected: bool) -> None:
    _need(path)
    document = pdfium.PdfDocument(path)
    try:
        assert may_hold_ruled_table(document[number - 1]) is expected
    finally:
        document.close()


def test_only_possible_table_pages_and_scans_go_to_pdfplumber(monkeypatch: pytest.MonkeyPatch) -> None:
    _need(FHS)
    asked: list[int] = []
    original = pdf_module._read_page

    def counting(page: pdfplumber.page.Page, number: int, *args: object) -> object:
        asked.append(number)
        assert page.page_number == number  # pdfplumber opened the very page asked for
        return original(page, number, *args)

    monkeypatch.setattr(pdf_module, "_read_page", counting)
    result = read_pdf(FHS.read_bytes(), use_ocr=False)
    assert [p.number for p in result.pages] == list(range(1, 51))
    assert {33, 34} <= set(asked)
    assert len(asked) <= 5
    tables = [p.number for p in result.pages if p.tables]
    assert tables == [33, 34]


def test_damaged_pdf_is_a_corrupt_file_error() -> None:
    _need(FHS)
    from librarian.errors import CorruptFileError

    with pytest.raises(CorruptFileError):
        read_pdf(FHS.read_bytes()[:5000], use_ocr=False)
    with pytest.raises(CorruptFileError):
        read_pdf(b"%PDF-1.7\n" + io.BytesIO(b"\x00" * 64).read(), use_ocr=False)
