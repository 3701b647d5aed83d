"""Relevance scorers through their real clients: ChatOpenAI and the Pinecone SDK against local wire servers,
and onnxruntime + tokenizers on a tiny cross-encoder graph built here."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest

from librarian.retrieval.scorers import (
    CrossEncoderFolderError,
    CrossEncoderScorer,
    LLMRelevanceScorer,
    PineconeRerankScorer,
    logits_to_scores,
    parse_relevance,
)
from tests.wire.openai_server import OpenAIWireServer, TextReply
from tests.wire.pinecone_server import PineconeWireServer

# ------------------------------------------------------------------------------ reply parsing


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("0.85", 0.85),
        ("Relevance score: 0.7\nbecause it mentions refunds", 0.7),
        ("**.5**", 0.5),
        ("1", 1.0),
        ("7", 1.0),  # off-scale answers are clamped, not trusted
        ("-0.3", 0.0),
        ("<think>maybe 0.9? no</think> 0.2", 0.2),  # reasoning blocks are ignored
        ("1e-1", 0.1),
        ("not relevant at all", None),
        ("", None),
    ],
)
def test_parse_relevance_takes_the_first_number_clamped(reply, expected):
    assert parse_relevance(reply) == (pytest.approx(expected) if expected is not None else None)


def test_logits_become_probabilities():
    assert logits_to_scores(np.array([[0.0], [2.0]])).tolist() == pytest.approx([0.5, 1 / (1 + np.exp(-2))])
    # two-class heads: P(relevant) = softmax(...)[1] = sigmoid(l1 - l0)
    assert logits_to_scores(np.array([[1.0, 3.0]])).tolist() == pytest.approx([1 / (1 + np.exp(-2))])


# ------------------------------------------------------------------------------ LLM scorer


def _reply_by_passage(replies: dict[str, str]):
    """A script entry answering according to the passage in the prompt (batch calls run concurrently)."""

    def reply(body: dict) -> TextReply:
        prompt = body["messages"][-1]["content"]
        passage = re.search(r"Text: (.*)\n\nRelevance score", prompt, re.DOTALL).group(1)
        return TextReply(replies[passage])

    return reply


def _chat(server: OpenAIWireServer):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-test", base_url=server.base_url, api_key=server.api_key, max_retries=0)


def test_llm_scorer_parses_valid_and_malformed_replies(openai_server, caplog):
    replies = {
        "refunds take 14 days": "0.9",
        "shipping rates": "Score: 0.25.",
        "lorem ipsum": "I cannot say.",
    }
    openai_server.chat_script.extend([_reply_by_passage(replies)] * 3)
    scorer = LLMRelevanceScorer(_chat(openai_server))
    with caplog.at_level(logging.WARNING, logger="librarian.retrieval.scorers"):
        scores = scorer.score("how long do refunds take?", list(replies))
    assert scores == [pytest.approx(0.9), pytest.approx(0.25), 0.0]
    assert "no number" in caplog.text
    bodies = openai_server.chat_requests
    assert len(bodies) == 3
    assert all(
        b["messages"][0]["role"] == "system" and "between 0 and 1" in b["messages"][0]["content"]
        for b in bodies
    )
    assert all("Query: how long do refunds take?" in b["messages"][-1]["content"] for b in bodies)


def test_llm_scorer_survives_one_failed_call_but_not_all(openai_server, caplog):
    scorer = LLMRelevanceScorer(_chat(openai_server), max_concurrency=1)
    openai_server.default_reply = TextReply("0.6")
    openai_server.fail_next(1, status=500)
    with caplog.at_level(logging.WARNING, logger="librarian.retrieval.scorers"):
        assert sorted(scorer.score("q", ["a", "b"])) == [0.0, pytest.approx(0.6)]
    assert "failed" in caplog.text
    openai_server.fail_next(2, status=500)
    with pytest.raises(RuntimeError, match="failed on every passage"):
        scorer.score("q", ["a", "b"])


async def test_llm_scorer_async(openai_server):
    openai_server.default_reply = TextReply("0.4")
    assert await LLMRelevanceScorer(_chat(openai_server)).ascore("q", ["a"]) == [pytest.approx(0.4)]
    assert LLMRelevanceScorer(_chat(openai_server)).score("q", []) == []


# ------------------------------------------------------------------------------ Pinecone scorer


def test_pinecone_scorer_keeps_input_order(pinecone_server: PineconeWireServer):
    scorer = PineconeRerankScorer(api_key=pinecone_server.api_key, host=pinecone_server.url)
    texts = ["nothing here", "refund policy details", "the refund"]
    # the wire server scores the share of query words present in the document
    assert scorer.score("refund policy", texts) == [0.0, 1.0, 0.5]
    (request,) = pinecone_server.requests_to("/rerank")
    assert request.body["model"] == "bge-reranker-v2-m3"
    assert request.body["query"] == "refund policy"
    assert scorer.floor == 0.2


def test_pinecone_scorer_splits_at_the_document_limit(pinecone_server: PineconeWireServer):
    scorer = PineconeRerankScorer(api_key=pinecone_server.api_key, host=pinecone_server.url)
    texts = [f"doc {i}" + (" alpha" if i % 7 == 0 else "") for i in range(130)]
    scores = scorer.score("alpha", texts)
    assert scores == [1.0 if i % 7 == 0 else 0.0 for i in range(130)]
    sizes = [len(r.body["documents"]) for r in pinecone_server.requests_to("/rerank")]
    assert sizes == [100, 30]


def test_pinecone_scorer_surfaces_a_wrong_key(pinecone_server: PineconeWireServer):
    scorer = PineconeRerankScorer(api_key="wrong", host=pinecone_server.url)
    with pytest.raises(Exception, match=r"(?i)unauthori[sz]ed|401|api key"):
        scorer.score("q", ["a"])


# ------------------------------------------------------------------------------ cross-encoder


@pytest.fixture(scope="module")
def tokenizer_json() -> Path:
    from librarian.embeddings.minilm import TOKENIZER_PATH

    return TOKENIZER_PATH


def build_cross_encoder(folder: Path, vocab_size: int, weights: dict[int, float], bias: float) -> None:
    """A graph shaped like a BERT cross-encoder: (input_ids, attention_mask, token_type_ids) → logits (N, 1).

    logit = bias + Σ over passage tokens (segment 1, unmasked) of weight[token id]; enough to check
    that pairs are encoded, segments are set, padding is masked and truncation applies.
    """
    onnx = pytest.importorskip("onnx", reason="the cross-encoder test builds its graph with `onnx`")
    from onnx import TensorProto, helper, numpy_helper

    table = np.zeros((vocab_size, 1), dtype=np.float32)
    for token, w in weights.items():
        table[token, 0] = w
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["per_token"], axis=0),  # N × L × 1
        helper.make_node("Squeeze", ["per_token", "axis2"], ["token_w"]),  # N × L
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["type_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["token_w", "mask_f"], ["masked"]),
        helper.make_node("Mul", ["masked", "type_f"], ["passage_w"]),
        helper.make_node("ReduceSum", ["passage_w", "axis1"], ["summed"], keepdims=1),  # N × 1
        helper.make_node("Add", ["summed", "bias"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-cross-encoder",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=[
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
            numpy_helper.from_array(np.array([bias], dtype=np.float32), "bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))


@pytest.fixture
def cross_encoder_dir(tmp_path: Path, tokenizer_json: Path) -> Path:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    apple = tok.token_to_id("apple")
    build_cross_encoder(tmp_path, tok.get_vocab_size(), {apple: 1.0, 0: 50.0}, bias=-1.0)  # 0 is [PAD]
    (tmp_path / "tokenizer.json").write_bytes(tokenizer_json.read_bytes())
    return tmp_path


def sigmoid(x: float) -> float:
    return float(1 / (1 + np.exp(-x)))


def test_cross_encoder_scores_passage_tokens_of_each_pair(cross_encoder_dir: Path):
    scorer = CrossEncoderScorer(cross_encoder_dir, batch_size=2)
    texts = [
        "an apple a day, an apple a week",  # two passage apples
        "bananas only, and a much longer passage so that the batch pads the shorter ones",
        "one apple",
    ]
    scores = scorer.score("apple apple apple", texts)  # query apples are segment 0: they must not count
    assert scores == pytest.approx([sigmoid(1.0), sigmoid(-1.0), sigmoid(0.0)], abs=1e-6)
    assert scorer.floor == 0.2


def test_cross_encoder_truncates_long_pairs(cross_encoder_dir: Path):
    scorer = CrossEncoderScorer(cross_encoder_dir, max_length=16)
    long_text = "word " * 40 + "apple"
    assert scorer.score("q", [long_text, "apple"]) == pytest.approx([sigmoid(-1.0), sigmoid(0.0)], abs=1e-6)
    assert scorer.score("q", []) == []


def test_cross_encoder_accepts_the_optimum_layout(cross_encoder_dir: Path):
    (cross_encoder_dir / "onnx").mkdir()
    (cross_encoder_dir / "model.onnx").rename(cross_encoder_dir / "onnx" / "model.onnx")
    assert CrossEncoderScorer(cross_encoder_dir).score("q", ["apple"]) == pytest.approx([0.5], abs=1e-6)


def test_cross_encoder_names_the_missing_file(tmp_path: Path, tokenizer_json: Path):
    with pytest.raises(CrossEncoderFolderError, match="does not exist"):
        CrossEncoderScorer(tmp_path / "nowhere")
    with pytest.raises(CrossEncoderFolderError, match=r"no model\.onnx"):
        CrossEncoderScorer(tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(CrossEncoderFolderError, match=r"no tokenizer\.json"):
        CrossEncoderScorer(tmp_path)
