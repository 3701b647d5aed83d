"""The embedded parser: every supported format to Reducto-shaped chunks, offline (DESIGN §6).

Dispatch trusts content over names: the bytes are sniffed, and a file whose name promises a container
format (PDF, DOCX, PPTX, XLSX) that its bytes do not hold is corrupt, not guessed at.
"""

from __future__ import annotations

import io
from typing import Literal

from librarian.errors import CorruptFileError, EmptyDocumentError, NoTextLayerError, UnsupportedFileError
from librarian.parsing import media
from librarian.parsing.blocks import ParsedBlock
from librarian.parsing.chunking import chunk_blocks
from librarian.parsing.furniture import remove_furniture
from librarian.parsing.layout import PageLayout, document_blocks, group_lines
from librarian.parsing.markdown import markdown_blocks
from librarian.parsing.markup import to_markdown
from librarian.parsing.pdf import read_pdf
from librarian.parsing.text import decode_text, text_blocks
from librarian.parsing.toc import drop_toc, strip_toc_markdown
from librarian.parsing.toc_layout import remove_toc_lines, strip_toc_rows
from librarian.parsing.types import ParseResult

VERSION = 7  # bump whenever output for the same bytes and settings changes: it invalidates caches
SUPPORTED = "PDF, DOCX, PPTX, XLSX, HTML, Markdown, plain text and PNG/JPEG/TIFF images"


def page_ranges(pages: list[int]) -> str:
    """'1-3, 7' rather than '1, 2, 3, 7': readable in a status message."""
    spans: list[list[int]] = []
    for page in sorted(pages):
        if spans and page == spans[-1][1] + 1:
            spans[-1][1] = page
        else:
            spans.append([page, page])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)


def resolve_media_type(data: bytes, filename: str, declared: str | None) -> str:
    """The type to parse `data` as, or the DocumentError that explains why it cannot be parsed."""
    claimed = media.type_from_extension(filename) or (declared or None)
    actual = media.guess_media_type(filename, data)
    if claimed in media.CONTAINER_TYPES and actual != claimed:
        raise CorruptFileError(
            f"{filename} is named as {media.label(claimed)} but its content is {media.label(actual)}"
        )
    if actual == media.OCTET and claimed in media.TEXT_TYPES:
        raise CorruptFileError(f"{filename} is named as {media.label(claimed)} but holds binary data")
    if actual == media.OLE:
        raise UnsupportedFileError(f"{filename} is a legacy Office file; save it as .docx, .xlsx or .pptx")
    if actual in media.CONTAINER_TYPES | media.TEXT_TYPES | media.IMAGE_TYPES:
        return actual
    raise UnsupportedFileError(f"{filename} is {media.label(actual)}; supported formats: {SUPPORTED}")


def _without_toc(text: str, notes: list[str]) -> str:
    """Plain text without its table-of-contents lines (line structure is all plain text has)."""
    lines = text.split("\n")
    drop = drop_toc(lines)
    if not drop:
        return text
    notes.append(f"removed {len(drop)} table-of-contents/index lines")
    return "\n".join(line for index, line in enumerate(lines) if index not in drop)


class LocalParser:
    """pdfium and pdfplumber for PDFs (OCR via tesseract when present), markitdown for Office files,
    markdownify for HTML, native text."""

    def __init__(self, chunk_size: int = 1000, ocr: Literal["auto", "off"] = "auto") -> None:
        if chunk_size < 100:
            raise ValueError("chunk_size must be at least 100 characters")
        if ocr not in ("auto", "off"):
            raise ValueError("ocr must be 'auto' or 'off'")
        self.chunk_size = chunk_size
        self.ocr = ocr

    @property
    def cache_key(self) -> str:
        return f"local/{VERSION}:chunk={self.chunk_size}:ocr={self.ocr}"

    def parse(self, data: bytes, filename: str, media_type: str) -> ParseResult:
        if not data:
            raise EmptyDocumentError(f"{filename} is empty (0 bytes)")
        kind = resolve_media_type(data, filename, media_type)
        notes: list[str] = []
        if kind == media.PDF:
            blocks, pages = self._pdf(data, filename, notes)
        elif kind in media.IMAGE_TYPES:
            blocks, pages = self._image(data, filename, notes)
        elif kind in media.OFFICE_TYPES:
            blocks, pages = self._markdown(to_markdown(data, kind, filename), notes)
        elif kind == media.HTML:
            text = decode_text(data, filename)
            blocks, pages = self._markdown(to_markdown(data, kind, filename, text=text), notes)
        elif kind == media.MARKDOWN:
            blocks, pages = self._markdown(decode_text(data, filename), notes)
        else:
            blocks, pages = text_blocks(_without_toc(decode_text(data, filename), notes)), 1
        blocks, rows = strip_toc_rows(blocks)
        if rows:
            notes.append(f"removed {rows} table-of-contents rows from tables")
        chunks = chunk_blocks(blocks, self.chunk_size)
        if not chunks:
            raise EmptyDocumentError(f"{filename} contains no text")
        return ParseResult(chunks=chunks, parser=self.cache_key, pages=pages, notes=notes)

    def _markdown(self, markdown: str, notes: list[str]) -> tuple[list[ParsedBlock], int]:
        markdown, removed = strip_toc_markdown(markdown)
        if removed:
            notes.append(f"removed {removed} table-of-contents/index lines")
        return markdown_blocks(markdown)

    def _ocr_enabled(self) -> bool:
        from librarian.parsing.ocr import tesseract_path

        return self.ocr == "auto" and tesseract_path() is not None

    def _pdf(self, data: bytes, filename: str, notes: list[str]) -> tuple[list[ParsedBlock], int]:
        read = read_pdf(data, use_ocr=self._ocr_enabled())
        removed = remove_furniture(read.pages)
        navigation = remove_toc_lines(read.pages)
        blocks = document_blocks(read.pages)
        if read.ocr_pages:
            notes.append(f"OCR used on pages {page_ranges(read.ocr_pages)}")
        if read.ocr_failures:
            notes.append(f"OCR failed on pages {page_ranges(read.ocr_failures)}; they were skipped")
        if read.scanned_without_ocr:
            hint = (
                "OCR is turned off (LIBRARIAN_OCR=off)"
                if self.ocr == "off"
                else "install tesseract-ocr to OCR scanned PDFs"
            )
            pages = page_ranges(read.scanned_without_ocr)
            if not blocks:
                raise NoTextLayerError(f"{filename}: no text layer on pages {pages}; {hint}")
            notes.append(f"no text layer on pages {pages}; they were skipped ({hint})")
        if removed:
            notes.append(f"removed {removed} running header/footer/page-number lines")
        if navigation:
            notes.append(f"removed {navigation} table-of-contents/index lines")
        return blocks, len(read.pages)

    def _image(self, data: bytes, filename: str, notes: list[str]) -> tuple[list[ParsedBlock], int]:
        from PIL import Image, UnidentifiedImageError

        from librarian.parsing.ocr import OcrFailed, ocr_words

        if not self._ocr_enabled():
            raise NoTextLayerError(
                f"{filename} is an image; install tesseract-ocr (and keep OCR on) to read it"
            )
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                page = PageLayout(number=1, width=float(image.width), height=float(image.height))
                page.lines = group_lines(ocr_words(image))
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise CorruptFileError(f"{filename} cannot be read as an image") from exc
        except OcrFailed as exc:
            raise CorruptFileError(f"{filename}: OCR failed ({exc})") from exc
        notes.append("OCR used on page 1")
        return document_blocks([page]), 1
