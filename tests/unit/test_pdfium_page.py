"""pdfium reads pages as pdfplumber would: words, boxes, fonts, ruling lines and tables."""

from __future__ import annotations

import difflib
import io
from pathlib import Path

import pdfplumber
import pypdfium2 as pdfium
import pytest

from librarian.parsing.layout import _BOLD_FONT as BOLD
from librarian.parsing.layout import PageLayout
from librarian.parsing.pdf import _WORD_OPTIONS, read_pdf
from librarian.parsing.pdfium_page import may_hold_ruled_table, page_chars, page_words, ruling_edges
from librarian.parsing.ruled_tables import RuledPage, ruled_tables
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


def _page_text(path: Path, number: int) -> str:
    """The page's characters as pdfium reads them, joined (no generated spaces)."""
    document = pdfium.PdfDocument(path)
    try:
        return "".join(c["text"] for c in page_chars(document[number - 1]))
    finally:
        document.close()


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
    text = _page_text(FHS, 10)
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
        assert may_hold_ruled_table(ruling_edges(document[number - 1])) is expected
    finally:
        document.close()


def test_pdfminer_never_reads_a_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """pdfplumber's own page reading (pdfminer, 3-4x slower) is not needed for any page, tables included."""
    _need(FHS)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pdfplumber.open was called")

    monkeypatch.setattr(pdfplumber, "open", refuse)
    result = read_pdf(FHS.read_bytes(), use_ocr=False)
    assert [p.number for p in result.pages] == list(range(1, 51))
    assert {33, 34} <= {p.number for p in result.pages if p.tables}  # the ruled locale table


def _tables_through_pdfplumber(path: Path, number: int) -> list[tuple[tuple[float, ...], list[list[str]]]]:
    """The tables pdfplumber finds on its own reading of the page (pdfminer's characters and lines)."""
    with pdfplumber.open(path) as pdf:
        page = pdf.pages[number - 1]
        layout = PageLayout(number=number, width=float(page.width), height=float(page.height))
        plumber = RuledPage(page.bbox, page.chars, page.edges)
        return [(bbox, block.rows) for bbox, block in ruled_tables(plumber, layout)]


@pytest.mark.parametrize(
    ("path", "number"), [(FHS, 33), (FHS, 34), (TEX_PAPER, 1), (REDBOOK, 8), (REDBOOK, 9)]
)
def test_tables_from_pdfium_match_pdfplumbers_own(path: Path, number: int) -> None:
    """Same table boxes and cells as pdfplumber's reading, give or take a glyph without a Unicode map."""
    _need(path)
    document = pdfium.PdfDocument(path)
    try:
        page = document[number - 1]
        left, bottom, right, top = page.get_cropbox()
        layout = PageLayout(number=number, width=float(right - left), height=float(top - bottom))
        ours = ruled_tables(
            RuledPage((0.0, 0.0, layout.width, layout.height), page_chars(page), ruling_edges(page)), layout
        )
    finally:
        document.close()
    theirs = _tables_through_pdfplumber(path, number)
    assert ours and len(ours) == len(theirs)
    for (box, block), (their_box, their_rows) in zip(ours, theirs, strict=True):
        assert all(abs(a - b) < 1.0 for a, b in zip(box, their_box, strict=True)), (box, their_box)
        cells = [" ".join((c or "").replace("(cid:2)", "-").split()) for row in block.rows for c in row]
        their_cells = [" ".join((c or "").replace("(cid:2)", "-").split()) for row in their_rows for c in row]
        assert difflib.SequenceMatcher(None, cells, their_cells).ratio() > 0.95


def test_ligature_letters_are_all_kept() -> None:
    """A ligature glyph ("ffi") that maps to three letters gives three characters at one spot: not
    a glyph printed twice, so no letter may be dropped."""
    _need(TEX_PAPER)
    text = _page_text(TEX_PAPER, 1)
    assert "difficult" in text


def test_raw_codes_of_a_font_without_unicode_map_are_not_text() -> None:
    _need(REDBOOK)
    text = _page_text(REDBOOK, 3)
    assert not any(ord(ch) < 0x20 for ch in text)
    assert "Highlights" in text  # the page's real text is still there


def test_damaged_pdf_is_a_corrupt_file_error() -> None:
    _need(FHS)
    from librarian.errors import CorruptFileError

    with pytest.raises(CorruptFileError):
        read_pdf(FHS.read_bytes()[:5000], use_ocr=False)
    with pytest.raises(CorruptFileError):
        read_pdf(b"%PDF-1.7\n" + io.BytesIO(b"\x00" * 64).read(), use_ocr=False)


def test_a_table_drawn_inside_a_form_xobject_is_still_found() -> None:
    """pdfminer reads into form XObjects, so pdfium's reading must too, in the form's own space."""
    _need(FHS)
    source = pdfium.PdfDocument(FHS)
    target = pdfium.PdfDocument.new()
    try:
        width, height = source[32].get_size()
        form = source.page_as_xobject(32, target).as_pageobject()
        form.transform(pdfium.PdfMatrix().scale(0.8, 0.8).translate(30, 40))
        page = target.new_page(width, height)
        page.insert_obj(form)
        page.gen_content()
        buffer = io.BytesIO()
        target.save(buffer)
    finally:
        target.close()
        source.close()
    (moved,) = read_pdf(buffer.getvalue(), use_ocr=False).pages
    original = read_pdf(FHS.read_bytes(), use_ocr=False).pages[32]
    assert [t.rows for t in moved.tables] == [t.rows for t in original.tables]
    # In the form's space, scaled by 0.8: the box shrinks with it.
    assert abs(moved.tables[0].bbox["width"] - 0.8 * original.tables[0].bbox["width"]) < 0.01
