"""The offline support scorer: its number rule, its token weights, and the spans citations get from it."""

from __future__ import annotations

import numpy as np
import pytest

from tools.citations import quoted_span, split_sentences, verify_answer
from tools.retrieval import Source
from tools.support import (
    FEATURES,
    WEIGHTS,
    SupportScorer,
    disagreeing_numbers,
    quantities,
    token_words,
)

POLICY = "Refunds are accepted within 14 days of purchase."
HEADED = f"Refunds\n\n{POLICY} Refund requests go to the Acme billing desk."


def source(text: str) -> Source:
    return Source(
        id="docs/refunds.md:0", score=1.0, text=text, path="docs/refunds.md", filename="refunds.md",
        page=1, bbox=None, blockType="Text",
        scores={"dense": None, "sparse": None, "fused": 1.0, "rerank": None},
    )  # fmt: skip


@pytest.fixture(scope="module")
def scorer() -> SupportScorer:
    return SupportScorer()


def test_every_feature_has_a_fitted_weight():
    assert len(WEIGHTS) == len(FEATURES) == len(set(FEATURES))


def test_a_different_number_of_the_same_unit_is_a_contradiction_not_support(scorer):
    wrong, right = scorer.score_pairs(
        ["The refund window is 30 days.", "The refund window is 14 days."], [POLICY] * 2
    )
    assert not scorer.is_supported(float(wrong))
    assert scorer.is_supported(float(right)) and right > wrong
    (record,) = verify_answer("The refund window is 30 days [1].", [source(POLICY)], scorer)
    assert not record["supported"] and record["evidence"][0]["supported"] is False
    # Same words, other number: the fitted model alone would pass it; the rule is what stops it.
    claim = [POLICY.replace("14", "30")]
    assert scorer.probability(scorer.features(claim, [POLICY]))[0] >= scorer.threshold
    assert not scorer.is_supported(float(scorer.score_pairs(claim, [POLICY])[0]))


def test_only_quantities_that_disagree_trigger_the_rule():
    assert quantities("IL-6 and CD4 rose 30% in 2,500 patients") == {("30", "%"), ("2500", "patient")}
    assert disagreeing_numbers("The refund window is 30 days.", POLICY)
    assert not disagreeing_numbers("Refunds take 14 days.", POLICY)  # agrees
    assert not disagreeing_numbers("Refunds take 30 days.", "Refunds are paid quickly.")  # omits, no clash
    assert not disagreeing_numbers("Refunds take 30 days.", "Send 2 copies of the form.")  # another unit
    assert not disagreeing_numbers("IL-6 rises in sepsis.", "IL-10 rises in sepsis.")  # names, not numbers


def test_word_pieces_weigh_what_their_word_weighs_and_stop_words_nothing(scorer):
    text = "The nevirapine resistance"
    (tokens,) = scorer.embedder.embed_tokens([text])
    ((weights, words),) = token_words([text], [len(tokens)])
    assert len(weights) == len(tokens) > 3  # "nevirapine" is several word pieces
    assert weights[0] == 0.0  # "the"
    pieces = words == words[1]
    assert pieces.sum() >= 2 and np.allclose(weights[pieces], weights[1]) and weights[1] > weights[-1] > 0
    # Another token embedder's count: equal weights rather than misaligned ones.
    ((weights, _),) = token_words([text], [len(tokens) + 1])
    assert np.allclose(weights, 1.0)


def test_a_verbatim_quote_gets_the_quoted_sentence_as_its_span_and_full_support(scorer):
    # A scorer that prefers the shortest passage would pick the one-word heading, span (0, 7): the
    # quote must not depend on what any scorer thinks of a heading.
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("passage_terms")] = -5.0
    short_first = SupportScorer(weights=weights, intercept=0.0, threshold=scorer.threshold)
    assert split_sentences(HEADED)[0] == (0, 7)
    start = HEADED.index(POLICY)
    for judge in (scorer, short_first):
        (record,) = verify_answer(f'- "{POLICY}" [1]', [source(HEADED)], judge)
        assert (record["span"]["start"], record["span"]["end"]) == (start, start + len(POLICY))
        assert record["supported"] and record["score"] == 1.0


def test_a_sentence_quoting_part_of_a_source_gets_the_span_but_no_free_verdict():
    spans = split_sentences(HEADED)
    start = HEADED.index(POLICY)
    # Longer than the quoted sentence: the span is found, the extra claim is still the scorer's to judge.
    longer = f"As the policy says, {POLICY.lower()} And the cafeteria is free [1]."
    assert quoted_span(longer, HEADED, spans) == ((start, start + len(POLICY)), False)
    # The heading alone is a topic, not a quote.
    assert quoted_span("Refunds are slow here [1].", HEADED, spans) is None
    # A clause from the middle of a sentence: the span, not a verdict ("not" may precede it).
    assert quoted_span("accepted within 14 days of purchase [1]", HEADED, spans) == (
        (start, start + len(POLICY)), False
    )  # fmt: skip
