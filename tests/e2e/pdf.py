"""A tiny text PDF written by hand, so a test knows exactly where each line sits on its page.

Standard-14 Helvetica (nothing embedded), US Letter, one text object per line. Positions are given
from the top-left in points, the way Librarian's bboxes are (as page fractions).
"""

from __future__ import annotations

PAGE_W, PAGE_H = 612, 792


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(pages: list[list[tuple[float, float, float, str]]]) -> bytes:
    """`pages`: for each page, lines of (x, top, font size, text), in points from the top-left."""
    objects: list[bytes] = []
    kids = []
    for lines in pages:
        stream = "".join(
            f"BT /F1 {size} Tf {x} {PAGE_H - top - size} Td ({_escape(text)}) Tj ET\n"
            for x, top, size, text in lines
        ).encode("latin-1")
        content_id = len(objects) + 4  # 1 catalog, 2 page tree, 3 font come first
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"endstream")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % (PAGE_W, PAGE_H, content_id)
        )
        kids.append(content_id + 1)
    head = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(head + objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(offsets) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(offsets) + 1, xref)
    return bytes(out)


# The document the browser and JS SDK tests ask about: its answer sits on page 2, lines at 420-468 pt
# from the top of a 792 pt page (fractions 0.53-0.59), so a citation must highlight that band.
AURORA_QUESTION = "How many nights each winter does the Keller observatory record auroras?"
AURORA_BAND = (420 / PAGE_H, 468 / PAGE_H)


def aurora_pdf() -> bytes:
    spending = "the office spent money on paper, chairs and coffee for the team."
    budget = [(72, 72 + i * 18, 11, f"Quarterly budget line {i}: {spending}") for i in range(10)]
    answer = [
        (72, 420, 12, "The Keller aurora observatory records green auroras on ninety nights each winter."),
        (72, 438, 12, "Its staff count the nights from the first snow until the spring thaw."),
        (72, 456, 12, "Clear skies over the northern ridge make the observatory's cameras useful."),
    ]
    return text_pdf([budget, answer])
