"""A small PDF whose pages are slow to render: a few KB that keep pdfium busy for seconds.

Each page draws a form XObject that draws the one below it `fan` times, `depth` levels deep, over a
short stroked path: `fan ** depth` paths to load and rasterise (6 ** 6 = 46,656: about 1 s to load the
page and 3 s to render it 2000 px wide on one core here). The file stays under 3 KB, the shape of the
"small but heavy" page of issue 24. Each page has a tree of its own.
"""

from __future__ import annotations


def heavy_pdf(pages: int = 1, depth: int = 6, fan: int = 6) -> bytes:
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
    }
    next_id = 3
    kids = []
    leaf = b"0 0 m 10 10 l 20 0 l 5 15 l h S\n" * 4
    for _page in range(pages):
        below = None
        for _ in range(depth + 1):
            if below is None:
                content, resources = leaf, b""
            else:
                content = b"".join(
                    b"q 0.9 0 0 0.9 %d %d cm /X Do Q\n" % (i * 7 % 50, i * 13 % 60) for i in range(fan)
                )
                resources = b"/Resources << /XObject << /X %d 0 R >> >>" % below
            objects[next_id] = (
                b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] %s /Length %d >>\nstream\n"
                % (resources, len(content))
                + content
                + b"endstream"
            )
            below, next_id = next_id, next_id + 1
        content = b"q 10 0 0 10 0 0 cm /X Do Q\n"
        objects[next_id] = b"<< /Length %d >>\nstream\n" % len(content) + content + b"endstream"
        objects[next_id + 1] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /XObject << /X %d 0 R >> >> /Contents %d 0 R >>" % (below, next_id)
        )
        kids.append(next_id + 1)
        next_id += 2
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    return _write(objects)


def _write(objects: dict[int, bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(1, size))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)
