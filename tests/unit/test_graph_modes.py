"""The `auto` mode chooser and the rule-based query parser.

The labelled questions (tests/fixtures/graph_mode_questions.jsonl, 48: 18 global, 16 local, 14
search) were written by the author of the rules: the accuracy is a regression check, not a held-out
measure.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from librarian.answers.modes import choose_mode, resolve_mode
from librarian.graph.query.parse import parse_rules

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "graph_mode_questions.jsonl"


def _labelled() -> list[dict[str, str]]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def test_labelled_set_is_large_enough_and_balanced() -> None:
    counts = Counter(row["mode"] for row in _labelled())
    assert sum(counts.values()) >= 40
    assert min(counts[m] for m in ("search", "local", "global")) >= 12


def test_chooser_accuracy_on_the_labelled_set() -> None:
    rows = _labelled()
    wrong = [(r["question"], r["mode"], choose_mode(r["question"])) for r in rows]
    wrong = [w for w in wrong if w[1] != w[2]]
    accuracy = 1 - len(wrong) / len(rows)
    assert accuracy >= 0.9, wrong


def test_resolve_mode() -> None:
    assert resolve_mode("What are the main themes?", "auto") == ("global", "auto")
    assert resolve_mode("What are the main themes?", "local") == ("local", "user")
    with pytest.raises(ValueError):
        resolve_mode("q", "fast")


def test_rule_parse_entities_keywords_and_themes() -> None:
    parsed = parse_rules(
        "What government position was held by the woman who portrayed Corliss Archer in Kiss and Tell?"
    )
    assert parsed.entities == ["Corliss Archer", "Kiss and Tell"]  # "What" at the start is not a name
    assert "government" in parsed.keywords and "what" not in parsed.keywords
    assert parsed.themes == []
    both = parse_rules("Were Scott Derrickson and Ed Wood of the same nationality?")
    assert both.entities == ["Scott Derrickson and Ed Wood", "Scott Derrickson", "Ed Wood"]
    assert parse_rules("Who founded the Bank of England?").entities == ["Bank of England"]
    assert parse_rules("How does Scrooge change over the story?").themes == ["change"]
    assert parse_rules('What does "the golden idol" refer to?').entities == ["the golden idol"]
