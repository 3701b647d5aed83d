"""Parity units for local retrieval's pure parts: RRF, entity channels, JSON repair, token counting.

Expected values are computed by hand from GRAPHRAG-NOTES.md (k = 80, rank 0-based, fuzzy >= 0.4,
semantic >= 0.7), so a change of rank base or threshold fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from librarian.graph.json_repair import (
    JsonRepairError,
    parse_llm_json,
    validate_map_answer,
    validate_query_parse,
    validate_reduce_answer,
    validate_selected_communities,
)
from librarian.graph.query.fusion import RRF_K, rrf_fuse, rrf_scores
from librarian.graph.query.match import (
    LEGACY_PRECISION,
    EntityRef,
    match_alias,
    match_entities,
    match_exact,
    match_fuzzy,
    match_semantic,
    token_jaccard,
    tokens,
)
from librarian.graph.tokens import count_tokens, split_tokens, truncate_tokens

# ------------------------------------------------------------------------------------------- RRF


def test_rrf_rank_base_and_k() -> None:
    assert RRF_K == 80
    scores = rrf_scores([["a", "b"], ["b"]])
    assert scores["a"] == pytest.approx(1 / 81)  # rank 0 → 1/(80+0+1), not 1/80
    assert scores["b"] == pytest.approx(1 / 82 + 1 / 81)


def test_rrf_fuse_orders_by_sum_and_keeps_first_seen_on_ties() -> None:
    fused = rrf_fuse([["x", "y", "z"], ["z", "y", "x"]])
    # x: 1/81 + 1/83; y: 2/82; z: 1/83 + 1/81 → x and z tie above y (1/81+1/83 > 2/82)
    assert [key for key, _ in fused] == ["x", "z", "y"]
    assert fused[0][1] == pytest.approx(1 / 81 + 1 / 83)
    assert fused[2][1] == pytest.approx(2 / 82)


def test_rrf_counts_a_duplicate_once_at_its_best_rank() -> None:
    assert rrf_scores([["a", "a", "b"]]) == {"a": pytest.approx(1 / 81), "b": pytest.approx(1 / 83)}


# ------------------------------------------------------------------------------- entity channels

SCROOGE = EntityRef("scrooge", "Scrooge", ("ebenezer scrooge", "mr. scrooge"))
MARLEY = EntityRef("jacob marley", "Jacob Marley")
BOB = EntityRef("bob cratchit", "Bob Cratchit")
CAROL = EntityRef("a christmas carol story", "A Christmas Carol Story")
AL = EntityRef("al", "Al")
CJK = EntityRef("圣诞", "圣诞")
ENTITIES = [SCROOGE, MARLEY, BOB, CAROL, AL, CJK]


def test_tokens_are_ascii_runs_and_single_cjk_chars() -> None:
    assert tokens("Mr. Scrooge's 2 圣诞 ghosts") == ["mr", "scrooge", "s", "2", "圣", "诞", "ghosts"]


def test_exact_channel_matches_names_on_word_boundaries() -> None:
    hits = match_exact("What did Jacob Marley tell Scrooge?", ENTITIES)
    assert [(e.id, s) for e, s in hits] == [("jacob marley", 1.0), ("scrooge", 1.0)]  # longer name first
    assert match_exact("always", ENTITIES) == []  # "al" is not a word of "always"


def test_alias_channel_uses_aliases() -> None:
    hits = match_alias("Who was Ebenezer Scrooge's partner?", ENTITIES)
    assert [e.id for e, _ in hits] == ["scrooge"]


def test_fuzzy_threshold_is_inclusive_at_0_4() -> None:
    # One query token against a name: Jaccard = 1/|name tokens| when the token is in the name.
    assert token_jaccard("Jacob Marley", "marley") == pytest.approx(0.5)  # 2 tokens: kept
    assert token_jaccard("A Christmas Carol Story", "carol") == pytest.approx(0.25)  # 4 tokens: dropped
    hits = match_fuzzy("marley and the carol", ENTITIES)
    assert [(e.id, s) for e, s in hits] == [("jacob marley", pytest.approx(0.5))]
    # The comparison is >=: a score equal to the threshold is kept, one just above drops it.
    assert match_fuzzy("marley", [MARLEY], threshold=0.5)
    assert not match_fuzzy("marley", [MARLEY], threshold=0.5001)


def test_fuzzy_ignores_stop_word_tokens() -> None:
    the_times = EntityRef("the times", "The Times")
    assert match_fuzzy("what is the answer", [the_times]) == []
    assert [e.id for e, _ in match_fuzzy("times", [the_times])] == ["the times"]


def test_fuzzy_matches_cjk_characters() -> None:
    assert [e.id for e, _ in match_fuzzy("圣诞快乐", [CJK])] == ["圣诞"]  # Jaccard {圣,诞} vs {圣} = 0.5


def test_semantic_threshold_is_inclusive_at_0_7() -> None:
    query = np.array([1.0, 0.0])
    names = np.array([[0.7, np.sqrt(1 - 0.49)], [0.69, np.sqrt(1 - 0.69**2)], [-1.0, 0.0]])
    hits = match_semantic(query, [SCROOGE, MARLEY, BOB], names)
    assert [(e.id, round(s, 6)) for e, s in hits] == [("scrooge", 0.7)]


def test_fusion_of_channels_and_intent_merge() -> None:
    query = "What did Mr. Scrooge and Marley share?"
    query_vector = np.array([1.0, 0.0])
    names = np.array([[0.0, 1.0], [0.0, 1.0], [0.8, 0.6], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    matched = match_entities(
        query,
        ENTITIES,
        query_vector=query_vector,
        name_vectors=names,
        intent_entities=["Al", "Nobody"],
        precision=LEGACY_PRECISION,  # the reference's channels; issue 27's precision is tested apart
    )
    by_id = {m.id: m for m in matched}
    # scrooge: exact rank 0, alias rank 0 ("mr. scrooge"), fuzzy rank 0 (Jaccard 1.0) → 3/81
    assert by_id["scrooge"].score == pytest.approx(3 / 81)
    assert set(by_id["scrooge"].channels) == {"exact", "alias", "fuzzy"}
    # jacob marley: fuzzy only, rank 1 behind scrooge (Jaccard 0.5 < 1.0) → 1/82
    assert by_id["jacob marley"].score == pytest.approx(1 / 82)
    # bob cratchit: semantic rank 0 (cosine 0.8) → 1/81
    assert by_id["bob cratchit"].channels == {"semantic": pytest.approx(0.8)}
    # intent "Al" names a known entity: merged with score 1; "Nobody" is not an entity
    assert by_id["al"].match_type == "intent" and by_id["al"].score == 1.0
    assert [m.id for m in matched][:1] == ["scrooge"] and "nobody" not in by_id


# ------------------------------------------------------------------------------------ JSON repair


def test_json_rule_one_strips_code_fences() -> None:
    assert parse_llm_json('```json\n{"answer": "x", "usefulness": 5}\n```') == {
        "answer": "x",
        "usefulness": 5,
    }
    assert parse_llm_json("```\n[1, 2]\n```") == [1, 2]


def test_json_rule_two_takes_first_bracket_to_its_matching_close() -> None:
    text = 'Sure! Here it is: {"answer": "a } inside a string {", "usefulness": 40} Hope this helps {x}'
    assert parse_llm_json(text) == {"answer": "a } inside a string {", "usefulness": 40}
    assert parse_llm_json('Result: [{"a": [1]}] and {"b": 2}') == [{"a": [1]}]  # `[` came first


def test_json_unrecoverable_is_an_error() -> None:
    for bad in ("", "no json here", '{"a": 1', "[1, 2}"):
        with pytest.raises(JsonRepairError):
            parse_llm_json(bad)


def test_map_answer_validation() -> None:
    assert validate_map_answer({"answer": " ok ", "usefulness": 70.0}) == {"answer": "ok", "usefulness": 70}
    assert validate_map_answer({"answer": "", "usefulness": 0})["usefulness"] == 0
    for bad in (
        {"answer": "x", "usefulness": 101},
        {"answer": "x", "usefulness": -1},
        {"answer": "x", "usefulness": "50"},
        {"answer": "x", "usefulness": True},
        {"answer": "", "usefulness": 30},  # useful but empty
        {"usefulness": 10},
        ["answer", 10],
    ):
        with pytest.raises(JsonRepairError):
            validate_map_answer(bad)


def test_reduce_filter_and_query_validators() -> None:
    assert validate_reduce_answer({"answer": " done "}) == {"answer": "done"}
    with pytest.raises(JsonRepairError):
        validate_reduce_answer({"answer": "  "})
    assert validate_selected_communities({"selectedCommunityIds": [3, "7", "99", "3"]}, ["3", "7"]) == [
        "3",
        "7",
    ]
    with pytest.raises(JsonRepairError):
        validate_selected_communities({"selectedCommunityIds": "3"}, ["3"])
    assert validate_query_parse({"entities": ["Scrooge", ""], "themes": ["greed"]}) == {
        "entities": ["Scrooge"],
        "keywords": [],
        "themes": ["greed"],
    }


# ------------------------------------------------------------------------------------------ tokens


def test_tokens_are_counted_with_cl100k_not_estimated() -> None:
    assert count_tokens("hello world") == 2  # cl100k: "hello", " world"; the estimate would say 3
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # special-token text is ordinary text here


def test_truncate_and_split_respect_the_limit() -> None:
    text = " ".join(f"word{i}" for i in range(300))
    assert count_tokens(truncate_tokens(text, 50)) <= 50
    pieces = split_tokens(text, 40)
    assert all(count_tokens(p) <= 40 for p in pieces)
    assert " ".join(pieces) == text  # split on spaces, nothing lost
    assert truncate_tokens("圣诞快乐", 1) in ("", "圣")  # never a broken character
