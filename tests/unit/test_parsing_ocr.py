"""OCR of scanned pages with tesseract (skipped, with the reason, when the binary is absent)."""

from __future__ import annotations

import pytest

from librarian.parsing.local import LocalParser
from librarian.parsing.ocr import parse_tsv, tesseract_path
from tests.conftest import DOCS_DIR

TSV = (
    "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
    "1\t1\t0\t0\t0\t0\t0\t0\t1000\t1000\t-1\t\n"
    "5\t1\t1\t1\t1\t1\t100\t200\t50\t20\t96.5\tHello\n"
    "5\t1\t1\t1\t1\t2\t160\t200\t60\t20\t3.0\t~\n"
    "5\t1\t1\t1\t1\t3\t230\t200\t40\t20\t91\tworld\n"
)


def test_tsv_words_keep_boxes_scaled_and_drop_noise() -> None:
    words = parse_tsv(TSV, scale=0.5)
    assert [w["text"] for w in words] == ["Hello", "world"]
    assert words[0]["x0"] == 50 and words[0]["top"] == 100 and words[0]["bottom"] == 110


@pytest.mark.skipif(
    tesseract_path() is None, reason="tesseract is not installed (apt-get install tesseract-ocr)"
)
def test_scanned_pdf_is_ocrd_with_boxes(docs_dir) -> None:
    data = (DOCS_DIR / "pdf" / "docling" / "ocr_test_scanned.pdf").read_bytes()
    result = LocalParser(ocr="auto").parse(data, "scan.pdf", "application/pdf")
    text = " ".join(" ".join(c["content"] for c in result["chunks"]).split())
    assert "Docling bundles PDF document conversion" in text
    assert result["notes"][0] == "OCR used on pages 1"
    first = result["chunks"][0]["blocks"][0]["bbox"]
    assert first["page"] == 1 and 0 < first["width"] < 1 and 0 < first["height"] < 0.5
