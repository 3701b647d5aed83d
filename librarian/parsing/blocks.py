"""The intermediate block every reader produces and the chunker consumes.

Readers differ (PDF layout, Markdown tokens, plain text), but chunking must not care, so each reader
emits `ParsedBlock`s: display `content`, vector `embed`, a Reducto-style bbox, and the two facts the
chunker needs and Reducto's block shape lacks (heading level, table rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from librarian.parsing.types import BBox, Block

TITLE = "Title"
SECTION_HEADER = "Section Header"
TEXT = "Text"
LIST_ITEM = "List Item"
TABLE = "Table"
HEADING_TYPES = frozenset({TITLE, SECTION_HEADER})


def whole_page(page: int = 1) -> BBox:
    """The box used for formats without geometry (DOCX, HTML, Markdown, text).

    A whole-page box rather than a zero box: a client that highlights it shows "somewhere on this
    page", which is true, instead of an invisible point, which would look like a precise location.
    """
    return BBox(page=page, left=0.0, top=0.0, width=1.0, height=1.0)


@dataclass
class ParsedBlock:
    type: str
    content: str
    bbox: BBox
    embed: str | None = None  # None: embed the content itself
    level: int = 0  # heading depth (Title 0, sections 1..n); meaningless for other types
    rows: list[list[str]] | None = field(default=None, repr=False)  # tables only, header first

    @property
    def is_heading(self) -> bool:
        return self.type in HEADING_TYPES

    @property
    def embed_text(self) -> str:
        return self.content if self.embed is None else self.embed

    def to_block(self) -> Block:
        return Block(type=self.type, bbox=self.bbox, content=self.content)
