"""Global GraphRAG retrieval: map over community summaries in token-budgeted batches, then reduce.

Reference behaviour (graphrag-ts `globalSearch.ts`, `summaryBatcher.ts`, `globalMap.ts`,
`globalReduce.ts`), kept:
- input: the summaries of the leaf communities by default, or of a requested level, each augmented
  with the claims (verbatim source sentences) of its descendant leaves;
- shuffle (seeded here, so a run is reproducible), then pack into batches whose whole map prompt
  fits `map_budget - map_reserve` tokens; a summary too large for one batch is split into parts,
  every part labelled `[Community ID: x | summary part n]`;
- map: per batch `{"answer": str, "usefulness": 0-100}`, validated; a failed batch is tried once
  more (2 attempts); at most 4 batches in flight;
- reduce: drop usefulness 0, sort by usefulness (stable), add answers formatted
  `[Usefulness: n; Community IDs: a, b]` while the reduce prompt fits `reduce_budget -
  reduce_reserve`, skipping (not stopping at) one that does not fit; reduce JSON `{"answer": str}`;
- status `completed`, `partial` (some batches failed, usable answers remain) or `no_results` (a fixed
  answer); every batch failing is an error (`GlobalSearchError`).

Differences: tokens are counted with a real tokenizer (`librarian.graph.tokens`), not a character
estimate; the claims added to one community are capped (`augment_budget` tokens) so one huge
community cannot turn a question into hundreds of model calls; the reduce call gets 2 attempts like
the map calls.

Offline (no chat model, the default): the same batches go through `OfflineMapper`, which answers a
batch with its best-supported sentences, and `offline_reduce`, which quotes the best of those with the
community each came from. Usefulness offline is

    usefulness = round(100 * max cosine(query, sentence)) over the batch's candidate sentences,
                 or 0 when that maximum is below RELEVANCE_FLOOR (0.2),

with cosines from the bundled dense model (MiniLM). Candidate sentences are the summary sentences of
each part plus the claims that share the most query terms (stemmed, stop words dropped), so a query
embeds tens of sentences, not the whole corpus. The budgets, statuses and skip-not-break packing are
the same code paths as with a model.

Cancellation: everything here is a coroutine; cancelling the task that awaits `global_search` cancels
the map workers (a TaskGroup) and so every model call still waiting or in flight, and `should_stop`
is checked before each stage and each model call for callers that signal with a flag instead.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from librarian.errors import LibrarianError
from librarian.graph.json_repair import (
    parse_llm_json,
    validate_map_answer,
    validate_reduce_answer,
)
from librarian.graph.tokens import count_tokens, split_tokens

MAP_BUDGET = 8000
MAP_RESERVE = 512
REDUCE_BUDGET = 8000
REDUCE_RESERVE = 1024
MAP_CONCURRENCY = 4
MAP_ATTEMPTS = 2
AUGMENT_BUDGET = 800
RELEVANCE_FLOOR = 0.2
OFFLINE_CANDIDATES_PER_PART = 8
OFFLINE_SENTENCES_PER_BATCH = 3
OFFLINE_ANSWER_SENTENCES = 5
NO_RESULTS_ANSWER = "No relevant community summaries were found for this query."

Status = Literal["completed", "partial", "no_results"]

MAP_PROMPT = """You are analysing parts of a knowledge graph's community reports to answer a question.

Question: {query}

Community reports (each begins with its label):
{content}

Answer the question using only these reports. Reply with JSON only:
{{"answer": "<what these reports say that answers the question; empty if nothing>",
 "usefulness": <integer 0-100: how much this helps answer the question; 0 if not at all>}}"""

REDUCE_PROMPT = """You combine partial answers, drawn from different community reports, into one answer.

Question: {query}

Partial answers, most useful first (each labelled with its usefulness and community ids):
{content}

Write a single coherent answer from these partial answers only. Cite the communities you use as
[Community ID: n]. Reply with JSON only: {{"answer": "<the answer>"}}"""


class GlobalSearchError(LibrarianError):
    """Every map batch failed (or the reduce failed): there is nothing trustworthy to return."""

    code = "global_search_failed"


class SearchCancelled(LibrarianError):
    """The caller asked to stop; raised at the next check so no further stage or model call starts."""

    code = "cancelled"


# ------------------------------------------------------------------------------------------- inputs


@dataclass
class ClaimText:
    text: str
    chunk_id: str
    path: str


@dataclass
class CommunityInput:
    """One community as global search reads it: its summary plus claims of its descendant leaves."""

    id: str
    level: int
    title: str
    summary: str
    claims: list[ClaimText] = field(default_factory=list)
    # document path -> one chunk of it that the community draws on (its claims' first, then its
    # members' sources): the community's provenance, probed for liveness and cited as a fallback
    provenance: dict[str, str] = field(default_factory=dict)


def augmented_text(community: CommunityInput, augment_budget: int = AUGMENT_BUDGET) -> str:
    """Title, summary, then claims as "- sentence" lines while they fit `augment_budget` tokens."""
    head = "\n".join(part for part in (community.title.strip(), community.summary.strip()) if part)
    lines: list[str] = []
    used = 0
    seen: set[str] = set()
    for claim in community.claims:
        sentence = " ".join(claim.text.split())
        if not sentence or sentence in seen:
            continue
        cost = count_tokens(sentence) + 2
        if used + cost > augment_budget:
            continue  # a shorter claim further down may still fit
        seen.add(sentence)
        lines.append(f"- {sentence}")
        used += cost
    if not lines:
        return head
    return f"{head}\nEvidence from its sources:\n" + "\n".join(lines)


# ------------------------------------------------------------------------------------------ batches


@dataclass
class SummaryPart:
    community_id: str
    part: int
    text: str

    def formatted(self) -> str:
        return f"{part_header(self.community_id, self.part)}{self.text}"


@dataclass
class MapBatch:
    index: int
    parts: list[SummaryPart]
    tokens: int  # of the whole map prompt (skeleton + content)

    @property
    def content(self) -> str:
        return "\n".join(part.formatted() for part in self.parts)

    @property
    def community_ids(self) -> list[str]:
        return list(dict.fromkeys(part.community_id for part in self.parts))


def part_header(community_id: str, part: int) -> str:
    return f"[Community ID: {community_id} | summary part {part}]\n"


def prompt_tokens(skeleton: str, content: str) -> int:
    """Tokens of the prompt the model would get: skeleton, newline, content (as the reference)."""
    return count_tokens(f"{skeleton}\n{content}")


def seeded_shuffle(items: Sequence[Any], seed: int) -> list[Any]:
    """Fisher-Yates with a seeded generator: the order varies with the seed, not between runs."""
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def split_summary(community_id: str, text: str, skeleton: str, budget: int) -> list[SummaryPart]:
    """One part if the labelled summary fits a batch alone, else as many labelled parts as needed."""
    if prompt_tokens(skeleton, SummaryPart(community_id, 1, text).formatted()) <= budget:
        return [SummaryPart(community_id, 1, text)]
    overhead = prompt_tokens(skeleton, part_header(community_id, 9_999_999))
    room = budget - overhead
    if room <= 0:
        raise ValueError(f"the map budget cannot fit even a label for community {community_id}")
    parts: list[SummaryPart] = []
    for piece in split_tokens(text, room):
        parts.append(SummaryPart(community_id, len(parts) + 1, piece))
    for part in parts:  # re-encoding a piece can differ from the slice by a token: check, never trust
        if prompt_tokens(skeleton, part.formatted()) > budget:
            raise ValueError(f"a part of community {community_id} does not fit the map budget")
    return parts


def build_batches(
    summaries: Sequence[tuple[str, str]], skeleton: str, budget: int, seed: int = 0
) -> list[MapBatch]:
    """Shuffle `(community id, text)` pairs, split oversized ones, pack parts greedily in order."""
    if prompt_tokens(skeleton, "") > budget:
        raise ValueError("the map budget cannot fit the map prompt itself")
    parts = [
        part
        for community_id, text in seeded_shuffle(summaries, seed)
        for part in split_summary(community_id, text, skeleton, budget)
    ]
    batches: list[MapBatch] = []
    current: list[SummaryPart] = []
    current_tokens = 0
    for part in parts:
        candidate = [*current, part]
        tokens = prompt_tokens(skeleton, "\n".join(p.formatted() for p in candidate))
        if current and tokens > budget:
            batches.append(MapBatch(len(batches), current, current_tokens))
            candidate = [part]
            tokens = prompt_tokens(skeleton, part.formatted())
        current, current_tokens = candidate, tokens
    if current:
        batches.append(MapBatch(len(batches), current, current_tokens))
    return batches


# ---------------------------------------------------------------------------------------------- map


@dataclass
class Quote:
    """An offline answer sentence: the text, the community it came from, its cosine to the query."""

    text: str
    community_id: str
    score: float


@dataclass
class MapAnswer:
    answer: str
    usefulness: int
    community_ids: list[str]
    quotes: list[Quote] = field(default_factory=list)  # offline only


class Mapper(Protocol):
    async def __call__(self, query: str, batch: MapBatch) -> MapAnswer: ...


StopCheck = Callable[[], bool]


def _check(should_stop: StopCheck | None) -> None:
    if should_stop is not None and should_stop():
        raise SearchCancelled("the search was cancelled")


async def run_map(
    query: str,
    batches: Sequence[MapBatch],
    mapper: Mapper,
    *,
    concurrency: int = MAP_CONCURRENCY,
    attempts: int = MAP_ATTEMPTS,
    should_stop: StopCheck | None = None,
) -> tuple[list[MapAnswer], list[BaseException]]:
    """Answers in batch order and the final error of each failed batch; every batch failing raises."""
    results: list[MapAnswer | BaseException | None] = [None] * len(batches)
    pending = iter(range(len(batches)))

    async def worker() -> None:
        for index in pending:  # a shared iterator: each worker takes the next batch
            last: BaseException | None = None
            for _ in range(attempts):
                _check(should_stop)
                try:
                    results[index] = await mapper(query, batches[index])
                    break
                except (asyncio.CancelledError, SearchCancelled):
                    raise
                except Exception as exc:  # invalid JSON, HTTP errors...: retried, then counted
                    last = exc
            else:
                results[index] = last or GlobalSearchError(f"map batch {index} failed")

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(max(1, min(concurrency, len(batches)))):
                group.create_task(worker())
    except BaseExceptionGroup as group_error:  # a worker stopped (cancel flag) or hit a bug: surface it
        raise group_error.exceptions[0] from None
    answers = [r for r in results if isinstance(r, MapAnswer)]
    errors = [r for r in results if isinstance(r, BaseException)]
    if batches and not answers:
        raise GlobalSearchError(f"every map batch failed ({len(errors)}); last error: {errors[-1]}")
    return answers, errors


# ------------------------------------------------------------------------------------------- reduce


def format_map_answer(answer: MapAnswer) -> str:
    ids = ", ".join(answer.community_ids)
    return f"[Usefulness: {answer.usefulness}; Community IDs: {ids}]\n{answer.answer}"


def select_reduce_answers(answers: Sequence[MapAnswer], skeleton: str, budget: int) -> list[MapAnswer]:
    """Drop usefulness 0, stable-sort by usefulness, add while the prompt fits; skip what doesn't."""
    ranked = sorted((a for a in answers if a.usefulness > 0), key=lambda a: -a.usefulness)
    selected: list[MapAnswer] = []
    context = ""
    for answer in ranked:
        candidate = "\n\n".join(part for part in (context, format_map_answer(answer)) if part)
        if prompt_tokens(skeleton, candidate) > budget:
            continue
        selected.append(answer)
        context = candidate
    return selected


Reducer = Callable[[str, list[MapAnswer]], Awaitable[str]]


# -------------------------------------------------------------------------------------- the search


@dataclass
class GlobalOptions:
    level: int | None = None  # None: leaf communities
    map_budget: int = MAP_BUDGET
    map_reserve: int = MAP_RESERVE
    reduce_budget: int = REDUCE_BUDGET
    reduce_reserve: int = REDUCE_RESERVE
    concurrency: int = MAP_CONCURRENCY
    attempts: int = MAP_ATTEMPTS
    augment_budget: int = AUGMENT_BUDGET
    seed: int = 0

    def validate(self) -> None:
        if self.map_budget - self.map_reserve <= 0 or self.reduce_budget - self.reduce_reserve <= 0:
            raise ValueError("token budgets must exceed their output reserves")
        if self.concurrency < 1 or self.attempts < 1:
            raise ValueError("concurrency and attempts must be at least 1")
        if self.level is not None and self.level < 0:
            raise ValueError("the community level must be a non-negative integer")


@dataclass
class GlobalResult:
    query: str
    status: Status
    answer: str
    level: int | None
    selected: list[MapAnswer]
    failed_batches: int
    batches: list[MapBatch]
    communities: list[str]  # every community that was read (ids)

    @property
    def cited_communities(self) -> list[str]:
        return list(dict.fromkeys(c for a in self.selected for c in a.community_ids))


async def global_search(
    query: str,
    communities: Sequence[CommunityInput],
    mapper: Mapper,
    reducer: Reducer,
    options: GlobalOptions | None = None,
    *,
    map_skeleton: str | None = None,
    reduce_skeleton: str | None = None,
    should_stop: StopCheck | None = None,
) -> GlobalResult:
    """Batches → map → select → reduce over already-loaded communities (see `load_communities`)."""
    options = options or GlobalOptions()
    options.validate()
    query = query.strip()
    if not query:
        raise ValueError("the question is empty")
    map_skeleton = MAP_PROMPT.format(query=query, content="") if map_skeleton is None else map_skeleton
    reduce_skeleton = (
        REDUCE_PROMPT.format(query=query, content="") if reduce_skeleton is None else reduce_skeleton
    )
    ids = [c.id for c in communities]

    def no_results(failed: int = 0, batches: list[MapBatch] | None = None) -> GlobalResult:
        level = options.level
        return GlobalResult(query, "no_results", NO_RESULTS_ANSWER, level, [], failed, batches or [], ids)

    # Token counting loads the BPE table on first use (file reads) and is CPU work: off the event loop
    # (the server refuses blocking calls there), like every other blocking step of a search.
    texts = await asyncio.to_thread(
        lambda: [(c.id, augmented_text(c, options.augment_budget)) for c in communities]
    )
    texts = [(cid, text) for cid, text in texts if text.strip()]
    if not texts:
        return no_results()
    _check(should_stop)
    budget = options.map_budget - options.map_reserve
    batches = await asyncio.to_thread(build_batches, texts, map_skeleton, budget, options.seed)
    answers, errors = await run_map(
        query,
        batches,
        mapper,
        concurrency=options.concurrency,
        attempts=options.attempts,
        should_stop=should_stop,
    )
    _check(should_stop)
    selected = select_reduce_answers(answers, reduce_skeleton, options.reduce_budget - options.reduce_reserve)
    if not selected:
        return no_results(len(errors), batches)
    last: Exception | None = None
    for _ in range(options.attempts):
        _check(should_stop)
        try:
            answer = await reducer(query, selected)
            break
        except (asyncio.CancelledError, SearchCancelled):
            raise
        except Exception as exc:
            last = exc
    else:
        raise GlobalSearchError(f"the reduce step failed: {last}")
    status: Status = "partial" if errors else "completed"
    return GlobalResult(query, status, answer, options.level, selected, len(errors), batches, ids)


# --------------------------------------------------------------------------------- model (LLM) path


def _reply_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content or "")


class LLMMapper:
    """Map with a LangChain chat model: the prompt above, JSON parsed with the repair rules."""

    def __init__(self, model: Any) -> None:
        self.model = model

    async def __call__(self, query: str, batch: MapBatch) -> MapAnswer:
        prompt = MAP_PROMPT.format(query=query, content=batch.content)
        reply = await self.model.ainvoke(prompt)
        parsed = validate_map_answer(parse_llm_json(_reply_text(reply)))
        return MapAnswer(parsed["answer"], parsed["usefulness"], batch.community_ids)


def llm_reducer(model: Any) -> Reducer:
    async def reduce(query: str, selected: list[MapAnswer]) -> str:
        content = "\n\n".join(format_map_answer(a) for a in selected)
        reply = await model.ainvoke(REDUCE_PROMPT.format(query=query, content=content))
        return validate_reduce_answer(parse_llm_json(_reply_text(reply)))["answer"]

    return reduce


# ------------------------------------------------------------------------------------- offline path

_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_HEADER = re.compile(r"^\[Community ID: (.+?) \| summary part \d+\]$")


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
            summary.extend(s.strip() for s in _SENTENCE.split(line) if _quotable(s))
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


CITATION = re.compile(r"\[Community ID: ([^\]|]+?)\]")


def cited_community_ids(answer: str) -> list[str]:
    """Community ids an answer cites with `[Community ID: n]`, in order of first citation."""
    return list(dict.fromkeys(m.strip() for m in CITATION.findall(answer)))


# ----------------------------------------------------------------------------- over the graph store

CLAIMS_PER_COMMUNITY = 60  # read per community before the token cap; most are cut by `augment_budget`
_INPUTS: dict[tuple[Any, ...], list[CommunityInput]] = {}


def load_communities(graph: Any, published: Any, level: int | None) -> list[CommunityInput]:
    """Leaf communities (or those of `level`) with the claims of their descendant leaves.

    A community's `members` already include every descendant's members, so the claims whose subject
    or object is a member are exactly its descendant leaves' claims. Cached per published version;
    what is still live is decided per query (`live_inputs`).
    """
    from librarian.graph.query.local_search import version_key

    version = published.version
    key = (*version_key(graph, published), level)
    if key in _INPUTS:
        return _INPUTS[key]
    if level is None:
        communities = graph.communities(leaves_only=True, version=version)
    else:
        communities = graph.communities(level=level, version=version)
    sources = {e.name: e.sources for e in graph.entities(version=version)}
    inputs = []
    for community in communities:
        claims = graph.claims_for(community.members, limit=CLAIMS_PER_COMMUNITY, version=version)
        provenance: dict[str, str] = {}
        for claim in claims:
            provenance.setdefault(claim.path, claim.chunk_id)
        for member in community.members:
            for source in sources.get(member, []):
                provenance.setdefault(source.path, source.chunk_id)
        inputs.append(
            CommunityInput(
                str(community.id),
                community.level,
                community.title,
                community.summary,
                [ClaimText(c.description, c.chunk_id, c.path) for c in claims],
                provenance,
            )
        )
    for old in [k for k in _INPUTS if k[:2] == key[:2] and k[:4] != key[:4]]:
        del _INPUTS[old]  # keep only the current version of an organization
    _INPUTS[key] = inputs
    return inputs


def provenance_probes(inputs: Sequence[CommunityInput]) -> dict[str, str]:
    """One chunk id per document any of the communities draws on: what `Liveness.paths` fetches."""
    probes: dict[str, str] = {}
    for community in inputs:
        for path, chunk_id in community.provenance.items():
            probes.setdefault(path, chunk_id)
    return probes


def live_inputs(inputs: Sequence[CommunityInput], live_paths: set[str]) -> list[CommunityInput]:
    """The communities as the map may read them: only claims of live documents, and a community only
    while at least one document it draws on is live.

    A community whose every source document was deleted or replaced since the build is left out, so
    its summary cannot be quoted; a mixed one keeps its summary and loses the gone documents' claims
    (their sentences, verbatim source text, are what the offline map quotes and what citations use).
    """
    kept: list[CommunityInput] = []
    for community in inputs:
        provenance = {p: c for p, c in community.provenance.items() if p in live_paths}
        if not provenance:
            continue
        claims = [cl for cl in community.claims if cl.path in live_paths]
        kept.append(dataclasses.replace(community, claims=claims, provenance=provenance))
    return kept


def cited_chunks(result: GlobalResult, inputs: Sequence[CommunityInput]) -> list[tuple[str, str]]:
    """(community id, chunk id) for every community the answer cites, in citation order.

    An offline quote that is one of the community's claims cites that claim's chunk; any other
    citation (a summary sentence, a model's answer) cites the community's first claims' chunks, or
    with no claim left the chunks its provenance names, so every cited community reaches at least
    one real chunk of a live document (given `live_inputs`).
    """
    by_id = {c.id: c for c in inputs}
    pairs: list[tuple[str, str]] = []
    quoted = {(q.community_id, q.text) for a in result.selected for q in a.quotes}
    cited = cited_community_ids(result.answer) or result.cited_communities
    for community_id in cited:
        community = by_id.get(community_id)
        if community is None:
            continue  # an id the model made up: not a citation
        exact = [
            cl.chunk_id for cl in community.claims if (community_id, " ".join(cl.text.split())) in quoted
        ]
        chunk_ids = (
            exact or [cl.chunk_id for cl in community.claims[:2]] or list(community.provenance.values())[:2]
        )
        pairs.extend((community_id, chunk_id) for chunk_id in dict.fromkeys(chunk_ids))
    return pairs
