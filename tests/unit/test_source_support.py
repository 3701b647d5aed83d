"""Citations checked against what a source stands for (`support`), with the real offline scorer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from librarian.answers.citations import verify_answer
from librarian.answers.source_support import verify_with_support
from librarian.answers.support import SupportScorer, bundled_embedder

CHUNK = "Refunds are accepted within 14 days of purchase."
REPORT = "The Berlin office closes at noon on Fridays for the staff assembly."
CLAIM = REPORT.rstrip(".")  # as an answer cites it: "... assembly [Community ID: 7][1]."
COMMUNITY_7 = [{"kind": "community", "id": "7", "text": REPORT}]


@pytest.fixture(scope="module")
def scorer() -> SupportScorer:
    return SupportScorer(bundled_embedder())


def _source(support: Any = None) -> dict[str, Any]:
    source: dict[str, Any] = {"id": "a.txt:0", "text": CHUNK, "path": "a.txt", "filename": "a.txt", "page": 1}
    if support is not None:
        source["support"] = support
    return source


def test_a_report_backs_what_the_chunk_does_not_say(scorer: SupportScorer) -> None:
    answer = f"{CLAIM} [Community ID: 7][1]."
    alone = verify_with_support(answer, [_source()], scorer, None)
    assert not alone[0]["supported"]
    backed = verify_with_support(answer, [_source(COMMUNITY_7)], scorer, None)
    assert backed[0]["supported"] and backed[0]["span"] is None
    evidence = backed[0]["evidence"][0]
    assert (evidence["start"], evidence["end"]) == (0, 0)
    assert evidence["via"] == {"kind": "community", "id": "7", "start": 0, "end": len(REPORT)}


def test_a_sentence_is_held_to_the_communities_it_names(scorer: SupportScorer) -> None:
    other = verify_with_support(f"{CLAIM} [Community ID: 8][1].", [_source(COMMUNITY_7)], scorer, None)
    assert not other[0]["supported"]
    unnamed = verify_with_support(f"{CLAIM} [1].", [_source(COMMUNITY_7)], scorer, None)
    assert unnamed[0]["supported"]  # a sentence that names no community may lean on any of them


def test_the_chunk_itself_still_counts_and_keeps_its_span(scorer: SupportScorer) -> None:
    claim = CHUNK.rstrip(".")
    records = verify_with_support(f"{claim} [Community ID: 7][1].", [_source(COMMUNITY_7)], scorer, None)
    assert records[0]["supported"]
    assert records[0]["span"] == {"source_id": "a.txt:0", "marker": 1, "start": 0, "end": len(CHUNK)}


junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
entries = st.one_of(
    junk,
    st.lists(
        st.one_of(
            junk,
            st.fixed_dictionaries(
                {"text": st.sampled_from([REPORT, "", "   ", CHUNK])},
                optional={"kind": junk, "id": junk},
            ),
        ),
        max_size=3,
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(support=entries, cites=st.sampled_from(["", " [Community ID: 7]", " [Community IDs: 7, 8]"]))
def test_any_support_shape_is_read_safely(scorer: SupportScorer, support: Any, cites: str) -> None:
    answer = f"{REPORT}{cites}[1] {CHUNK} [1]"
    records = verify_with_support(answer, [_source(support)], scorer, None)
    assert [r["sentence"][:10] for r in records] == [
        r["sentence"][:10] for r in verify_answer(answer, [_source()], scorer)
    ]
    for record in records:
        if record["span"] is not None:
            assert 0 <= record["span"]["start"] < record["span"]["end"] <= len(CHUNK)
        for evidence in record["evidence"]:
            assert 0 <= evidence["start"] <= evidence["end"] <= len(CHUNK)
    assert _source(support).get("support") == support  # the caller's sources are not changed


def test_a_community_citation_after_the_full_stop_still_belongs_to_its_sentence(
    scorer: SupportScorer,
) -> None:
    from librarian.answers.modes import cite_communities

    answer = cite_communities(f"{REPORT} [Community ID: 7]", [_source()], {"a.txt:0": ["7"]})
    assert answer == f"{CLAIM} [Community ID: 7][1]."
    records = verify_with_support(answer, [_source(COMMUNITY_7)], scorer, None)
    assert len(records) == 1 and records[0]["markers"] == [1] and records[0]["supported"]
