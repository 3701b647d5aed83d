"""A BEIR corpus ingested into a fresh organization through the product, optionally kept for reuse.

Every corpus document becomes one small text file, uploaded and ingested by `DocumentService` (the
real parse, chunk, embed and upsert), so the figures are those of what users run. Ingesting is the
slow part of an evaluation, so a corpus can be kept under the temp dir, keyed by everything that
shapes its index: a changed model or chunk size then ingests afresh instead of reusing stale vectors.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from librarian.evaluation.data import Beir, filename_for
from librarian.settings import Settings
from librarian.stack import Stack

ORG = "eval"
Progress = Callable[[str], None]


def index_key(data: Beir, settings: Settings) -> str:
    """Corpus + everything that shapes the index (parser output version, chunking, models)."""
    h = hashlib.sha256()
    for doc_id, text in data.corpus.items():
        h.update(doc_id.encode() + b"\0" + text.encode() + b"\0")
    stack = Stack(settings)
    shaping = (settings.chunk_size, stack.parser.cache_key, stack.contract.describe())
    h.update(repr(shaping).encode())
    return h.hexdigest()[:16]


def ingest(data: Beir, stack: Stack, progress: Progress = print) -> int:
    """Upload and ingest every document through DocumentService; returns the chunk count."""
    import sqlite3
    from concurrent.futures import ThreadPoolExecutor

    from langgraph.checkpoint.sqlite import SqliteSaver

    from services.documents import DocumentService

    data_dir = stack.settings.data_dir
    saver = SqliteSaver(sqlite3.connect(data_dir / "eval-checkpoints.sqlite", check_same_thread=False))
    service = DocumentService(stack, saver)
    started = time.perf_counter()
    paths = [service.upload(ORG, filename_for(i), text.encode()) for i, text in data.corpus.items()]
    with ThreadPoolExecutor(max_workers=stack.settings.ingest_concurrency) as pool:
        statuses = list(pool.map(lambda p: service.ingest(ORG, p), paths))
    bad = [s for s in statuses if s.status != "indexed"]
    if bad:
        progress(f"{len(bad)} documents not indexed, e.g. {bad[0].path}: {bad[0].status} {bad[0].reason}")
    chunks = sum(s.chunkCount or 0 for s in statuses)
    seconds = time.perf_counter() - started
    progress(
        f"ingested {len(paths)} documents as {chunks} chunks in {seconds:.0f} s ({chunks / seconds:.1f}/s)"
    )
    return chunks


@contextmanager
def ingested(
    data: Beir, settings: Settings, *, reuse: bool = False, progress: Progress = print
) -> Iterator[Stack]:
    """A stack over a data directory holding the corpus in organization `eval`.

    Fresh in a temporary directory, or with `reuse` kept under the temp dir keyed by `index_key`.
    """
    if not reuse:
        with tempfile.TemporaryDirectory(prefix="librarian-eval-") as tmp:
            stack = Stack(settings.model_copy(update={"data_dir": Path(tmp)}))
            ingest(data, stack, progress)
            yield stack
        return
    cache = Path(tempfile.gettempdir()) / f"librarian-eval-index-{index_key(data, settings)}"
    stack = Stack(settings.model_copy(update={"data_dir": cache}))
    if (cache / "complete").exists():
        progress(f"reusing the ingested index at {cache}")
    else:
        shutil.rmtree(cache, ignore_errors=True)  # an interrupted earlier ingest
        cache.mkdir(parents=True)
        ingest(data, stack, progress)
        (cache / "complete").touch()
    yield stack
