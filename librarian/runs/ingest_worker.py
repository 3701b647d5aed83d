"""The server's ingest CPU, kept away from queries: a low-priority worker and a quota per organization.

On the LangGraph server, queries and ingest runs share one process and one GIL. Parsing (pdfplumber
is pure Python) and embedding are what an ingest spends its CPU on, and a 50 MiB upload made other
organizations' questions 15-35 times slower. So the served ingest and reindex graphs hand exactly
those two steps to `IngestOffload`:

- they run in one worker process started with `nice` (`LIBRARIAN_INGEST_WORKER_NICE`, default 10):
  when a query needs the CPU the kernel gives it the CPU, and the server's GIL stays free for queries;
- at most `LIBRARIAN_INGEST_CONCURRENCY_PER_ORG` of one organization's steps are submitted at once,
  on all replicas together when they share PostgreSQL (the others wait, awaiting rather than holding
  a thread), so one tenant's many uploads queue
  behind each other instead of in front of everyone else's. Beyond that share their runs do not
  even reach the server's queue (`services/run_admission.py`), so they do not wait here in the run
  slots other organizations' questions need.

The served graph build (`graph_index`) hands its CPU-bound stages to the same worker and the same
quota (`graph_stage`): extraction with the local (spaCy) extractor, merge, community detection,
local summaries and the summary embeddings. A stage is a module-level function of the graphs layer
passed by reference (pickled by name) and called with the worker's own `Stack`, built from the
server's settings and opened on the same stores; it writes what it built to the graph store and
returns a small summary, never the graph itself.

The nodes await these coroutines, so no server thread is blocked while the worker works, and a run
cancelled while it waits stops at once. Plain Python (CLI, notebooks) does not use this: its graphs
parse, embed and build inline, and the machine is the user's.

If the worker dies (killed, out of memory), the pool is rebuilt and the step fails as transient, so
the node's retry policy runs it again on a fresh worker.

The worker ends with the server. `langgraph dev` stops on SIGTERM (or Ctrl-C) by re-raising the
signal once its shutdown is done, so the process dies without running `atexit` hooks or shutting
executors down, and a spawned worker (some 400 MB with its models) would live on under init. So
the worker watches its parent (`exit_with_parent`) and exits within `PARENT_POLL_S` of it,
however the server ended (SIGTERM, SIGKILL, a crash); multiprocessing's resource tracker then sees
its last client gone and exits too. Other spawned pools of the server can use the same initializer.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from typing import Any

from librarian.errors import TransientProviderError
from librarian.runs.coordination import coordination_for
from librarian.runs.orphans import exit_with_parent
from librarian.settings import Settings

# --- the worker process side --------------------------------------------------------------------

_worker_stack: Any = None


def _init_worker(settings_values: dict[str, Any], nice: int, server_pid: int) -> None:
    global _worker_stack
    from librarian.stack import Stack

    exit_with_parent(server_pid)
    if nice:
        os.nice(nice)
    _worker_stack = Stack(Settings.model_construct(**settings_values))


def _parse(data: bytes, filename: str, media_type: str) -> Any:
    return _worker_stack.parser.parse(data, filename, media_type)


def _embed(texts: list[str]) -> tuple[list[list[float]], list[Any]]:
    return _worker_stack.dense.embed_documents(texts), _worker_stack.sparse.embed_documents(texts)


def _graph_stage(stage: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """One stage of a graph build, `stage(stack, *args)`, on the worker's stack (its own connections
    to the server's stores). `stage` arrives by reference, so this module imports nothing above it."""
    return stage(_worker_stack, *args)


def _ready() -> int:
    return os.getpid()


# --- the server side ------------------------------------------------------------------------------


class IngestOffload:
    """Parse, embed and graph build stages in the worker process, at most N steps per organization at
    once."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._pool_guard = threading.Lock()

    def _executor(self, settings: Settings) -> ProcessPoolExecutor:
        with self._pool_guard:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                    initargs=(settings.model_dump(), settings.ingest_worker_nice, os.getpid()),
                )
            return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        with self._pool_guard:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    @asynccontextmanager
    async def _slot(self, settings: Settings, org: str) -> AsyncIterator[None]:
        """One of the organization's `LIBRARIAN_INGEST_CONCURRENCY_PER_ORG` slots: in this process,
        or across every replica with PostgreSQL (`librarian.runs.coordination`)."""
        async with coordination_for(settings).org_slot(org, settings.ingest_concurrency_per_org):
            yield

    async def _call(self, settings: Settings, org: str, fn: Any, *args: Any) -> Any:
        async with self._slot(settings, org):
            # Starting the pool spawns a process, and submitting writes to its pipe: blocking calls,
            # so they run in a thread, never on the event loop.
            pool = await asyncio.to_thread(self._executor, settings)
            try:
                return await asyncio.wrap_future(await asyncio.to_thread(pool.submit, fn, *args))
            except BrokenProcessPool:
                self._discard(pool)
                raise TransientProviderError(
                    "the ingest worker process died; retrying on a new one"
                ) from None

    async def parse(self, settings: Settings, org: str, data: bytes, filename: str, media_type: str) -> Any:
        return await self._call(settings, org, _parse, data, filename, media_type)

    async def embed(
        self, settings: Settings, org: str, texts: list[str]
    ) -> tuple[list[list[float]], list[Any]]:
        return await self._call(settings, org, _embed, texts)

    async def graph_stage(self, settings: Settings, org: str, stage: Callable[..., Any], *args: Any) -> Any:
        """Run `stage(worker_stack, *args)` in the worker, within `org`'s share like parse and embed.

        `stage` must be a module-level function (it is pickled by name) whose arguments and result are
        small: it reads and writes the stores itself.
        """
        return await self._call(settings, org, _graph_stage, stage, args)

    def worker_pid(self, settings: Settings) -> int:
        """Start the worker if needed and return its pid (tests and benchmarks look at its priority)."""
        return self._executor(settings).submit(_ready).result()

    def shutdown(self) -> None:
        with self._pool_guard:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


_server_offload: IngestOffload | None = None
_server_guard = threading.Lock()


def server_offload() -> IngestOffload | None:
    """The one offload of this server process, shared by the served ingest, reindex and graph build graphs.

    None when `LIBRARIAN_INGEST_OFFLOAD=false` (the graphs then parse and embed inline, as before).
    """
    global _server_offload
    # Read from the environment here, not from `get_settings()`: this runs when the graphs module
    # is imported, and plain Python (which never offloads) must not need valid server settings.
    if os.environ.get("LIBRARIAN_INGEST_OFFLOAD", "true").strip().lower() in ("0", "false", "no", "off"):
        return None
    with _server_guard:
        if _server_offload is None:
            _server_offload = IngestOffload()
        return _server_offload
