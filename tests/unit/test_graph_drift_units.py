"""DRIFT's pure parts: the chooser's drift rule, follow-up ranking, evidence merging and renumbering, the
options' checks, and reading a model's step replies (data of unknown shape: hypothesis too).

The drift rows of tests/fixtures/graph_mode_questions.jsonl were written by the author of the rule:
a regression check, not a held-out measure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.answers.modes import choose_mode, drift_draft, renumber_citations
from librarian.graph.json_repair import JsonRepairError
from librarian.graph.query.drift_llm import MAX_FOLLOWUPS, validate_step
from librarian.graph.query.drift_offline import names_the_same
from librarian.graph.query.drift_search import (
    DriftOptions,
    FollowUp,
    Step,
    merged_sources,
    next_followups,
    renumber,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "graph_mode_questions.jsonl"


def source(i: str) -> dict[str, Any]:
    return {"id": i, "text": f"text {i}", "filename": f"{i}.txt", "page": 1, "path": f"docs/{i}.txt"}


def test_every_drift_row_of_the_labelled_set_goes_to_drift_and_no_other_row_does() -> None:
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    drift = [r["question"] for r in rows if r["mode"] == "drift"]
    assert len(drift) >= 12
    assert [q for q in drift if choose_mode(q) != "drift"] == []
    others = [r["question"] for r in rows if r["mode"] != "drift" and choose_mode(r["question"]) == "drift"]
    assert others == []


@pytest.mark.parametrize(
    ("question", "mode"),
    [
        ("How does Scrooge affect the people around him?", "drift"),
        ("How does Scrooge change over the course of the story?", "global"),  # change over time: global
        ("Who is Bob Cratchit?", "local"),
        ("How does it affect us?", "search"),  # names nothing: no specific subject to start from
    ],
)
def test_drift_needs_a_subject_and_a_question_about_its_reach(question: str, mode: str) -> None:
    assert choose_mode(question) == mode


def test_options_refuse_what_would_run_nothing() -> None:
    for bad in ({"depth": 0}, {"followups": True}, {"primer_k": 2.0}):
        with pytest.raises(ValueError, match="DRIFT option"):
            DriftOptions(**bad)  # type: ignore[arg-type]


def test_follow_ups_are_taken_best_first_and_never_asked_twice() -> None:
    pending = [FollowUp("Who is Marley?", 0.2), FollowUp("who is marley", 0.9), FollowUp("Who is Tim?", 0.5)]
    asked: set[str] = set()
    assert [f.question for f in next_followups(pending, asked, 1)] == ["who is marley"]
    assert pending == [FollowUp("Who is Tim?", 0.5)]  # the same question in other words went too
    assert [f.question for f in next_followups(pending, asked, 5)] == ["Who is Tim?"]
    assert next_followups([FollowUp("Who is Tim", 1.0)], asked, 2) == []


@given(st.lists(st.tuples(st.text(max_size=12), st.floats(0, 1)), max_size=12), st.integers(1, 5))
def test_next_followups_properties(rows: list[tuple[str, float]], count: int) -> None:
    pending = [FollowUp(q, s) for q, s in rows]
    chosen = next_followups(pending, set(), count)
    assert len(chosen) <= count
    assert [f.score for f in chosen] == sorted((f.score for f in chosen), reverse=True)
    keys = [" ".join(f.question.lower().split()) for f in chosen]
    assert len(set(keys)) == len(keys)


def test_merged_evidence_takes_each_steps_best_first_and_stops_at_the_limit() -> None:
    a = Step("a", 1.0, 1, helpfulness=90, sources=[source("1"), source("2"), source("3")])
    b = Step("b", 0.5, 1, helpfulness=40, sources=[source("4"), source("1")])
    assert [s["id"] for s in merged_sources([b, a], 10)] == ["1", "4", "2", "3"]
    assert [s["id"] for s in merged_sources([b, a], 2)] == ["1", "4"]


def test_a_steps_citations_follow_its_sources_into_the_merged_numbering() -> None:
    local = [source("x"), source("y"), source("z")]
    merged = [source("y"), source("x")]
    assert renumber("X [1]. Y [2]. Z [3]. W [9].", local, merged) == "X [2]. Y [1]. Z . W ."


def test_the_agent_numbers_a_drift_answer_after_the_conversations_sources() -> None:
    answer = 'Extractive...\n- "B is here." [2]\n- "A is here." [1]'
    draft = drift_draft(
        {"answer": answer, "sources": [source("a"), source("b")]}, [source("old"), source("b")]
    )
    assert draft.text.startswith('Extractive...\n- "B is here." [2]\n- "A is here." [3]')
    assert "Sources:\n[2] b.txt, page 1\n[3] a.txt, page 1" in draft.text
    assert renumber_citations("see [7]", [source("a")], {"a": 4}) == "see "


def test_names_that_say_the_same_make_no_follow_up() -> None:
    assert names_the_same("Ebenezer Scrooge", {"scrooge"})
    assert names_the_same("Scrooge", {"ebenezer scrooge"})
    assert not names_the_same("Bob Cratchit", {"scrooge"})


def test_a_step_reply_is_read_or_refused_clearly() -> None:
    reply = {"answer": " It is. ", "follow_up_queries": ["a?", " ", 3, "b?"], "score": 140}
    assert validate_step(reply, "answer") == ("It is.", ["a?", "b?"], 100)
    bad_replies = [
        [],
        {"answer": 1},
        {"answer": "", "score": "high"},
        {"answer": "", "score": float("nan")},
        {"answer": "", "score": float("inf")},
        {"answer": "", "follow_up_queries": "a?"},
    ]
    for bad in bad_replies:
        with pytest.raises(JsonRepairError):
            validate_step(bad, "answer")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.sampled_from(["answer", "follow_up_queries", "score", "x"]), JSON) | JSON)
def test_any_model_json_gives_a_valid_step_or_a_repair_error(value: Any) -> None:
    try:
        answer, questions, score = validate_step(value, "answer")
    except JsonRepairError:
        return
    assert isinstance(answer, str) and 0 <= score <= 100
    assert len(questions) <= MAX_FOLLOWUPS and all(isinstance(q, str) and q.strip() for q in questions)


def test_quoted_sentences_are_whole_and_carry_no_footnote_markers() -> None:
    from librarian.graph.query.drift_offline import quotable_units

    wrapped = "Scrooge employs Bob Cratchit as his\nclerk for fifteen shillings a week.[3] Yes."
    whole = "Scrooge employs Bob Cratchit as his clerk for fifteen shillings a week."
    assert quotable_units(wrapped) == [whole]
    table = "| Name | Role |\n| --- | --- |\n| Bob Cratchit | the clerk of Scrooge and Marley's firm |"
    assert all("Name" in unit and "Bob Cratchit" in unit for unit in quotable_units(table))
