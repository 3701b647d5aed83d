"""A lexical baseline outside the product: bm25s over whole documents, when it is installed.

It answers "is the product's retrieval better than a well-tuned classic?" on the same judged data,
so it must not share anything with the product's index (chunking, sparse model, fusion).
"""

from __future__ import annotations

import numpy as np

from librarian.evaluation.data import Beir

DEPTH = 100


def bm25_ranking(data: Beir, depth: int = DEPTH) -> dict[str, list[str]] | None:
    """bm25s over whole documents (same Snowball stemmer and English stop words), or None if absent."""
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return None
    ids = list(data.corpus)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    corpus_tokens = bm25s.tokenize(
        list(data.corpus.values()), stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever.index(corpus_tokens, show_progress=False)
    out = {}
    for qid, text in data.queries.items():
        tokens = bm25s.tokenize(
            [text], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
        )
        scores = retriever.get_scores(tokens[0])
        out[qid] = [ids[j] for j in np.argsort(-scores, kind="stable")[:depth]]
    return out
