"""Recognise tables of contents, indexes and lists of figures, so they never become chunk text.

A contents page repeats every heading of the document with a page number after it, so as chunks it
matches every query about any section and wins over the section itself; in a knowledge graph its
lines become the most connected "theme". It is navigation, like a running header, not content.

The rule is small and written down here, not fitted to any document:

* An *entry* is a line with a dot leader (four or more dots, spaced or not, or middle dots or
  ellipsis characters) followed by a page reference (1-4 digits or a roman numeral, optionally a list
  "12, 15-17") at the end of the line: "3.3. Specific Options ........ 4". An entry is always dropped,
  as is a leader with nothing but a page reference (the tail of a wrapped entry), and a Markdown line
  that only links to Word's `#_Toc` bookmarks (Word's own table of contents after conversion).
* A *navigation heading* is a line reading only "Contents", "Table of Contents", "Index" or "List of
  Figures/Tables/...". It is dropped when the line after it starts a run of entries or candidates.
* A *candidate* is a short line that ends in a page reference ("Preface xi", "apple, 12, 45"), a
  lone index letter ("A"), or a line that is only links to anchors in the same document (a Markdown
  contents list). Candidates are dropped only inside a *run* that an entry or a navigation heading
  anchors: alone, a line ending in a number is ordinary text (a numbered step, a row of figures).
* A short line without sentence punctuation directly before an entry is the first half of a wrapped
  entry and goes with it.

Decisions are per line and only remove lines; nothing is rewritten, so a line matching none of the
patterns is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum

_ROMAN = r"[ivxlcdm]{1,7}"
_PAGE = rf"(?:\d{{1,4}}|{_ROMAN})(?:\s*[-–]\s*(?:\d{{1,4}}|{_ROMAN}))?"
_PAGES = rf"{_PAGE}(?:\s*,\s*{_PAGE})*"
LEADER = re.compile(r"(?:\.\s?){4,}|(?:·\s?){4,}|(?:…\s?){2,}|(?:∙\s?){4,}")
_ENTRY = re.compile(rf"(?:{LEADER.pattern})\s*{_PAGES}\s*$", re.IGNORECASE)
_ENDS_IN_PAGES = re.compile(rf"\D[\s,]\s*{_PAGES}\s*$", re.IGNORECASE)
_NAV_HEADING = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?\s+)?(?:(?:table\s+of\s+)?contents|index|general\s+index|subject\s+index|"
    r"list\s+of\s+(?:figures|tables|illustrations|listings|examples|exhibits|charts|abbreviations))"
    r"\s*:?$",
    re.IGNORECASE,
)
_INDEX_LETTER = re.compile(r"^[A-Z]$")
_SENTENCE_END = re.compile(r"[.!?:;]$")
_NUMBERED = re.compile(r"^(?:(?:chapter|appendix|part)\s+)?(?:\d+|[A-Z](?=\.))(?:\.\d+)*\.?\s", re.IGNORECASE)
MAX_CANDIDATE_CHARS = 160  # an entry is a title and a page number; longer lines are prose
MAX_WRAPPED_HEAD_CHARS = 120

# Markdown markup around a line's words: heading hashes, list markers, emphasis, links.
_MD_PREFIX = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s*)*(?:[-*+]\s+)?")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
_MD_EMPHASIS = re.compile(r"(?<!\w)[*_]{1,3}|[*_]{1,3}(?!\w)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


class Kind(Enum):
    ENTRY = "entry"  # always dropped
    HEADING = "heading"  # dropped when a run follows
    CANDIDATE = "candidate"  # dropped inside an anchored run
    OTHER = "other"  # never dropped
    BLANK = "blank"  # neither dropped nor ending a run: entries are often a paragraph each


def classify(line: str) -> Kind:
    """What a line of plain text is to the table-of-contents rule (see the module docstring)."""
    text = " ".join(line.split())
    if not text:
        return Kind.BLANK
    if _ENTRY.search(text):
        return Kind.ENTRY
    if _NAV_HEADING.match(text):
        return Kind.HEADING
    if _INDEX_LETTER.match(text):
        return Kind.CANDIDATE
    if len(text) <= MAX_CANDIDATE_CHARS and any(c.isalpha() for c in text) and _ENDS_IN_PAGES.search(text):
        return Kind.CANDIDATE
    return Kind.OTHER


def toc_lines(kinds: Sequence[Kind], texts: Sequence[str] | None = None) -> set[int]:
    """Indexes of the lines to drop, given each line's kind in reading order.

    A run is a stretch of lines that are not OTHER. With entries in it, the run is dropped up to its
    last entry (candidates after it are ordinary lines ending in a number, such as the first line of
    the text after the contents). Without entries, a run that opens with a navigation heading and
    has more lines is a contents list or an index without leaders and is dropped whole. `texts` (the
    lines themselves) lets a wrapped entry's first half go with its second.
    """
    present = [i for i, kind in enumerate(kinds) if kind is not Kind.BLANK]
    drop: set[int] = set()
    start = 0
    while start < len(present):
        if kinds[present[start]] is Kind.OTHER:
            start += 1
            continue
        end = start
        while end < len(present) and kinds[present[end]] is not Kind.OTHER:
            end += 1
        run = present[start:end]
        entries = [i for i in run if kinds[i] is Kind.ENTRY]
        if entries:
            drop.update(i for i in run if i <= entries[-1])
        elif kinds[run[0]] is Kind.HEADING and len(run) > 1:
            drop.update(run)
        start = end
    if texts is not None:
        heads = {
            i - 1
            for i in drop
            if kinds[i] is Kind.ENTRY
            and i > 0
            and kinds[i - 1] is Kind.OTHER
            and _wrapped(texts[i - 1], texts[i])
        }
        drop |= heads
    return drop


def _wrapped(head: str, entry: str) -> bool:
    """Whether `head` is the first half of the entry that `entry` finishes: a short line without
    sentence punctuation, and either the entry carries on in lower case (or is a bare leader) or the
    head opens with a section number as entries do."""
    head, entry = " ".join(head.split()), " ".join(entry.split())
    if not 0 < len(head) <= MAX_WRAPPED_HEAD_CHARS or _SENTENCE_END.search(head):
        return False
    continues = entry[:1].islower() or LEADER.match(entry) is not None
    return continues or _NUMBERED.match(head) is not None


def drop_toc(lines: Sequence[str]) -> set[int]:
    """Indexes of the plain-text lines that belong to a table of contents, index or list of figures."""
    return toc_lines([classify(line) for line in lines], lines)


def markdown_plain(line: str) -> str:
    """A Markdown line's words: markup, link targets and emphasis removed."""
    text = _MD_PREFIX.sub("", line)
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    return _MD_EMPHASIS.sub("", text).replace("\\", "")


def _markdown_kind(line: str) -> Kind:
    links = _MD_LINK.findall(line)
    if links and all(target.startswith("#_Toc") for _, target in links):
        return Kind.ENTRY  # Word's table of contents: its entries link to _Toc bookmarks
    kind = classify(markdown_plain(line))
    if kind is Kind.OTHER and links and all(target.startswith("#") for _, target in links):
        bare = _MD_LINK.sub("", _MD_PREFIX.sub("", line))
        if not re.sub(r"[\s\d.,;:|*_-]", "", bare):  # nothing but anchor links (and numbering)
            return Kind.CANDIDATE
    return kind


def strip_toc_markdown(markdown: str) -> tuple[str, int]:
    """Markdown without its table-of-contents lines, and how many were dropped.

    Fenced code and table rows are left alone: code is quoted verbatim, and tables are cleaned by
    rows (`strip_toc_rows`) so their structure survives. Indented lines are judged like any other:
    in a contents list they are the nested entries.
    """
    lines = markdown.split("\n")
    kinds: list[Kind] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            kinds.append(Kind.OTHER)
        elif fenced or line.lstrip().startswith("|"):
            kinds.append(Kind.OTHER)
        else:
            kinds.append(_markdown_kind(line))
    drop = toc_lines(kinds, [markdown_plain(line) for line in lines])
    if not drop:
        return markdown, 0
    return "\n".join(line for i, line in enumerate(lines) if i not in drop), len(drop)


def is_entry_row(cells: Sequence[str]) -> bool:
    """Whether a table row is a contents entry: its cells, read as one line, make an entry."""
    return classify(" ".join(cell for cell in cells if cell)) is Kind.ENTRY
