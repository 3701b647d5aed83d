"""Retrieval quality of the embedded encoders on a BEIR folder (default: SciFact dev), as ratios to BM25.

Why this exists: the lexical encoder's documents carry fixed, general-English IDF; queries on the embedded
index are reweighted by the namespace's own IDF (LIBRARIAN_SPARSE_IDF=namespace). This script shows both
against a real corpus-fitted BM25 (bm25s, same Snowball stemmer), and what dense and hybrid scoring add.
Scores are exact (every query against every document), as the embedded index computes them.

    python bench/sparse_eval.py [--data DIR] [--grid] [--no-dense]

Dense document embeddings are cached in /tmp (about 2.5 minutes to compute on 2 cores).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from librarian.embeddings.base import SparseVector
from librarian.embeddings.lexical import DEFAULT_RECIPE, LexicalSparseEmbedder
from librarian.embeddings.minilm import MiniLMEmbedder

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact-dev"
ALPHAS = (0.3, 0.5, 0.75)


@dataclass
class Dataset:
    doc_ids: list[str]
    docs: list[str]
    query_ids: list[str]
    queries: list[str]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: Path) -> Dataset:
    """Corpus as "title text" (the usual BEIR convention); only queries that have judgments are kept."""
    qrels: dict[str, dict[str, int]] = {}
    for path in sorted((folder / "qrels").glob("*.tsv")):
        with path.open() as f:
            for row in csv.DictReader(f, delimiter="\t"):
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    doc_ids, docs = [], []
    for line in (folder / "corpus.jsonl").open():
        d = json.loads(line)
        doc_ids.append(d["_id"])
        docs.append(f"{d.get('title', '')} {d['text']}".strip())
    query_ids, queries = [], []
    for line in (folder / "queries.jsonl").open():
        q = json.loads(line)
        if q["_id"] in qrels:
            query_ids.append(q["_id"])
            queries.append(q["text"])
    return Dataset(doc_ids, docs, query_ids, queries, qrels)


def evaluate(scores: np.ndarray, data: Dataset) -> tuple[float, float]:
    """Mean nDCG@10 (graded gains, log2 discount) and Recall@100 over the judged queries."""
    ndcgs, recalls = [], []
    top = np.argsort(-scores, axis=1, kind="stable")[:, :100]
    for qi, qid in enumerate(data.query_ids):
        rel = data.qrels[qid]
        ranked = [data.doc_ids[j] for j in top[qi]]
        dcg = sum(rel.get(d, 0) / np.log2(i + 2) for i, d in enumerate(ranked[:10]))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
        ndcgs.append(dcg / idcg if idcg else 0.0)
        relevant = {d for d, g in rel.items() if g > 0}
        recalls.append(len(relevant & set(ranked)) / len(relevant) if relevant else 0.0)
    return float(np.mean(ndcgs)), float(np.mean(recalls))


def sparse_matrix(vectors: Iterable[SparseVector], columns: dict[int, int]) -> sp.csr_matrix:
    """Rows of sparse vectors over a shared column map (32-bit term ids → dense column numbers)."""
    indptr, indices, values = [0], [], []
    for v in vectors:
        for i, x in zip(v["indices"], v["values"], strict=True):
            indices.append(columns.setdefault(i, len(columns)))
            values.append(x)
        indptr.append(len(indices))
    return sp.csr_matrix((values, indices, indptr), shape=(len(indptr) - 1, 2**22))


def lexical_scores(data: Dataset, embedder: LexicalSparseEmbedder, namespace_idf: bool = False) -> np.ndarray:
    """Exact sparse scores; `namespace_idf`: queries weighted by the corpus's own document frequencies,
    as the embedded index does at query time with LIBRARIAN_SPARSE_IDF=namespace."""
    columns: dict[int, int] = {}
    d = sparse_matrix(embedder.embed_documents(data.docs), columns)
    if namespace_idf:
        df = np.bincount(d.indices, minlength=d.shape[1])

        def term_counts(ids: list[int]) -> tuple[int, dict[int, int]]:
            return d.shape[0], {i: int(df[columns[i]]) if i in columns else 0 for i in ids}

        queries = (embedder.embed_query_with_counts(t, term_counts) for t in data.queries)
    else:
        queries = (embedder.embed_query(t) for t in data.queries)
    q = sparse_matrix(queries, columns)
    return (q @ d.T).toarray()


def bm25_scores(data: Dataset) -> np.ndarray:
    """bm25s (Lucene BM25, k1=1.5, b=0.75): corpus IDF, English stop words, the same Snowball stemmer."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(data.docs, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    tokens = bm25s.tokenize(
        data.queries, stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
    )
    return np.stack([retriever.get_scores(t) for t in tokens])


def dense_embeddings(texts: list[str], embedder: Any, tag: str) -> np.ndarray:
    """Embeddings cached in /tmp by content hash, because the corpus takes minutes to encode."""
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    cache = Path(f"/tmp/librarian-bench-minilm-{tag}-{key}.npy")
    if cache.exists():
        return np.load(cache)
    start = time.perf_counter()
    vectors = embedder.embed_array(texts)
    seconds = time.perf_counter() - start
    print(f"dense {tag}: {len(texts)} texts, {seconds:.1f} s, {len(texts) / seconds:.1f} texts/s")
    np.save(cache, vectors)
    return vectors


def row(name: str, metrics: tuple[float, float], base: tuple[float, float]) -> str:
    (n, r), (bn, br) = metrics, base
    return f"{name:<28} {n:>8.4f} {n / bn:>6.3f} {r:>10.4f} {r / br:>6.3f}"


def grid(data: Dataset, base: tuple[float, float], dense: np.ndarray | None) -> None:
    """A small sweep around the default recipe, to justify its numbers (`scale` only matters in hybrids)."""
    sweeps: dict[str, Iterable[float]] = {
        "k1": (0.9, 1.2, 1.5, 2.0),
        "b": (0.5, 0.75, 0.9),
        "avglen": (60.0, 100.0, 150.0),
        "doc_terms": (100.0, 300.0, 1000.0),
        "unseen_freq": (1e-10, 1e-9, 1e-8),
    }
    for field, values in sweeps.items():
        for value in values:
            embedder = LexicalSparseEmbedder(replace(DEFAULT_RECIPE, **{field: value}))
            print(row(f"lexical {field}={value:g}", evaluate(lexical_scores(data, embedder), data), base))
    if dense is not None:
        lexical = lexical_scores(data, LexicalSparseEmbedder()) / DEFAULT_RECIPE.scale
        for scale in (0.1, 0.2, 0.3):
            print(
                row(
                    f"hybrid a=0.75 scale={scale:g}",
                    evaluate(0.75 * dense + 0.25 * scale * lexical, data),
                    base,
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--grid", action="store_true", help="also sweep the lexical recipe's parameters")
    parser.add_argument("--no-dense", action="store_true", help="skip dense and hybrid rows")
    parser.add_argument("--e5", action="store_true", help="also the bundled multilingual E5 (dense, hybrid)")
    parser.add_argument(
        "--claims", type=int, default=None, help="first N judged claims, their documents and N random others"
    )
    args = parser.parse_args()

    data = load_beir(args.data)
    if args.claims:
        data = sample(data, args.claims)
    print(f"{args.data.name}: {len(data.docs)} documents, {len(data.queries)} judged queries\n")
    timed: Callable[[str, Callable[[], np.ndarray]], np.ndarray] = _timed
    bm25 = timed("bm25s", lambda: bm25_scores(data))
    lexical = timed("lexical", lambda: lexical_scores(data, LexicalSparseEmbedder()))
    local_idf = timed("lexical ns idf", lambda: lexical_scores(data, LexicalSparseEmbedder(), True))
    base = evaluate(bm25, data)

    print(f"\n{'method':<28} {'nDCG@10':>8} {'ratio':>6} {'Recall@100':>10} {'ratio':>6}")
    print(row("bm25s (corpus idf)", base, base))
    print(row("lexical (fixed idf)", evaluate(lexical, data), base))
    print(row("lexical (namespace idf)", evaluate(local_idf, data), base))
    dense = None
    if not args.no_dense:
        embedder = MiniLMEmbedder(threads=2)
        docs = dense_embeddings(data.docs, embedder, "docs")
        queries = embedder.embed_array(data.queries)
        dense = queries @ docs.T
        print(row("minilm dense", evaluate(dense, data), base))
        for alpha in ALPHAS:
            for name, sparse in (("fixed", lexical), ("ns", local_idf)):
                print(
                    row(
                        f"hybrid a={alpha} dense+{name} idf",
                        evaluate(alpha * dense + (1 - alpha) * sparse, data),
                        base,
                    )
                )
        if args.e5:
            from librarian.embeddings.e5 import E5Embedder

            e5 = E5Embedder(threads=2)
            e5_dense = (
                np.asarray([e5.embed_query(q) for q in data.queries])
                @ dense_embeddings(data.docs, e5, "e5-docs").T
            )
            print(row("e5 dense", evaluate(e5_dense, data), base))
            for alpha in ALPHAS:
                print(
                    row(
                        f"hybrid a={alpha} e5+ns idf",
                        evaluate(alpha * e5_dense + (1 - alpha) * local_idf, data),
                        base,
                    )
                )
            sample_docs = data.docs[:24]
            seconds = {}
            for name, model in (("minilm", embedder), ("e5", e5), ("minilm", embedder), ("e5", e5)):
                started = time.perf_counter()
                model.embed_array(sample_docs)
                seconds[name] = min(seconds.get(name, float("inf")), time.perf_counter() - started)
            print(
                f"passages/s, same 24 abstracts, interleaved (best of 2): "
                f"minilm {24 / seconds['minilm']:.1f}, e5 {24 / seconds['e5']:.1f}; "
                f"e5 costs {seconds['e5'] / seconds['minilm']:.1f}x"
            )
    if args.grid:
        print()
        grid(data, base, dense)


def sample(data: Dataset, claims: int, seed: int = 0) -> Dataset:
    """The first `claims` judged claims, every document judged for them, and as many random others."""
    import random

    judged_queries = set(data.query_ids)
    keep_q = [q for q in data.qrels if q in judged_queries][:claims]  # qrels order
    judged = {d for q in keep_q for d in data.qrels[q]}
    others = [d for d in data.doc_ids if d not in judged]
    random.Random(seed).shuffle(others)
    keep = judged | set(others[:claims])
    rows = [(i, t) for i, t in zip(data.doc_ids, data.docs, strict=True) if i in keep]
    texts = dict(zip(data.query_ids, data.queries, strict=True))
    return Dataset([i for i, _ in rows], [t for _, t in rows], keep_q, [texts[q] for q in keep_q], data.qrels)


def _timed(name: str, fn: Callable[[], np.ndarray]) -> np.ndarray:
    start = time.perf_counter()
    out = fn()
    print(f"{name}: scored in {time.perf_counter() - start:.1f} s")
    return out


if __name__ == "__main__":
    main()
