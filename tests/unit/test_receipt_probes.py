"""How a probe decides that a channel's answer still shows a deleted document."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.receipt_probes import PASSAGE_CHARS, mentions, passages_of, question_of

PATH = "docs/heron survey.md"
TEXT = (
    "The grey heron colony at Marsh Lane counted forty-one nests in April, three more than the "
    "year before, and the wardens ringed twelve fledglings."
)
_short = st.text(max_size=PASSAGE_CHARS - 1)
_answers = st.recursive(
    st.one_of(_short, st.integers(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_short, inner, max_size=4)),
    max_leaves=12,
)


def test_the_path_a_chunk_id_or_a_passage_is_found_wherever_it_is_nested() -> None:
    passages = passages_of([TEXT])
    assert mentions({"sources": [{"path": PATH}]}, PATH, passages).startswith("cites")
    assert mentions([{"id": "docs/heron%20survey.md:3"}], PATH, passages).startswith("cites")
    quoted = "as the notes say: " + "  ".join(TEXT.split())  # whitespace differs, words do not
    assert mentions({"answer": quoted}, PATH, passages).startswith("quotes")


def test_the_question_echoed_back_is_not_evidence() -> None:
    passages = passages_of([TEXT])
    assert mentions({"question": TEXT, "status": "no_results"}, PATH, passages) == ""
    assert mentions({"followUps": [{"query": TEXT}]}, PATH, passages) == ""
    assert mentions({"answer": TEXT}, PATH, passages).startswith("quotes")


@given(_answers)
def test_an_answer_without_its_path_ids_or_text_shows_nothing(answer) -> None:
    """Shorter than a passage, so no generated string can quote the document."""
    assert mentions(answer, PATH, passages_of([TEXT])) == ""


def test_the_question_is_made_of_the_longest_chunks_first_words() -> None:
    assert question_of(["short one", TEXT]).split()[:3] == ["The", "grey", "heron"]
    assert question_of([]) == ""
    assert all(len(p) == PASSAGE_CHARS for p in passages_of([TEXT, "too short"]))
