"""`librarian.retrieval.rerank.rerank`: Mastra's fusion of semantic, vector and position scores, number
for number."""

from __future__ import annotations

import math

import pytest

from librarian.index.base import QueryMatch
from librarian.retrieval.rerank import arerank, rerank, resolve_weights


class OverlapScorer:
    """A real, deterministic scorer: share of query words present in the text. Records its calls."""

    name = "overlap"
    floor = 0.0

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: list[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        words = set(query.lower().split())
        return [len(words & set(t.lower().split())) / len(words) for t in texts]


class AsyncOverlapScorer(OverlapScorer):
    def __init__(self) -> None:
        super().__init__()
        self.async_calls = 0

    async def ascore(self, query: str, texts: list[str]) -> list[float]:
        self.async_calls += 1
        return self.score(query, texts)


def match(id_: str, score: float, text: str | None) -> QueryMatch:
    return QueryMatch(id=id_, score=score, metadata={"text": text} if text is not None else {})


QUERY = "deploy to production"
RESULTS = [
    match("a", 0.9, "cooking pasta at home"),  # best vector score, irrelevant text
    match("b", 0.6, "deploy the app to production with one command"),
    match("c", 0.5, "production deploy checklist"),
]


def test_default_weights_fuse_semantic_vector_and_position():
    out = rerank(RESULTS, QUERY, OverlapScorer(), top_k=3)
    by_id = {r["result"].id: r for r in out}
    # semantic: a=0, b=3/3, c=2/3; position: 1 - i/3
    expected = {
        "a": 0.4 * 0 + 0.4 * 0.9 + 0.2 * 1.0,
        "b": 0.4 * 1 + 0.4 * 0.6 + 0.2 * (2 / 3),
        "c": 0.4 * (2 / 3) + 0.4 * 0.5 + 0.2 * (1 / 3),
    }
    for id_, score in expected.items():
        assert by_id[id_]["score"] == pytest.approx(score)
    assert [r["result"].id for r in out] == ["b", "a", "c"]  # a: 0.56 > c: 0.53
    assert by_id["c"]["details"] == {
        "semantic": pytest.approx(2 / 3),
        "vector": 0.5,
        "position": pytest.approx(1 / 3),
    }


def test_top_k_defaults_to_three_and_cuts():
    many = [match(str(i), 1 - i / 10, f"text {i}") for i in range(6)]
    assert len(rerank(many, "text", OverlapScorer())) == 3
    assert [r["result"].id for r in rerank(many, "text", OverlapScorer(), top_k=2)] == ["0", "1"]


def test_custom_weights_change_the_order():
    out = rerank(RESULTS, QUERY, OverlapScorer(), weights={"semantic": 0.0, "vector": 1.0, "position": 0.0})
    assert [r["result"].id for r in out] == ["a", "b", "c"]
    assert out[0]["score"] == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"semantic": 0.5}, "add up to 1"),  # merged with defaults: 0.5 + 0.4 + 0.2
        ({"semantic": 0.3, "vector": 0.3, "position": 0.3}, "add up to 1"),
        ({"semantic": 1.2, "vector": -0.2, "position": 0.0}, "negative"),
        ({"semantic": 0.4, "vector": 0.4, "recency": 0.2}, "unknown"),
    ],
)
def test_invalid_weights_are_rejected_with_a_clear_message(weights, message):
    with pytest.raises(ValueError, match=message):
        rerank(RESULTS, QUERY, OverlapScorer(), weights=weights)


def test_weights_tolerate_float_rounding():
    weights = resolve_weights({"semantic": 0.1, "vector": 0.2, "position": 0.7})  # 0.1 + 0.2 != 0.3 exactly
    assert weights == {"semantic": 0.1, "vector": 0.2, "position": 0.7}


def test_results_without_text_get_semantic_zero_and_are_not_sent_to_the_scorer():
    scorer = OverlapScorer()
    results = [match("a", 0.9, None), match("b", 0.1, "deploy to production"), match("c", 0.5, "")]
    out = rerank(results, QUERY, scorer, top_k=3)
    assert scorer.calls == [(QUERY, ["deploy to production"])]
    by_id = {r["result"].id: r for r in out}
    assert by_id["a"]["details"]["semantic"] == 0.0
    assert by_id["c"]["details"]["semantic"] == 0.0
    assert by_id["b"]["details"]["semantic"] == 1.0


def test_no_scorer_call_when_nothing_has_text():
    scorer = OverlapScorer()
    out = rerank([match("a", 0.3, None)], QUERY, scorer)
    assert scorer.calls == []
    assert out[0]["score"] == pytest.approx(0.4 * 0.3 + 0.2 * 1.0)


def test_mastra_style_dicts_are_accepted_and_returned_untouched():
    results = [
        {"id": "x", "score": 0.2, "metadata": {"text": "deploy to production"}},
        {"id": "y", "score": 0.8, "metadata": {}},
    ]
    out = rerank(results, QUERY, OverlapScorer(), top_k=2)
    assert out[0]["result"] is results[0]
    assert out[1]["result"] is results[1]


def test_ties_keep_the_original_order():
    same = [match(str(i), 0.5, "same text") for i in range(4)]
    out = rerank(
        same, "other", OverlapScorer(), weights={"semantic": 0.5, "vector": 0.5, "position": 0.0}, top_k=4
    )
    assert [r["result"].id for r in out] == ["0", "1", "2", "3"]


def test_query_analysis_reports_magnitude_and_dominant_features():
    embedding = [0.1, -3.0, 0.0, 2.0, 0.5, -0.7, 1.0]
    out = rerank(RESULTS, QUERY, OverlapScorer(), query_embedding=embedding)
    analysis = out[0]["details"]["queryAnalysis"]
    assert analysis["magnitude"] == pytest.approx(math.sqrt(sum(v * v for v in embedding)))
    assert analysis["dominantFeatures"] == [1, 3, 6, 5, 4]  # by absolute value


def test_no_query_analysis_without_an_embedding():
    assert "queryAnalysis" not in rerank(RESULTS, QUERY, OverlapScorer())[0]["details"]


@pytest.mark.parametrize(("norm", "factor"), [(1.0, 1.0), (6.0, 1.05), (12.0, 1.1 * 1.05)])
def test_large_query_embeddings_scale_scores_as_in_mastra(norm, factor):
    plain = {r["result"].id: r["score"] for r in rerank(RESULTS, QUERY, OverlapScorer())}
    out = rerank(RESULTS, QUERY, OverlapScorer(), query_embedding=[norm, 0.0, 0.0])
    for r in out:
        assert r["score"] == pytest.approx(plain[r["result"].id] * factor)


def test_a_scorer_returning_the_wrong_count_is_an_error():
    class Broken(OverlapScorer):
        def score(self, query, texts):
            return [0.5]

    with pytest.raises(ValueError, match="returned 1 scores for 3 texts"):
        rerank(RESULTS, QUERY, Broken())


async def test_arerank_matches_rerank_and_prefers_ascore():
    scorer = AsyncOverlapScorer()
    out = await arerank(RESULTS, QUERY, scorer, top_k=3)
    assert scorer.async_calls == 1
    sync = rerank(RESULTS, QUERY, OverlapScorer(), top_k=3)
    assert [(r["result"].id, r["score"]) for r in out] == [(r["result"].id, r["score"]) for r in sync]


async def test_arerank_runs_sync_scorers_too():
    out = await arerank(RESULTS, QUERY, OverlapScorer(), top_k=1)
    assert out[0]["result"].id == "b"
