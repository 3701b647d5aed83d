"""A one-page PDF of plain text lines, written by hand so the audit needs no PDF library.

The leak audit seeds each organization with a PDF so that the page-image channel has something to
render; the page must carry the organization's markers as real text (the parser indexes it, and
the rendered page differs between organizations).
"""

from __future__ import annotations

from collections.abc import Sequence

PAGE_WIDTH, PAGE_HEIGHT = 612, 792  # US Letter, in points
FONT_SIZE, LEADING, MARGIN = 12, 18, 72


def _escape(text: str) -> str:
    """A PDF literal string's body: backslash and parentheses escaped, non-Latin-1 replaced."""
    latin = text.encode("latin-1", "replace").decode("latin-1")
    return latin.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: Sequence[str]) -> bytes:
    top = PAGE_HEIGHT - MARGIN
    ops = [f"BT /F1 {FONT_SIZE} Tf {LEADING} TL {MARGIN} {top} Td"]
    ops += [f"({_escape(line)}) Tj T*" for line in lines]
    ops.append("ET")
    return "\n".join(ops).encode("latin-1")


def text_pdf(lines: Sequence[str]) -> bytes:
    """A valid single-page PDF showing `lines` top to bottom in Helvetica (about 35 lines fit)."""
    stream = _content(lines)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            "/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>"
        ).encode(),
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
