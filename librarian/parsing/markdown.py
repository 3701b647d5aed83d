"""Markdown to blocks with markdown-it (CommonMark plus pipe tables).

Office files and HTML reach this module as Markdown from markitdown, so one reader decides what a
heading, a list item or a table is for every non-PDF format. Formats without pages get whole-page
boxes; a PowerPoint deck converted by markitdown keeps its slide numbers as pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from markdown_it.token import Token

from librarian.parsing.blocks import LIST_ITEM, SECTION_HEADER, TEXT, TITLE, ParsedBlock, whole_page
from librarian.parsing.tables import table_block

_SLIDE = re.compile(r"<!--\s*Slide number:\s*(\d+)\s*-->", re.IGNORECASE)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _display(inline: Token) -> str:
    """Inline Markdown as written, minus image links (data URIs are noise to a reader)."""
    return " ".join(_IMAGE.sub(lambda m: m.group(1), inline.content).split())


def _plain(inline: Token) -> str:
    """Inline text without markup or URLs: what the vectors should see."""
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


@dataclass
class _ListState:
    ordered: bool
    number: int


@dataclass
class _Reader:
    blocks: list[ParsedBlock] = field(default_factory=list)
    page: int = 1
    pages: int = 1
    lists: list[_ListState] = field(default_factory=list)
    item: list[tuple[str, str]] | None = None  # (display, plain) parts of the open list item
    marker: str = ""
    seen_heading: bool = False

    def add(self, kind: str, content: str, embed: str | None = None, level: int = 0) -> None:
        if content.strip():
            self.blocks.append(
                ParsedBlock(type=kind, content=content, embed=embed, bbox=whole_page(self.page), level=level)
            )

    def flush_item(self) -> None:
        if self.item:
            indent = "  " * (len(self.lists) - 1)
            display = " ".join(d for d, _ in self.item)
            plain = " ".join(p for _, p in self.item)
            self.add(LIST_ITEM, f"{indent}{self.marker} {display}", f"{self.marker} {plain}")
        self.item = None

    def heading(self, tag: str, inline: Token) -> None:
        level = int(tag[1])
        if level == 1 and not self.seen_heading:
            kind, level = TITLE, 0
        else:
            kind = SECTION_HEADER
        self.seen_heading = True
        self.add(kind, _display(inline), _plain(inline), level)

    def paragraph(self, inline: Token) -> None:
        if self.item is not None:
            self.item.append((_display(inline), _plain(inline)))
        else:
            self.add(TEXT, _display(inline), _plain(inline))

    def html(self, content: str) -> None:
        slide = _SLIDE.search(content)
        if slide:
            self.flush_item()
            self.page = int(slide.group(1))
            self.pages = max(self.pages, self.page)
            return
        if "<table" in content.lower():
            for rows in html_tables(content):
                block = table_block(rows, whole_page(self.page))
                if block is not None:
                    self.blocks.append(block)
            return
        text = " ".join(_TAG.sub(" ", content).split())
        if text:
            self.add(TEXT, text)


def html_tables(html: str) -> list[list[list[str]]]:
    """Rows of the HTML tables embedded in Markdown (which pipe syntax cannot express)."""
    soup = BeautifulSoup(html, "html.parser")
    return [
        [
            [cell.get_text(" ", strip=True) for cell in row.find_all(["th", "td"])]
            for row in table.find_all("tr")
        ]
        for table in soup.find_all("table")
    ]


def _table(tokens: list[Token], start: int) -> tuple[list[list[str]], int]:
    rows: list[list[str]] = []
    index = start
    while tokens[index].type != "table_close":
        token = tokens[index]
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(_plain(token))  # cells are re-rendered as Markdown: escapes would double
        index += 1
    return rows, index


def markdown_blocks(text: str) -> tuple[list[ParsedBlock], int]:
    """Blocks of a Markdown document and its page count (slides for converted decks, else 1)."""
    tokens = _parser().parse(text)
    reader = _Reader()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        kind = token.type
        if kind == "heading_open":
            reader.heading(token.tag, tokens[index + 1])
            index += 2
        elif kind == "inline" and tokens[index - 1].type == "paragraph_open":
            reader.paragraph(token)
        elif kind in ("bullet_list_open", "ordered_list_open"):
            reader.flush_item()
            start = int(token.attrGet("start") or 1)
            reader.lists.append(_ListState(kind == "ordered_list_open", start))
        elif kind == "list_item_open":
            reader.flush_item()
            state = reader.lists[-1]
            reader.marker = f"{state.number}." if state.ordered else "-"
            state.number += 1
            reader.item = []
        elif kind == "list_item_close":
            reader.flush_item()
        elif kind in ("bullet_list_close", "ordered_list_close"):
            reader.flush_item()
            reader.lists.pop()
        elif kind in ("fence", "code_block"):
            code = token.content.rstrip("\n")
            reader.add(TEXT, f"```{token.info.strip()}\n{code}\n```", code)
        elif kind == "table_open":
            rows, index = _table(tokens, index)
            block = table_block(rows, whole_page(reader.page))
            if block is not None:
                reader.blocks.append(block)
        elif kind == "html_block":
            reader.html(token.content)
        index += 1
    reader.flush_item()
    return reader.blocks, reader.pages
