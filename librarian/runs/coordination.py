"""Who may write a document path, and when a run is superseded: in this process, or across replicas.

The rules that keep a document's vectors equal to its stored file need a shared view when several
server processes (replicas behind a load balancer, or the CLI beside them) work on one store:

- **one writer per path**: a run holds the path's *run lock* from before it is created until it has
  ended, so runs of one path never overlap, whichever process runs them;
- **supersession**: every upload, delete and cancel of a path raises the path's *epoch*; a run carries
  the epoch it was started for and stops before its next vector write once a newer one exists (this
  is how a cancel or delete on one process reaches a run on another);
- **the fence**: a run's vector write and a delete's vector delete take turns, so the epoch check and
  the write it guards are one step;
- **the turn**: an upload (store the file, raise the epoch, start the run) or a delete is one step
  against every other write of the same path;
- **quotas**: at most N slots per organization (the ingest worker's share).

`InProcessCoordination` is the embedded default and keeps the single-process behaviour: asyncio and
thread locks, no epochs. `PostgresCoordination` (`librarian.runs.pg_coordination`), chosen when
`LIBRARIAN_POSTGRES_URL` is set, keeps all of it in PostgreSQL: session-level advisory locks (the
server frees them when the holder's connection dies, so a crashed replica leaves no lock behind, and
they never expire while it lives) and one small table of epochs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from typing import Protocol
from weakref import WeakValueDictionary

from librarian.settings import Settings


class RunLock(Protocol):
    """A held run lock; `release` frees it (idempotent)."""

    def release(self) -> None: ...


class Coordination(Protocol):
    """What document runs need to agree on; see the module docstring."""

    shared: bool  # True when the rules hold across processes (PostgreSQL)

    def turn(self, org: str, path: str) -> AbstractAsyncContextManagerLike: ...

    def fence(self, org: str, path: str) -> AbstractContextManager[object]: ...

    def bump(self, org: str, path: str) -> int | None:
        """Raise the path's epoch (supersede its runs); the new epoch, None when epochs are not kept."""
        ...

    def epoch(self, org: str, path: str) -> int | None: ...

    def superseded(self, org: str, path: str, epoch: int | None) -> bool:
        """Whether a run started for `epoch` has been superseded by a newer upload, delete or cancel."""
        ...

    def try_run_lock(self, org: str, path: str) -> RunLock | None:
        """Take the path's run lock if it is free (blocking I/O: call it in a thread)."""
        ...

    def run_lock(self, org: str, path: str) -> AbstractContextManager[object]:
        """Hold the path's run lock for a block, waiting for it (plain-Python runs)."""
        ...

    def run_lock_held(self, org: str, path: str) -> bool:
        """Whether any process holds the path's run lock (a run of it is live somewhere)."""
        ...

    def ingests_running(self, org: str) -> bool:
        """Whether any process runs one of the organization's documents (a graph build waits)."""
        ...

    def try_graph_lock(self, org: str) -> RunLock | None:
        """The organization's graph build lock if it is free (one build at a time)."""
        ...

    def org_slot(self, org: str, slots: int) -> AbstractAsyncContextManagerLike: ...

    def request_graph_build(self, org: str, job_id: str) -> tuple[int, str | None]:
        """(request number, None) to queue a build, or (0, id of the build already queued)."""
        ...

    def start_graph_build(self, org: str, request: int) -> bool:
        """Whether a build queued as `request` still has to run (no later start covered it)."""
        ...

    def cancel_graph_build(self, org: str) -> tuple[bool, str | None]:
        """(a build runs on another process and was asked to stop, the queued build it voided)."""
        ...

    def graph_cancel_requested(self, org: str) -> bool:
        """Whether an admin cancelled the organization's running build through any process."""
        ...


class AbstractAsyncContextManagerLike(Protocol):
    async def __aenter__(self) -> object: ...

    async def __aexit__(self, *exc: object) -> object: ...


class _NoLock:
    def release(self) -> None:
        return None


class _Lock:
    """A thread lock that can be weakly referenced, so locks of idle paths are freed."""

    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


class InProcessCoordination:
    """One process: the server's routes share an event loop, plain Python has its own file locks.

    Runs of one path are already serialized by the LangGraph server (one run per thread) or by
    `LocalRuns`' keyed locks, so the run lock here is free and nothing keeps epochs: a cancel marks
    the run itself (`librarian.runs.cancellation`).
    """

    shared = False

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._fences: WeakValueDictionary[tuple[str, str], _Lock] = WeakValueDictionary()
        self._turns: WeakValueDictionary[tuple[int, str, str], asyncio.Lock] = WeakValueDictionary()
        self._slots: dict[tuple[int, str], asyncio.Semaphore] = {}

    def turn(self, org: str, path: str) -> asyncio.Lock:
        """Per event loop: the server has one; each blocking `DocumentService` call runs its own."""
        key = (id(asyncio.get_running_loop()), org, path)
        with self._guard:
            lock = self._turns.get(key)
            if lock is None:
                lock = self._turns[key] = asyncio.Lock()
            return lock

    @contextmanager
    def fence(self, org: str, path: str) -> Iterator[object]:
        with self._guard:
            fence = self._fences.get((org, path))
            if fence is None:
                fence = self._fences[(org, path)] = _Lock()
        with fence.lock:
            yield fence

    def bump(self, org: str, path: str) -> int | None:
        return None

    def epoch(self, org: str, path: str) -> int | None:
        return None

    def superseded(self, org: str, path: str, epoch: int | None) -> bool:
        return False

    def try_run_lock(self, org: str, path: str) -> RunLock | None:
        return _NoLock()

    @contextmanager
    def run_lock(self, org: str, path: str) -> Iterator[object]:
        yield None

    def run_lock_held(self, org: str, path: str) -> bool:
        return False

    def ingests_running(self, org: str) -> bool:
        return False  # the server's own runs say it (`librarian.runs.ingest_idle`)

    def try_graph_lock(self, org: str) -> RunLock | None:
        return _NoLock()

    def request_graph_build(self, org: str, job_id: str) -> tuple[int, str | None]:
        return 0, None  # the server's build thread is the one queue: `schedule_build` looks there

    def start_graph_build(self, org: str, request: int) -> bool:
        return True

    def cancel_graph_build(self, org: str) -> tuple[bool, str | None]:
        return False, None  # the build's own run is flagged (`librarian.runs.cancellation`)

    def graph_cancel_requested(self, org: str) -> bool:
        return False

    @asynccontextmanager
    async def org_slot(self, org: str, slots: int) -> AsyncIterator[None]:
        key = (id(asyncio.get_running_loop()), org)
        with self._guard:
            slot = self._slots.get(key)
            if slot is None:
                slot = self._slots[key] = asyncio.Semaphore(slots)
        async with slot:
            yield


_local = InProcessCoordination()
_shared: dict[str, Coordination] = {}
_shared_guard = threading.Lock()


def coordination_for(settings: Settings) -> Coordination:
    """PostgreSQL coordination when `LIBRARIAN_POSTGRES_URL` is set, else this process's own.

    `LIBRARIAN_COORDINATION=local` keeps the in-process rules even with PostgreSQL (one process that
    uses PostgreSQL only as its checkpointer and graph store).
    """
    url = getattr(settings, "postgres_url", None)  # partial settings (stand-ins in tests) have none
    if not url or getattr(settings, "coordination", "postgres") == "local":
        return _local
    with _shared_guard:
        found = _shared.get(url)
        if found is None:
            from librarian.runs.pg_coordination import PostgresCoordination

            found = _shared[url] = PostgresCoordination(url)
        return found
