"""Global search without a chat model (the default): map and reduce by quoting sentences.

The same batches as with a model go through `OfflineMapper`, which answers a batch with its
best-supported sentences, and `offline_reducer`, which quotes the best of those with the community
each came from. Usefulness offline is

    usefulness = round(100 * max cosine(query, sentence)) over the batch's candidate sentences,
                 or 0 when that maximum is below RELEVANCE_FLOOR (0.2),

with cosines from the bundled dense model (MiniLM). Candidate sentences are the summary sentences of
each part plus the claims that share the most query terms (stemmed, stop words dropped), so a query
embeds tens of sentences, not the whole corpus. The budgets, statuses and skip-not-break packing are
the same code paths as with a model (`librarian.graph.query.global_search`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np

from librarian.graph.query.global_batches import MapBatch
from librarian.graph.query.global_search import GlobalSearchError, MapAnswer, Quote, Reducer
from librarian.text.sentences import SUMMARY, sentences

RELEVANCE_FLOOR = 0.2
OFFLINE_CANDIDATES_PER_PART = 8
OFFLINE_SENTENCES_PER_BATCH = 3
OFFLINE_ANSWER_SENTENCES = 5


MIN_QUOTE_WORDS = 8  # "'Yes,' said Scrooge." names the subject and says nothing: not an answer


def _quotable(sentence: str) -> bool:
    return len(sentence.split()) >= MIN_QUOTE_WORDS


def part_units(text: str) -> tuple[list[str], list[str]]:
    """(summary sentences, claim sentences) of one part's text, as `augmented_text` laid it out;
    only sentences long enough to say something (MIN_QUOTE_WORDS) are kept."""
    summary: list[str] = []
    claims: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line == "Evidence from its sources:":
            continue
        if line.startswith("- "):
            if _quotable(line[2:]):
                claims.append(line[2:].strip())
        else:
            summary.extend(s for s in sentences(line, SUMMARY) if _quotable(s))
    return summary, claims


def _term_overlap(query_terms: set[str], sentence: str) -> int:
    from librarian.embeddings.text_terms import terms

    return len(query_terms & set(terms(sentence)))


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
        sentences_per_batch: int = OFFLINE_SENTENCES_PER_BATCH,
        cache: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.embed_query = embed_query
        self.embed_documents = embed_documents
        self.floor = floor
        self.candidates_per_part = candidates_per_part
        self.sentences_per_batch = sentences_per_batch
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
        candidates: list[tuple[str, str]] = []
        for part in batch.parts:
            summary, claims = part_units(part.text)
            ranked = sorted(claims, key=lambda s: (-_term_overlap(query_terms, s), -len(s)))
            picked = summary + ranked[: self.candidates_per_part]
            candidates.extend((part.community_id, s) for s in dict.fromkeys(picked))
        if not candidates:
            return []
        cosines = self._vectors([s for _, s in candidates]) @ self._query_vector(query)
        quotes = [Quote(s, cid, float(c)) for (cid, s), c in zip(candidates, cosines, strict=True)]
        return sorted(quotes, key=lambda q: -q.score)

    async def __call__(self, query: str, batch: MapBatch) -> MapAnswer:
        quotes = await asyncio.to_thread(self.score, query, batch)
        best = quotes[0].score if quotes else 0.0
        if best < self.floor:
            return MapAnswer("", 0, batch.community_ids)
        kept = [q for q in quotes if q.score >= self.floor][: self.sentences_per_batch]
        usefulness = round(100 * min(1.0, best))
        answer = " ".join(f"{q.text} [Community ID: {q.community_id}]" for q in kept)
        return MapAnswer(answer, usefulness, batch.community_ids, kept)


_VECTOR_CACHE: dict[str, np.ndarray] = {}

OFFLINE_NOTICE = "Extractive overview (no chat model is configured): the most relevant sentences, quoted."


def offline_reducer(limit: int = OFFLINE_ANSWER_SENTENCES) -> Reducer:
    """Quote the best sentences of the selected map answers, each citing its community."""

    async def reduce(query: str, selected: list[MapAnswer]) -> str:
        quotes = sorted((q for a in selected for q in a.quotes), key=lambda q: -q.score)
        seen: set[str] = set()
        lines = [OFFLINE_NOTICE]
        for quote in quotes:
            key = " ".join(quote.text.lower().split())
            if key in seen:
                continue
            seen.add(key)
            lines.append(f'- "{quote.text}" [Community ID: {quote.community_id}]')
            if len(lines) > limit:
                break
        if len(lines) == 1:
            raise GlobalSearchError("no quotable sentence in the selected answers")
        return "\n".join(lines)

    return reduce
