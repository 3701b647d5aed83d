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

Where the parts live: the inputs and their liveness in `global_inputs`, batching in `global_batches`,
the mappers and reducers in `global_llm` (chat model) and `global_offline` (no chat model, the
default: quotes sentences), citations in `global_citations`; this module runs the stages.

Cancellation: everything here is a coroutine; cancelling the task that awaits `global_search` cancels
the map workers (a TaskGroup) and so every model call still waiting or in flight, and `should_stop`
is checked before each stage and each model call for callers that signal with a flag instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from librarian.errors import LibrarianError
from librarian.graph.query.global_batches import MapBatch, build_batches, prompt_tokens
from librarian.graph.query.global_inputs import AUGMENT_BUDGET, CommunityInput, augmented_text

MAP_BUDGET = 8000
MAP_RESERVE = 512
REDUCE_BUDGET = 8000
REDUCE_RESERVE = 1024
MAP_CONCURRENCY = 4
MAP_ATTEMPTS = 2
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


# ---------------------------------------------------------------------------------------------- map


@dataclass
class Quote:
    """An offline answer sentence: the text, the community it came from, its cosine to the query."""

    text: str
    community_id: str
    score: float
    theme: str = ""  # the community's title, which the offline answer quotes it under


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


async def run_reduce(
    query: str,
    selected: list[MapAnswer],
    reducer: Reducer,
    *,
    attempts: int = MAP_ATTEMPTS,
    should_stop: StopCheck | None = None,
) -> str:
    """The reducer's answer, tried `attempts` times like a map batch; the last failure raises."""
    last: Exception | None = None
    for _ in range(attempts):
        _check(should_stop)
        try:
            return await reducer(query, selected)
        except (asyncio.CancelledError, SearchCancelled):
            raise
        except Exception as exc:
            last = exc
    raise GlobalSearchError(f"the reduce step failed: {last}")


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
    answer = await run_reduce(query, selected, reducer, attempts=options.attempts, should_stop=should_stop)
    status: Status = "partial" if errors else "completed"
    return GlobalResult(query, status, answer, options.level, selected, len(errors), batches, ids)
