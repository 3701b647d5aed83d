"""The local reranker's signals without an index: token late interaction, the `deep` cut, absent signals."""

from __future__ import annotations

import numpy as np
import pytest

from librarian.embeddings.minilm import MiniLMEmbedder
from librarian.index.base import QueryMatch
from librarian.retrieval.local_rerank import (
    DEFAULT_FLOOR,
    DEFAULT_WEIGHTS,
    FEATURES,
    LocalReranker,
    LocalWeights,
    combine,
    late_interaction,
    token_encoder,
)

TOKENS, MAXSIM, FUSED = FEATURES.index("tokens"), FEATURES.index("maxsim"), FEATURES.index("fused")


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=4, threads=1)


class HashEmbedder:
    """A deterministic stand-in with only `embed_array`: unit vectors from each text's word hashes."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_array(self, texts):
        self.texts.extend(texts)
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, hash(word.strip(".,")) % 16] += 1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-12)
        return out


def matches(n: int) -> list[QueryMatch]:
    return [
        QueryMatch(
            id=str(i),
            score=1.0 - i / n,
            metadata={"text": f"Chunk number {i} talks about topic {i}. It has a second sentence too."},
            dense_score=0.5 - i / (2 * n),
            sparse_score=0.3,
        )
        for i in range(n)
    ]


def test_default_weights_put_the_most_on_token_late_interaction():
    assert sum(DEFAULT_WEIGHTS.vector()) == pytest.approx(1.0)
    assert max(FEATURES, key=lambda f: getattr(DEFAULT_WEIGHTS, f)) == "tokens"
    assert DEFAULT_WEIGHTS.dense == 0.0  # already inside the fused score


def test_unnamed_signals_get_no_weight():
    assert LocalWeights(fused=1.0).vector().tolist() == [0, 0, 1, 0, 0, 0]
    with pytest.raises(ValueError, match="sum to 1"):
        LocalWeights()


def test_late_interaction_averages_each_query_tokens_best_match():
    q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float16)
    chunk = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float16)
    # token 1 best 1.0 (first row), token 2 best 0.8 (second row)
    assert late_interaction(q, chunk) == pytest.approx(0.9, abs=1e-3)
    assert np.isnan(late_interaction(q, np.zeros((0, 2), dtype=np.float16)))


def test_a_table_without_the_token_column_treats_it_as_absent():
    five = np.array([[0.2, 0.1, 1.0, 0.5, 1.0], [0.4, 0.3, 3.0, 0.1, 0.5]])
    six = np.hstack([five, np.full((2, 1), np.nan)])
    w = DEFAULT_WEIGHTS.vector()
    assert combine(five, w).tolist() == combine(six, w).tolist()
    # tokens' 0.4 moved to fused: candidate 2 has max fused (1) and sparse (1), nothing else
    assert combine(five, w)[1] == pytest.approx(0.1 + 0.1 + 0.4)


def test_without_a_token_model_the_token_weight_moves_to_the_fused_score():
    reranker = LocalReranker(HashEmbedder())
    assert reranker.tokens is None
    feats = reranker.features("topic 3", matches(5))
    assert np.isnan(feats[:, TOKENS]).all()
    ranked = reranker.rerank("topic 3", matches(5), top_k=5)
    assert all(0.0 <= r.score <= 1.0 for r in ranked)
    assert "tokens" not in ranked[0].details


def test_only_the_deep_candidates_are_embedded():
    embedder = HashEmbedder()
    reranker = LocalReranker(embedder, deep=3)
    feats = reranker.features("topic 3", matches(8))
    assert not np.isnan(feats[:3, MAXSIM]).any()
    assert np.isnan(feats[3:, MAXSIM]).all()
    assert len(embedder.texts) == 1 + 3 * 2  # the query and two sentences for each of 3 chunks
    everyone = LocalReranker(HashEmbedder(), deep=None).features("topic 3", matches(8))
    assert not np.isnan(everyone[:, MAXSIM]).any()


def test_a_lone_candidate_scores_above_the_floor(minilm: MiniLMEmbedder):
    ranked = LocalReranker(minilm).rerank("topic 0", matches(1), top_k=3)
    assert len(ranked) == 1
    assert ranked[0].score >= DEFAULT_FLOOR
    assert set(ranked[0].details) == {"rerank", *FEATURES}


def test_token_encoder_only_for_minilm(minilm: MiniLMEmbedder):
    assert token_encoder(minilm) == minilm.embed_tokens
    assert token_encoder(HashEmbedder()) is None


def test_token_vectors_are_unit_float16_without_cls_and_sep(minilm: MiniLMEmbedder):
    texts = ["Insulin resistance in obese mice.", "A longer sentence about something else entirely, see?"]
    out = minilm.embed_tokens(texts)
    tokenizer = minilm._load()[1]
    for text, states in zip(texts, out, strict=True):
        assert states.dtype == np.float16
        assert states.shape == (len(tokenizer.encode(text).ids) - 2, 384)
        assert np.linalg.norm(states.astype(np.float32), axis=1) == pytest.approx(1.0, abs=2e-3)


def test_tokens_reward_the_chunk_that_covers_every_part_of_the_query(minilm: MiniLMEmbedder):
    """Both chunks are about obese mice; only one also says insulin resistance."""
    query = "Obesity causes insulin resistance in mice."
    covers = "Obese mice developed marked insulin resistance after twelve weeks on the diet."
    partial = "Obese mice were housed in groups of four and weighed every week on the diet."
    candidates = [
        QueryMatch(id="partial", score=0.9, metadata={"text": partial}, dense_score=0.9, sparse_score=0.9),
        QueryMatch(id="covers", score=0.5, metadata={"text": covers}, dense_score=0.5, sparse_score=0.5),
    ]
    only_tokens = LocalReranker(minilm, LocalWeights(tokens=1.0))
    feats = only_tokens.features(query, candidates)
    assert feats[1, TOKENS] > feats[0, TOKENS] + 0.05
    assert only_tokens.rerank(query, candidates, 1)[0].match.id == "covers"


def test_token_vectors_are_cached_per_chunk_text(minilm: MiniLMEmbedder):
    reranker = LocalReranker(minilm)
    reranker.features("topic 1", matches(4))
    assert reranker.tokens is not None
    cached = reranker.tokens._size
    assert cached > 0
    reranker.features("topic 2", matches(4))
    assert reranker.tokens._size == cached
