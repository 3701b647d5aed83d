"""Mean recall@k over the relevant documents: the HippoRAG multi-hop protocol (`mean_recall_at`)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from librarian.evaluation.metrics import mean_recall_at

DOC_IDS = st.sampled_from([f"d{i}" for i in range(12)])
RANKING = st.lists(DOC_IDS, unique=True, max_size=12)
GRADES = st.dictionaries(DOC_IDS, st.integers(min_value=-1, max_value=3), max_size=12)
QUERIES = st.sampled_from(["q1", "q2", "q3", "q4"])


def test_hand_computed_two_hop_questions() -> None:
    """q1: one of two supporting passages at rank 1, the other at rank 4; q2: both in the top 2."""
    rankings = {"q1": ["a", "x", "y", "b", "z"], "q2": ["c", "d", "x"]}
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1, "d": 1}}
    assert mean_recall_at(rankings, qrels, 2) == pytest.approx((0.5 + 1.0) / 2)
    assert mean_recall_at(rankings, qrels, 5) == pytest.approx(1.0)


def test_graded_qrels_count_only_positive_grades() -> None:
    """A grade of 0 (judged not relevant) or below is not a relevant passage, as in BEIR/TREC."""
    rankings = {"q": ["a", "b", "c"]}
    qrels = {"q": {"a": 2, "b": 0, "c": -1, "d": 1}}
    assert mean_recall_at(rankings, qrels, 2) == pytest.approx(0.5)  # a of {a, d}
    assert mean_recall_at(rankings, qrels, 5) == pytest.approx(0.5)


def test_a_query_without_relevant_documents_counts_zero() -> None:
    rankings = {"judged": ["a"], "unjudged": ["b"]}
    assert mean_recall_at(rankings, {"judged": {"a": 1}}, 2) == pytest.approx(0.5)


def test_duplicates_in_a_ranking_do_not_count_twice() -> None:
    assert mean_recall_at({"q": ["a", "a", "b"]}, {"q": {"a": 1, "b": 1, "c": 1}}, 2) == pytest.approx(1 / 3)


def test_no_queries_is_zero_and_k_below_one_is_an_error() -> None:
    assert mean_recall_at({}, {"q": {"a": 1}}, 5) == 0.0
    with pytest.raises(ValueError, match="k >= 1"):
        mean_recall_at({"q": ["a"]}, {"q": {"a": 1}}, 0)


@given(st.dictionaries(QUERIES, RANKING, max_size=4), st.dictionaries(QUERIES, GRADES, max_size=4))
def test_between_zero_and_one_and_monotone_in_k(rankings, qrels) -> None:
    values = [mean_recall_at(rankings, qrels, k) for k in range(1, 14)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)


@given(RANKING, GRADES, st.integers(min_value=1, max_value=12))
def test_one_when_every_relevant_document_is_in_the_top_k(ranking, grades, k) -> None:
    relevant = [d for d, g in grades.items() if g > 0]
    assume(relevant and len(relevant) <= k)
    ranked = relevant + [d for d in ranking if d not in relevant]
    assert mean_recall_at({"q": ranked}, {"q": grades}, k) == 1.0
