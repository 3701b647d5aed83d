"""Media-type detection by content first, extension second.

Uploads arrive with whatever name and `Content-Type` a client chose, so the bytes decide what a file
is: a PDF renamed `.docx` must be caught here rather than crash a third-party reader later.
"""

from __future__ import annotations

import io
import mimetypes
import zipfile
from pathlib import PurePosixPath

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
HTML = "text/html"
MARKDOWN = "text/markdown"
PLAIN = "text/plain"
ZIP = "application/zip"
OLE = "application/x-ole-storage"
OCTET = "application/octet-stream"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
GIF = "image/gif"

#: Formats whose name promises a binary container; a mismatch with the content is a corrupt file.
CONTAINER_TYPES = frozenset({PDF, DOCX, PPTX, XLSX})
OFFICE_TYPES = frozenset({DOCX, PPTX, XLSX})
TEXT_TYPES = frozenset({HTML, MARKDOWN, PLAIN, "text/csv"})
IMAGE_TYPES = frozenset({PNG, JPEG, TIFF})

_EXTENSIONS = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".pptx": PPTX,
    ".xlsx": XLSX,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": PLAIN,
    ".text": PLAIN,
    ".csv": "text/csv",
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
    ".tif": TIFF,
    ".tiff": TIFF,
}

_LABELS = {
    PDF: "a PDF",
    DOCX: "a Word document (.docx)",
    PPTX: "a PowerPoint deck (.pptx)",
    XLSX: "an Excel workbook (.xlsx)",
    HTML: "HTML",
    MARKDOWN: "Markdown",
    PLAIN: "plain text",
    ZIP: "a ZIP archive",
    OLE: "a legacy Office file (.doc/.xls/.ppt)",
    OCTET: "unrecognised binary data",
}

_OFFICE_PARTS = (("word/document.xml", DOCX), ("ppt/presentation.xml", PPTX), ("xl/workbook.xml", XLSX))


def label(media_type: str) -> str:
    """A phrase for error messages, so people read 'a PDF' rather than a MIME string."""
    return _LABELS.get(media_type, media_type)


def type_from_extension(filename: str) -> str | None:
    """The type a file's name claims, or None when the name says nothing we recognise."""
    suffix = PurePosixPath(filename).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    guessed, _ = mimetypes.guess_type(filename, strict=False)
    return guessed


def _sniff_zip(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, ValueError, OSError):
        return ZIP  # truncated or damaged: still "a zip", which no Office name can claim to be
    for part, media_type in _OFFICE_PARTS:
        if part in names:
            return media_type
    return ZIP


def sniff_binary(data: bytes) -> str | None:
    """The type announced by magic bytes, or None when the content has no binary signature."""
    head = data[:2048]
    if b"%PDF-" in head[:1024]:
        return PDF
    if head.startswith(b"PK\x03\x04"):
        return _sniff_zip(data)
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return OLE
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return TIFF
    if head.startswith((b"GIF87a", b"GIF89a")):
        return GIF
    return None


def looks_like_text(data: bytes) -> bool:
    """True when the bytes decode as text: no NULs and almost no control characters.

    UTF-16 text is rare in uploads and is treated as binary; a clear 'unsupported' beats mojibake.
    """
    sample = data[:8192]
    if not sample or b"\x00" in sample:
        return False
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls / len(sample) < 0.01


def _looks_like_html(data: bytes) -> bool:
    start = data[:1024].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html")) or b"<html" in start[:256]


def guess_media_type(filename: str, data: bytes) -> str:
    """The media type of `data`: magic bytes win, then the extension for text, then a text sniff."""
    sniffed = sniff_binary(data)
    if sniffed is not None:
        return sniffed
    claimed = type_from_extension(filename)
    if not looks_like_text(data):
        return OCTET
    if claimed in TEXT_TYPES:
        return claimed
    if _looks_like_html(data):
        return HTML
    return PLAIN
