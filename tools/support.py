"""Does a source sentence back an answer sentence? An offline support scorer in [0, 1].

Why these signals: no entailment model ships offline (DESIGN §6), but the bundled MiniLM and the
index's own stemmed terms do. A backed sentence usually restates the source's words (stemmed
term coverage, weighted by how rare each term is in English) and its meaning (MiniLM sentence
cosine, and token-level late interaction, which notices a matching phrase inside a longer sentence).
Numbers must agree: "14 days" is not backed by "30 days". A logistic regression mixes the signals;
its weights and threshold were fitted on SciFact's sentence-level rationales with 5-fold
cross-validation by claim (`bench/support_scorer.py` prints the fold figures; README "Citations").
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from librarian.embeddings.lexical import LexicalSparseEmbedder
from librarian.embeddings.text_terms import raw_tokens, stem

FEATURES = (
    "cosine",  # MiniLM sentence vectors
    "late_interaction",  # mean over claim tokens of the best passage-token cosine
    "late_interaction_reverse",  # the same from the passage's side
    "weakest_tokens",  # 25th percentile of the claim tokens' best cosines: backed means all of it is
    "idf_coverage",  # share of the claim's stemmed terms (weighted by English rarity) found in the passage
    "coverage",  # unweighted share
    "bigram_coverage",  # share of the claim's term bigrams found in the passage
    "numbers",  # share of the claim's numbers found in the passage (1 when it has none)
    "matched_idf",  # total rarity of the matched terms: one shared rare term says more than three common ones
    "passage_terms",  # log(1 + terms in the passage)
)

# Fitted by `python bench/support_scorer.py` on SciFact's rationales (all 5,494 pairs of the 505 claims
# with evidence); k-fold figures in the README. Order: FEATURES, then the intercept.
WEIGHTS = (-3.5403, 4.5680, 3.7486, 1.2968, -1.9315, 2.4117, -1.0495, 0.7677, 0.0160, 1.0970)
INTERCEPT = -8.3046
THRESHOLD = 0.156
"""A pair is `supported` when its score reaches this: the threshold that keeps 80% of the backed
pairs (a backed sentence is flagged at most one time in five; flags are visible, so false ones cost
trust). Chosen the same way in each training fold for the k-fold figures."""

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_MARKER = re.compile(r"\s*\[\d+\]")


class TokenEmbedder(Protocol):
    def embed_array(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_tokens(self, texts: Sequence[str]) -> list[np.ndarray]: ...


_lexical = LexicalSparseEmbedder()
_shared_lock = threading.Lock()
_shared: dict[str, Any] = {}


def bundled_embedder() -> TokenEmbedder:
    """The bundled MiniLM, loaded once per process: the weights were fitted on its features, so the
    scorer uses it even when the index uses another dense model (e.g. OpenAI)."""
    with _shared_lock:
        if "minilm" not in _shared:
            from librarian.embeddings.minilm import MiniLMEmbedder

            _shared["minilm"] = MiniLMEmbedder()
        return _shared["minilm"]


def strip_markers(sentence: str) -> str:
    """The claim without its `[n]` citation markers (they are not words the source should contain)."""
    return _MARKER.sub("", sentence).strip()


def _terms(text: str) -> list[str]:
    from librarian.embeddings.text_terms import STOPWORDS

    return [stem(t) for t in raw_tokens(text) if t not in STOPWORDS]


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def lexical_features(claim: str, passage: str) -> list[float]:
    """idf-weighted and plain coverage of the claim's terms, bigram coverage, number agreement,
    matched rarity and passage length."""
    claim_terms, passage_terms = _terms(claim), _terms(passage)
    have = set(passage_terms)
    distinct = set(claim_terms)
    length = math.log1p(len(passage_terms))
    if not distinct:
        return [0.0, 0.0, 0.0, 1.0, 0.0, length]
    idf = {t: _lexical.idf(t) for t in distinct}
    idf_coverage = sum(idf[t] for t in distinct if t in have) / (sum(idf.values()) or 1.0)
    coverage = len(distinct & have) / len(distinct)
    claim_bigrams = set(itertools.pairwise(claim_terms))
    passage_bigrams = set(itertools.pairwise(passage_terms))
    bigrams = len(claim_bigrams & passage_bigrams) / len(claim_bigrams) if claim_bigrams else coverage
    wanted = _numbers(claim)
    numbers = len(wanted & _numbers(passage)) / len(wanted) if wanted else 1.0
    matched = sum(idf[t] for t in distinct if t in have)
    return [idf_coverage, coverage, bigrams, numbers, matched, length]


def token_features(claim_tokens: np.ndarray, passage_tokens: np.ndarray) -> list[float]:
    """Late interaction both ways (ColBERT's MaxSim, averaged) and the claim's weakest quarter."""
    if len(claim_tokens) == 0 or len(passage_tokens) == 0:
        return [0.0, 0.0, 0.0]
    sims = claim_tokens.astype(np.float32) @ passage_tokens.astype(np.float32).T
    best = sims.max(axis=1)
    return [float(best.mean()), float(sims.max(axis=0).mean()), float(np.percentile(best, 25))]


def pair_features(
    claim: str, passage: str, claim_vector: np.ndarray, passage_vector: np.ndarray,
    claim_tokens: np.ndarray, passage_tokens: np.ndarray,
) -> list[float]:  # fmt: skip
    """One row of FEATURES from the texts and their MiniLM sentence and token vectors."""
    return [
        float(claim_vector @ passage_vector),
        *token_features(claim_tokens, passage_tokens),
        *lexical_features(claim, passage),
    ]


class SupportScorer:
    """Scores (claim, passage) pairs; `supported` means score ≥ `threshold`."""

    name = "local"

    def __init__(
        self,
        embedder: TokenEmbedder | None = None,
        weights: Sequence[float] = WEIGHTS,
        intercept: float = INTERCEPT,
        threshold: float = THRESHOLD,
    ) -> None:
        self._embedder = embedder
        self.weights = np.asarray(weights, dtype=np.float64)
        self.intercept = float(intercept)
        self.threshold = float(threshold)

    @property
    def embedder(self) -> TokenEmbedder:
        if self._embedder is None:
            self._embedder = bundled_embedder()
        return self._embedder

    def features(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """One row of FEATURES per aligned (claim, passage) pair; each distinct text is embedded once."""
        if len(claims) != len(passages):
            raise ValueError("claims and passages must be aligned pairs")
        rows = np.zeros((len(claims), len(FEATURES)), dtype=np.float64)
        if not claims:
            return rows
        claims = [strip_markers(c) for c in claims]
        texts = list(dict.fromkeys([*claims, *passages]))
        where = {t: i for i, t in enumerate(texts)}
        vectors = self.embedder.embed_array(texts)
        tokens = self.embedder.embed_tokens(texts)
        for row, (claim, passage) in enumerate(zip(claims, passages, strict=True)):
            a, b = where[claim], where[passage]
            rows[row] = pair_features(claim, passage, vectors[a], vectors[b], tokens[a], tokens[b])
        return rows

    def probability(self, features: np.ndarray) -> np.ndarray:
        logits = features @ self.weights + self.intercept
        return 1.0 / (1.0 + np.exp(-logits))

    def score_pairs(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        return self.probability(self.features(claims, passages))

    def is_supported(self, score: float) -> bool:
        return not math.isnan(score) and score >= self.threshold
