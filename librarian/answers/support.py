"""Does a source sentence back an answer sentence? An offline support scorer in [0, 1].

Why these signals: no entailment model ships offline (DESIGN §6), but the bundled MiniLM and the
index's own stemmed terms do. A backed sentence usually restates the source's words (stemmed
term coverage, weighted by how rare each term is in English) and its meaning (MiniLM sentence
cosine, token-level late interaction and kernel pooling, which notice a matching phrase inside a
longer sentence). A sentence that asks ("to determine whether ...") or says something is unknown
does not back a claim that states it. These FEATURES feed a small attention model over the same
MiniLM token vectors (`librarian/answers/support_head.py`), which also compares each claim token with what it
aligns to in the passage; it was trained on SciFact's sentence-level rationales, and
`bench/support_scorer.py` prints its k-fold figures (README "Citations").

One rule sits on top of the model, because a trained average cannot promise it: quantities must
agree. When the claim gives a quantity that the passage gives with another number in the same unit
("30 days" against "within 14 days"), the score is scaled below the threshold (`disagreeing_numbers`).
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from librarian.answers.quotes import clean_quote
from librarian.answers.support_head import SupportHead
from librarian.embeddings.lexical import LexicalSparseEmbedder
from librarian.embeddings.text_terms import raw_tokens, stem

KERNEL_CENTRES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
"""Soft-match kernels over token cosines (K-NRM, Xiong et al., 2017): how many tokens of the other side
sit near each similarity level, not only the best one. 1.0 is an exact match (width 0.01); the
others are 0.05 wide."""
KERNEL_WIDTHS = (0.01, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05)

FEATURES = (
    "cosine",  # MiniLM sentence vectors
    "late_interaction",  # mean over claim tokens of the best passage-token cosine
    "late_interaction_reverse",  # the same from the passage's side
    "weakest_tokens",  # 25th percentile of the claim tokens' best cosines: backed means all of it is
    "weakest_tenth",  # 10th percentile of the same
    "reverse_median",  # median of the passage tokens' best cosines to the claim
    "rare_late_interaction",  # late interaction, claim tokens weighted by their word's English rarity
    "word_alignment",  # per content word of the claim, its best piece's cosine; rarity-weighted mean
    "idf_coverage",  # share of the claim's stemmed terms (weighted by English rarity) found in the passage
    "coverage",  # unweighted share
    "bigram_coverage",  # share of the claim's term bigrams found in the passage
    "numbers",  # share of the claim's numbers found in the passage (1 when it has none)
    "matched_idf",  # total rarity of the matched terms: one shared rare term says more than three common ones
    "missing_rarest",  # rarity of the rarest claim term absent from the passage (0 when none is)
    "passage_terms",  # log(1 + terms in the passage)
    "asks",  # the passage asks or states an aim ("whether", "to determine", "?"): it asserts nothing
    "hedged",  # the passage says something is unknown or unclear
    # Kernel pooling: per side (claim tokens against the passage, then the reverse), per weighting
    # (plain mean over tokens, rarity-weighted), per kernel centre: mean log(1 + soft match count).
    *(
        f"kernel_{side}_{weighting}_{centre}"
        for side in ("claim", "passage")
        for weighting in ("mean", "rare")
        for centre in KERNEL_CENTRES
    ),
)

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A number standing alone and the word or % after it ("14 days", "30%", "2.5 mg"); not a digit
# inside a name ("IL-6", "CD4", "p21").
_QUANTITY = re.compile(r"(?<![\w.\-])(\d+(?:[.,]\d+)*)\s*(%|[^\W\d_]+)")
_MARKER = re.compile(r"\s*\[\d+\]")
_WORD = re.compile(r"[^\W_]+")
_ASKS = re.compile(
    r"\b(?:whether|to (?:determine|examine|investigate|assess|evaluate|test|compare|explore|identify|study)|"
    r"we (?:asked|investigated|examined|hypothesi[sz]ed|sought|tested|aimed)|objectives?|aims?|purpose|"
    r"hypothesis)\b|\?",
    re.I,
)
_HEDGED = re.compile(
    r"\b(?:unclear|unknown|little is known|remains? to be|poorly understood|controvers\w*|debated|"
    r"uncertain)\b",
    re.I,
)


class TokenEmbedder(Protocol):
    def embed_array(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_tokens(self, texts: Sequence[str]) -> list[np.ndarray]: ...


_lexical = LexicalSparseEmbedder()
_tokenizer_lock = threading.Lock()
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


_REFERENCE_TAG = re.compile(r"\[(?:[A-Z][\w ]*IDs?|Data|Sources?)\s*:[^\]]*\]")
_DOUBLE_QUOTES = re.compile(r"[\"“”„«»]|''")


def claim_for_scoring(sentence: str) -> str:
    """An answer sentence as the model reads it: no citation markers or reference tags ("[Community
    ID: 3]"), no Markdown (links, emphasis, bullets) and no double quotation marks. The model learns
    from plain claims; before this cleaning a sentence quoted whole scored near 0 against the very
    sentence it quotes (four training claims have quotation marks, too few to learn that they say
    nothing about support). Apostrophes and primes (5') stay: they are parts of words."""
    text = clean_quote(_REFERENCE_TAG.sub("", strip_markers(sentence)))
    return " ".join(_DOUBLE_QUOTES.sub("", text).split())


def _terms(text: str) -> list[str]:
    from librarian.embeddings.text_terms import STOPWORDS

    return [stem(t) for t in raw_tokens(text) if t not in STOPWORDS]


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def quantities(text: str) -> set[tuple[str, str]]:
    """(number, unit) pairs written as such: "14 days" → ("14", "day"), "30%" → ("30", "%"). Digits
    inside names ("IL-6", "CD4") are not quantities."""
    return {(n.replace(",", ""), "%" if u == "%" else stem(u.lower())) for n, u in _QUANTITY.findall(text)}


def disagreeing_numbers(claim: str, passage: str) -> bool:
    """The claim gives a quantity that the passage gives with another number in the same unit: "30
    days" against "within 14 days". Only a disagreement counts: a passage that does not mention the
    quantity omits it rather than contradicts it (the fitted `numbers` signal weighs omissions)."""
    stated = quantities(passage)
    return any(
        (number, unit) not in stated and any(u == unit and n != number for n, u in stated)
        for number, unit in quantities(claim)
    )


def lexical_features(claim: str, passage: str) -> list[float]:
    """idf-weighted and plain coverage of the claim's terms, bigram coverage, number agreement,
    matched rarity, the rarest missing term and passage length."""
    claim_terms, passage_terms = _terms(claim), _terms(passage)
    have = set(passage_terms)
    distinct = set(claim_terms)
    length = math.log1p(len(passage_terms))
    if not distinct:
        return [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, length]
    idf = {t: _lexical.idf(t) for t in distinct}
    idf_coverage = sum(idf[t] for t in distinct if t in have) / (sum(idf.values()) or 1.0)
    coverage = len(distinct & have) / len(distinct)
    claim_bigrams = set(itertools.pairwise(claim_terms))
    passage_bigrams = set(itertools.pairwise(passage_terms))
    bigrams = len(claim_bigrams & passage_bigrams) / len(claim_bigrams) if claim_bigrams else coverage
    wanted = _numbers(claim)
    numbers = len(wanted & _numbers(passage)) / len(wanted) if wanted else 1.0
    matched = sum(idf[t] for t in distinct if t in have)
    missing = max((idf[t] for t in distinct if t not in have), default=0.0)
    return [idf_coverage, coverage, bigrams, numbers, matched, missing, length]


def _minilm_tokenizer() -> Any:
    with _tokenizer_lock:
        if "tokenizer" not in _shared:
            from librarian.embeddings.minilm import load_tokenizer

            _shared["tokenizer"] = load_tokenizer()
        return _shared["tokenizer"]


def token_words(texts: Sequence[str], counts: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rarity weight, word number) of each token vector of each text, from the MiniLM tokenizer's
    character offsets: a word piece weighs what its whole word does (the English rarity of its stem,
    0 for stop words and punctuation). A text whose token count differs from `counts` (another
    token embedder) gets equal weights, one word per token."""
    from librarian.embeddings.text_terms import STOPWORDS

    out: list[tuple[np.ndarray, np.ndarray]] = []
    for text, count, encoding in zip(
        texts, counts, _minilm_tokenizer().encode_batch(list(texts)), strict=True
    ):
        offsets = encoding.offsets[1:-1] if len(encoding.ids) > 2 else encoding.offsets
        if len(offsets) != count:
            out.append((np.ones(count), np.arange(count)))
            continue
        words = [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]
        weights, numbers = np.zeros(count), -np.ones(count, dtype=np.int64)
        k = 0
        for j, (start, _) in enumerate(offsets):
            while k < len(words) and words[k][1] <= start:
                k += 1
            if k < len(words) and words[k][0] <= start:
                numbers[j] = k
                if words[k][2] not in STOPWORDS:
                    weights[j] = _lexical.idf(stem(words[k][2]))
        out.append((weights, numbers))
    return out


def token_features(sims: np.ndarray, claim_words: tuple[np.ndarray, np.ndarray]) -> list[float]:
    """Late interaction both ways (ColBERT's MaxSim, averaged), the claim's weakest tokens, the
    passage's median, and two rarity-weighted views of the claim's side (per token, per word), from
    the claim × passage token cosines."""
    if sims.size == 0:
        return [0.0] * 7
    best, reverse = sims.max(axis=1), sims.max(axis=0)
    weights, words = claim_words
    total = float(weights.sum())
    rare = float(weights @ best) / total if total > 0 else float(best.mean())
    content = weights > 0
    if content.any():
        per_word: dict[int, tuple[float, float]] = {}
        for word, weight, value in zip(words[content], weights[content], best[content], strict=True):
            previous = per_word.get(int(word), (weight, -1.0))
            per_word[int(word)] = (weight, max(previous[1], float(value)))
        pairs = np.array(list(per_word.values()))
        aligned = float(pairs[:, 0] @ pairs[:, 1] / pairs[:, 0].sum())
    else:
        aligned = float(best.mean())
    low_quarter, low_tenth = np.percentile(best, [25, 10])
    return [
        float(best.mean()), float(reverse.mean()), float(low_quarter), float(low_tenth),
        float(np.median(reverse)), rare, aligned,
    ]  # fmt: skip


def kernel_features(sims: np.ndarray, weights: np.ndarray) -> list[float]:
    """Kernel pooling of one side's token cosines (rows of `sims`) against the other side: for each
    kernel, mean over the rows of log(1 + soft count of columns near its centre), plain and weighted
    by `weights` (rarity; equal when all are 0)."""
    if sims.size == 0:
        return [0.0] * (2 * len(KERNEL_CENTRES))
    centres, widths = np.asarray(KERNEL_CENTRES), np.asarray(KERNEL_WIDTHS)
    counts = np.exp(-((sims[..., None] - centres) ** 2) / (2 * widths**2)).sum(axis=1)
    logs = np.log1p(counts)
    total = float(weights.sum())
    weighted = (weights @ logs) / total if total > 0 else logs.mean(axis=0)
    return [*logs.mean(axis=0).tolist(), *np.asarray(weighted).tolist()]


def pair_features(
    claim: str, passage: str, claim_vector: np.ndarray, passage_vector: np.ndarray,
    claim_tokens: np.ndarray, passage_tokens: np.ndarray,
    claim_words: tuple[np.ndarray, np.ndarray], passage_words: tuple[np.ndarray, np.ndarray],
) -> list[float]:  # fmt: skip
    """One row of FEATURES from the texts, their MiniLM sentence and token vectors, and each side's
    token rarity weights (`token_words`)."""
    sims = claim_tokens.astype(np.float32) @ passage_tokens.astype(np.float32).T
    return [
        float(claim_vector @ passage_vector),
        *token_features(sims, claim_words),
        *lexical_features(claim, passage),
        float(bool(_ASKS.search(passage))),
        float(bool(_HEDGED.search(passage))),
        *kernel_features(sims, claim_words[0]),
        *kernel_features(sims.T, passage_words[0]),
    ]


@dataclass
class PairInputs:
    """Everything the model reads for aligned (claim, passage) pairs: each distinct text's token
    vectors and rarity weights once, and per pair its FEATURES row and the two texts' indices."""

    features: np.ndarray
    tokens: list[np.ndarray]
    token_weights: list[np.ndarray]
    claim_index: np.ndarray
    passage_index: np.ndarray


class SupportScorer:
    """Scores (claim, passage) pairs in [0, 1]; `supported` means score ≥ `threshold`."""

    name = "local"

    def __init__(
        self,
        embedder: TokenEmbedder | None = None,
        head: SupportHead | None = None,
        threshold: float | None = None,
    ) -> None:
        self._embedder = embedder
        self._head = head
        self._threshold = threshold

    @property
    def head(self) -> SupportHead:
        """The trained model: the one given, else the shipped weights (loaded on first use)."""
        if self._head is None:
            self._head = shipped_head()
        return self._head

    @property
    def threshold(self) -> float:
        return float(self.head.threshold if self._threshold is None else self._threshold)

    @property
    def embedder(self) -> TokenEmbedder:
        if self._embedder is None:
            self._embedder = bundled_embedder()
        return self._embedder

    def inputs(self, claims: Sequence[str], passages: Sequence[str]) -> PairInputs:
        """The model's inputs for aligned pairs; each distinct text is embedded once."""
        if len(claims) != len(passages):
            raise ValueError("claims and passages must be aligned pairs")
        claims = [claim_for_scoring(c) for c in claims]
        texts = list(dict.fromkeys([*claims, *passages]))
        where = {t: i for i, t in enumerate(texts)}
        rows = np.zeros((len(claims), len(FEATURES)), dtype=np.float64)
        if not claims:
            return PairInputs(rows, [], [], np.zeros(0, np.int64), np.zeros(0, np.int64))
        vectors = self.embedder.embed_array(texts)
        tokens = [np.asarray(t, dtype=np.float32) for t in self.embedder.embed_tokens(texts)]
        words = token_words(texts, [len(t) for t in tokens])
        claim_index = np.array([where[c] for c in claims])
        passage_index = np.array([where[p] for p in passages])
        for row, (claim, passage, a, b) in enumerate(
            zip(claims, passages, claim_index, passage_index, strict=True)
        ):
            rows[row] = pair_features(
                claim, passage, vectors[a], vectors[b], tokens[a], tokens[b], words[a], words[b]
            )
        return PairInputs(rows, tokens, [w for w, _ in words], claim_index, passage_index)

    def features(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """One row of FEATURES per aligned (claim, passage) pair."""
        return self.inputs(claims, passages).features

    def model_scores(self, inputs: PairInputs, rows: Sequence[int] | None = None) -> np.ndarray:
        """The trained model alone (no rule) for the pairs `rows` (default all): what
        `bench/support_scorer.py` fits and measures."""
        rows = range(len(inputs.features)) if rows is None else rows
        logits = np.array(
            [
                self.head.logit(
                    inputs.features[r],
                    inputs.tokens[inputs.claim_index[r]],
                    inputs.token_weights[inputs.claim_index[r]],
                    inputs.tokens[inputs.passage_index[r]],
                    inputs.token_weights[inputs.passage_index[r]],
                )
                for r in rows
            ],
            dtype=np.float64,
        )
        return 1.0 / (1.0 + np.exp(-logits))

    def apply_rules(self, claims: Sequence[str], passages: Sequence[str], scores: np.ndarray) -> np.ndarray:
        """Scores of pairs whose numbers disagree scaled into [0, threshold): still ordered among
        themselves, never `supported`."""
        capped = np.asarray(scores, dtype=np.float64).copy()
        for i, (claim, passage) in enumerate(zip(claims, passages, strict=True)):
            if disagreeing_numbers(strip_markers(claim), passage):
                capped[i] = capped[i] * self.threshold * 0.99
        return capped

    def score_pairs(self, claims: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        if not claims:
            return np.zeros(0)
        return self.apply_rules(claims, passages, self.model_scores(self.inputs(claims, passages)))

    def is_supported(self, score: float) -> bool:
        return not math.isnan(score) and score >= self.threshold


def shipped_head() -> SupportHead:
    """The trained weights in `tools/assets/`, loaded once per process; they must name FEATURES."""
    with _shared_lock:
        if "head" not in _shared:
            head = SupportHead.load()
            if head.feature_names != FEATURES:
                raise RuntimeError("tools/assets/support_head.npz was trained on other FEATURES; retrain it")
            _shared["head"] = head
        return _shared["head"]
