"""Global search without a chat model (the default): map and reduce by quoting the documents.

The same batches as with a model go through `OfflineMapper`, which answers a batch with the best
sentences of each community in it, and `offline_reducer`, which writes one or two quotes per theme
(a community, headed by its title), so an overview question gets a quote from each of many themes
rather than five sentences from the one nearest the question. Which themes: for a specific question
the most relevant; for an overview question (the query parser's theme cues) those spread over the
documents by where their quotes sit (`global_breadth`), since cosines to generic words bunch.
Usefulness offline is

    usefulness = round(100 * max cosine(query, sentence)) over the batch's candidate sentences,
                 or 0 when that maximum is below RELEVANCE_FLOOR (0.2),

with cosines from the bundled dense model (MiniLM). Candidate sentences are only the communities'
claims (verbatim sentences of the documents, each cited to its chunk by `global_citations`) that
read as prose (`librarian.text.debris.is_readable_sentence`: no TOC lines, dot leaders, table rows,
headings or fragments): never a summary line, which may be a model's words or an old synthetic
lead ("6 related entities centred on X"). Per part, the claims sharing the most query terms (stemmed,
stop words dropped) are embedded, so a query embeds tens of sentences, not the whole corpus. The
budgets, statuses and skip-not-break packing are the same code paths as with a model
(`librarian.graph.query.global_search`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from librarian.graph.query.global_batches import MapBatch
from librarian.graph.query.global_breadth import Position, ThemeCandidate, is_overview, spread_themes
from librarian.graph.query.global_inputs import DocumentOutlines
from librarian.graph.query.global_search import GlobalSearchError, MapAnswer, Quote, Reducer
from librarian.text.debris import is_readable_sentence

RELEVANCE_FLOOR = 0.2
OFFLINE_CANDIDATES_PER_PART = 8
OFFLINE_QUOTES_PER_COMMUNITY = 2  # what a map answer keeps of each community in its batch
OFFLINE_OVERVIEW_QUOTES_PER_COMMUNITY = 4  # an overview places each theme by its quotes: more to spread
OFFLINE_ANSWER_THEMES = 12  # themes an answer quotes, most relevant first
OFFLINE_QUOTES_PER_THEME = 2
OFFLINE_ANSWER_SENTENCES = 12  # quotes in all: every theme gets one before any gets a second
EVIDENCE_HEADER = "Evidence from its sources:"


MIN_QUOTE_WORDS = 8  # "'Yes,' said Scrooge." names the subject and says nothing: not an answer
MAX_QUOTE_WORDS = 60  # longer "sentences" are run-together layout, and a wall of text to read


# "11 Shared libraries that are only necessary ...": a PDF footnote's number run into its sentence,
# which a reader cannot place and which is not the sentence the document prints
FOOTNOTE_LEAD = re.compile(r"^\d{1,3}\s+[A-Z][a-z]")


def _quotable(sentence: str) -> bool:
    return not FOOTNOTE_LEAD.match(sentence) and is_readable_sentence(
        sentence, min_words=MIN_QUOTE_WORDS, max_words=MAX_QUOTE_WORDS
    )


@dataclass(frozen=True)
class PartUnits:
    """What the offline map reads of one part of a community's text (`augmented_text`'s layout)."""

    title: str  # the community's title (first line of its first part; "" in later parts)
    claims: list[str]  # quotable claim sentences, in the part's order


def part_units(text: str, first_part: bool = True) -> PartUnits:
    """The title and the quotable claims ("- sentence" lines after the evidence header) of one part.

    Summary lines are read for nothing: offline answers quote the documents, and every sentence of a
    local summary is one of the claims anyway."""
    lines = [line.strip() for line in text.splitlines()]
    title = next((line for line in lines if line), "") if first_part else ""
    if title.startswith("- ") or title == EVIDENCE_HEADER:
        title = ""
    claims = [line[2:].strip() for line in lines if line.startswith("- ") and _quotable(line[2:].strip())]
    return PartUnits(title, claims)


def _term_overlap(query_terms: set[str], sentence: str) -> int:
    from librarian.embeddings.text_terms import terms

    return len(query_terms & set(terms(sentence)))


MIN_TERM_OVERLAP = 2  # one shared word ("library" in "What are the main topics of this library?") is noise


def _overlap_rank(query_terms: set[str], sentence: str) -> int:
    """Query terms a claim shares, counted from `MIN_TERM_OVERLAP` up: below it every claim ties, so
    the community's own order (its summary's central sentences first) decides."""
    overlap = _term_overlap(query_terms, sentence)
    return overlap if overlap >= MIN_TERM_OVERLAP else 0


class OfflineMapper:
    """Answer a batch with its sentences most similar to the question (bundled dense model).

    `embed_query` / `embed_documents` are the stack's dense embedder; they are synchronous and run in
    a worker thread, with a process-wide cache of sentence vectors so warm questions embed little.
    """

    def __init__(
        self,
        embed_query: Callable[[str], list[float]],
        embed_documents: Callable[[list[str]], list[list[float]]],
        *,
        floor: float = RELEVANCE_FLOOR,
        candidates_per_part: int = OFFLINE_CANDIDATES_PER_PART,
        quotes_per_community: int = OFFLINE_QUOTES_PER_COMMUNITY,
        cache: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.embed_query = embed_query
        self.embed_documents = embed_documents
        self.floor = floor
        self.candidates_per_part = candidates_per_part
        self.quotes_per_community = quotes_per_community
        self.cache = _VECTOR_CACHE if cache is None else cache
        self._query: tuple[str, np.ndarray] | None = None

    def _vectors(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for text, vector in zip(missing, self.embed_documents(missing), strict=True):
                v = np.asarray(vector, dtype=np.float32)
                self.cache[text] = v / (np.linalg.norm(v) or 1.0)
        return np.stack([self.cache[t] for t in texts])

    def _query_vector(self, query: str) -> np.ndarray:
        if self._query is None or self._query[0] != query:
            v = np.asarray(self.embed_query(query), dtype=np.float32)
            self._query = (query, v / (np.linalg.norm(v) or 1.0))
        return self._query[1]

    def score(self, query: str, batch: MapBatch) -> list[Quote]:
        """Candidate sentences of the batch with their cosine to the query, best first (sync)."""
        from librarian.embeddings.text_terms import terms

        query_terms = set(terms(query))
        candidates: list[tuple[str, str, str]] = []
        titles: dict[str, str] = {}
        for part in batch.parts:
            units = part_units(part.text, first_part=part.part == 1)
            if units.title:
                titles[part.community_id] = units.title
            # the claims the summary quotes come first (`summary_first`): ties keep that order
            order = {s: i for i, s in enumerate(units.claims)}
            ranked = sorted(units.claims, key=lambda s: (-_overlap_rank(query_terms, s), order[s]))
            candidates.extend(
                (part.community_id, s, "") for s in dict.fromkeys(ranked[: self.candidates_per_part])
            )
        if not candidates:
            return []
        cosines = self._vectors([s for _, s, _ in candidates]) @ self._query_vector(query)
        quotes = [
            Quote(s, cid, float(c), titles.get(cid, ""))
            for (cid, s, _), c in zip(candidates, cosines, strict=True)
        ]
        return sorted(quotes, key=lambda q: -q.score)

    async def __call__(self, query: str, batch: MapBatch) -> MapAnswer:
        quotes = await asyncio.to_thread(self.score, query, batch)
        best = quotes[0].score if quotes else 0.0
        if not quotes or best < self.floor:  # nothing in the batch is near the question
            return MapAnswer("", 0, batch.community_ids)
        overview = is_overview(query)
        # an overview places each theme by its quotes (`global_breadth`): more of them to spread over
        per_community_limit = max(
            self.quotes_per_community, OFFLINE_OVERVIEW_QUOTES_PER_COMMUNITY if overview else 0
        )
        kept: list[Quote] = []
        per_community: dict[str, int] = {}
        for quote in quotes:  # best first: each community's best sentences, not the batch's best three
            taken = per_community.get(quote.community_id, 0)
            # An overview's generic words rank sentences by how much they sound like a summary, not by
            # what they say: in a relevant batch every community offers its best sentences whatever
            # their cosine, or a chapter that talks plainly has nothing to quote (`global_breadth`)
            below = quote.score < self.floor and not overview
            if below or taken >= per_community_limit:
                continue
            per_community[quote.community_id] = taken + 1
            kept.append(quote)
        usefulness = round(100 * min(1.0, best))
        answer = " ".join(f"{q.text} [Community ID: {q.community_id}]" for q in kept)
        return MapAnswer(answer, usefulness, batch.community_ids, kept)


_VECTOR_CACHE: dict[str, np.ndarray] = {}

OFFLINE_NOTICE = "Extractive overview (no chat model is configured): the most relevant sentences, quoted."


def _spread(
    ranked: dict[str, list[Quote]],
    themes: int,
    positions: Mapping[tuple[str, str], Position],
    extent: Mapping[str, int],
    outlines: DocumentOutlines,
) -> dict[str, list[Quote]]:
    """The overview's themes (`spread_themes` over every quote), each with its chosen quote first."""
    quotes = [q for picked in ranked.values() for q in picked]
    candidates = [
        ThemeCandidate(
            theme,
            q.score,
            positions.get((q.community_id, q.text)),
            i,
            outlines.sections.get((q.community_id, q.text), ()),
        )
        for i, (theme, q) in enumerate((theme, q) for theme, picked in ranked.items() for q in picked)
    ]
    out: dict[str, list[Quote]] = {}
    for candidate in spread_themes(candidates, themes, extent, outlines.sizes):
        first = quotes[candidate.ref]
        out[candidate.theme] = [first, *(q for q in ranked[candidate.theme] if q is not first)]
    return out


def offline_reducer(
    limit: int = OFFLINE_ANSWER_SENTENCES,
    themes: int = OFFLINE_ANSWER_THEMES,
    per_theme: int = OFFLINE_QUOTES_PER_THEME,
    positions: Mapping[tuple[str, str], Position] | None = None,
    outlines: DocumentOutlines | None = None,
) -> Reducer:
    """Quote the selected map answers theme by theme (communities with the same title are one theme),
    one sentence each before any gets a second, at most `per_theme` each and `limit` in all, a theme's
    quotes together. Every quote cites its community, which `global_citations` resolves to the quoted
    claim's chunk.

    Which `themes` themes: for a specific question the most relevant (by their best sentence); for an
    overview question (`global_breadth.is_overview`) those spread over the documents
    (`global_breadth.spread_themes`), placed by `positions`: (community id, quoted line) ->
    (path, chunk index), `global_inputs.claim_positions`, and by `outlines` (the sections they sit in,
    `global_inputs.load_outlines`) when given. Without positions an overview falls back to
    relevance."""
    positions = positions or {}
    outlines = outlines or DocumentOutlines()
    extent: dict[str, int] = {}
    for path, index in positions.values():
        extent[path] = max(extent.get(path, 0), index + 1)
    for path, count in outlines.extent.items():
        extent[path] = max(extent.get(path, 0), count)

    async def reduce(query: str, selected: list[MapAnswer]) -> str:
        quotes = sorted((q for a in selected for q in a.quotes), key=lambda q: -q.score)
        seen: set[str] = set()
        ranked: dict[str, list[Quote]] = {}
        for quote in quotes:
            key = " ".join(quote.text.lower().split())
            if key in seen:
                continue
            seen.add(key)
            ranked.setdefault(quote.theme.strip() or f"community {quote.community_id}", []).append(quote)
        if not ranked:
            raise GlobalSearchError("no quotable sentence in the selected answers")
        rounds = per_theme
        if is_overview(query) and positions:
            by_theme = _spread(ranked, themes, positions, extent, outlines)
            rounds = 1  # breadth: one quote per theme, the one placed (its others may score below the floor)
        else:
            by_theme = {theme: ranked[theme] for theme in list(ranked)[:themes]}
        chosen: dict[str, list[Quote]] = {theme: [] for theme in by_theme}
        count = 0
        for round_ in range(rounds):
            for theme, candidates in by_theme.items():
                if count < limit and round_ < len(candidates):
                    chosen[theme].append(candidates[round_])
                    count += 1
        # Theme by theme, but no title lines: every line of the answer is a quote its citation check
        # holds to the quoted chunk (a title would be an uncited, unchecked sentence)
        lines = [OFFLINE_NOTICE]
        for picked in chosen.values():
            lines.extend(f'- "{q.text}" [Community ID: {q.community_id}]' for q in picked)
        return "\n".join(lines)

    return reduce
