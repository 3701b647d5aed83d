"""Citation records: sentences and their markers, the support check, and mark/drop of unsupported ones."""

from __future__ import annotations

import pytest

from librarian.answers.citations import (
    ALL_DROPPED,
    UNSUPPORTED_MARK,
    apply_policy,
    markers_of,
    verify_answer,
)
from librarian.retrieval.search import Source
from librarian.text.sentences import split_sentences

SOURCE_TEXT = (
    "# Refund policy\n\nAcme pays every refund within 14 days of the request, back to the original card. "
    "Refund requests go to the Acme billing desk."
)


def refund_source() -> Source:
    return Source(
        id="docs/refunds.md:0", score=1.0, text=SOURCE_TEXT, path="docs/refunds.md", filename="refunds.md",
        page=1, bbox=None, blockType="Text",
        scores={"dense": None, "sparse": None, "fused": 1.0, "rerank": None},
    )  # fmt: skip


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def test_sentences_end_after_their_markers_and_not_at_abbreviations():
    text = (
        "Refunds take 14 days [1]. Visitors park north. [2][3]\n"
        "- A bullet, e.g. this one [1, 2]\nSmith et al. agree."
    )
    assert sentences(text) == [
        "Refunds take 14 days [1].",
        "Visitors park north. [2][3]",
        "A bullet, e.g. this one [1, 2]",
        "Smith et al. agree.",
    ]
    assert [markers_of(s) for s in sentences(text)] == [[1], [2, 3], [1, 2], []]


@pytest.fixture(scope="module")
def records():
    answer = (
        "Acme pays every refund within 14 days of the request [1]. "
        "The cafeteria serves free vegan lunches every Thursday [1]. "
        "I hope this helps.\n\n[1] refunds.md, page 1"
    )
    return answer, verify_answer(answer, [refund_source()])


def test_records_say_which_cited_sentence_the_source_supports_and_where(records):
    answer, (backed, unbacked, uncited) = records
    assert backed["markers"] == [1] and backed["source_ids"] == ["docs/refunds.md:0"]
    assert backed["supported"] and backed["score"] > unbacked["score"]
    span = SOURCE_TEXT[backed["span"]["start"] : backed["span"]["end"]]
    assert span == "Acme pays every refund within 14 days of the request, back to the original card."
    assert answer[backed["start"] : backed["end"]] == backed["sentence"]
    assert not unbacked["supported"] and unbacked["evidence"][0]["supported"] is False
    assert uncited["markers"] == [] and not uncited["supported"] and uncited["span"] is None
    # The "[1] refunds.md, page 1" line is a source list, not a claim: no record.
    assert len(records[1]) == 3


def test_a_marker_without_a_source_is_never_supported():
    (record,) = verify_answer("Acme pays refunds within 14 days [7].", [refund_source()])
    assert record["markers"] == [7] and record["source_ids"] == [""] and not record["supported"]


def test_mark_flags_only_unsupported_cited_sentences(records):
    answer, citations = records
    text, updated = apply_policy(answer, citations, "mark")
    assert [r["action"] for r in updated] == ["kept", "marked", "kept"]
    assert f"every Thursday [1].{UNSUPPORTED_MARK} I hope" in text
    assert text.count(UNSUPPORTED_MARK) == 1


def test_drop_removes_unsupported_cited_sentences(records):
    answer, citations = records
    text, updated = apply_policy(answer, citations, "drop")
    assert [r["action"] for r in updated] == ["kept", "dropped", "kept"]
    assert "cafeteria" not in text and "14 days of the request [1]. I hope this helps." in text


def test_dropping_every_sentence_says_so():
    answer = "The cafeteria serves free vegan lunches every Thursday [1]."
    text, _ = apply_policy(answer, verify_answer(answer, [refund_source()]), "drop")
    assert text == ALL_DROPPED
