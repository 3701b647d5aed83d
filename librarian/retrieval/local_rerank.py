"""The embedded default reranker: evidence we already have, re-weighted, plus finer-grained similarity.

No cross-encoder weights can be had offline, so this reranker judges with what ships: the bundled
MiniLM and the scores the hybrid index already computed. A chunk embedding averages every sentence
in it, so one sentence that answers the query is diluted by its neighbours; two finer views recover
that evidence:

- sentence max-sim: the best single sentence's similarity to the query (each sentence embedded alone);
- token late interaction ("tokens"): for every query token, its best cosine against the chunk's
  contextual token vectors (MiniLM's last hidden states), averaged over the query tokens, as ColBERT
  scores. It rewards a chunk that covers each part of the query, including paraphrases the lexical
  channel misses. On its own it ranks SciFact dev at nDCG@10 0.723, against 0.678 for the chunk
  cosine and 0.690 for sentence max-sim, and it is the only tested signal that added more than noise
  to the fused score (table in `LocalWeights`).

Each signal is min-max normalised within the candidate list, because their raw scales differ (cosine
in [-1, 1], lexical scores unbounded) and only their order within this list matters here.

Everything is computed at query time (rerank never runs on the upload path) and kept in bounded
in-process caches keyed by the chunk's text, so a chunk is split and embedded once per process.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from librarian.embeddings.base import DenseEmbedder
from librarian.index.base import QueryMatch
from librarian.retrieval.reranker import Reranked
from librarian.text.sentences import PROSE, merge_short, sentences

FEATURES = ("dense", "sparse", "fused", "maxsim", "position", "tokens")
MIN_SENTENCE_CHARS = 25


class ArrayEmbedder(Protocol):
    """Unit-length sentence vectors as one array (MiniLMEmbedder.embed_array)."""

    def embed_array(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class LocalWeights:
    """Weight of each normalised signal; they sum to 1 so the score stays in [0, 1]. A signal not
    named gets no weight (so weights written before a signal existed keep their meaning);
    DEFAULT_WEIGHTS holds the tuned values.

    DEFAULT_WEIGHTS was tuned on full SciFact dev (809 claims; 5,183 abstracts as 12,787 chunks; 40
    candidates at alpha 0.75) with a 0.1-step grid over the six signals, all 40 candidates deep.
    nDCG@10 / MRR@10 of each scheme tried (`+`: added to the previous default, best weight found):

        fused order (no rerank)                                           0.733 / 0.703
        previous default (dense .2 sparse .1 fused .3 maxsim .3 pos .1)   0.737 / 0.709
        best grid point of those five signals                             0.743 (in sample)
        + dense pseudo-relevance feedback (Rocchio, centroid of top 3-10) ≤ 0.738
        + lexical PRF (top-k candidates' terms), idf-weighted coverage   ≤ 0.740
        + document pooling (sum / second best chunk of the same file)     ≤ 0.739
        top-2 / softmax-pooled sentence sims instead of the max           ≤ 0.739
        rank-based (RRF) instead of min-max normalisation                 0.725-0.731
        tokens instead of sentences (one pass)                            0.743
        sentence vectors pooled from the chunk's token states (one pass)  ≤ 0.746
        these defaults: stand-alone sentences + tokens                    0.748 / 0.723

    Two-fold check (grid tuned on a random half of the claims, scored on the other half): +0.009 and
    +0.016 nDCG@10 over the fused order, so the gain holds out of sample; the grid's neighbours of
    this point all score within 0.001. The chunk cosine gets no weight: it is already inside the fused
    score, and on top of the finer views it added nothing.

    Since parser version 3 (titles open their abstract's first chunk and name the later ones) the same
    corpus is 10,720 chunks; with these weights unchanged, deep 20: 0.743 against 0.733 fused.
    """

    dense: float = 0.0
    sparse: float = 0.0
    fused: float = 0.0
    maxsim: float = 0.0
    position: float = 0.0
    tokens: float = 0.0

    def __post_init__(self) -> None:
        values = asdict(self)
        if any(v < 0 for v in values.values()) or abs(sum(values.values()) - 1.0) > 1e-6:
            raise ValueError(f"local rerank weights must be non-negative and sum to 1, got {values}")

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, f) for f in FEATURES], dtype=np.float64)


DEFAULT_WEIGHTS = LocalWeights(dense=0.0, sparse=0.1, fused=0.1, maxsim=0.3, position=0.1, tokens=0.4)
DEFAULT_FLOOR = 0.2
"""Noise control on a relative scale: a candidate scoring under 0.2 sits in the bottom fifth of this
list's range on the weighted evidence. It says nothing about absolute relevance (the best candidate
of an unrelated list still scores near 1); it drops the stragglers a short answer does not need."""


def split_sentences(text: str) -> list[str]:
    """Sentences as max-sim embeds them, fragments shorter than MIN_SENTENCE_CHARS merged into the next.

    Short fragments ("Methods:", "Fig. 2") embed to generic vectors that match any query a little;
    merging them keeps max-sim from rewarding boilerplate. The cut is `librarian.text.sentences.PROSE`,
    the one DEFAULT_WEIGHTS were tuned with.
    """
    return merge_short(sentences(text, PROSE), MIN_SENTENCE_CHARS)


class TextVectorCache:
    """Vectors per chunk text (any rows × dim array), least recently used first out, bounded by row count.

    `compute` turns a list of texts into one array per text; misses are computed in one call.
    """

    def __init__(self, compute: Callable[[list[str]], list[np.ndarray]], max_vectors: int = 100_000) -> None:
        self.compute = compute
        self.max_vectors = max_vectors
        self._entries: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()

    def get_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One array per text, in input order, computing the misses in one call."""
        keys = [self._key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._entries:
                    self._entries.move_to_end(k)
                    found[k] = self._entries[k]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:
            computed = self.compute(list(missing.values()))
            new = dict(zip(missing, computed, strict=True))
            found.update(new)
            self._store(new)
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


class SentenceVectorCache(TextVectorCache):
    """(sentences × dim) float32 unit vectors per chunk text, every sentence embedded on its own."""

    def __init__(self, embedder: ArrayEmbedder, max_vectors: int = 100_000) -> None:
        self.embedder = embedder
        super().__init__(self._embed_sentences, max_vectors)

    def _embed_sentences(self, texts: list[str]) -> list[np.ndarray]:
        splits = [split_sentences(t) or [t] for t in texts]
        flat = [s for parts in splits for s in parts]
        vectors = np.asarray(self.embedder.embed_array(flat), dtype=np.float32)
        out, offset = [], 0
        for parts in splits:
            out.append(vectors[offset : offset + len(parts)])
            offset += len(parts)
        return out


class TokenEmbedder(Protocol):
    """Contextual token vectors per text (MiniLMEmbedder.embed_tokens)."""

    def embed_tokens(self, texts: Sequence[str]) -> list[np.ndarray]: ...


def token_encoder(embedder: Any) -> Callable[[list[str]], list[np.ndarray]] | None:
    """Token vectors need the model's hidden states: only an embedder with `embed_tokens` (the
    bundled MiniLM) gives them; with any other the tokens signal is absent and its weight moves to
    the fused score."""
    embed_tokens = getattr(embedder, "embed_tokens", None)
    return embed_tokens if callable(embed_tokens) else None


def late_interaction(query_tokens: np.ndarray, chunk_tokens: np.ndarray) -> float:
    """ColBERT's MaxSim: each query token's best cosine in the chunk, averaged over query tokens.

    Every query token counts the same, punctuation and stop words included: in context they carry the
    claim's structure, and weighting tokens by IDF or dropping stop words scored lower on SciFact dev
    (nDCG@10 alone 0.707 and 0.709 against 0.723).
    """
    if not len(query_tokens) or not len(chunk_tokens):
        return float("nan")
    sims = query_tokens.astype(np.float32) @ chunk_tokens.astype(np.float32).T
    return float(sims.max(axis=1).mean())


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
    query_vector: np.ndarray,
    matches: Sequence[QueryMatch],
    sentence_vectors: Sequence[np.ndarray | None],
    token_scores: Sequence[float] | None = None,
) -> np.ndarray:
    """(n × 6) raw signals in FEATURES order; NaN where a signal is unknown (e.g. Pinecone's channels)."""
    n = len(matches)
    out = np.full((n, len(FEATURES)), np.nan, dtype=np.float64)
    for i, (m, sv) in enumerate(zip(matches, sentence_vectors, strict=True)):
        out[i, 0] = np.nan if m.dense_score is None else m.dense_score
        out[i, 1] = np.nan if m.sparse_score is None else m.sparse_score
        out[i, 2] = m.score
        out[i, 3] = float(np.max(sv @ query_vector)) if sv is not None and len(sv) else np.nan
        out[i, 4] = 1.0 - i / n
    if token_scores is not None:
        out[:, 5] = np.asarray(token_scores, dtype=np.float64)
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
    fused score so the result stays on the [0, 1] scale the floor assumes. A table with fewer
    columns than FEATURES (one computed before a signal was added) lacks the trailing signals for
    everyone, which is the same thing.
    """
    missing = len(weights) - features.shape[1]
    if missing > 0:
        features = np.hstack([features, np.full((features.shape[0], missing), np.nan)])
    normalised, absent = normalise(features)
    weights = weights.astype(np.float64).copy()
    weights[FEATURES.index("fused")] += weights[absent].sum()
    weights[absent] = 0.0
    return np.clip(normalised @ weights, 0.0, 1.0)  # float sums may land a hair outside


DEFAULT_DEEP = 20
"""How many of the best fused candidates get the sentence and token signals; the rest get neither, so
they normalise to 0 on both and stay below unless the cheap signals lift them. Each of the two
signals is a MiniLM pass over the candidate's text, which is the whole cold rerank cost. On SciFact
dev (40 candidates; cold time relative to the previous reranker, which embedded the sentences of
all 40, measured interleaved in one process):

    deep   nDCG@10   cold rerank time
    all    0.748     2.4x
    30     0.747     1.8x
    20     0.744     1.3x    (default)
    15     0.740     ~1x (estimated from its share of the text)
    10     0.732     below the fused order (0.733)

Two-fold check at 20: +0.006 and +0.013 nDCG@10 over the fused order out of sample."""


class LocalReranker:
    """Weighted, list-normalised sparse, fused, sentence max-sim, token late-interaction and position
    signals (dense too, weight 0 by default)."""

    name = "local"

    def __init__(
        self,
        embedder: ArrayEmbedder,
        weights: LocalWeights = DEFAULT_WEIGHTS,
        *,
        floor: float = DEFAULT_FLOOR,
        deep: int | None = DEFAULT_DEEP,
        cache_vectors: int = 100_000,
        cache_tokens: int = 200_000,
    ) -> None:
        """`deep`: candidates (best fused first) that get sentence and token signals; None for all.
        `cache_tokens`: token vectors kept (float16, 768 bytes each: 200k ≈ 150 MiB, ~1,000 chunks)."""
        self.embedder = embedder
        self.weights = weights
        self.floor = floor
        self.deep = deep
        self.sentences = SentenceVectorCache(embedder, max_vectors=cache_vectors)
        encoder = token_encoder(embedder) if weights.tokens > 0 else None
        self.encoder = encoder
        self.tokens = TextVectorCache(encoder, max_vectors=cache_tokens) if encoder is not None else None

    def features(self, query: str, matches: Sequence[QueryMatch]) -> np.ndarray:
        """Raw signals for each candidate (exposed so the benchmark can tune weights on them)."""
        if not matches:
            return np.zeros((0, len(FEATURES)))
        deep = len(matches) if self.deep is None else self.deep
        with_text = [i for i, m in enumerate(matches[:deep]) if m.metadata.get("text")]
        texts = [str(matches[i].metadata["text"]) for i in with_text]
        token_scores: list[float] | None = None
        if self.tokens is not None and self.encoder is not None:
            # The query's pooled vector is the mean of the same hidden states, but embed_array is the
            # model's contract for it; one extra short run is cheap next to the chunks'.
            query_tokens = self.encoder([query])[0]
            chunk_tokens = dict(zip(with_text, self.tokens.get_many(texts), strict=True))
            token_scores = [
                late_interaction(query_tokens, chunk_tokens[i]) if i in chunk_tokens else float("nan")
                for i in range(len(matches))
            ]
        query_vector = np.asarray(self.embedder.embed_array([query])[0], dtype=np.float32)
        vectors = self.sentences.get_many(texts)
        by_index: dict[int, np.ndarray] = dict(zip(with_text, vectors, strict=True))
        return raw_features(
            query_vector, matches, [by_index.get(i) for i in range(len(matches))], token_scores
        )

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
