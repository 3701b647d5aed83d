"""The offline support scorer: its number rule, its token weights, and the spans citations get from it."""

from __future__ import annotations

import numpy as np
import pytest

from librarian.answers.citations import quoted_span, verify_answer
from librarian.answers.support import (
    FEATURES,
    PairInputs,
    SupportScorer,
    claim_for_scoring,
    disagreeing_numbers,
    quantities,
    shipped_head,
    token_words,
)
from librarian.retrieval.search import Source
from librarian.text.sentences import split_sentences

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


def test_the_shipped_model_reads_every_feature_and_both_directions():
    head = shipped_head()
    hidden = head.forward_weight.shape[0]
    assert head.feature_names == FEATURES and len(set(FEATURES)) == len(FEATURES)
    assert head.out_weight.shape == (4 * hidden + len(FEATURES),)
    assert head.forward_weight.shape == head.reverse_weight.shape == (hidden, 4 * 384)
    assert 0.0 < head.threshold < 1.0


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
    assert scorer.model_scores(scorer.inputs(claim, [POLICY]))[0] >= scorer.threshold
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


class ShortestFirst(SupportScorer):
    """A scorer that prefers the shortest passage: it would pick a one-word heading."""

    def model_scores(self, inputs: PairInputs) -> np.ndarray:
        return 1.0 / (1.0 + inputs.features[:, FEATURES.index("passage_terms")])


def test_a_verbatim_quote_gets_the_quoted_sentence_as_its_span_and_full_support(scorer):
    # The shortest-first scorer would pick the heading, span (0, 7): the quote must not depend on what
    # any scorer thinks of a heading.
    short_first = ShortestFirst(threshold=scorer.threshold)
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


def test_the_head_survives_a_save_and_load_and_ignores_passage_token_order(tmp_path):
    head = shipped_head()
    rng = np.random.default_rng(0)

    def unit(n: int) -> np.ndarray:
        v = rng.normal(size=(n, 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    claim, passage = unit(6), unit(11)
    claim_weights, passage_weights = rng.uniform(0, 5, 6), rng.uniform(0, 5, 11)
    features = rng.normal(size=len(FEATURES)) * head.feature_scale + head.feature_mean
    logit = head.logit(features, claim, claim_weights, passage, passage_weights)
    head.save(tmp_path / "head.npz")
    again = type(head).load(tmp_path / "head.npz")
    assert again.feature_names == head.feature_names and again.threshold == pytest.approx(head.threshold)
    assert again.logit(features, claim, claim_weights, passage, passage_weights) == pytest.approx(
        logit, abs=1e-5
    )
    # Pooling is a weighted mean and a max: the passage's token order does not matter, its content does.
    order = rng.permutation(11)
    shuffled = head.logit(features, claim, claim_weights, passage[order], passage_weights[order])
    assert shuffled == pytest.approx(logit, abs=1e-4)
    assert head.logit(features, claim, claim_weights, unit(11), passage_weights) != pytest.approx(
        logit, abs=1e-4
    )


HANDBOOK_PAIRS = [  # (claim, passage, backed): a paraphrase, then an on-topic sentence that does not back it
    (
        "Employees get 25 days of paid vacation per year.",
        "Full-time employees are entitled to 25 days of paid annual leave.",
        True,
    ),
    (
        "Employees get 25 days of paid vacation per year.",
        "Vacation requests must be submitted through the HR portal at least two weeks in advance.",
        False,
    ),
    (
        "Staff must use the VPN on public Wi-Fi.",
        "When connecting from public networks, staff must enable the company VPN.",
        True,
    ),
    (
        "Staff must use the VPN on public Wi-Fi.",
        "The VPN client is available for Windows, macOS and Linux.",
        False,
    ),
    (
        "Expense reports are due within 30 days of purchase.",
        "Submit each expense report no later than 30 days after the purchase date.",
        True,
    ),
    (
        "Expense reports are due within 30 days of purchase.",
        "Expense reports are reviewed by the finance team every Friday.",
        False,
    ),
    (
        "The cafeteria is open from 8 am to 3 pm.",
        "Our cafeteria serves meals between 8 am and 3 pm on weekdays.",
        True,
    ),
    ("The cafeteria is open from 8 am to 3 pm.", "The cafeteria offers vegetarian and vegan options.", False),
    (
        "Passwords must be changed every 90 days.",
        "All users are required to rotate their passwords every 90 days.",
        True,
    ),
    ("Passwords must be changed every 90 days.", "Passwords must contain at least twelve characters.", False),
    (
        "The USER_NAME column is a VARCHAR(10).",
        "USER_NAME: VARCHAR(10), not null, the login name of the user.",
        True,
    ),
    (
        "The USER_NAME column is a VARCHAR(10).",
        "The USER table stores one row per registered account.",
        False,
    ),
    (
        "Scrooge refused to give money to the charity collectors.",
        "Scrooge sent the two gentlemen away without a penny for the poor.",
        True,
    ),
    (
        "Scrooge refused to give money to the charity collectors.",
        "Two portly gentlemen entered Scrooge's office with books and papers.",
        False,
    ),
    (
        "LangGraph persists state with checkpointers.",
        "A checkpointer saves the graph state at every super-step, so runs can resume.",
        True,
    ),
    (
        "LangGraph persists state with checkpointers.",
        "LangGraph is a library for building stateful agents.",
        False,
    ),
]


def test_outside_scifact_paraphrases_are_supported_and_on_topic_sentences_are_not(scorer):
    # The model was trained on biomedical abstracts only; these handbook, schema, novel and software
    # sentences check that its verdicts carry over (README "Citations").
    claims, passages, backed = zip(*HANDBOOK_PAIRS, strict=True)
    scores = scorer.score_pairs(list(claims), list(passages))
    verdicts = [scorer.is_supported(float(s)) for s in scores]
    assert verdicts == list(backed)


def test_quotation_marks_markdown_and_reference_tags_do_not_change_a_verdict(scorer):
    variants = [
        '"Refunds are accepted within 14 days of purchase." [Community ID: 3][1]',
        "- **Refunds** are accepted within [14 days](https://acme.example/refunds) of purchase [1].",
        "Refunds are accepted within “14 days” of purchase.",
    ]
    assert {claim_for_scoring(v) for v in variants} == {POLICY}
    assert claim_for_scoring("5'-nucleotidase carriers' risk") == "5'-nucleotidase carriers' risk"
    scores = scorer.score_pairs([POLICY, *variants], [HEADED.split("\n\n")[1]] * 4)
    assert scorer.is_supported(float(scores[0])) and np.allclose(scores, scores[0])
