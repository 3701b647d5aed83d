"""Where a sentence ends, for the three readers that need to know: citations, the reranker, global search.

One cutter (`split_sentences`) serves all three; what differs is a `SentenceEnds`, because each
reader's rule was tuned on its own data and changing one would change shipped results:

- `CITED` (answers and the sources they cite): an end is `.`, `!` or `?` with any citation markers
  after it ("... 14 days. [1]"), or a line break; a full stop after an abbreviation ("e.g.",
  "et al.", an initial) is not an end, bullets are trimmed and fragments with fewer than three
  letters or digits (a lone marker, a table rule) are not sentences. Spans, so a UI can highlight.
- `PROSE` (the local reranker's sentence max-sim): an end is white space after `.`, `!` or `?` that is
  followed by what starts a sentence (a capital or a digit, maybe after an opening quote or
  bracket), or a line break. `merge_short` then joins short fragments.
- `SUMMARY` (global search's offline map, one line of a community summary at a time): an end is
  white space after `.`, `!` or `?` and any closing quotes or brackets, which are dropped with it.

Why regular expressions and not spaCy's sentencer, although spaCy is a dependency: its parser cuts
differently, so citation spans, the support scorer's inputs and the reranker's nDCG would all move.
It starts the next sentence with the "[1]" that follows a full stop, cuts "- Refunds take 14 days
[1].\n- Returns are free [2]." at the markers instead of the bullets, and cut 64 of 300 SciFact
abstracts differently from `PROSE`; it also costs a parse (about 40 ms an abstract) per candidate
chunk at query time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SentenceEnds:
    """How one kind of text marks the end of a sentence; `split_sentences` does the cutting."""

    pattern: re.Pattern[str]
    """Matches one sentence end."""
    keep: bool
    """The matched end belongs to the sentence before it (a full stop and its markers); else it is
    a separator and is left out of both sentences, as `re.split` leaves it."""
    not_an_end: re.Pattern[str] | None = None
    """Searched in the text up to and including a match's first character: a hit means the match
    is not an end (an abbreviation's full stop)."""
    lead: str = ""
    """Characters trimmed from a sentence's start besides white space (bullets, table pipes)."""
    min_alnum: int = 0
    """Fewer letters and digits than this and a piece is not a sentence (blank pieces never are)."""


CITED = SentenceEnds(
    # Answers cite after the full stop ("... 14 days. [1]") as often as before it, so the markers
    # that follow an end belong to its sentence.
    pattern=re.compile(r"[.!?]+(?:[ \t]*\[\d+(?:\s*,\s*\d+)*\])*(?=\s|$)|\n+"),
    keep=True,
    # A full stop after these is not the end of a sentence ("e.g. [1]", "Smith et al. found").
    not_an_end=re.compile(
        r"(?:\b(?:e\.g|i\.e|etc|vs|cf|al|fig|figs|no|nos|dr|mr|mrs|ms|st|approx|ca|p|pp)|\b[A-Z])\.$", re.I
    ),
    lead=" \t-*•>#|",
    min_alnum=3,
)
PROSE = SentenceEnds(pattern=re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+"), keep=False)
SUMMARY = SentenceEnds(pattern=re.compile(r"(?<=[.!?])[\"')\]]*\s+"), keep=False)


def split_sentences(text: str, ends: SentenceEnds = CITED) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text` under `ends`, surrounding white space (and `ends.lead`
    characters at the start) excluded."""
    spans: list[tuple[int, int]] = []
    start = 0
    cuts = [
        (m.end() if ends.keep else m.start(), m.end())
        for m in ends.pattern.finditer(text)
        if ends.not_an_end is None or not ends.not_an_end.search(text[: m.start() + 1])
    ]
    for end, resume in [*cuts, (len(text), len(text))]:
        s, e = start, end
        while s < e and (text[s] in ends.lead or text[s].isspace()):
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s and sum(c.isalnum() for c in text[s:e]) >= ends.min_alnum:
            spans.append((s, e))
        start = resume
    return spans


def sentences(text: str, ends: SentenceEnds) -> list[str]:
    """The sentences themselves, for readers that need no offsets."""
    return [text[s:e] for s, e in split_sentences(text, ends)]


def merge_short(parts: Sequence[str], min_chars: int) -> list[str]:
    """Fragments shorter than `min_chars` joined (with a space) to the next one, or to the last
    sentence when nothing follows."""
    merged: list[str] = []
    pending = ""
    for part in parts:
        pending = f"{pending} {part}" if pending else part
        if len(pending) >= min_chars:
            merged.append(pending)
            pending = ""
    if pending:
        if merged:
            merged[-1] = f"{merged[-1]} {pending}"
        else:
            merged.append(pending)
    return merged
