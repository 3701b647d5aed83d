"""Precise entity matching (issue 27): a question names a handful of entities, not every one sharing a word.

"What does read.table do in R?" matched 33 entities on a manuals graph ("TABLE", "Alabama", ...); an
FHS question matched "standard deviations". Each rule of `MatchPrecision` is checked here against the
behaviour before it (`LEGACY_PRECISION`), so each assertion fails if its rule is removed.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.graph.query.match import (
    DEFAULT_PRECISION,
    LEGACY_PRECISION,
    EntityRef,
    MatchPrecision,
    is_generic_word,
    match_entities,
    match_semantic,
)


def ref(display: str, *aliases: str) -> EntityRef:
    return EntityRef(display.lower(), display, (display.lower(), *aliases))


TABLE, READ, VAR = ref("TABLE"), ref("read"), ref("var")
VAR_SPOOL, FILES, LOG_FILES = ref("var/spool"), ref("files"), ref("Log files")
STANDARD_DEVIATIONS, CHRISTMAS = ref("standard deviations"), ref("Christmas")
GHOST = ref("Ghost of Christmas Past")
JACOB, MARTHA = ref("Jacob Marley"), ref("Martha Cratchit")
GRAPH = [TABLE, READ, VAR, VAR_SPOOL, FILES, LOG_FILES, STANDARD_DEVIATIONS, CHRISTMAS, GHOST, JACOB, MARTHA]


def names(question: str, precision: MatchPrecision = DEFAULT_PRECISION) -> set[str]:
    return {m.name for m in match_entities(question, GRAPH, precision=precision)}


def test_a_word_glued_into_an_identifier_names_nothing() -> None:
    assert {"TABLE", "read"} <= names("What does read.table do in R?", LEGACY_PRECISION)
    assert names("What does read.table do in R?") == set()
    assert "var" in names("What is stored in /var/spool?", LEGACY_PRECISION)
    assert names("What is stored in /var/spool?") == {"var/spool"}


def test_fuzzy_needs_most_of_the_name_not_one_common_word() -> None:
    assert "standard deviations" in names("What does the standard say?", LEGACY_PRECISION)
    assert names("What does the standard say?") == set()
    assert "Martha Cratchit" in names("Who is Cratchit's wife?", LEGACY_PRECISION)
    assert "Martha Cratchit" not in names("Who is Cratchit's wife?")
    assert names("What are standard deviation values?") == {"standard deviations"}  # plural folded


def test_common_one_word_names_need_a_proper_noun_mention() -> None:
    assert is_generic_word("files", 4.0) and not is_generic_word("Fezziwig", 4.0)
    assert "files" in names("Which files are read?", LEGACY_PRECISION)
    assert names("Which files are read?") == set()
    assert names("How is Christmas kept?") == {"Christmas"}
    assert names("christmas is a holiday") == set()  # lower case, or only the first word: not a name


def test_an_exact_match_inside_a_longer_one_does_not_count() -> None:
    legacy = names("What does the Ghost of Christmas Past show?", LEGACY_PRECISION)
    assert {"Christmas", "Ghost of Christmas Past"} <= legacy
    assert names("What does the Ghost of Christmas Past show?") == {"Ghost of Christmas Past"}
    assert names("Where are Log files kept?") == {"Log files"}
    # the same word elsewhere in the question is its own mention
    assert names("Does the Ghost of Christmas Past visit on Christmas Eve?") == {
        "Ghost of Christmas Past",
        "Christmas",
    }


def test_semantic_keeps_only_the_top_k_above_its_threshold_and_the_result_is_capped() -> None:
    entities = [ref(f"Entity {i}") for i in range(10)]
    vectors = np.tile(np.array([[1.0, 0.0]]), (10, 1)) + np.arange(10)[:, None] * np.array([0.0, 0.01])
    hits = match_semantic(np.array([1.0, 0.0]), entities, vectors, 0.5, top_k=3)
    assert [e.name for e, _ in hits] == ["Entity 0", "Entity 1", "Entity 2"]
    everything = MatchPrecision(limit=None, semantic_threshold=0.5, semantic_top_k=None)
    q = "Tell me about entities"
    assert (
        len(match_entities(q, entities, query_vector=[1.0, 0.0], name_vectors=vectors, precision=everything))
        == 10
    )
    capped = match_entities(
        q, entities, query_vector=[1.0, 0.0], name_vectors=vectors, precision=DEFAULT_PRECISION
    )
    assert len(capped) <= 3  # top-k of a 0.85 threshold


def test_intent_entities_survive_the_cap_and_the_generic_rule() -> None:
    many = [ref(f"Alpha{i}") for i in range(10)]
    question = " ".join(e.name for e in many) + " and files"
    matched = match_entities(
        question, [*many, FILES], intent_entities=["files"], precision=MatchPrecision(limit=3)
    )
    assert len(matched) == 3 and "files" in {m.id for m in matched}


@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=80),
    st.lists(st.text(min_size=1, max_size=20), max_size=12),
    st.integers(min_value=1, max_value=5),
)
def test_any_question_matches_at_most_limit_distinct_known_entities(question, raw_names, limit) -> None:
    entities = [EntityRef(f"id{i}", n, (n.lower(),)) for i, n in enumerate(raw_names)]
    matched = match_entities(
        question, entities, intent_entities=raw_names[:2], precision=MatchPrecision(limit=limit)
    )
    ids = [m.id for m in matched]
    assert len(ids) == len(set(ids)) <= limit
    assert set(ids) <= {e.id for e in entities}
