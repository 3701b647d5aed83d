"""Plain text: decoding with a fallback, and paragraphs, simple headings and list items.

Plain text is not parsed as Markdown: a `#` or `*` in a log file or a README written for a terminal
is not markup, and reading it as such would swallow characters.
"""

from __future__ import annotations

import re

from charset_normalizer import from_bytes

from librarian.errors import CorruptFileError
from librarian.parsing.blocks import LIST_ITEM, SECTION_HEADER, TEXT, TITLE, ParsedBlock, whole_page

_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+\S")
_UNDERLINE = re.compile(r"^(?:=+|-+)\s*$")
MAX_TITLE_CHARS = 200


def decode_text(data: bytes, filename: str) -> str:
    """UTF-8 (with or without BOM) first; otherwise the most plausible legacy encoding."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    best = from_bytes(data).best()
    if best is None:
        raise CorruptFileError(
            f"{filename} is named as text but its bytes are not text in any known encoding"
        )
    return str(best)


def _is_heading(lines: list[str]) -> bool:
    line = lines[0].strip()
    if len(lines) == 2 and _UNDERLINE.match(lines[1].strip()):
        return True
    letters = [c for c in line if c.isalpha()]
    return len(lines) == 1 and len(letters) >= 3 and len(line) <= 80 and line.isupper()


def _is_title(lines: list[str], later_paragraphs: bool) -> bool:
    """A lone first line before more text: how a title is written in plain text (an abstract's, a
    note's, a README's). As a Title it names the document in every later chunk's `embed`."""
    line = lines[0].strip()
    letters = sum(c.isalpha() for c in line)
    return (
        later_paragraphs
        and len(lines) == 1
        and letters >= 3
        and len(line) <= MAX_TITLE_CHARS
        and not line.endswith((",", ":", ";"))
        and not _BULLET.match(line)
    )


def text_blocks(text: str) -> list[ParsedBlock]:
    """Blank-line paragraphs; lines starting with a bullet become their own list items."""
    blocks: list[ParsedBlock] = []
    paragraphs = re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n"))
    for number, paragraph in enumerate(paragraphs):
        lines = [line.rstrip() for line in paragraph.strip("\n").split("\n") if line.strip()]
        if not lines:
            continue
        if (
            not blocks
            and not _is_heading(lines)
            and _is_title(lines, any(p.strip() for p in paragraphs[number + 1 :]))
        ):
            blocks.append(ParsedBlock(type=TITLE, content=lines[0].strip(), bbox=whole_page(), level=0))
            continue
        if _is_heading(lines):
            blocks.append(
                ParsedBlock(type=SECTION_HEADER, content=lines[0].strip(), bbox=whole_page(), level=1)
            )
            continue
        buffer: list[str] = []
        kind = TEXT
        for line in lines:
            if _BULLET.match(line):
                if buffer:
                    blocks.append(ParsedBlock(type=kind, content="\n".join(buffer), bbox=whole_page()))
                buffer, kind = [line.strip()], LIST_ITEM
            else:
                buffer.append(line.strip() if kind == LIST_ITEM else line)
        blocks.append(ParsedBlock(type=kind, content="\n".join(buffer), bbox=whole_page()))
    return blocks
