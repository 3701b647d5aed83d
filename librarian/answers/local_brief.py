"""Local graph answers that fit a screen: a few cited sentences first, everything else on request.

A local search returns a lot: matched entities, their communities' reports and a dozen evidence
chunks. Quoting from all of it gave answers several screens tall (issue 27: a 5,117 px panel for
"What is /usr/libexec?"), and the reader had to dig for the sentence that answers. So the answer is
the few sentences of the evidence that best answer the question, most relevant first, each cited, and
the rest (entities, communities, every evidence item) travels as details that clients show collapsed.

Offline the sentences are chosen by the bundled MiniLM's cosine to the question, the same scorer and
floor as every extractive answer (`librarian.answers.extractive`), with two extra rules for manuals
and reports: table-of-contents lines ("Specific Options ........ 20") and very long units (a whole
table row, a run-on paragraph) are never quoted, and the answer stops at `BRIEF_MAX_SENTENCES`
sentences or `BRIEF_MAX_CHARS` characters of quotes, whichever comes first. With a chat model the
prompt (`BRIEF_PROMPT_RULES`) asks for the same shape.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from librarian.answers.extractive import (
    EXTRACTIVE_NOTICE,
    Draft,
    Quote,
    abstain,
    answer_floor,
    sources_block,
)
from librarian.answers.quotes import near_identical, quote_units
from librarian.answers.verify import support_scorer
from librarian.retrieval.search import Source

BRIEF_MAX_SENTENCES = 3
"""Sentences quoted at most: one answers, two more confirm or add context; a fourth is a list."""
BRIEF_MAX_CHARS = 600
"""Characters of quotes at most: about eight lines of the page's 60-character measure."""
SENTENCE_MAX_CHARS = 280
"""A longer unit is a table row or a run-on paragraph: it would take the whole answer."""
SOURCES_READ = 8
"""Evidence sources whose sentences compete (local search ranks its evidence; lower ones rarely answer)."""

BRIEF_PROMPT_RULES = (
    "Answer in at most three short sentences (under 80 words), the most important fact first. "
    "Do not list the entities or communities; the reader can open them separately."
)

_DOT_LEADER = re.compile(r"(?:\.\s?){4,}|(?:…\s?){2,}|_{4,}")  # "Options ........ 20"
_SECTION_NUMBERS = re.compile(r"\b\d+(?:\.\d+)+\.?\s")  # "4.7. /usr/libexec", one per ToC entry


def layout(text: str) -> bool:
    """Whether text is page layout rather than prose: dot leaders, or a run of numbered headings."""
    return bool(_DOT_LEADER.search(text)) or len(_SECTION_NUMBERS.findall(text)) >= 2


def quotable(text: str, line: str = "") -> bool:
    """Whether a unit reads as a sentence of the document rather than layout (ToC, index, leaders).

    `line` is the raw source line the unit came from: the sentence splitter cuts a contents line
    ("4.7. /usr/libexec : Binaries run by other programs") into innocent-looking pieces, so the
    line is judged too."""
    if len(text) > SENTENCE_MAX_CHARS or layout(text) or layout(line):
        return False
    words = text.split()
    return len(words) >= 4 and sum(w[:1].isalpha() for w in words) >= len(words) / 2


def line_of(text: str, start: int, end: int) -> str:
    """The raw line(s) of `text` holding the span [start, end)."""
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return text[first : len(text) if last < 0 else last]


def ranked_quotes(stack: Any, question: str, numbered: Sequence[tuple[int, Source]]) -> list[Quote]:
    """Every quotable sentence of the top evidence sources, best match to the question first."""
    units = [
        (n, unit)
        for n, source in numbered[:SOURCES_READ]
        for unit in quote_units(source["text"])
        if quotable(unit.text, line_of(source["text"], unit.start, unit.end))
    ]
    if not units:
        return []
    vectors = support_scorer(stack).embedder.embed_array([question, *(u.text for _, u in units)])
    scores = vectors[1:] @ vectors[0]
    quotes = [Quote(u.text, float(s), [n], u, origin=n) for (n, u), s in zip(units, scores, strict=True)]
    return sorted(quotes, key=lambda q: (-q.score, q.origin, q.unit.start))


def choose_brief(ranked: Sequence[Quote], floor: float) -> list[Quote]:
    """The best distinct quotes above `floor`, within the sentence and character budgets, in rank
    order; a near-identical sentence from another source (a PDF and its HTML twin) adds a citation."""
    chosen: list[Quote] = []
    used = 0
    for candidate in ranked:
        twin = next((q for q in chosen if near_identical(q.text, candidate.text)), None)
        if twin is not None:
            if candidate.markers[0] not in twin.markers:
                twin.markers.append(candidate.markers[0])
            continue
        if candidate.score < floor:
            break  # ranked: nothing after this one clears the floor either
        if len(chosen) == BRIEF_MAX_SENTENCES or used + len(candidate.text) > BRIEF_MAX_CHARS:
            continue  # a later, shorter sentence may still fit; a twin may still add a citation
        chosen.append(
            Quote(candidate.text, candidate.score, list(candidate.markers), candidate.unit, candidate.origin)
        )
        used += len(candidate.text)
    return chosen


def compose_brief(quotes: Sequence[Quote], numbered: dict[int, Source]) -> str:
    bullets = "\n".join(f'- "{q.text}" ' + "".join(f"[{n}]" for n in q.markers) for q in quotes)
    cited = [n for q in quotes for n in q.markers]
    return f"{EXTRACTIVE_NOTICE}\n\n{bullets}\n\n{sources_block(numbered, cited)}"


def brief_local_draft(
    stack: Any, question: str, numbered: list[tuple[int, Source]], found: list[Source]
) -> Draft:
    """The offline local answer: the best few cited sentences, or an abstention (sync: MiniLM)."""
    quotes = choose_brief(ranked_quotes(stack, question, numbered), answer_floor(stack))
    if not quotes:
        return Draft(abstain(numbered), found, mode="local")
    text = compose_brief(quotes, dict(numbered))
    return Draft(text, found, (len(EXTRACTIVE_NOTICE), text.rindex("\n\nSources:")), "local")


def page_brief(stack: Any, question: str, sources: list[Source]) -> list[dict[str, Any]]:
    """The brief for the Graph page: `[{"text", "sources": [n, ...]}]`, sources numbered from 1 in
    the order given (the page's numbering), most relevant first; empty when nothing clears the floor."""
    numbered = list(enumerate(sources, start=1))
    quotes = choose_brief(ranked_quotes(stack, question, numbered), answer_floor(stack))
    return [{"text": q.text, "sources": list(q.markers), "score": round(q.score, 4)} for q in quotes]


def local_details(result: dict[str, Any]) -> dict[str, Any]:
    """What a local answer shows on request: matched entities, communities and every evidence item."""
    keys = ("parsed", "matchedEntities", "bridgeEntities", "communities", "evidence")
    return {k: result[k] for k in keys if k in result}
