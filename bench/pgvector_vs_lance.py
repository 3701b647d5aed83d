"""pgvector against LanceDB in one process: query latency, ingest rate, and equal rankings on real data.

Why: `LIBRARIAN_VECTOR_INDEX=pgvector` promises LanceDB's results (exact scores, same ranking within
ties) for namespaces up to `EXACT_LIMIT` rows and Pinecone-like candidates above; this measures
what that costs against the embedded default, on the same data, in the same run, as ratios.

1. ingest: chunks/s through each adapter's `upsert`, in batches of 100 (the ingest graph's), into
   an empty index (pgvector maintains its HNSW, GIN and path indexes as it goes);
2. latency: query p50/p95 at each size, all chunks in one namespace and spread over 1,000
   namespaces, synthetic vectors (384-d unit dense, 60 Zipf-distributed 32-bit sparse terms per
   chunk, 12 per query, top 40, alpha 0.75). The big tables are bulk-loaded (COPY, then the HNSW
   index built once) because loading through `upsert` would take longer than this machine has;
   the ingest rate is measured separately in step 1. pgvector also reports its exact scan on the
   one-namespace layout (what `exact_limit` avoids) and the recall@40 of its candidate path
   against LanceDB's exact top 40;
3. quality: SciFact (train claims), a subset embedded with the project's real embedders (MiniLM,
   lexical sparse with per-namespace IDF), searched through `librarian.retrieval.search` on each
   index: nDCG@10 of both and the number of queries whose top 40 agree within ties.

    PYTHONPATH=. python bench/pgvector_vs_lance.py [--sizes 100000 1000000] [--queries 60]
        [--quality-docs 800] [--quality-queries 150] [--skip-quality]

PostgreSQL: `LIBRARIAN_BENCH_PGVECTOR_URL` (a database the bench may create tables in), else the
embedded server of `tests/pg_embedded.py` (`pip install -e '.[test]'`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pyarrow as pa
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from librarian.index.base import EmbeddingContract, QueryMatch
from librarian.index.lance import LanceVectorIndex
from librarian.index.lance_schema import records_to_table
from librarian.index.pgvector import PgVectorIndex, _rows

DIM = 384
TERMS_PER_DOC = 60
TERMS_PER_QUERY = 12
VOCABULARY = 30_000
TOP_K = 40
ALPHA = 0.75
SPREAD = 1_000
CONTRACT = EmbeddingContract(dense_model="synthetic", dimension=DIM, sparse_model="synthetic-sparse")
SHARED = Path(os.environ.get("LIBRARIAN_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))


# --------------------------------------------------------------------------------------------------
# synthetic data


@dataclass
class Corpus:
    """Synthetic chunks, generated in blocks so that a million never sit in memory as dicts."""

    rng: np.random.Generator
    vocab: np.ndarray
    weights: np.ndarray

    @classmethod
    def make(cls, seed: int = 0) -> Corpus:
        rng = np.random.default_rng(seed)
        ranks = np.arange(1, VOCABULARY + 1)
        weights = 1.0 / ranks
        return cls(rng, rng.choice(2**32 - 1, size=VOCABULARY, replace=False), weights / weights.sum())

    def records(self, start: int, n: int, namespaces: int) -> Iterator[tuple[str, dict[str, Any]]]:
        dense = self.rng.normal(size=(n, DIM)).astype(np.float32)
        dense /= np.linalg.norm(dense, axis=1, keepdims=True)
        for offset in range(n):
            i = start + offset
            terms = np.unique(self.rng.choice(VOCABULARY, size=TERMS_PER_DOC, p=self.weights))
            yield (
                f"org{i % namespaces}",
                {
                    "id": f"docs/f{i // 50}.pdf:{i % 50}",
                    "values": dense[offset].tolist(),
                    "sparse_values": {
                        "indices": self.vocab[terms].tolist(),
                        "values": self.rng.uniform(0.05, 3.0, size=len(terms)).astype(np.float32).tolist(),
                    },
                    "metadata": {
                        "path": f"docs/f{i // 50}.pdf",
                        "filename": f"f{i // 50}.pdf",
                        "chunkIndex": i % 50,
                        "page": i % 50 // 5 + 1,
                        "blockType": "Text",
                        "text": f"synthetic chunk {i} " * 30,
                    },
                },
            )

    def queries(self, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            q = self.rng.normal(size=DIM).astype(np.float32)
            terms = np.unique(self.rng.choice(VOCABULARY, size=TERMS_PER_QUERY, p=self.weights))
            out.append(
                {
                    "vector": (q / np.linalg.norm(q)).tolist(),
                    "sparse_vector": {
                        "indices": self.vocab[terms].tolist(),
                        "values": [1 / np.sqrt(len(terms))] * len(terms),
                    },
                }
            )
        return out


# --------------------------------------------------------------------------------------------------
# loading


def bulk_load_pg(url: str, table: str, corpus: Corpus, size: int, namespaces: int, hnsw: bool) -> float:
    """COPY the chunks in, then build the HNSW index once; returns seconds."""
    index = PgVectorIndex(url, CONTRACT, table=table)
    index.close()
    started = time.perf_counter()
    columns = sql.SQL("ns, id, dense, sp0, sp1, sp2, sp3, sp4, terms, weights, metadata")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(f"{table}_dense_hnsw")))
        for start in range(0, size, 10_000):
            block = list(corpus.records(start, min(10_000, size - start), namespaces))
            by_ns: dict[str, list[dict[str, Any]]] = {}
            for ns, record in block:
                by_ns.setdefault(ns, []).append(record)
            with conn.cursor().copy(
                sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(table), columns)
            ) as copy:
                for ns, records in by_ns.items():
                    for row in _rows(records, ns, DIM):
                        copy.write_row(row)
        if hnsw:
            conn.execute("SET maintenance_work_mem = '2GB'")
            conn.execute(
                sql.SQL("CREATE INDEX {} ON {} USING hnsw (dense vector_ip_ops)").format(
                    sql.Identifier(f"{table}_dense_hnsw"), sql.Identifier(table)
                )
            )
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
    return time.perf_counter() - started


def load_lance(path: Path, corpus: Corpus, size: int, namespaces: int) -> tuple[LanceVectorIndex, float]:
    """Append the chunks in blocks of 10,000 rows, all namespaces in one commit, then compact.

    The adapter's `upsert` commits once per namespace and call; a thousand namespaces per block
    would be a thousand commits, so the bulk load appends the same validated rows directly.
    """
    index = LanceVectorIndex(path, CONTRACT, compact_every=10**9)
    started = time.perf_counter()
    for start in range(0, size, 10_000):
        by_ns: dict[str, list[dict[str, Any]]] = {}
        for ns, record in corpus.records(start, min(10_000, size - start), namespaces):
            by_ns.setdefault(ns, []).append(record)
        tables = [records_to_table(records, ns, DIM) for ns, records in by_ns.items()]
        index._table.add(pa.concat_tables(tables))
    index.optimize()
    return index, time.perf_counter() - started


def ingest_rate(url: str, tmp: Path, chunks: int) -> dict[str, float]:
    """Chunks/s through `upsert` in batches of 100, into a fresh index of each kind."""
    corpus = Corpus.make(seed=7)
    records = [r for _, r in corpus.records(0, chunks, 1)]
    out = {}
    for name, index in (
        ("lancedb", LanceVectorIndex(tmp / "ingest-lance", CONTRACT)),
        ("pgvector", PgVectorIndex(url, CONTRACT, table="bench_ingest")),
    ):
        started = time.perf_counter()
        for i in range(0, chunks, 100):
            index.upsert(records[i : i + 100], namespace="org0")
        out[name] = chunks / (time.perf_counter() - started)
    return out


# --------------------------------------------------------------------------------------------------
# latency


def timed(run: Callable[[dict[str, Any], str], list[QueryMatch]], queries: list, namespaces: list[str]):
    """(p50 ms, p95 ms, results) over the queries, after one untimed pass (warm caches)."""
    for q, ns in zip(queries, namespaces, strict=True):
        run(q, ns)
    times, results = [], []
    for q, ns in zip(queries, namespaces, strict=True):
        started = time.perf_counter()
        results.append(run(q, ns))
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], results


def recall(found: list[list[QueryMatch]], exact: list[list[QueryMatch]]) -> float:
    hits = [
        len({m.id for m in f} & {m.id for m in e}) / max(1, len(e)) for f, e in zip(found, exact, strict=True)
    ]
    return float(np.mean(hits))


def latency(url: str, tmp: Path, size: int, layout: str, n_queries: int) -> dict[str, Any]:
    namespaces = 1 if layout == "one" else SPREAD
    table = f"bench_{layout}_{size}"
    corpus = Corpus.make(seed=size)
    pg_load = bulk_load_pg(url, table, corpus, size, namespaces, hnsw=layout == "one")
    corpus = Corpus.make(seed=size)  # the same chunks again for LanceDB
    lance, lance_load = load_lance(tmp / table, corpus, size, namespaces)
    queries = Corpus.make(seed=size + 1).queries(n_queries)
    rng = np.random.default_rng(3)
    targets = [f"org{rng.integers(namespaces)}" for _ in queries]
    pg = PgVectorIndex(url, CONTRACT, table=table)

    def query(index: Any) -> Callable[[dict[str, Any], str], list[QueryMatch]]:
        return lambda q, ns: index.query(namespace=ns, alpha=ALPHA, top_k=TOP_K, **q)

    l50, l95, exact = timed(query(lance), queries, targets)
    p50, p95, found = timed(query(pg), queries, targets)
    row: dict[str, Any] = {
        "size": size, "layout": layout, "lance_p50": l50, "lance_p95": l95, "pg_p50": p50, "pg_p95": p95,
        "recall": recall(found, exact), "pg_load_s": pg_load, "lance_load_s": lance_load,
    }  # fmt: skip
    if layout == "one":
        pg_exact = PgVectorIndex(url, CONTRACT, table=table, exact_limit=10**9)
        row["pg_exact_p50"], row["pg_exact_p95"], _ = timed(query(pg_exact), queries[:10], targets[:10])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
    return row


# --------------------------------------------------------------------------------------------------
# quality on SciFact with the real embedders


def quality(url: str, tmp: Path, docs: int, n_queries: int) -> dict[str, Any]:
    from librarian.evaluation.data import load_beir
    from librarian.evaluation.metrics import mean, ndcg_at
    from librarian.retrieval.search import SearchOptions, candidates_for
    from librarian.settings import load_settings
    from librarian.stack import Stack

    data = load_beir(SHARED / "data" / "scifact-dev", split="train", limit_queries=n_queries, limit_docs=docs)
    stack = Stack(load_settings(data_dir=tmp / "quality"))
    ids = list(data.corpus)
    texts = [data.corpus[i] for i in ids]
    started = time.perf_counter()
    dense = stack.dense.embed_documents(texts)
    sparse = stack.sparse.embed_documents(texts)
    embed_s = time.perf_counter() - started
    records = [
        {"id": i, "values": d, "sparse_values": s, "metadata": {"text": t, "path": f"docs/{i}.txt"}}
        for i, d, s, t in zip(ids, dense, sparse, texts, strict=True)
    ]
    indexes = {
        "lancedb": LanceVectorIndex(tmp / "quality-lance", stack.contract),
        "pgvector": PgVectorIndex(url, stack.contract, table="bench_scifact"),
        # the same table searched through candidates (as a namespace above `exact_limit` would be)
        "pgvector-candidates": PgVectorIndex(url, stack.contract, table="bench_scifact", exact_limit=0),
    }
    rankings: dict[str, dict[str, list[QueryMatch]]] = {}
    options = SearchOptions(candidates=TOP_K, alpha=ALPHA)
    for name, index in indexes.items():
        if name != "pgvector-candidates":  # that one reads the table the "pgvector" index wrote
            for i in range(0, len(records), 100):
                index.upsert(records[i : i + 100], namespace="scifact")
        view = Stack(stack.settings)
        view.__dict__.update(dense=stack.dense, sparse=stack.sparse, index=index)
        rankings[name] = {
            q: candidates_for(view, "scifact", text, options) for q, text in data.queries.items()
        }
    agree = {
        name: sum(same_within_ties(rankings["lancedb"][q], rankings[name][q]) for q in data.queries)
        for name in ("pgvector", "pgvector-candidates")
    }
    overlap = mean(
        len({m.id for m in rankings["lancedb"][q]} & {m.id for m in rankings["pgvector-candidates"][q]})
        / max(1, len(rankings["lancedb"][q]))
        for q in data.queries
    )
    ndcg = {
        name: mean(ndcg_at([m.id for m in ranked[q]], data.qrels[q]) for q in data.queries)
        for name, ranked in rankings.items()
    }
    return {
        "docs": len(ids), "queries": len(data.queries), "agree": agree, "ndcg": ndcg, "embed_s": embed_s,
        "candidate_recall": overlap,
    }  # fmt: skip


def same_within_ties(left: list[QueryMatch], right: list[QueryMatch], tol: float = 1e-5) -> bool:
    """Equal scores position by position, and equal ids wherever a score is not tied."""
    if len(left) != len(right):
        return False
    if any(abs(a.score - b.score) > tol for a, b in zip(left, right, strict=True)):
        return False
    cut = min((m.score for m in left), default=0.0) + tol
    scores = {m.id: m.score for m in right}
    return all(m.id in scores and abs(scores[m.id] - m.score) <= tol for m in left if m.score > cut)


# --------------------------------------------------------------------------------------------------


def database_url() -> str:
    url = os.environ.get("LIBRARIAN_BENCH_PGVECTOR_URL")
    if url:
        return url
    from tests.pg_embedded import get_server

    server = get_server()
    return server.url(server.create_database())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--ingest-chunks", type=int, default=5_000)
    parser.add_argument("--quality-docs", type=int, default=800)
    parser.add_argument("--quality-queries", type=int, default=150)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    url = database_url()
    with tempfile.TemporaryDirectory(prefix="pgvector-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.skip_latency:
            args.sizes, args.ingest_chunks = [], 0
        rates = ingest_rate(url, tmp, args.ingest_chunks) if args.ingest_chunks else {"lancedb": 1.0}
        if args.ingest_chunks:
            print(f"ingest ({args.ingest_chunks} chunks, batches of 100, into an empty index):")
            for name, rate in rates.items():
                print(f"  {name:9s} {rate:8.0f} chunks/s   ratio to lancedb {rate / rates['lancedb']:.2f}")
        if args.sizes:
            print("\nquery latency, top 40, alpha 0.75 (ms; ratio = pgvector / lancedb):")
        for size in args.sizes:
            for layout in ("one", "spread"):
                row = latency(url, tmp, size, layout, args.queries)
                where = "1 namespace" if layout == "one" else f"{SPREAD} namespaces"
                line = (
                    f"  {size:>9,} chunks in {where:15s} lancedb p50 {row['lance_p50']:7.1f} p95 "
                    f"{row['lance_p95']:7.1f} | pgvector p50 {row['pg_p50']:7.1f} p95 {row['pg_p95']:7.1f} "
                    f"| ratio p50 {row['pg_p50'] / row['lance_p50']:5.2f} | recall@40 {row['recall']:.3f}"
                )
                if "pg_exact_p50" in row:
                    line += f" | pgvector exact scan p50 {row['pg_exact_p50']:.0f}"
                print(
                    line + f" | load s: pg {row['pg_load_s']:.0f}, lance {row['lance_load_s']:.0f}",
                    flush=True,
                )
        if not args.skip_quality:
            q = quality(url, tmp, args.quality_docs, args.quality_queries)
            n = q["queries"]
            print(
                f"\nSciFact train, {q['docs']} abstracts, {n} claims, real embedders "
                f"(embedding took {q['embed_s']:.0f} s), search through librarian.retrieval.search:\n"
                f"  top 40 equal to lancedb's within ties: pgvector {q['agree']['pgvector']}/{n}, "
                f"pgvector through candidates only {q['agree']['pgvector-candidates']}/{n} "
                f"(recall@40 {q['candidate_recall']:.3f})\n"
                f"  nDCG@10: " + ", ".join(f"{k} {v:.4f}" for k, v in q["ndcg"].items())
            )


if __name__ == "__main__":
    main()
