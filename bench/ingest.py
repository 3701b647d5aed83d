"""Ingest throughput and memory: the whole graph against the raw embedders on the same chunks.

    python bench/ingest.py [FOLDER] [--scifact DIR] [--limit N] [--repeat R] [--big-pdf PAGES]

Prints chunks/s of the whole ingest graph (upload, parse, map, delete, embed, upsert, checkpoints)
next to chunks/s of just embedding the same chunks (dense + sparse) in the same process, their
ratio (goal ≥ 0.85: the graph adds little around the embedder), and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


from librarian.checkpoint import sync_checkpointer  # noqa: E402
from librarian.parsing.cache import ParseCache  # noqa: E402
from librarian.settings import load_settings  # noqa: E402
from librarian.stack import Stack  # noqa: E402
from services.documents import DocumentService, DocumentStatus  # noqa: E402

ORG = "bench"


def peak_rss_mib() -> float:
    """This process's own high-water mark. Not `ru_maxrss`: Linux carries that across fork and exec,
    so a child started by a large parent reported the parent's peak as its own."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scifact_files(folder: Path, limit: int) -> list[tuple[str, bytes]]:
    files = []
    with open(folder / "corpus.jsonl") as corpus:
        for line in corpus:
            doc = json.loads(line)
            files.append((f"scifact-{doc['_id']}.txt", f"{doc.get('title', '')}\n\n{doc['text']}".encode()))
            if len(files) >= limit:
                break
    return files


def folder_files(folder: Path) -> list[tuple[str, bytes]]:
    return [
        (p.name, p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix != ".txt" and p.name != "README.md"
    ]


def ingest_all(
    service: DocumentService, files: list[tuple[str, bytes]], workers: int
) -> list[DocumentStatus]:
    """Upload and ingest every file, `workers` documents at a time, as the CLI does."""
    paths = [service.upload(ORG, name, data) for name, data in files]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda path: service.ingest(ORG, path), paths))


@dataclass
class GraphPass:
    seconds: float
    cpu: float
    statuses: list[DocumentStatus]
    texts: list[str]  # the chunk texts the graph embedded, for the embedder-only pass


def graph_pass(stack: Stack, files: list[tuple[str, bytes]], workers: int) -> GraphPass:
    """One ingest of every file into the stack's (empty) data directory: no parse cache, no vectors."""
    # Model loads are not throughput: both embedders, the parser (importing markitdown, magika and
    # pdfplumber costs 1.5 s of CPU) and the index are ready before the clock.
    stack.dense.embed_documents(["warm up"])
    stack.sparse.embed_documents(["warm up"])
    _ = stack.parser
    _ = stack.index  # opened (and created) before the clock
    started, cpu_started = time.perf_counter(), time.process_time()
    with sync_checkpointer(stack.settings) as saver:  # the checkpointer the CLI uses
        statuses = ingest_all(DocumentService(stack, saver), files, workers)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    cache = ParseCache(stack.files)
    texts: list[str] = []
    for status in statuses:
        if status.status == "indexed":
            result = cache.get(ORG, status.path, status.contentHash, status.parser)
            texts.extend(text for c in result["chunks"] if (text := c.get("embed") or c["content"]).strip())
    return GraphPass(seconds, cpu, statuses, texts)


def embedder_pass(stack: Stack, texts: list[str]) -> tuple[float, float]:
    """The same chunks embedded directly (dense + sparse) in the graph's batch size: (seconds, CPU)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    batch = stack.settings.upsert_batch_size
    for i in range(0, len(texts), batch):
        stack.dense.embed_documents(texts[i : i + batch])
        stack.sparse.embed_documents(texts[i : i + batch])
    return time.perf_counter() - started, time.process_time() - cpu_started


def run(label: str, files: list[tuple[str, bytes]], workers: int) -> None:
    """A graph pass then an embedder pass on the same chunks, in this process; prints the ratio
    (`rounds` reads it back from a child process's output)."""
    with tempfile.TemporaryDirectory() as tmp:
        stack = Stack(load_settings(data_dir=Path(tmp), ingest_concurrency=workers))
        graph = graph_pass(stack, files, workers)
        graph_peak = peak_rss_mib()  # before the embedder-only pass, which this figure must not include
        embed_seconds, embed_cpu = embedder_pass(stack, graph.texts)
    chunks = sum(s.chunkCount for s in graph.statuses)
    graph_rate, embed_rate = chunks / graph.seconds, len(graph.texts) / embed_seconds
    counts = {s: sum(1 for x in graph.statuses if x.status == s) for s in {x.status for x in graph.statuses}}
    print(f"{label}: {len(files)} files {counts}, {chunks} chunks")
    print(f"  graph    {graph_rate:8.1f} chunks/s ({graph.seconds:.1f}s, CPU {graph.cpu:.1f}s, all)")
    print(f"  embedder {embed_rate:8.1f} chunks/s ({embed_seconds:.1f}s, CPU {embed_cpu:.1f}s, embed)")
    print(
        f"  ratio graph/embedder = {graph_rate / embed_rate:.2f}"
        f"   peak RSS after the graph run {graph_peak:.0f} MiB (after both {peak_rss_mib():.0f} MiB)",
        flush=True,
    )


def rounds(corpus: str, args: argparse.Namespace) -> None:
    """`args.repeat` runs of one corpus, each in a fresh process, and their median ratio.

    These shared machines drift: the same embedder pass took 40 to 48 s of CPU in consecutive runs
    here, so one run's ratio moves by ±0.05 or more. Fresh processes, not rounds in one: three
    SciFact rounds in one process took 73, 79 and 81 s of graph CPU, and RSS grew by 100-270 MiB a
    round even with each stack dropped and garbage collected: not what a user's ingest sees.
    """
    command = [sys.executable, __file__, args.folder, "--scifact", args.scifact, "--limit", str(args.limit)]
    command += ["--workers", str(args.workers), "--only-corpus", corpus]
    ratios = []
    for _ in range(args.repeat):
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        print(out, end="", flush=True)
        ratios.append(float(re.search(r"ratio graph/embedder = ([0-9.]+)", out).group(1)))
    listed = ", ".join(f"{r:.2f}" for r in ratios)
    print(f"  median ratio of {len(ratios)} fresh processes: {statistics.median(ratios):.2f} ({listed})")


def build_big_pdf(source: Path, pages: int, dest: Path) -> None:
    """A `pages`-page PDF made by repeating a real one (same layout, headers and tables)."""
    import pypdfium2 as pdfium

    src = pdfium.PdfDocument(str(source))
    out = pdfium.PdfDocument.new()
    while len(out) < pages:
        take = min(len(src), pages - len(out))
        out.import_pages(src, pages=list(range(take)), index=len(out))
    out.save(str(dest))


def big_pdf_rss(pages: int, source: Path) -> None:
    """Ingest one big PDF in a fresh process, so its peak RSS is the PDF's alone."""
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / f"big-{pages}.pdf"
        build_big_pdf(source, pages, pdf)
        subprocess.run([sys.executable, __file__, "--only-file", str(pdf)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(REPO.parent / "shared" / "data" / "docs"))
    parser.add_argument("--scifact", default=str(REPO.parent / "shared" / "data" / "scifact-dev"))
    parser.add_argument("--limit", type=int, default=1000, help="SciFact abstracts to ingest")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per corpus, each in a fresh process; prints the median ratio",
    )
    parser.add_argument("--only-corpus", choices=("folder", "scifact"), help=argparse.SUPPRESS)
    parser.add_argument("--big-pdf", type=int, default=0, help="also ingest an N-page PDF in a fresh process")
    parser.add_argument("--only-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only_file:
        file = Path(args.only_file)
        run(f"single file {file.name}", [(file.name, file.read_bytes())], 1)
        return
    corpora = ["folder"] + (["scifact"] if args.limit and Path(args.scifact).is_dir() else [])
    for corpus in corpora if args.only_corpus is None else [args.only_corpus]:
        if args.repeat > 1 and args.only_corpus is None:
            rounds(corpus, args)
        elif corpus == "folder":
            run(f"folder {args.folder}", folder_files(Path(args.folder)), args.workers)
        else:
            files = scifact_files(Path(args.scifact), args.limit)
            run(f"scifact ({args.limit} abstracts, one file each)", files, args.workers)
    if args.big_pdf and args.only_corpus is None:
        big_pdf_rss(args.big_pdf, Path(args.folder) / "pdf" / "fhs-3.0.pdf")


if __name__ == "__main__":
    main()
