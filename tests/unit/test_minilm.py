"""The embedded dense model: shape, unit norm, semantic order, agreement with the float reference weights."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from librarian.embeddings.minilm import (
    MAX_PADDING_SHARE,
    MAX_TOKENS,
    MiniLMEmbedder,
    load_tokenizer,
    padding_bounded_batches,
)

SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Quarterly revenue grew by twelve percent.",
    "Error E1234 occurs when the x86_64 build cannot find libssl.",
    "How do I reset my password?",
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=2, threads=1)


REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.json"


def reference_embeddings(texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 from the float safetensors weights, stored by `bench/make_minilm_reference.py`.

    Computed by a plain numpy BERT forward pass, independent of the ONNX export: it catches a wrong or
    corrupted int8 file, wrong pooling or wrong inputs. Stored, so the test install needs no float weights.
    """
    fixture = json.loads(REFERENCE.read_text())
    assert fixture["sentences"] == texts, "regenerate the fixture: python bench/make_minilm_reference.py"
    return np.array(fixture["vectors"])


def test_contract_constants(embedder: MiniLMEmbedder) -> None:
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dimension == 384


def test_vectors_are_unit_norm_and_384_d(embedder: MiniLMEmbedder) -> None:
    vectors = np.array(embedder.embed_documents(SENTENCES))
    assert vectors.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert len(embedder.embed_query("hello")) == 384


def test_semantic_neighbours_score_higher(embedder: MiniLMEmbedder) -> None:
    v = np.array(embedder.embed_documents(SENTENCES))
    cat, kitten, revenue = v[0], v[1], v[2]
    assert cat @ kitten > 0.5
    assert cat @ kitten > cat @ revenue + 0.3
    query = np.array(embedder.embed_query("I forgot my login credentials"))
    assert int(np.argmax(v @ query)) == 4


def test_int8_model_agrees_with_float_reference(embedder: MiniLMEmbedder) -> None:
    ours = np.array(embedder.embed_documents(SENTENCES))
    reference = reference_embeddings(SENTENCES)
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() >= 0.998, cosines
    # The similarity structure must match too, not just each vector on its own.
    np.testing.assert_allclose(ours @ ours.T, reference @ reference.T, atol=0.01)


def test_order_is_restored_and_batching_does_not_change_vectors(embedder: MiniLMEmbedder) -> None:
    texts = ["short", "a much longer sentence about databases and indexes " * 3, "mid length text here"]
    together = np.array(embedder.embed_documents(texts))
    alone = np.array([embedder.embed_query(t) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_long_text_is_truncated_not_rejected(embedder: MiniLMEmbedder) -> None:
    long_text = "word " * 2000
    assert len(load_tokenizer().encode(long_text).ids) == MAX_TOKENS
    vector = np.array(embedder.embed_query(long_text))
    assert vector.shape == (384,) and np.isfinite(vector).all()


def test_empty_inputs(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed_documents([]) == []
    assert len(embedder.embed_query("")) == 384


def test_parallel_calls_equal_serial() -> None:
    fresh = MiniLMEmbedder(batch_size=4, threads=1)  # unloaded: the threads race to load it
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda t: fresh.embed_query(t), SENTENCES * 2))
    serial = [fresh.embed_query(t) for t in SENTENCES * 2]
    np.testing.assert_allclose(np.array(parallel), np.array(serial), atol=1e-5)


@pytest.mark.parametrize(
    "lengths",
    [[256, 256, 70], [10] * 20, [5, 200, 12, 256, 13, 11, 180, 190, 255, 40], [], [7]],
)
def test_batches_cover_every_text_once_and_bound_padding(lengths: list[int]) -> None:
    batches = padding_bounded_batches(lengths, batch_size=8)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert 1 <= len(batch) <= 8
        width, real = max(lengths[i] for i in batch), sum(lengths[i] for i in batch)
        assert len(batch) * width - real <= MAX_PADDING_SHARE * len(batch) * width


def test_short_text_is_not_padded_to_a_long_neighbour() -> None:
    """One file's chunks: two full-length and a short tail, which alone costs a fraction."""
    assert padding_bounded_batches([256, 70, 256], batch_size=8) == [[1], [0, 2]]
    assert padding_bounded_batches([30, 32, 31], batch_size=2) == [[0, 2], [1]]
