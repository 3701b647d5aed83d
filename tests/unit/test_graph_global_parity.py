"""Parity units for global retrieval: packing, part labels, map retry and concurrency, reduce, statuses.

Budgets here are small and computed from the real tokenizer, so each expectation is checked by hand
against `count_tokens` rather than trusted.
"""

from __future__ import annotations

import asyncio

import pytest

from librarian.graph.query.global_batches import (
    MapBatch,
    SummaryPart,
    build_batches,
    part_header,
    prompt_tokens,
    seeded_shuffle,
    split_summary,
)
from librarian.graph.query.global_citations import cited_community_ids
from librarian.graph.query.global_inputs import ClaimText, CommunityInput, augmented_text
from librarian.graph.query.global_offline import OfflineMapper, offline_reducer
from librarian.graph.query.global_search import (
    NO_RESULTS_ANSWER,
    GlobalOptions,
    GlobalSearchError,
    MapAnswer,
    SearchCancelled,
    format_map_answer,
    global_search,
    run_map,
    select_reduce_answers,
)
from librarian.graph.tokens import count_tokens

SKELETON = "Question: q\nReports:"


def test_part_label_format() -> None:
    assert part_header("12", 3) == "[Community ID: 12 | summary part 3]\n"
    assert SummaryPart("c", 1, "text").formatted() == "[Community ID: c | summary part 1]\ntext"


def test_seeded_shuffle_is_reproducible_and_seed_dependent() -> None:
    items = list(range(20))
    assert seeded_shuffle(items, 7) == seeded_shuffle(items, 7)
    assert seeded_shuffle(items, 7) != seeded_shuffle(items, 8)
    assert sorted(seeded_shuffle(items, 7)) == items


def test_small_summaries_pack_together_under_the_budget() -> None:
    summaries = [(str(i), f"Community {i} is about topic number {i}.") for i in range(6)]
    one = prompt_tokens(SKELETON, SummaryPart("0", 1, summaries[0][1]).formatted())
    # Room for exactly two labelled summaries per batch (each summary costs about the same).
    budget = (
        prompt_tokens(SKELETON, "\n".join(SummaryPart(c, 1, t).formatted() for c, t in summaries[:2])) + 2
    )
    assert budget < 2 * one + 5  # sanity: a third does not fit
    batches = build_batches(summaries, SKELETON, budget, seed=1)
    assert [len(b.parts) for b in batches] == [2, 2, 2]
    assert all(b.tokens <= budget and b.tokens == prompt_tokens(SKELETON, b.content) for b in batches)
    assert sorted(c for b in batches for c in b.community_ids) == [str(i) for i in range(6)]
    assert all(p.part == 1 for b in batches for p in b.parts)  # fits whole: a single part, "part 1"


def test_oversized_summary_is_split_into_labelled_parts_each_within_budget() -> None:
    long_text = " ".join(f"Sentence {i} says something about the ghosts." for i in range(120))
    budget = 200
    parts = split_summary("42", long_text, SKELETON, budget)
    assert len(parts) > 1
    assert [p.part for p in parts] == list(range(1, len(parts) + 1))
    assert all(prompt_tokens(SKELETON, p.formatted()) <= budget for p in parts)
    assert " ".join(p.text for p in parts) == long_text
    batches = build_batches([("42", long_text), ("7", "Short one.")], SKELETON, budget, seed=0)
    assert all(b.tokens <= budget for b in batches)
    labels = [p.formatted().splitlines()[0] for b in batches for p in b.parts if p.community_id == "42"]
    assert labels[:2] == ["[Community ID: 42 | summary part 1]", "[Community ID: 42 | summary part 2]"]


def test_budget_too_small_for_the_prompt_is_an_error() -> None:
    with pytest.raises(ValueError):
        build_batches([("1", "x")], SKELETON, count_tokens(SKELETON) - 1)


def test_augmentation_adds_claims_within_their_budget() -> None:
    claims = [ClaimText(f"Claim number {i} about Scrooge.", f"a.txt:{i}", "a.txt") for i in range(50)]
    community = CommunityInput("3", 1, "Scrooge and Marley", "A miser and his partner.", claims)
    text = augmented_text(community, augment_budget=40)
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert 0 < len(lines) < 50
    assert sum(count_tokens(line[2:]) + 2 for line in lines) <= 40
    assert text.startswith("Scrooge and Marley\nA miser and his partner.\nEvidence from its sources:")


def _batch(index: int, *ids: str) -> MapBatch:
    return MapBatch(index, [SummaryPart(c, 1, f"text {c}") for c in ids], 10)


async def test_map_retries_once_then_counts_the_batch_as_failed() -> None:
    calls: dict[int, int] = {}

    async def mapper(query: str, batch: MapBatch) -> MapAnswer:
        calls[batch.index] = calls.get(batch.index, 0) + 1
        if batch.index == 0 and calls[0] == 1:
            raise ValueError("bad JSON")  # first attempt fails, the retry succeeds
        if batch.index == 1:
            raise ValueError("always bad")
        return MapAnswer(f"a{batch.index}", 50, batch.community_ids)

    answers, errors = await run_map("q", [_batch(0, "a"), _batch(1, "b"), _batch(2, "c")], mapper)
    assert calls == {0: 2, 1: 2, 2: 1}  # 2 attempts, never a third
    assert [a.answer for a in answers] == ["a0", "a2"]
    assert len(errors) == 1 and "always bad" in str(errors[0])


async def test_map_runs_at_most_four_batches_at_once() -> None:
    in_flight = peak = 0

    async def mapper(query: str, batch: MapBatch) -> MapAnswer:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)  # yield so that other workers can start
        await asyncio.sleep(0)
        in_flight -= 1
        return MapAnswer("x", 10, batch.community_ids)

    answers, _ = await run_map("q", [_batch(i, str(i)) for i in range(10)], mapper)
    assert len(answers) == 10 and peak == 4


async def test_every_batch_failing_is_an_error() -> None:
    async def mapper(query: str, batch: MapBatch) -> MapAnswer:
        raise ValueError("down")

    with pytest.raises(GlobalSearchError):
        await run_map("q", [_batch(0, "a"), _batch(1, "b")], mapper)


def test_reduce_drops_zero_sorts_stably_and_skips_without_breaking() -> None:
    answers = [
        MapAnswer("zero", 0, ["1"]),
        MapAnswer("first of two 80s", 80, ["2"]),
        MapAnswer("long " * 200, 90, ["3"]),  # most useful but too long: skipped
        MapAnswer("second of two 80s", 80, ["4"]),
        MapAnswer("small", 20, ["5"]),
    ]
    short = [a for a in answers if a.usefulness and len(a.answer) < 100]
    budget = prompt_tokens(SKELETON, "\n\n".join(format_map_answer(a) for a in short)) + 1
    selected = select_reduce_answers(answers, SKELETON, budget)
    # usefulness 0 gone; 90 skipped (does not fit) yet later ones still added; ties keep input order
    assert [a.answer for a in selected] == ["first of two 80s", "second of two 80s", "small"]
    assert format_map_answer(answers[1]) == "[Usefulness: 80; Community IDs: 2]\nfirst of two 80s"


def _communities(n: int) -> list[CommunityInput]:
    return [CommunityInput(str(i), 1, f"Community {i}", f"Summary {i} of the story.") for i in range(n)]


async def _reducer(query: str, selected: list[MapAnswer]) -> str:
    return " ".join(a.answer for a in selected)


async def test_statuses_completed_partial_and_no_results() -> None:
    async def good(query: str, batch: MapBatch) -> MapAnswer:
        return MapAnswer("useful", 60, batch.community_ids)

    small = GlobalOptions(map_budget=120, map_reserve=10)  # forces several batches
    done = await global_search("theme?", _communities(8), good, _reducer, small)
    assert done.status == "completed" and done.failed_batches == 0 and len(done.batches) > 1

    async def half(query: str, batch: MapBatch) -> MapAnswer:
        if batch.index == 0:
            raise ValueError("bad")
        return MapAnswer("useful", 60, batch.community_ids)

    partial = await global_search("theme?", _communities(8), half, _reducer, small)
    assert partial.status == "partial" and partial.failed_batches == 1

    async def useless(query: str, batch: MapBatch) -> MapAnswer:
        return MapAnswer("", 0, batch.community_ids)

    none = await global_search("theme?", _communities(8), useless, _reducer, small)
    assert none.status == "no_results" and none.answer == NO_RESULTS_ANSWER
    empty = await global_search("theme?", [], good, _reducer, small)
    assert empty.status == "no_results"


async def test_stop_flag_prevents_any_model_call() -> None:
    calls = 0

    async def mapper(query: str, batch: MapBatch) -> MapAnswer:
        nonlocal calls
        calls += 1
        return MapAnswer("x", 10, batch.community_ids)

    with pytest.raises(SearchCancelled):
        await global_search("q", _communities(3), mapper, _reducer, should_stop=lambda: True)
    assert calls == 0


async def test_offline_map_and_reduce_quote_and_cite_communities() -> None:
    vectors = {"ghost": [1.0, 0.0], "other": [0.0, 1.0]}

    def embed(text: str) -> list[float]:
        return vectors["ghost"] if "ghost" in text.lower() else vectors["other"]

    mapper = OfflineMapper(embed, lambda texts: [embed(t) for t in texts], cache={})
    ghost, money = (
        "The ghost shows Scrooge the scenes of his own past.",
        "Scrooge counts his coins alone in the cold office.",
    )
    # offline answers quote claims (the documents' sentences), never summary lines
    communities = [
        CommunityInput("1", 1, "Spirits", "A summary line.", [ClaimText(ghost, "a.txt:0", "a.txt")]),
        CommunityInput("2", 1, "Money", "A summary line.", [ClaimText(money, "a.txt:1", "a.txt")]),
    ]
    result = await global_search(
        "Which ghost visits?",
        communities,
        mapper,
        offline_reducer(),
        GlobalOptions(map_budget=60, map_reserve=5),  # one community per batch
        map_skeleton="Q",
    )
    assert len(result.batches) == 2
    assert result.status == "completed"
    assert cited_community_ids(result.answer) == ["1"]  # the unrelated community (cosine 0) is not quoted
    assert '"The ghost shows Scrooge the scenes of his own past." [Community ID: 1]' in result.answer
    useless = [a for a in result.selected if a.community_ids == ["2"]]
    assert useless == []  # usefulness 0 (below the relevance floor) never reaches the reduce


def test_citations_map_to_the_quoted_claims_chunk_or_the_communitys_first_claims() -> None:
    from librarian.answers.modes import cite_communities
    from librarian.graph.query.global_citations import cited_chunks
    from librarian.graph.query.global_search import GlobalResult, Quote

    inputs = [
        CommunityInput(
            "1",
            1,
            "T",
            "Summary.",
            [ClaimText("First  claim.", "a.txt:0", "a.txt"), ClaimText("Second claim.", "a.txt:3", "a.txt")],
        ),
        CommunityInput("2", 1, "U", "Other.", [ClaimText("Third claim.", "b.txt:1", "b.txt")]),
    ]
    quoted = MapAnswer("x", 50, ["1", "2"], [Quote("Second claim.", "1", 0.9), Quote("Other.", "2", 0.5)])
    answer = 'q\n- "Second claim." [Community ID: 1]\n- "Other." [Community ID: 2]\n- "?" [Community ID: 99]'
    result = GlobalResult("q", "completed", answer, None, [quoted], 0, [], ["1", "2"])
    # community 1: the quoted claim's own chunk; community 2 (a summary sentence): its first claim;
    # 99 is not a community that was read: no citation
    assert cited_chunks(result, inputs) == [("1", "a.txt:3"), ("2", "b.txt:1")]
    sources = [{"id": "a.txt:3"}, {"id": "b.txt:1"}]
    cited = cite_communities(answer, sources, {"a.txt:3": ["1"], "b.txt:1": ["2"]})
    assert "[Community ID: 1][1]" in cited and "[Community ID: 2][2]" in cited
    assert cited.endswith("[Community ID: 99]")
