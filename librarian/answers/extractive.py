"""Answers without a chat model: the sentences of the sources that answer, quoted, with citations.

No model that ships offline answers well enough (DESIGN §6), so instead of a bad generated answer
Librarian returns an extractive one, clearly marked as such. It reads like an answer, not a dump:
- it abstains when no sentence clears the answer floor, naming the closest sources instead;
- a sentence said by two sources (a PDF and its HTML twin) is quoted once, citing both;
- a table row is quoted with its header cells, never the header row alone (`librarian.answers.quotes`);
- quotes are cleaned of Markdown link targets and footnote markers; the span each came from is in
  the citation records (`citations`), so a UI can still highlight the raw source text;
- the cited sources form their own block, file and page, for clients that ignore `sources`.

Every retrieval path (search here, graph local and global in `librarian.answers.modes`) hands over a
`Draft`; the offline agent graph (`graphs.extractive`) checks and streams it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from librarian.answers.numbering import merge_sources, number_sources
from librarian.answers.quotes import QuoteUnit, near_identical, quote_units
from librarian.answers.verify import support_scorer, verify_message
from librarian.retrieval.search import SearchOptions, SearchResult, Source, search
from librarian.stack import Stack

EXTRACTIVE_NOTICE = "Extractive answer (no chat model is configured): the most relevant sentences, quoted."
NOTHING_FOUND = "I found nothing relevant in this organization's documents."
NOT_ANSWERED = "This organization's documents do not answer this question. The closest sources:"
ANSWER_FLOOR = 0.35
"""MiniLM cosine between the question and the best quotable sentence below which the documents are
taken not to answer (`LIBRARIAN_ANSWER_FLOOR` overrides). Measured by `bench/support_scorer.py
--floor` on HotpotQA dev150: see README "Citations"."""
QUOTE_LIMIT = 3
SOURCES_QUOTED = 5  # quotes come from the top sources only: lower ones rarely hold the answer


def last_question(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            content = message.content
            return (
                content
                if isinstance(content, str)
                else " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            )
    return ""


@dataclass
class Quote:
    text: str
    score: float
    markers: list[int]
    unit: QuoteUnit
    origin: int = 0  # order of the first source quoted, for reading order
    twins: list[int] = field(default_factory=list)


def scored_units(stack: Stack, question: str, numbered: list[tuple[int, Source]]) -> list[Quote]:
    """Every quotable unit of the top sources, scored by similarity to the question (bundled model)."""
    units = [(n, u) for n, source in numbered[:SOURCES_QUOTED] for u in quote_units(source["text"])]
    if not units:
        return []
    embedder = support_scorer(stack).embedder
    vectors = embedder.embed_array([question, *(u.text for _, u in units)])
    scores = vectors[1:] @ vectors[0]
    return [Quote(u.text, float(s), [n], u, origin=n) for (n, u), s in zip(units, scores, strict=True)]


def choose_quotes(candidates: list[Quote], floor: float, limit: int = QUOTE_LIMIT) -> list[Quote]:
    """The best `limit` distinct quotes above the floor; a near-identical quote from another source
    adds that source's marker instead of a second bullet. Returned in source order (reads better)."""
    chosen: list[Quote] = []
    for candidate in sorted(candidates, key=lambda q: -q.score):
        twin = next((q for q in chosen if near_identical(q.text, candidate.text)), None)
        if twin is not None:
            if candidate.markers[0] not in twin.markers:
                twin.markers.append(candidate.markers[0])
            continue
        if candidate.score >= floor and len(chosen) < limit:
            chosen.append(
                Quote(
                    candidate.text, candidate.score, list(candidate.markers), candidate.unit, candidate.origin
                )
            )
    return sorted(chosen, key=lambda q: (q.origin, q.unit.start))


def where(source: Source) -> str:
    page = source.get("page") or 0
    return f"{source['filename']}, page {page}" if page else source["filename"]


def sources_block(numbered: dict[int, Source], markers: list[int]) -> str:
    return "Sources:\n" + "\n".join(f"[{n}] {where(numbered[n])}" for n in sorted(set(markers)))


def compose(quotes: list[Quote], numbered: dict[int, Source]) -> str:
    bullets = "\n".join(f'- "{q.text}" ' + "".join(f"[{n}]" for n in q.markers) for q in quotes)
    cited = [n for q in quotes for n in q.markers]
    return f"{EXTRACTIVE_NOTICE}\n\n{bullets}\n\n{sources_block(numbered, cited)}"


def abstain(numbered: list[tuple[int, Source]]) -> str:
    closest = "\n".join(f"- {where(source)}" for _, source in numbered[:3])
    return f"{NOT_ANSWERED}\n{closest}"


def retrieve(
    current: Stack, organization_id: str, question: str, paths: list[str] | None = None
) -> SearchResult:
    from librarian.retrieval.rerankers import make_reranker

    options = SearchOptions.from_settings(current, paths=paths)
    return search(current, organization_id, question, options, make_reranker(current))


@dataclass
class Draft:
    """One turn's answer before it is checked and streamed: what every retrieval path hands over.

    `sources` are what this turn retrieved (merged into the state's `sources`); `text` cites them with
    the numbers `number_sources` gave against the sources of earlier turns. `check` is the span of
    `text` holding quoted claims (notice and `Sources:` block excluded); None when there is nothing to
    verify (nothing found, or an abstention).
    """

    text: str
    sources: list[Source]
    check: tuple[int, int] | None = None
    mode: str = "search"


def answer_floor(current: Stack) -> float:
    floor = current.settings.answer_floor
    return ANSWER_FLOOR if floor is None else floor


def quoted_draft(
    current: Stack, question: str, numbered: list[tuple[int, Source]], found: list[Source]
) -> Draft:
    """Quotes from the top numbered sources, or an abstention naming the closest (sync: MiniLM)."""
    quotes = choose_quotes(scored_units(current, question, numbered), answer_floor(current))
    if not quotes:
        return Draft(abstain(numbered), found)
    text = compose(quotes, dict(numbered))
    return Draft(text, found, (len(EXTRACTIVE_NOTICE), text.rindex("\n\nSources:")))


def search_draft(
    current: Stack, organization_id: str, question: str, known: list[Source], paths: list[str] | None = None
) -> Draft:
    """The search path: hybrid retrieval (only in `paths`, if given), then quotes (or an abstention)."""
    result = retrieve(current, organization_id, question, paths)
    numbered = number_sources(known, result["sources"])
    if not numbered:
        return Draft(NOTHING_FOUND, [])
    return quoted_draft(current, question, numbered, result["sources"])


def checked(current: Stack, draft: Draft, known: list[Source]) -> tuple[str, list[Any]]:
    """(text to send, citation records): the draft's quotes verified against every cited source."""
    if draft.check is None:
        return draft.text, []
    revised, records = verify_message(
        AIMessage(content=draft.text),
        merge_sources(known, draft.sources),
        support_scorer(current),
        None,
        current.settings.unsupported_sentences,
        start=draft.check[0],
        end=draft.check[1],
    )
    return (str(revised.content) if revised is not None else draft.text), records
