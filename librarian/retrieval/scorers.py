"""Relevance scorers: (query, passage) → a score in [0, 1], one call per candidate list.

Three ways to judge relevance from text alone, each with its own floor (DESIGN §6 "Rerank"):
an LLM asked for a number (Mastra's semantic scorer), Pinecone's hosted `bge-reranker-v2-m3`, and a
cross-encoder the user keeps in a local folder. None of them ships weights, so none is the default.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from librarian.chat_model import internal_model

if TYPE_CHECKING:
    import onnxruntime
    from langchain_core.language_models import BaseChatModel
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

# Mastra's relevance-scorer instructions and prompt (@mastra/core relevance), so scores mean the same.
LLM_INSTRUCTIONS = """You are a specialized agent for evaluating the relevance of text to queries.
Your task is to rate how well a text passage answers a given query.
Output only a number between 0 and 1, where:
1.0 = Perfectly relevant, directly answers the query
0.0 = Completely irrelevant
Consider:
- Direct relevance to the question
- Completeness of information
- Quality and specificity
Always return just the number, no explanation."""

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def similarity_prompt(query: str, text: str) -> str:
    return (
        "Rate the semantic similarity between the following the query and the text on a scale from 0 to 1 "
        "(decimals allowed), where 1 means exactly the same meaning and 0 means completely different:\n\n"
        f"Query: {query}\n\nText: {text}\n\nRelevance score (0-1):"
    )


def parse_relevance(reply: str) -> float | None:
    """The first number in a reply, clamped to [0, 1]; None when there is no number at all.

    Models wrap the number in words ("Score: 0.8"), reasoning blocks or markdown, and sometimes step
    outside the scale; clamping keeps one wild answer from dominating a fused score.
    """
    match = _NUMBER.search(_THINKING.sub(" ", reply))
    if match is None:
        return None
    value = float(match.group())
    if math.isnan(value):
        return None
    return min(1.0, max(0.0, value))


def _reply_text(message: Any) -> str:
    text = getattr(message, "text", None)
    if isinstance(text, str):
        return text
    return str(getattr(message, "content", message))


class LLMRelevanceScorer:
    """Any LangChain chat model as a relevance judge (Mastra's `MastraAgentRelevanceScorer`).

    A reply without a number, or a call that fails, scores 0 and is logged: one bad answer should
    cost one passage its rank, not fail the user's search. If every call fails the model is down,
    which the caller must hear about, so that raises.
    """

    name = "llm"

    def __init__(self, chat_model: BaseChatModel, *, floor: float = 0.2, max_concurrency: int = 8) -> None:
        self.chat_model = internal_model(chat_model)  # scores are not the answer: kept out of the stream
        self.floor = floor
        self.max_concurrency = max_concurrency

    def _inputs(self, query: str, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        return [[("system", LLM_INSTRUCTIONS), ("human", similarity_prompt(query, t))] for t in texts]

    def _scores(self, replies: Sequence[Any]) -> list[float]:
        failures = [r for r in replies if isinstance(r, BaseException)]
        if replies and len(failures) == len(replies):
            raise RuntimeError(f"the relevance model failed on every passage: {failures[0]}") from failures[0]
        scores = []
        for i, reply in enumerate(replies):
            if isinstance(reply, BaseException):
                logger.warning("relevance model call %d failed, scoring 0: %s", i, reply)
                scores.append(0.0)
                continue
            text = _reply_text(reply)
            value = parse_relevance(text)
            if value is None:
                logger.warning("relevance model reply %d has no number, scoring 0: %r", i, text[:200])
                value = 0.0
            scores.append(value)
        return scores

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        config = {"max_concurrency": self.max_concurrency}
        replies = self.chat_model.batch(self._inputs(query, texts), config, return_exceptions=True)
        return self._scores(replies)

    async def ascore(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        config = {"max_concurrency": self.max_concurrency}
        replies = await self.chat_model.abatch(self._inputs(query, texts), config, return_exceptions=True)
        return self._scores(replies)


class PineconeRerankScorer:
    """Pinecone Inference rerank (`bge-reranker-v2-m3` by default) through the official SDK.

    Floor 0.2: bge scores are a sigmoid of the cross-encoder logit, and below about 0.2 a passage
    rarely answers the query (DESIGN §5). Requests are split at Pinecone's 100-document limit.
    """

    name = "pinecone"
    max_documents = 100

    def __init__(
        self,
        api_key: str,
        host: str | None = None,
        model: str = "bge-reranker-v2-m3",
        *,
        floor: float = 0.2,
    ) -> None:
        from pinecone import Pinecone

        if not api_key:
            raise ValueError("PineconeRerankScorer needs a Pinecone API key (PINECONE_API_KEY)")
        self.client = Pinecone(api_key=api_key, host=host) if host else Pinecone(api_key=api_key)
        self.model = model
        self.floor = floor

    def score(self, query: str, texts: list[str]) -> list[float]:
        scores = [0.0] * len(texts)
        for start in range(0, len(texts), self.max_documents):
            batch = texts[start : start + self.max_documents]
            result = self.client.inference.rerank(
                model=self.model,
                query=query,
                documents=[{"id": str(i), "text": t} for i, t in enumerate(batch)],
                rank_fields=["text"],
                top_n=len(batch),
                return_documents=False,
                parameters={"truncate": "END"},
            )
            for item in result.data:
                scores[start + item.index] = float(item.score)
        return scores


class CrossEncoderFolderError(FileNotFoundError):
    """The cross-encoder folder lacks a file it needs; the message names it."""


def _find_model_file(folder: Path) -> Path:
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    raise CrossEncoderFolderError(
        f"cross-encoder folder {folder} has no model.onnx (looked for model.onnx and onnx/model.onnx); "
        "export the model to ONNX (e.g. `optimum-cli export onnx --model <name> <folder>`)"
    )


def logits_to_scores(logits: np.ndarray) -> np.ndarray:
    """Relevance in [0, 1] from a cross-encoder head: sigmoid of one logit, or P(relevant) of two."""
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim == 2 and logits.shape[1] == 2:
        logits = logits[:, 1] - logits[:, 0]  # softmax over two classes == sigmoid of the difference
    elif logits.ndim == 2:
        logits = logits[:, 0]
    return 1.0 / (1.0 + np.exp(-logits))


class CrossEncoderScorer:
    """A cross-encoder from a local folder (`model.onnx` + `tokenizer.json`), run with onnxruntime.

    For users who have weights on disk (bge-reranker, ms-marco-MiniLM exported to ONNX): no hub,
    no torch. The score is the sigmoid of the relevance logit, the same scale Pinecone's bge-reranker
    reports, hence the same default floor of 0.2.
    """

    name = "cross-encoder"

    def __init__(
        self,
        model_dir: str | Path,
        *,
        floor: float = 0.2,
        max_length: int = 512,
        batch_size: int = 16,
        threads: int = 2,
    ) -> None:
        folder = Path(model_dir).expanduser()
        if not folder.is_dir():
            raise CrossEncoderFolderError(f"cross-encoder folder {folder} does not exist")
        self.model_path = _find_model_file(folder)
        self.tokenizer_path = folder / "tokenizer.json"
        if not self.tokenizer_path.is_file():
            raise CrossEncoderFolderError(
                f"cross-encoder folder {folder} has no tokenizer.json (save the tokenizer with the model)"
            )
        self.floor = floor
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer]:
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                tokenizer.enable_truncation(max_length=self.max_length, strategy="longest_first")
                tokenizer.no_padding()  # padded per batch below, to the longest pair in it
                self._tokenizer = tokenizer
            if self._session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.add_session_config_entry("session.inter_op.allow_spinning", "0")
                self._session = ort.InferenceSession(
                    str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
        return self._session, self._tokenizer

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        session, tokenizer = self._load()
        wanted = {i.name for i in session.get_inputs()}
        encodings = tokenizer.encode_batch([(query, t) for t in texts])
        out = np.empty(len(texts), dtype=np.float64)
        for start in range(0, len(texts), self.batch_size):
            batch = encodings[start : start + self.batch_size]
            width = max(len(e.ids) for e in batch)
            feeds = {
                "input_ids": np.zeros((len(batch), width), dtype=np.int64),
                "attention_mask": np.zeros((len(batch), width), dtype=np.int64),
                "token_type_ids": np.zeros((len(batch), width), dtype=np.int64),
            }
            for row, e in enumerate(batch):
                n = len(e.ids)
                feeds["input_ids"][row, :n] = e.ids
                feeds["attention_mask"][row, :n] = 1
                feeds["token_type_ids"][row, :n] = e.type_ids
            (logits,) = session.run(None, {k: v for k, v in feeds.items() if k in wanted})[:1]
            out[start : start + len(batch)] = logits_to_scores(logits)
        return out.tolist()
