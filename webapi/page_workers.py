"""Page renders: a few renderer processes, shared fairly between organizations, stopped when abandoned.

Rendering runs in worker processes (pdfium is not thread-safe, and a hostile PDF can crash it; see
`webapi.page_render`). In front of them, `FairGate` admits at most one render per worker at once, and
at most `per_org` of one organization. Requests wait in arrival order, but one of an organization at
its limit is passed over, so another organization's request starts as soon as a worker is free,
never after a busy organization's queue.

A render whose request is cancelled (the client went away, or the request's deadline passed) is
stopped by killing its worker process: pdfium cannot be interrupted, and killing is what frees the
slot at once. Each worker is a one-process pool of its own, so killing one harms no other render,
and a new one is started in the background at once (a spawned process: about 0.1 s, up to a second
under `langgraph dev`, whose command module the child imports again); a render that finds no idle
worker starts one itself.

The gate and the workers are thread-safe and not tied to one event loop: a waiter is woken on its
own loop, so the one process-wide pool serves every loop (the server has one; test clients make many).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, TypeVar

from librarian.runs.orphans import exit_with_parent

T = TypeVar("T")

#: How long a new worker process may take to answer its first call.
START_TIMEOUT_S = 60.0


class WorkerCrashed(Exception):
    """The worker process died during the render (pdfium crashed on the file)."""


@dataclass(eq=False)
class _Waiter:
    key: str
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    granted: bool = field(default=False)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class FairGate:
    """At most `total` holders at once, at most `per_key` with the same key; first come, first served
    among the keys under their limit."""

    def __init__(self, total: int, per_key: int) -> None:
        self.total, self.per_key = total, per_key
        self._lock = threading.Lock()
        self._running = 0
        self._held: dict[str, int] = {}
        self._waiting: list[_Waiter] = []

    @contextlib.asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        await self.acquire(key)
        try:
            yield
        finally:
            self.release(key)

    async def acquire(self, key: str) -> None:
        loop = asyncio.get_running_loop()
        waiter = _Waiter(key, loop, loop.create_future())
        with self._lock:
            self._waiting.append(waiter)
            self._grant()
        try:
            await waiter.future
        except BaseException:  # cancelled: leave the queue, or give back a slot granted meanwhile
            with self._lock:
                if waiter.granted:
                    self._release(key)
                else:
                    self._waiting.remove(waiter)
            raise

    def release(self, key: str) -> None:
        with self._lock:
            self._release(key)

    def state(self) -> tuple[int, dict[str, int], dict[str, int]]:
        """Running renders, and per key the slots held and the requests waiting."""
        with self._lock:
            waiting: dict[str, int] = {}
            for waiter in self._waiting:
                waiting[waiter.key] = waiting.get(waiter.key, 0) + 1
            return self._running, dict(self._held), waiting

    def _release(self, key: str) -> None:
        self._running -= 1
        self._held[key] -= 1
        if not self._held[key]:
            del self._held[key]
        self._grant()

    def _grant(self) -> None:
        for waiter in list(self._waiting):
            if self._running >= self.total:
                return
            if self._held.get(waiter.key, 0) >= self.per_key:
                continue
            self._waiting.remove(waiter)
            try:
                waiter.loop.call_soon_threadsafe(_wake, waiter.future)
            except RuntimeError:  # its event loop is closed: nobody is waiting any more
                continue
            waiter.granted = True
            self._running += 1
            self._held[waiter.key] = self._held.get(waiter.key, 0) + 1


class _Worker:
    """One renderer process. Started in a thread (spawning blocks); `run` from the event loop."""

    def __init__(self) -> None:
        self.executor = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),  # forking a threaded server is unsafe
            initializer=exit_with_parent,  # never outlives the server (SIGTERM skips shutdown)
            initargs=(os.getpid(),),
        )
        self.pid: int = self.executor.submit(os.getpid).result(timeout=START_TIMEOUT_S)
        self.alive = True

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in the process; if the caller is cancelled mid-render, the process is killed."""
        future: Future[T] = self.executor.submit(fn, *args)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if not future.done():
                self.kill()
            raise
        except BrokenProcessPool:
            self.alive = False
            raise

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)  # alive until the pool notices, so never a reused pid
        self.executor.shutdown(wait=False, cancel_futures=True)


class RenderPool:
    """`workers` renderer processes behind a `FairGate` keyed by organization."""

    def __init__(self, workers: int, per_org: int) -> None:
        self.workers = workers
        self.gate = FairGate(workers, per_org)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._pids: set[int] = set()  # every live worker's, idle or busy
        self._closed = False

    def admit(self, org: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Wait for a render slot of `org` (call `run` inside it)."""
        return self.gate.slot(org)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in an idle worker (one is started if none is idle). Call it inside `admit`."""
        worker = self._take() or await self._start()
        keep = False
        try:
            result = await worker.run(fn, *args)
            keep = True
            return result
        except BrokenProcessPool:
            raise WorkerCrashed("the renderer process stopped on this file") from None
        except asyncio.CancelledError:
            keep = worker.alive  # a render that had finished leaves a healthy worker
            raise
        except Exception:
            keep = True  # `fn` raised in the worker (a bad page, an unreadable file): it is fine
            raise
        finally:
            if keep and worker.alive:
                self._give_back(worker)
            else:
                self._replace(worker)

    def pids(self) -> set[int]:
        with self._lock:
            return set(self._pids)

    def warm(self) -> None:
        """Start idle workers up to the pool's size (blocking: call it in a thread)."""
        while True:
            with self._lock:
                if self._closed or len(self._pids) >= self.workers:
                    return
            self._give_back(self._new_worker())

    def close(self) -> None:
        """Stop the idle workers; busy ones stop after their render."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            self._discard(worker)

    def _take(self) -> _Worker | None:
        with self._lock:
            return self._idle.pop() if self._idle else None

    async def _start(self) -> _Worker:
        starting = asyncio.get_running_loop().run_in_executor(None, self._new_worker)
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:  # the process still comes up: keep it for the next render
            starting.add_done_callback(self._keep_started)
            raise

    def _keep_started(self, starting: asyncio.Future[_Worker]) -> None:
        if not starting.cancelled() and starting.exception() is None:
            self._give_back(starting.result())

    def _new_worker(self) -> _Worker:
        worker = _Worker()
        with self._lock:
            self._pids.add(worker.pid)
        return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.workers:
                self._idle.append(worker)
                return
        self._discard(worker)

    def _replace(self, worker: _Worker) -> None:
        """Kill a worker (abandoned or crashed) and start another in the background, so the next
        render does not wait for a process to start."""
        self._discard(worker)
        threading.Thread(target=self.warm, name="page-renderer-start", daemon=True).start()

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._pids.discard(worker.pid)
