"""Which themes an offline overview answer quotes: spread over the documents, not bunched by wording.

A specific global question ("What does the manual say about mail spools?") ranks themes by the cosine
of their best sentence to the question. An overview question ("What are the main topics of this
library?", recognised by the query parser's theme/overview cues, `librarian.graph.query.parse`) has
no content words to rank by: cosines to its generic words reward whichever part of a document talks
most like a summary, so the quotes bunched in one section of a manual and whole chapters went missing.

For an overview the themes are chosen for breadth instead, by where their quote sits in the library:

    each document gets slots in proportion to its chunk count (largest remainder; at least one per
    document while slots last, larger documents first);
    a document with numbered section headings (`librarian.graph.query.outline`) spends its slots on
    distinct sections: one quote per top-level section (chapter), then one per second-level section,
    each its best theme (highest map score) not yet quoted; when there are more sections than slots
    the largest sections (in chunks) are quoted; sections with the fewest candidate themes choose
    first, so a theme quotable in two chapters does not starve the one that has nothing else;
    a document without headings cuts its chunk range into equal, contiguous strata, one per slot,
    each quoting its best theme whose quote lies in it;
    slots left over go to the remaining quotes farthest from those chosen (ties: the better score).

Headings are how a manual names its own parts, so every chapter is quoted whatever its length or
wording; equal strata are the fallback, and give the text before chapter 1 or a long chapter's second
half a slot a short chapter then lacks. Nothing here is fitted: the only inputs are the chunk
positions, section numbers and sizes, and the map's scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from librarian.graph.query.outline import Section
from librarian.graph.query.parse import rule_themes

Position = tuple[str, int]  # (document path, chunk index in reading order)


def is_overview(question: str) -> bool:
    """Whether the question asks for an overview, themes or main topics (the parser's theme cues)."""
    return bool(rule_themes(question))


def chunk_position(chunk_id: str, path: str) -> Position | None:
    """(path, index) of a chunk id "{path}:{index}" (the vector record id); None when it is not one."""
    head, _, index = chunk_id.rpartition(":")
    return (path or head, int(index)) if index.isdigit() else None


@dataclass(frozen=True)
class ThemeCandidate:
    """One quote the overview may use: its theme, the map's score and where it sits."""

    theme: str
    score: float
    position: Position | None  # None: unknown (picked only when nothing placed is left)
    ref: int = 0  # the caller's index of the quote
    section: Section = ()  # the numbered section it sits in; () when unknown or before any heading


def _slots_per_document(extent: Mapping[str, int], slots: int) -> dict[str, int]:
    """`slots` shared in proportion to each document's chunk count (largest remainder), every
    document getting one first while slots last (largest documents first)."""
    order = sorted(extent, key=lambda p: (-extent[p], p))
    share = {p: 0 for p in order}
    for path in order[:slots]:
        share[path] = 1
    left = slots - sum(share.values())
    if left <= 0:
        return share
    total = sum(extent.values()) or 1
    exact = {p: left * extent[p] / total for p in order}
    for path in order:
        share[path] += int(exact[path])
    rest = slots - sum(share.values())
    for path in sorted(order, key=lambda p: (-(exact[p] - int(exact[p])), order.index(p)))[:rest]:
        share[path] += 1
    return share


def _distance(a: Position | None, b: Position | None, extent: Mapping[str, int]) -> float:
    """How far apart two quotes are: the share of the document between them; 1 across documents."""
    if a is None or b is None:
        return 0.0
    if a[0] != b[0]:
        return 1.0
    return abs(a[1] - b[1]) / max(1, extent.get(a[0], 1))


def _by_sections(
    doc: Sequence[ThemeCandidate],
    slots: int,
    sizes: Mapping[Section, int],
    themes: set[str],
) -> list[ThemeCandidate]:
    """Up to `slots` quotes of one document, one per distinct section: chapters first, then
    second-level sections (module docstring). Adds the chosen themes to `themes`."""
    chosen: list[ThemeCandidate] = []
    for depth in (1, 2):
        room = slots - len(chosen)
        if room <= 0:
            break
        quoted = {c.section[:depth] for c in chosen}
        sections = sorted(
            {c.section[:depth] for c in doc if len(c.section) >= depth} - quoted,
        )
        if len(sections) > room:  # the largest sections; ties: reading order
            sections = sorted(sorted(sections, key=lambda s: -sizes.get(s, 1))[:room])

        def available(section: Section, depth: int = depth) -> list[ThemeCandidate]:
            return [c for c in doc if c.section[:depth] == section and c.theme not in themes]

        # the most constrained section chooses first (fewest themes to quote), then reading order
        for section in sorted(sections, key=lambda s: (len({c.theme for c in available(s)}), s)):
            inside = available(section)
            if inside:
                best = max(inside, key=lambda c: c.score)
                chosen.append(best)
                themes.add(best.theme)
    return chosen


def _by_strata(
    doc: Sequence[ThemeCandidate], slots: int, size: int, themes: set[str]
) -> list[ThemeCandidate]:
    """Up to `slots` quotes of one document, one per equal stratum of its chunk range. Adds the
    chosen themes to `themes`."""
    chosen: list[ThemeCandidate] = []
    for stratum in range(slots):
        low, high = stratum * size / slots, (stratum + 1) * size / slots
        inside = [
            c
            for c in doc
            if c.theme not in themes and low <= c.position[1] < high  # type: ignore[index]
        ]
        if inside:
            best = max(inside, key=lambda c: c.score)
            chosen.append(best)
            themes.add(best.theme)
    return chosen


def _candidate_section_sizes(doc: Sequence[ThemeCandidate]) -> dict[Section, int]:
    """Section sizes when the caller has none: the distinct chunks its candidates sit in."""
    chunks: dict[Section, set[int]] = {}
    for c in doc:
        for depth in (1, 2):
            if len(c.section) >= depth:
                chunks.setdefault(c.section[:depth], set()).add(c.position[1])  # type: ignore[index]
    return {section: len(found) for section, found in chunks.items()}


def spread_themes(
    candidates: Sequence[ThemeCandidate],
    slots: int,
    extent: Mapping[str, int] | None = None,
    sizes: Mapping[str, Mapping[Section, int]] | None = None,
) -> list[ThemeCandidate]:
    """Up to `slots` quotes of distinct themes chosen for breadth (module docstring), in reading order.

    `extent` is each document's number of chunks; by default the highest chunk index any candidate
    of that document has, plus one. `sizes` is each document's section sizes in chunks
    (`outline.section_sizes`, chapters and second-level sections); by default the number of distinct
    chunks its candidates sit in."""
    if slots <= 0 or not candidates:
        return []
    placed = [c for c in candidates if c.position is not None]
    if extent is None:
        extent = {}
        for c in placed:
            path, index = c.position  # type: ignore[misc]
            extent[path] = max(extent.get(path, 0), index + 1)
    chosen: list[ThemeCandidate] = []
    themes: set[str] = set()
    for path, count in _slots_per_document(extent, slots).items():
        doc = [c for c in placed if c.position[0] == path]  # type: ignore[index]
        if any(c.section for c in doc):
            known = (sizes or {}).get(path) or _candidate_section_sizes(doc)
            chosen.extend(_by_sections(doc, count, known, themes))
        else:
            chosen.extend(_by_strata(doc, count, max(1, extent[path]), themes))
    while len(chosen) < slots:
        left = [c for c in candidates if c.theme not in themes]
        if not left:
            break
        best = max(
            left,
            key=lambda c: (
                min((_distance(c.position, o.position, extent) for o in chosen), default=1.0),
                c.score,
            ),
        )
        chosen.append(best)
        themes.add(best.theme)
    chosen.sort(key=lambda c: (c.position is None, c.position or ("", 0)))
    return chosen
