"""What an extractive answer can quote from a source, cleaned for reading, and where it came from.

A quote unit is a sentence of the source's text, or one row of a Markdown table rendered with its
header cells ("Column name: USER_NAME; Data type: VARCHAR(10)"): a row alone loses its column names,
and a header row alone answers nothing, so header rows are never units. Each unit keeps the character
offsets of the raw text it came from, so a citation can highlight the source even though the quote
itself is cleaned: Markdown link targets, images and footnote markers (`[[45]](#cite_note-45)`,
`[text](url)` → `text`, images) are removed, and a bare `[45]` must go too, since the answer's own `[n]`
markers would be read as citing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from librarian.text.sentences import split_sentences

_FOOTNOTE_LINK = re.compile(r"\[\[[^\]]*\]\]\([^)]*\)")  # Wikipedia: [[45]](#cite_note-45)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()\s]|\([^)]*\))*(?:\s+\"[^\"]*\")?\)")
_REFERENCE_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_BARE_MARKER = re.compile(r"\s*\[(?:\d+|[a-z]|note \d+|citation needed|\^\w+)\]", re.I)
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
_SPACES = re.compile(r"[ \t]+")

MIN_CHARS = 25
MIN_LETTERS = 15


@dataclass(frozen=True)
class QuoteUnit:
    text: str  # cleaned, as quoted
    start: int  # raw span in the source's text
    end: int
    table_row: bool = False


def clean_quote(text: str) -> str:
    """Readable text of a Markdown fragment: link texts without targets, no footnote markers."""
    text = _FOOTNOTE_LINK.sub("", text)
    text = _IMAGE.sub("", text)  # alt text is a caption, not part of the sentence around it
    for _ in range(2):  # a link inside a link's text ("[[x](a)](b)") unwraps in two passes
        text = _LINK.sub(lambda m: m.group(1), text)
    text = _REFERENCE_LINK.sub(lambda m: m.group(1), text)
    text = _AUTOLINK.sub(lambda m: m.group(1), text)
    text = _BARE_MARKER.sub("", text)
    text = _EMPHASIS.sub(lambda m: m.group(2), text)
    text = text.replace("`", "").replace("\\|", "|").replace("\\_", "_").replace("\\*", "*")
    return _SPACES.sub(" ", text).strip(" -*#>\t")


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [clean_quote(c) for c in re.split(r"(?<!\\)\|", inner)]


def render_row(header: list[str], row: list[str]) -> str:
    """ "Header: cell; Header: cell" for the row's non-empty cells (a nameless column shows the cell)."""
    parts = []
    for i, cell in enumerate(row):
        if not cell:
            continue
        name = header[i] if i < len(header) else ""
        parts.append(f"{name}: {cell}" if name and name != cell else cell)
    return "; ".join(parts)


def _readable(text: str) -> bool:
    return len(text) >= MIN_CHARS and sum(c.isalpha() for c in text) >= MIN_LETTERS


def quote_units(text: str) -> list[QuoteUnit]:
    """Sentences and table rows of a source's text, in order, with raw offsets."""
    units: list[QuoteUnit] = []
    lines = text.split("\n")
    offsets = []
    position = 0
    for line in lines:
        offsets.append(position)
        position += len(line) + 1
    table_lines: set[int] = set()
    for i, line in enumerate(lines):
        if i == 0 or not _TABLE_RULE.match(line.strip()) or "|" not in lines[i - 1]:
            continue
        header = _cells(lines[i - 1])
        table_lines.update({i - 1, i})
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith("|"):
            table_lines.add(j)
            row = render_row(header, _cells(lines[j]))
            if row and sum(c.isalnum() for c in row) >= 3:
                start = offsets[j] + (len(lines[j]) - len(lines[j].lstrip()))
                units.append(QuoteUnit(row, start, offsets[j] + len(lines[j].rstrip()), table_row=True))
            j += 1
    prose_start = 0
    for i, line in enumerate([*lines, ""]):
        if i < len(lines) and i not in table_lines:
            continue
        end = offsets[i] - 1 if i < len(lines) else len(text)
        if end > prose_start:
            for s, e in split_sentences(text[prose_start:end]):
                cleaned = clean_quote(text[prose_start + s : prose_start + e])
                if _readable(cleaned):
                    units.append(QuoteUnit(cleaned, prose_start + s, prose_start + e))
        if i < len(lines):
            prose_start = offsets[i] + len(line) + 1
    return sorted(units, key=lambda u: u.start)


def normal_words(text: str) -> str:
    """Lower-cased words and numbers separated by single spaces: punctuation and layout ignored."""
    return " ".join("".join(c.lower() if c.isalnum() else " " for c in text).split())


def near_identical(a: str, b: str, ratio: float = 0.9) -> bool:
    """Same words up to case, punctuation and small edits (a PDF's hyphenation, an HTML twin's links)."""
    x, y = normal_words(a), normal_words(b)
    if not x or not y:
        return False
    if x == y or (min(len(x), len(y)) >= 40 and (x in y or y in x)):
        return True
    return SequenceMatcher(None, x, y, autojunk=False).ratio() >= ratio
