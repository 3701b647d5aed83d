"""The embedded default reranker: evidence we already have, re-weighted, plus sentence-level similarity.

No cross-encoder weights can be had offline, so this reranker judges with what ships: the bundled
MiniLM and the scores the hybrid index already computed. A chunk embedding averages every sentence
in it, so one sentence that answers the query is diluted by its neighbours; the best single
sentence's similarity to the query (max-sim) recovers that. Each signal is min-max normalised within
the candidate list, because their raw scales differ (cosine in [-1, 1], lexical scores unbounded)
and only their order within this list matters here; the weights were tuned on SciFact dev with
`bench/retrieval.py --tune` and must not lower nDCG@10 against no reranking.

Sentence vectors are computed at query time (rerank never runs on the upload path) and kept in a
bounded in-process cache keyed by the chunk's text, so a chunk is split and embedded once per process.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

import numpy as np

from librarian.embeddings.base import DenseEmbedder
from librarian.index.base import QueryMatch
from tools.rerank_base import Reranked

FEATURES = ("dense", "sparse", "fused", "maxsim", "position")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
MIN_SENTENCE_CHARS = 25


class ArrayEmbedder(Protocol):
    """Unit-length sentence vectors as one array (MiniLMEmbedder.embed_array)."""

    def embed_array(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class LocalWeights:
    """Weight of each normalised signal; they sum to 1 so the score stays in [0, 1].

    The defaults sit in the middle of the best plateau of a 0.1-step grid on SciFact dev (400 claims,
    1,200 abstracts): nDCG@10 0.827 against 0.797 for the fused order, 0.829 at the grid's single best
    point (dense 0.2, fused 0.4, max-sim 0.4). Every signal keeps some weight so that corpora where
    exact terms matter more than on SciFact still get the lexical evidence.
    """

    dense: float = 0.2
    sparse: float = 0.1
    fused: float = 0.3
    maxsim: float = 0.3
    position: float = 0.1

    def __post_init__(self) -> None:
        values = asdict(self)
        if any(v < 0 for v in values.values()) or abs(sum(values.values()) - 1.0) > 1e-6:
            raise ValueError(f"local rerank weights must be non-negative and sum to 1, got {values}")

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, f) for f in FEATURES], dtype=np.float64)


DEFAULT_WEIGHTS = LocalWeights()
DEFAULT_FLOOR = 0.2
"""Noise control on a relative scale: a candidate scoring under 0.2 sits in the bottom fifth of this
list's range on the weighted evidence. It says nothing about absolute relevance (the best candidate
of an unrelated list still scores near 1); it drops the stragglers a short answer does not need."""


def split_sentences(text: str) -> list[str]:
    """Sentences, with fragments shorter than MIN_SENTENCE_CHARS merged into the next one.

    Short fragments ("Methods:", "Fig. 2") embed to generic vectors that match any query a little;
    merging them keeps max-sim from rewarding boilerplate.
    """
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    sentences: list[str] = []
    pending = ""
    for part in parts:
        pending = f"{pending} {part}" if pending else part
        if len(pending) >= MIN_SENTENCE_CHARS:
            sentences.append(pending)
            pending = ""
    if pending:
        if sentences:
            sentences[-1] = f"{sentences[-1]} {pending}"
        else:
            sentences.append(pending)
    return sentences


class SentenceVectorCache:
    """Sentence vectors per chunk text, least recently used first out, bounded by vector count."""

    def __init__(self, embedder: ArrayEmbedder, max_vectors: int = 100_000) -> None:
        self.embedder = embedder
        self.max_vectors = max_vectors
        self._entries: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()

    def get_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        """(sentences × dim) float32 arrays in input order, embedding the misses in one call."""
        keys = [self._key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._entries:
                    self._entries.move_to_end(k)
                    found[k] = self._entries[k]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:
            splits = {k: split_sentences(t) or [t] for k, t in missing.items()}
            flat = [s for parts in splits.values() for s in parts]
            vectors = np.asarray(self.embedder.embed_array(flat), dtype=np.float32)
            offset = 0
            for k, parts in splits.items():
                found[k] = vectors[offset : offset + len(parts)]
                offset += len(parts)
            self._store({k: found[k] for k in missing})
        return [found[k] for k in keys]

    def _store(self, new: dict[bytes, np.ndarray]) -> None:
        with self._lock:
            for k, v in new.items():
                if k not in self._entries:
                    self._entries[k] = v
                    self._size += len(v)
            while self._size > self.max_vectors and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self._size -= len(evicted)


class _ListEmbedder:
    """Adapts an embedder that only has `embed_documents` (lists) to `embed_array`."""

    def __init__(self, embedder: DenseEmbedder) -> None:
        self.embedder = embedder

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float32)


def sentence_embedder(dense: DenseEmbedder) -> ArrayEmbedder:
    """The bundled MiniLM for sentence vectors: the configured one if it is MiniLM, else a new one.

    Sentence-level similarity embeds hundreds of sentences per query; with a cloud embedder that would
    be a paid round trip per search, so the local model does it whatever the index uses.
    """
    from librarian.embeddings.minilm import MiniLMEmbedder

    if isinstance(dense, MiniLMEmbedder):
        return dense
    return MiniLMEmbedder()


def minmax(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] within the list; a constant column carries no ordering evidence and becomes 0."""
    low, high = float(np.min(values)), float(np.max(values))
    if high - low <= 1e-12:
        # No spread: the signal cannot tell candidates apart, so each is as good as the best.
        # (Zero here would sink a lone candidate under the floor: a one-chunk library found nothing.)
        return np.ones_like(values, dtype=np.float64)
    return (values - low) / (high - low)


def raw_features(
    query_vector: np.ndarray, matches: Sequence[QueryMatch], sentence_vectors: Sequence[np.ndarray | None]
) -> np.ndarray:
    """(n × 5) raw signals in FEATURES order; NaN where a channel score is unknown (e.g. Pinecone)."""
    n = len(matches)
    out = np.full((n, len(FEATURES)), np.nan, dtype=np.float64)
    for i, (m, sv) in enumerate(zip(matches, sentence_vectors, strict=True)):
        out[i, 0] = np.nan if m.dense_score is None else m.dense_score
        out[i, 1] = np.nan if m.sparse_score is None else m.sparse_score
        out[i, 2] = m.score
        out[i, 3] = float(np.max(sv @ query_vector)) if sv is not None and len(sv) else np.nan
        out[i, 4] = 1.0 - i / n
    return out


def normalise(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min-max normalised signals (unknown values 0) and a mask of the signals unknown for everyone."""
    n, k = features.shape
    normalised = np.zeros((n, k), dtype=np.float64)
    absent = np.zeros(k, dtype=bool)
    for j in range(k):
        column = features[:, j]
        known = ~np.isnan(column)
        if known.any():
            normalised[known, j] = minmax(column[known])
        else:
            absent[j] = True
    return normalised, absent


def combine(features: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted sum of min-max normalised signals.

    A signal unknown for some candidates is 0 for them; unknown for all, its weight moves to the
    fused score so the result stays on the [0, 1] scale the floor assumes.
    """
    normalised, absent = normalise(features)
    weights = weights.astype(np.float64).copy()
    weights[FEATURES.index("fused")] += weights[absent].sum()
    weights[absent] = 0.0
    return np.clip(normalised @ weights, 0.0, 1.0)  # float sums may land a hair outside


class LocalReranker:
    """Weighted, list-normalised dense, sparse, fused, sentence max-sim and position signals."""

    name = "local"

    def __init__(
        self,
        embedder: ArrayEmbedder,
        weights: LocalWeights = DEFAULT_WEIGHTS,
        *,
        floor: float = DEFAULT_FLOOR,
        cache_vectors: int = 100_000,
    ) -> None:
        self.embedder = embedder
        self.weights = weights
        self.floor = floor
        self.sentences = SentenceVectorCache(embedder, max_vectors=cache_vectors)

    def features(self, query: str, matches: Sequence[QueryMatch]) -> np.ndarray:
        """Raw signals for each candidate (exposed so the benchmark can tune weights on them)."""
        if not matches:
            return np.zeros((0, len(FEATURES)))
        query_vector = np.asarray(self.embedder.embed_array([query])[0], dtype=np.float32)
        with_text = [i for i, m in enumerate(matches) if m.metadata.get("text")]
        vectors = self.sentences.get_many([str(matches[i].metadata["text"]) for i in with_text])
        by_index: dict[int, np.ndarray] = dict(zip(with_text, vectors, strict=True))
        return raw_features(query_vector, matches, [by_index.get(i) for i in range(len(matches))])

    def rerank(self, query: str, matches: list[QueryMatch], top_k: int) -> list[Reranked]:
        if not matches:
            return []
        raw = self.features(query, matches)
        scores = combine(raw, self.weights.vector())
        order = sorted(range(len(matches)), key=lambda i: -scores[i])  # stable on ties
        return [
            Reranked(
                match=matches[i],
                score=float(scores[i]),
                details={
                    "rerank": float(scores[i]),
                    **{f: float(raw[i, j]) for j, f in enumerate(FEATURES) if not np.isnan(raw[i, j])},
                },
            )
            for i in order[:top_k]
        ]
