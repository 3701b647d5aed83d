"""The judged-questions file: both formats, every refusal with its line number, and hypothesis-generated
files (valid ones round-trip; arbitrary text is either read or refused with `GateDataError`, never a
stack trace)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from librarian.evaluation.gate.questions import (
    GateDataError,
    JudgedQuestion,
    Relevant,
    guess_format,
    parse_questions,
)


def test_jsonl_rows_with_paths_pages_and_answers():
    text = "\n".join(
        [
            json.dumps({"question": " How long? ", "relevant": ["refunds.md"], "answer": "14 days"}),
            "",
            json.dumps({"id": 7, "question": "Where?", "relevant": [{"path": "docs/map.pdf", "page": 2}]}),
            json.dumps({"question": "Which?", "relevant": "docs/a.md#page=3", "answers": ["x", "y"]}),
        ]
    )
    first, second, third = parse_questions(text, "jsonl")
    assert first == JudgedQuestion("1", "How long?", (Relevant("docs/refunds.md"),), ("14 days",))
    assert second.id == "7" and second.relevant == (Relevant("docs/map.pdf", 2),) and second.answers == ()
    assert third.relevant == (Relevant("docs/a.md", 3),) and third.answers == ("x", "y")


def test_csv_rows_split_lists():
    text = 'question,relevant,answer\n"Where, then?",a.md; docs/b.pdf#page=4,north|the north garage\n'
    (item,) = parse_questions(text, "csv")
    assert item.question == "Where, then?"
    assert item.relevant == (Relevant("docs/a.md"), Relevant("docs/b.pdf", 4))
    assert item.answers == ("north", "the north garage")
    assert guess_format("Q.CSV") == "csv" and guess_format("q.jsonl") == "jsonl"


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ('{"question": "a", "relevant": ["x.md"]}\nnot json\n', "jsonl", "q:2: not JSON"),
        ('[1, 2]\n', "jsonl", "q:1: expected a JSON object"),
        ('{"relevant": ["x.md"]}\n', "jsonl", "q:1: `question` must be a non-empty string"),
        ('{"question": "a"}\n', "jsonl", "q:1: give `relevant` documents or an `answer`"),
        ('{"question": "a", "relevant": [{"path": "x.md", "page": 0}]}\n', "jsonl", "q:1: `page` must be"),
        ('{"question": "a", "relevant": [{"path": "x.md", "pg": 1}]}\n', "jsonl", "unknown key"),
        ('{"question": "a", "relevant": ["../etc/passwd"]}\n', "jsonl", "q:1:"),
        ('{"question": "a", "relevant": [3]}\n', "jsonl", "q:1: a `relevant` entry must be"),
        ('{"question": "a", "answer": 3}\n', "jsonl", "q:1: `answer` must be a string"),
        ('{"id": "x", "question": "a", "answer": "b"}\n{"id": "x", "question": "c", "answer": "d"}\n',
         "jsonl", "q:2: id 'x' is used twice"),
        ("", "jsonl", "q holds no questions"),
        ("query,relevant\nx,a.md\n", "csv", "q:1: the header must name a `question` column"),
        ("question,relevant\na,a.md\nb,b.md,extra\n", "csv", "q:3: more cells than header columns"),
        ("question,relevant\na,a.md\nb,\n", "csv", "q:3: give `relevant`"),
    ],
)  # fmt: skip
def test_bad_rows_name_their_line(text, fmt, message):
    with pytest.raises(GateDataError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_questions(text, fmt, name="q")


_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,30}\.(md|pdf|txt)", fullmatch=True).filter(
    lambda n: n == n.strip() and ".." not in n
)
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda t: t.strip() == t and t
)
_relevant = st.lists(st.builds(Relevant, _names.map(lambda n: f"docs/{n}"), st.none() | st.integers(1, 500)),
                     max_size=3, unique=True)  # fmt: skip
_question = st.builds(
    lambda q, r, a: (q, tuple(r), tuple(a)),
    _text,
    _relevant,
    st.lists(_text.filter(lambda t: "|" not in t), max_size=2),
).filter(lambda x: x[1] or x[2])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_question, min_size=1, max_size=6))
def test_valid_files_round_trip_in_both_formats(rows):
    expected = [JudgedQuestion(str(i), q, r, a) for i, (q, r, a) in enumerate(rows, start=1)]
    jsonl = "\n".join(json.dumps({"question": q.question, **q.to_json()}) for q in expected)
    assert parse_questions(jsonl, "jsonl") == expected
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "question", "relevant", "answer"])
    for q in expected:
        writer.writerow([q.id, q.question, ";".join(r.key for r in q.relevant), "|".join(q.answers)])
    assert parse_questions(out.getvalue(), "csv") == expected
    assert [JudgedQuestion.from_json(q.to_json()) for q in expected] == expected


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.sampled_from(["jsonl", "csv"]))
def test_any_text_is_read_or_refused_clearly(text, fmt):
    try:
        questions = parse_questions(text, fmt, name="upload")
    except GateDataError as exc:
        assert str(exc).startswith("upload")
    else:
        assert questions and all(q.question and (q.relevant or q.answers) for q in questions)


_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from(["id", "question", "relevant", "answer", "x"])


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_keys, _json_value))
def test_any_json_row_is_read_or_refused_clearly(row):
    try:
        parse_questions(json.dumps(row), "jsonl", name="upload")
    except GateDataError as exc:
        assert str(exc).startswith("upload:1")
