"""The embedded sparse embedder: a fixed lexical encoder (BM25 term saturation × general-English IDF).

Why fixed and not fitted to the corpus (DESIGN §6 "Sparse", option (a)): IDF comes from `wordfreq`'s shipped
English frequencies instead of any tenant's documents, so a vector never depends on what else is indexed. The
same text gets the same vector forever, in any namespace and in any dot-product index (LanceDB or Pinecone),
and no statistics of one tenant can leak into another's scores. Term ids are 32-bit MurmurHash3 of the term,
stable across processes and versions.

Query-time namespace IDF (DESIGN §6 option (b), `LIBRARIAN_SPARSE_IDF=namespace`, embedded index only):
document vectors stay as above; the query's term weights are rescaled by the namespace's own document
frequencies (`embed_query_with_counts`), so the dot product becomes BM25 with that namespace's IDF.
Fixed IDF alone scored SciFact dev nDCG@10 0.679 against bm25s's 0.696; with namespace IDF, 0.697
(README "Retrieval quality"). Only the searched namespace's counts are read: one tenant's statistics
never touch another's scores.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache

import mmh3

from librarian.embeddings.base import SparseVector
from librarian.embeddings.text_terms import terms

MODEL_ID = "librarian-lexical-bm25-wordfreq-v2"
"""v2: CJK text is indexed as character bigrams (`text_terms.cjk_bigrams`); v1 kept whole CJK runs, which
never matched a question. Other text gets the same vectors as v1."""

PRIOR_DOCUMENTS = 100.0
"""Namespace IDF: the fixed (general-English) document frequency counts as this many documents seen, so a
small namespace leans on it and a large one on its own counts. On SciFact dev (5,183 documents) nDCG@10
was flat for 0-1,000 (0.6967, 0.6966, 0.6972, 0.6967) and fell to 0.690 at 10,000."""

TermCounts = Callable[[list[int]], tuple[int, dict[int, int]]]
"""Given term ids: (documents in the namespace, {term id: documents containing it})."""


@dataclass(frozen=True)
class LexicalRecipe:
    """Every number that shapes a vector. Changing any of them changes `model_id`, hence the index contract.

    Defaults are textbook BM25 (k1, b) plus choices checked on SciFact dev with bench/sparse_eval.py; the
    sweep there was flat (±0.005 nDCG@10) around them, so they were kept simple rather than fitted.
    """

    k1: float = 1.2
    """Term-frequency saturation: the third mention of a term adds little over the first."""
    b: float = 0.75
    """How strongly long passages are discounted relative to `avglen`."""
    avglen: float = 100.0
    """Fixed reference length in index terms (after stop words): about one 1,000-character chunk. A per-corpus
    average would make vectors depend on the rest of the corpus, which is what this encoder avoids."""
    doc_terms: float = 300.0
    """Converts word frequency to a document frequency: P(term in a document) ≈ freq × doc_terms, as in
    BM25's idf = ln(1 + N/df)."""
    unseen_freq: float = 1e-9
    """Frequency given to terms wordfreq has never seen (codes like "E1234", typos, rare names): below its
    rarest word, so they count as the most specific terms there are."""
    scale: float = 0.2
    """Multiplies document values so that sparse scores sit on the scale of a MiniLM cosine in the index's
    alpha·dense + (1 - alpha)·sparse: with it, the default alpha 0.75 was the best mix on SciFact dev."""


DEFAULT_RECIPE = LexicalRecipe()


_table_lock = threading.Lock()


def stem_frequencies() -> dict[str, float]:
    """The stem table, built by the first caller while concurrent first callers wait (it costs a second)."""
    with _table_lock:
        return _build_stem_frequencies()


@lru_cache(maxsize=1)
def _build_stem_frequencies() -> dict[str, float]:
    """English frequency of each stem: the sum over all words that stem to it ("study", "studies" → "studi").

    Built once per process from wordfreq's full English list (~320k words, about a second) so that IDF is a
    property of the stem, the unit we index, rather than of whichever surface form happened to appear.
    """
    import Stemmer
    import wordfreq

    words = {w: f for w, f in wordfreq.get_frequency_dict("en").items() if w.isalpha()}
    # One batch call instead of `stem()` per word: same Snowball stems, without flooding stem()'s cache.
    stems = Stemmer.Stemmer("english").stemWords(list(words))
    table: dict[str, float] = {}
    for key, freq in zip(stems, words.values(), strict=True):
        table[key] = table.get(key, 0.0) + freq
    return table


@lru_cache(maxsize=200_000)
def term_frequency(term: str) -> float:
    """General-English frequency of one index term; numbers and codes use wordfreq's own estimate for them."""
    if term.isalpha():
        return stem_frequencies().get(term, 0.0)
    import wordfreq

    return wordfreq.word_frequency(term, "en")


def term_id(term: str) -> int:
    """The sparse index of a term: unsigned 32-bit MurmurHash3 (seed 0) of its UTF-8 text."""
    return mmh3.hash(term, signed=False)


class LexicalSparseEmbedder:
    """BM25-style sparse vectors without corpus statistics.

    Document value of a term: scale × tf / (tf + k1·(1 - b + b·len/avglen)) × idf, with len in index terms.
    Query value of a term: 1/√n for each of its n distinct terms (a unit vector of presences).
    The dot product is then BM25 with a fixed IDF, divided by √n so that long questions do not drown the
    dense score. IDF sits on the document side only: putting it on both sides (idf²) over-weighted rare
    terms and cost 0.018 nDCG@10 on SciFact dev.
    """

    def __init__(self, recipe: LexicalRecipe = DEFAULT_RECIPE) -> None:
        self.recipe = recipe
        if recipe == DEFAULT_RECIPE:
            self.model_id = MODEL_ID
        else:
            digest = hashlib.sha256(repr(sorted(asdict(recipe).items())).encode()).hexdigest()[:8]
            self.model_id = f"{MODEL_ID}+{digest}"

    def idf(self, term: str) -> float:
        """ln(1 + 1/p) with p the chance that a document of `doc_terms` words contains the term."""
        r = self.recipe
        freq = max(term_frequency(term), r.unseen_freq)
        return math.log1p(1.0 / (freq * r.doc_terms))

    def embed_documents(self, texts: list[str]) -> list[SparseVector]:
        return [self._document(text) for text in texts]

    def embed_query(self, text: str) -> SparseVector:
        distinct = set(terms(text))
        return _to_vector({term: 1.0 / math.sqrt(len(distinct)) for term in distinct})

    def embed_query_with_counts(self, text: str, term_counts: TermCounts) -> SparseVector:
        """The query vector reweighted so that the dot product uses the namespace's IDF.

        Document values carry the fixed idf; each query term is multiplied by idf_ns / idf_fixed, with
        idf_ns = ln(1 + 1/p) and p = (df + PRIOR_DOCUMENTS·p_fixed) / (N + PRIOR_DOCUMENTS).
        """
        distinct = set(terms(text))
        if not distinct:
            return _to_vector({})
        ids = {term: term_id(term) for term in distinct}
        documents, counts = term_counts(sorted(set(ids.values())))
        r = self.recipe
        weights = {}
        for term in distinct:
            fixed_p = max(term_frequency(term), r.unseen_freq) * r.doc_terms
            p = (counts.get(ids[term], 0) + PRIOR_DOCUMENTS * fixed_p) / (documents + PRIOR_DOCUMENTS)
            weights[term] = math.log1p(1.0 / p) / self.idf(term) / math.sqrt(len(distinct))
        return _to_vector(weights)

    def _document(self, text: str) -> SparseVector:
        r = self.recipe
        counts = Counter(terms(text))
        length_norm = r.k1 * (1.0 - r.b + r.b * sum(counts.values()) / r.avglen)
        return _to_vector({t: r.scale * tf / (tf + length_norm) * self.idf(t) for t, tf in counts.items()})


def _to_vector(weights: dict[str, float]) -> SparseVector:
    """Hash terms to ids, merging the (rare) hash collisions by summing, sorted by id."""
    merged: dict[int, float] = {}
    for term, weight in weights.items():
        if weight > 0.0:
            key = term_id(term)
            merged[key] = merged.get(key, 0.0) + weight
    ids = sorted(merged)
    return SparseVector(indices=ids, values=[merged[i] for i in ids])
