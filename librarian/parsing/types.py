"""Reducto's parse result shape, which every parser emits so downstream code has one contract.

`content` is for display, `embed` is what gets embedded (they differ for tables), and each block
keeps `type` and a 1-based-page `bbox` so citations can point at a region of a page.
"""

from __future__ import annotations

from typing import Protocol, TypedDict


class BBox(TypedDict):
    page: int  # 1-based
    left: float  # fractions of the page width/height, as Reducto reports them
    top: float
    width: float
    height: float


class Block(TypedDict):
    type: str  # Reducto block types: Title, Section Header, Text, List Item, Table, Figure, ...
    bbox: BBox
    content: str


class Chunk(TypedDict):
    content: str
    embed: str
    blocks: list[Block]


class ParseResult(TypedDict):
    chunks: list[Chunk]
    parser: str  # parser id and the settings that shaped its output, e.g. "local/1:chunk=1000"
    pages: int
    notes: list[str]  # things a person should know (e.g. "OCR used on pages 1-3")


class Parser(Protocol):
    """Turns file bytes into Reducto-shaped chunks.

    Raises a `librarian.errors.DocumentError` subclass for files it cannot handle; the ingest graph
    turns those into a skipped/failed status, never a crash.
    """

    @property
    def cache_key(self) -> str:
        """Identifies the parser and every setting that changes its output (part of the cache key)."""
        ...

    def parse(self, data: bytes, filename: str, media_type: str) -> ParseResult: ...
