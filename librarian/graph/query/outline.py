"""A document's outline read from its chunk text: where each numbered section begins.

An overview answer should quote every chapter of a manual (`global_breadth`). Chunk positions alone
cannot tell where a chapter begins: equal strata of a manual give its front matter a slot of their
own and split a long chapter over several while a short one gets none. The chunks keep the section
headings as lines of their own ("Chapter 1. Introduction", "4.7. /usr/libexec : Binaries run by
other programs", "## 2. Cargo at North Quay"), so the outline is read from them.

A numbered line is taken for a heading only when its number can follow the last heading taken (the
next sibling at any depth, or a first child; a skipped number is tolerated, a step back is not): a
numbered list inside section 4.2 ("1. Stop the daemon") or a table of contents repeated later does
not restart the outline. Table-of-contents entries themselves are layout (`is_heading_line` rejects
dot leaders and trailing page numbers).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from librarian.text.debris import is_heading_line

Section = tuple[int, ...]  # (4,), (4, 7), (4, 7, 1): chapter 4, section 4.7, ...

_NUMBERED_LINE = re.compile(
    r"^[ \t]*(?:#+[ \t]*)?(?:(?i:chapter|part|section)[ \t]+)?(\d{1,3}(?:\.\d{1,3}){0,5})\.?[ \t]+\S[^\n]*$",
    re.MULTILINE,
)


@dataclass(frozen=True, order=True)
class Heading:
    """A section heading: where it stands (chunk index, character offset in the chunk) and its number."""

    chunk: int
    offset: int
    number: Section


def follows(current: Section, number: Section) -> bool:
    """Whether a heading numbered `number` can come after the section `current` in reading order.

    The first heading of a document is chapter 0 or 1 at any depth; after that the chapter stays or
    steps by one, a new chapter's subsections start at 1, and within a chapter the number only moves
    forward and at most one level deeper."""
    if not current:
        return number[0] <= 1
    if number[0] == current[0] + 1:
        return all(part <= 1 for part in number[1:])
    if number[0] != current[0]:
        return False
    return number > current and len(number) <= len(current) + 1


def read_outline(texts: Mapping[int, str]) -> list[Heading]:
    """The numbered section headings of a document whose chunk texts are `texts` (chunk index ->
    text), in reading order; [] when it has none."""
    headings: list[Heading] = []
    current: Section = ()
    for index in sorted(texts):
        for match in _NUMBERED_LINE.finditer(texts[index]):
            if not is_heading_line(match.group(0)):
                continue
            number = tuple(int(part) for part in match.group(1).split("."))
            if follows(current, number):
                headings.append(Heading(index, match.start(), number))
                current = number
    return headings


def section_at(headings: Sequence[Heading], chunk: int, offset: int = 0) -> Section:
    """The section in effect at `offset` of chunk `chunk`: the last heading at or before it; ()
    before the first heading."""
    at = bisect.bisect_right(headings, Heading(chunk, offset, (1_000_000,)))
    return headings[at - 1].number if at else ()


def section_sizes(headings: Sequence[Heading], extent: int, depth: int) -> dict[Section, int]:
    """How many chunks each section of `depth` levels spans (at least 1): from its first heading to
    the next heading of the same or a higher level, the last one to the document's `extent`."""
    starts: dict[Section, int] = {}
    for heading in headings:
        starts.setdefault(heading.number[:depth], heading.chunk)
    order = sorted(starts.items(), key=lambda item: (item[1], item[0]))
    sizes: dict[Section, int] = {}
    for i, (section, start) in enumerate(order):
        end = order[i + 1][1] if i + 1 < len(order) else max(extent, start + 1)
        sizes[section] = max(1, end - start)
    return sizes
