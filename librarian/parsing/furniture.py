"""Drop running headers, footers and page numbers ("page furniture") before blocks are built.

Furniture repeats on every page, so left in it would appear in most chunks and pull every query about
the document title or chapter toward random pages. It is recognised by position (a narrow band at the
top or bottom of the page) together with repetition: the same text with digits masked on several
pages, or a band position that most pages use for a handful of recurring texts (chapter-dependent
running heads). Bare page numbers in a band always go.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence

from librarian.parsing.layout import Line, PageLayout

BAND = 0.08  # fraction of the page height at the top and at the bottom
_ROMAN = r"[ivxlcdm]{1,7}"
_PAGE_NUMBER = re.compile(
    rf"^(?:page\s*)?[-–—(]?\s*(?:\d{{1,4}}|{_ROMAN})\s*[-–—)]?(?:\s*(?:of|/)\s*\d{{1,4}})?$", re.IGNORECASE
)
_EDGE_NUMBER = re.compile(rf"^(?:\d{{1,4}}|{_ROMAN})\s+|\s+(?:\d{{1,4}}|{_ROMAN})$", re.IGNORECASE)


def _band(line: Line, page: PageLayout) -> str | None:
    if line.bottom <= page.height * BAND:
        return "top"
    if line.top >= page.height * (1 - BAND):
        return "bottom"
    return None


def _key(text: str) -> str:
    """Normalised text: page numbers at either end stripped, other digits masked."""
    text = _EDGE_NUMBER.sub("", text.strip().lower())
    return " ".join(re.sub(r"\d", "#", text).split())


def is_page_number(text: str) -> bool:
    return bool(_PAGE_NUMBER.match(text.strip()))


def remove_furniture(pages: Sequence[PageLayout]) -> int:
    """Remove furniture lines from `pages` in place; returns how many lines were removed."""
    count = len(pages)
    banded: list[tuple[PageLayout, Line, str, str, int]] = []
    for page in pages:
        for line in page.lines:
            band = _band(line, page)
            if band is not None:
                banded.append((page, line, band, _key(line.text), round(line.top / 3)))

    pages_per_text: dict[tuple[str, str], set[int]] = defaultdict(set)
    slots: dict[tuple[str, int], list[str]] = defaultdict(list)
    for page, _line, band, key, slot in banded:
        pages_per_text[band, key].add(page.number)
        slots[band, slot].append(key)

    text_threshold = max(2, min(3, math.ceil(count / 2)))
    recurring_slots = {
        slot
        for slot, keys in slots.items()
        if count >= 3 and len(keys) >= count / 2 and len(set(keys)) <= len(keys) / 2
    }
    doomed: set[int] = set()
    for _page, line, band, key, slot in banded:
        repeated = count >= 3 and len(pages_per_text[band, key]) >= text_threshold
        if is_page_number(line.text) or repeated or (band, slot) in recurring_slots:
            doomed.add(id(line))
    for page in pages:
        page.lines = [line for line in page.lines if id(line) not in doomed]
    return len(doomed)
