"""Which themes an offline overview answer quotes: spread over the documents, not bunched by wording.

A specific global question ("What does the manual say about mail spools?") ranks themes by the cosine
of their best sentence to the question. An overview question ("What are the main topics of this
library?", recognised by the query parser's theme/overview cues, `librarian.graph.query.parse`) has
no content words to rank by: cosines to its generic words reward whichever part of a document talks
most like a summary, so the quotes bunched in one section of a manual and whole chapters went missing.

For an overview the themes are chosen for breadth instead, by where their quote sits in the library:

    each document gets slots in proportion to its chunk count (largest remainder; at least one per
    document while slots last, larger documents first);
    a document's slots cut its chunk range into that many equal, contiguous strata;
    each stratum quotes its best theme (highest map score) whose best quote lies in it;
    slots whose stratum has no candidate go to the best remaining themes, by score.

A document's chunks are in reading order, so equal strata follow its table of contents: every part of
the document long enough to own a stratum is quoted, whatever its wording. Nothing here is fitted:
the only inputs are the chunk positions and the map's scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


def spread_themes(
    candidates: Sequence[ThemeCandidate], slots: int, extent: Mapping[str, int] | None = None
) -> list[ThemeCandidate]:
    """Up to `slots` quotes of distinct themes chosen for breadth (module docstring), in reading order.

    A slot whose stratum has no quote of a theme not yet chosen goes to the quote farthest from those
    already chosen (ties: the better score). `extent` is each document's number of chunks; by default
    the highest chunk index any candidate of that document has, plus one."""
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
        size = max(1, extent[path])
        for stratum in range(count):
            low, high = stratum * size / count, (stratum + 1) * size / count
            inside = [
                c
                for c in placed
                if c.theme not in themes and c.position[0] == path and low <= c.position[1] < high  # type: ignore[index]
            ]
            if inside:
                best = max(inside, key=lambda c: c.score)
                chosen.append(best)
                themes.add(best.theme)
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
