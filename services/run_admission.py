"""Admission of background runs (ingest, reindex, graph build) to the LangGraph server's run slots.

The server executes at most `--n-jobs-per-worker` runs at once (its run slots) and starts queued runs
oldest first, whoever they belong to. An organization's upload burst used to go straight into that
queue: its ingest runs took every slot and then waited there for the organization's ingest quota
(`LIBRARIAN_INGEST_CONCURRENCY_PER_ORG`, `librarian/runs/ingest_worker.py`), and every other
organization's questions queued behind them (issue 24: 215 s for a 0.9 s question). So background
runs pass through admission before they reach the queue:

- one organization has at most `per_org` background runs pending or running on the server
  (`LIBRARIAN_RUN_SLOTS_PER_ORG`, default its ingest quota), and all organizations together at most
  `total` (`LIBRARIAN_BACKGROUND_RUN_SLOTS`, default the server's slots minus one), so a question
  always finds a free slot. A thread has at most one admitted run, so runs of one path still execute
  one at a time and in order;
- a job over those limits waits outside the queue, recorded on its own thread's metadata
  (`admission: waiting`, the job in `admission_job`), where the server keeps its threads, so a restart
  does not lose it; the document reads `queued`. A thread has at most one waiting job: a newer one
  replaces it (keeping its place in line), and `withdraw` removes it, which is what a re-upload, a
  delete and a cancel do first (`ServerRuns.cancel_active`), so a superseded, deleted or cancelled
  upload never runs;
- waiting jobs are admitted best first: follow-ups of deletes and cancels, then ingests and
  reindexes, then graph builds (an organization's build only once none of its documents wait); the
  organization holding the fewest slots first, then the oldest job. A follow-up may take one slot
  beyond its organization's share: it parses and embeds nothing (so it never waits in its slot for
  the ingest quota), takes a fraction of a second, and records what the user just asked for
  (`deleted`, `cancelled`), which should not wait behind the organization's other uploads;
- admission is decided again when a job arrives, when an admitted run ends (a watcher joins it), and
  every `LIBRARIAN_RUN_ADMISSION_SWEEP_S` seconds in the server's lifespan (`admission_lifespan`),
  which recovers what a restart or a lost watcher left waiting.

Which runs hold slots is read from the server at each decision (its busy document and graph threads),
never counted here, and the waiting jobs live on the server's threads; only the serialization of
decisions is this process's (`AdmissionLock`). `choose` is the whole policy, a pure function.

Replicas (`LIBRARIAN_POSTGRES_URL`, `librarian.runs.coordination`): each server process admits to its
own run slots, and a run also takes its path's (or its organization's graph build's) run lock before
it is created, holding it until its watcher sees the run end. A job whose lock another process holds
stays waiting (the sweep, every second then, tries again); a job superseded meanwhile (its epoch is
no longer the path's) is dropped, since a newer job of the path exists. So one path never has two
runs at once on any replicas, and they run in the order of their epochs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from librarian.runs.coordination import Coordination, RunLock, coordination_for
from librarian.runs.server_client import sdk_client, thread_runs
from librarian.settings import Settings, get_settings
from librarian.tracing import run_metadata
from services.run_backend import ACTIVE_RUN_STATES

logger = logging.getLogger(__name__)

KINDS = ("document", "graph")  # thread metadata `kind` of the threads background runs use
WAITING = "waiting"
NOT_WAITING = {"admission": None, "admission_job": None}  # thread metadata once the job is gone
RANK_FOLLOW_UP, RANK_DOCUMENT, RANK_GRAPH = 0, 1, 2
DEFAULT_SERVER_SLOTS = 10  # langgraph-api's N_JOBS_PER_WORKER when nothing sets it
PAGE = 100
POLL_S = 1.0  # a watcher's pause between status checks when joining its run failed
SHARED_SWEEP_S = 1.0  # with replicas, how soon a job waiting for another process's run lock retries


class LockTaken(Exception):
    """The job's run lock is held by another process's run: the job keeps waiting."""


@dataclass(frozen=True)
class Job:
    """A background run to admit: what `runs.create` needs, and its place in line."""

    org: str
    thread: str
    graph: str  # ingest | reindex | graph_index
    input: dict[str, Any]
    owner: str
    kind: str  # document | graph: the thread's metadata `kind`
    rank: int  # RANK_FOLLOW_UP, RANK_DOCUMENT or RANK_GRAPH
    stamp: dict[str, Any] = field(default_factory=dict)  # metadata the thread always carries
    job_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    since: float = field(default_factory=time.time)

    def record(self) -> dict[str, Any]:
        keys = ("graph", "input", "owner", "rank", "stamp", "job_id", "since")
        return {key: getattr(self, key) for key in keys}

    @classmethod
    def from_thread(cls, thread: Mapping[str, Any] | None) -> Job | None:
        """The job waiting on a thread (from `threads.get` or `threads.search`), if any."""
        metadata = (thread or {}).get("metadata") or {}
        record = metadata.get("admission_job")
        if metadata.get("admission") != WAITING or not isinstance(record, dict):
            return None
        try:
            return cls(
                org=str(metadata["organization_id"]),
                thread=str(thread["thread_id"]),  # type: ignore[index]
                kind=str(metadata["kind"]),
                **{key: record[key] for key in ("graph", "input", "owner", "rank", "stamp", "job_id")},
                since=float(record["since"]),
            )
        except (KeyError, TypeError, ValueError):
            logger.warning("ignoring a malformed waiting job on thread %s", (thread or {}).get("thread_id"))
            return None

    def as_run(self) -> dict[str, Any]:
        """How a status reader sees the waiting job: a queued run (`pending`) under the job's id."""
        created = datetime.fromtimestamp(self.since, UTC).isoformat()
        return {
            "run_id": self.job_id,
            "thread_id": self.thread,
            "status": "pending",
            "created_at": created,
            "metadata": {"organization_id": self.org, "admission": WAITING},
        }


@dataclass(frozen=True)
class Limits:
    per_org: int
    total: int


def server_run_slots() -> int:
    """The server's run slots: `--n-jobs-per-worker`, which `langgraph dev` passes as N_JOBS_PER_WORKER."""
    try:
        return max(1, int(os.environ.get("N_JOBS_PER_WORKER", DEFAULT_SERVER_SLOTS)))
    except ValueError:
        return DEFAULT_SERVER_SLOTS


def limits_of(settings: Settings) -> Limits:
    per_org = settings.run_slots_per_org or settings.ingest_concurrency_per_org
    total = settings.background_run_slots or max(1, server_run_slots() - 1)
    return Limits(per_org=per_org, total=total)


def choose(waiting: list[Job], held: Mapping[str, int], busy: set[str], limits: Limits) -> list[Job]:
    """The waiting jobs to admit now, in the order to admit them. The whole admission policy.

    `held`: background runs pending or running per organization; `busy`: threads with one of them
    (a thread's next run waits for its current one, so runs of one path keep their order).
    """
    held, busy, left, chosen = Counter(held), set(busy), list(waiting), []
    documents_waiting = Counter(job.org for job in waiting if job.kind == "document")
    while sum(held.values()) < limits.total:
        ready = [
            job
            for job in left
            if job.thread not in busy
            and held[job.org] < limits.per_org + (job.rank == RANK_FOLLOW_UP)
            and not (job.kind == "graph" and documents_waiting[job.org])
        ]
        if not ready:
            break
        job = min(ready, key=lambda j: (j.rank, held[j.org], j.since))
        chosen.append(job)
        left.remove(job)
        held[job.org] += 1
        busy.add(job.thread)
        if job.kind == "document":
            documents_waiting[job.org] -= 1
    return chosen


class AdmissionLock(Protocol):
    """Serializes admission decisions. One process: `LocalAdmissionLock`. Several replicas (issue 25):
    a PostgreSQL advisory lock; what a decision reads is on the server, which replicas share."""

    def hold(self) -> AbstractAsyncContextManager[Any]: ...


class LocalAdmissionLock:
    """One asyncio lock per event loop (the server has one loop; tests may run others)."""

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def hold(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock


_LOCK = LocalAdmissionLock()
_watchers: dict[str, asyncio.Task[None]] = {}  # run id -> the task waiting for that run's end


@dataclass
class Occupancy:
    """What holds slots now: background runs per organization, their threads, their run ids."""

    held: Counter[str] = field(default_factory=Counter)
    busy: set[str] = field(default_factory=set)
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # thread -> its active runs


class RunAdmission:
    """Admits background runs to the server (the in-process SDK client) within `Limits`."""

    def __init__(self, client: Any = None, settings: Settings | None = None, lock: AdmissionLock = _LOCK):
        self._client = client
        self._settings = settings
        self.lock = lock

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = sdk_client()
        return self._client

    @property
    def settings(self) -> Settings:
        return self._settings or get_settings()

    @property
    def coordination(self) -> Coordination:
        return coordination_for(self.settings)

    # --- the operations ----------------------------------------------------------------------------

    async def submit(self, job: Job) -> str:
        """Admit `job` now if the limits allow, else leave it waiting; the run's id, or the job's."""
        if not self.settings.run_admission and not self.coordination.shared:
            return await self._admit(job)
        async with self.lock.hold():
            waiting = await self._waiting()
            earlier = next((j for j in waiting if j.thread == job.thread), None)
            if earlier is not None:  # the newer job replaces it and keeps its place in line
                waiting.remove(earlier)
                job = replace(job, since=earlier.since)
            occupancy = await self._occupancy()
            chosen = choose([*waiting, job], occupancy.held, occupancy.busy, limits_of(self.settings))
            run_id = job.job_id
            if not any(admitted is job for admitted in chosen):
                await self._park(job)
            for admitted in chosen:
                if admitted is job:
                    try:
                        run_id = await self._admit(job)  # a failure is the caller's, as before
                    except LockTaken:
                        await self._park(job)
                else:
                    await self._admit_logged(admitted)
            return run_id

    async def withdraw(self, thread: str) -> Job | None:
        """Remove the job waiting on `thread` (it never started); the job, or None if none waited."""
        async with self.lock.hold():
            job = await self.waiting_on(thread)
            if job is not None:
                await self.client.threads.update(thread, metadata=NOT_WAITING)
            return job

    async def waiting_on(self, thread: str) -> Job | None:
        from langgraph_sdk.errors import NotFoundError

        try:
            return Job.from_thread(await self.client.threads.get(thread))
        except NotFoundError:
            return None

    async def pump(self, *, watch_all: bool = False) -> int:
        """Admit what the limits allow now; how many. `watch_all`: also watch runs no watcher waits on
        (after a restart)."""
        async with self.lock.hold():
            waiting = await self._waiting()
            if not waiting and not watch_all:
                return 0
            occupancy = await self._occupancy()
            if watch_all:
                for thread, runs in occupancy.runs.items():
                    for run in runs:
                        self._watch(thread, run["run_id"])
            waiting = await self._drop_admitted(waiting, occupancy)
            chosen = choose(waiting, occupancy.held, occupancy.busy, limits_of(self.settings))
            admitted = [run for run in [await self._admit_logged(job) for job in chosen] if run]
            return len(admitted)

    # --- reading the server --------------------------------------------------------------------------

    async def _search(self, **filters: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            page = await self.client.threads.search(
                limit=PAGE, offset=len(found), select=["thread_id", "metadata"], **filters
            )
            found.extend(page)
            if len(page) < PAGE:
                return found

    async def _waiting(self) -> list[Job]:
        threads = await self._search(metadata={"admission": WAITING})
        return [job for job in map(Job.from_thread, threads) if job is not None]

    async def _occupancy(self) -> Occupancy:
        """Busy document and graph threads that do have a run pending or running."""
        occupancy = Occupancy()
        for kind in KINDS:
            for thread in await self._search(metadata={"kind": kind}, status="busy"):
                thread_id = thread["thread_id"]
                runs = await thread_runs(self.client, thread_id)
                active = [run for run in runs if run["status"] in ACTIVE_RUN_STATES]
                if active:
                    occupancy.held[str((thread.get("metadata") or {}).get("organization_id"))] += 1
                    occupancy.busy.add(thread_id)
                    occupancy.runs[thread_id] = active
        return occupancy

    async def _drop_admitted(self, waiting: list[Job], occupancy: Occupancy) -> list[Job]:
        """A job whose run exists already (the process died between creating it and clearing the
        mark) is no longer waiting."""
        left = []
        for job in waiting:
            runs = occupancy.runs.get(job.thread, [])
            if any((run.get("metadata") or {}).get("job_id") == job.job_id for run in runs):
                await self.client.threads.update(job.thread, metadata=NOT_WAITING)
            else:
                left.append(job)
        return left

    # --- writing to the server ------------------------------------------------------------------------

    async def _park(self, job: Job) -> None:
        """Record the job as waiting on its thread (creating the thread on a first upload, with the
        `owner` a thread created by its first run would carry)."""
        created = {**job.stamp, "owner": job.owner}
        await self.client.threads.create(thread_id=job.thread, metadata=created, if_exists="do_nothing")
        metadata = {**job.stamp, "admission": WAITING, "admission_job": job.record()}
        await self.client.threads.update(job.thread, metadata=metadata)

    async def _take_lock(self, job: Job) -> RunLock | None:
        """The job's run lock when runs coordinate across processes (None when they do not);
        `LockTaken` if another process's run holds it."""
        coordination = self.coordination
        if not coordination.shared:
            return None
        if job.kind == "graph":
            held = await asyncio.to_thread(coordination.try_graph_lock, job.org)
        else:
            held = await asyncio.to_thread(coordination.try_run_lock, job.org, str(job.input.get("path", "")))
        if held is None:
            raise LockTaken(job.thread)
        return held

    async def _superseded(self, job: Job) -> bool:
        """A document job whose path has a newer epoch, or a graph job a started build covered."""
        coordination = self.coordination
        if job.kind == "graph" and job.input.get("request"):
            return not await asyncio.to_thread(coordination.start_graph_build, job.org, job.input["request"])
        epoch = job.input.get("epoch")
        if job.kind != "document" or epoch is None:
            return False
        return await asyncio.to_thread(coordination.superseded, job.org, str(job.input["path"]), epoch)

    async def _admit(self, job: Job) -> str:
        """Create the job's run (the server's queue takes it from here) and clear its waiting mark.

        With replicas, the run lock is taken first and handed to the run's watcher; a job superseded
        by a newer upload, delete or cancel on any process is dropped instead (its id is returned).
        """
        held = await self._take_lock(job)
        try:
            if await self._superseded(job):
                await self.client.threads.update(job.thread, metadata={**job.stamp, **NOT_WAITING})
                logger.info("dropped the superseded job %s of thread %s", job.job_id, job.thread)
                if held is not None:
                    await asyncio.to_thread(held.release)
                return job.job_id
            run_id = await self._create_run(job)
        except BaseException:
            if held is not None:
                await asyncio.to_thread(held.release)
            raise
        if self.settings.run_admission or held is not None:
            self._watch(job.thread, run_id, held)
        return run_id

    async def _create_run(self, job: Job) -> str:
        run = await self.client.runs.create(
            job.thread,
            job.graph,
            input=job.input,
            context={"organization_id": job.org},
            metadata={
                **run_metadata(job.org, job.owner or None),  # the trace's organization and user
                "owner": job.owner,
                "job_id": job.job_id,
                "kind": job.kind,
                **NOT_WAITING,  # run metadata inherits the thread's: not its waiting mark
                "admission": "admitted",
            },
            multitask_strategy="enqueue",
            if_not_exists="create",  # the thread id is derived, never listed by clients' choice
        )
        # Stamped on every start (idempotent): the auth filters show the thread to its organization.
        await self.client.threads.update(job.thread, metadata={**job.stamp, **NOT_WAITING})
        return str(run["run_id"])

    async def _admit_logged(self, job: Job) -> str | None:
        try:
            return await self._admit(job)
        except LockTaken:  # a run of the path is live on another process: the job waits its turn
            return None
        except Exception:  # it stays waiting: the next decision tries again
            logger.exception("could not admit the %s run of %s on thread %s", job.graph, job.org, job.thread)
            return None

    # --- noticing the end of admitted runs --------------------------------------------------------------

    def _watch(self, thread: str, run_id: str, held: RunLock | None = None) -> None:
        if run_id in _watchers:
            if held is not None:  # cannot happen for a new run; never keep a second lock
                held.release()
            return
        task = asyncio.get_running_loop().create_task(self._await_end(thread, run_id, held))
        _watchers[run_id] = task
        task.add_done_callback(lambda _: _watchers.pop(run_id, None))

    async def _await_end(self, thread: str, run_id: str, held: RunLock | None = None) -> None:
        """Wait until the run has ended, release its run lock, then decide admission again: its slot
        is free."""
        try:
            await self._join(thread, run_id)
        finally:
            if held is not None:
                await asyncio.to_thread(held.release)
        try:
            await self.pump()
        except Exception:  # the sweep tries again
            logger.exception("admission after the end of run %s failed", run_id)

    async def _join(self, thread: str, run_id: str) -> None:
        from langgraph_sdk.errors import NotFoundError

        while True:
            with suppress(Exception):
                await self.client.runs.join(thread, run_id)
            try:
                run = await self.client.runs.get(thread, run_id)
            except NotFoundError:
                break
            except Exception:
                run = {"status": "pending"}
            if run["status"] not in ACTIVE_RUN_STATES:
                break
            await asyncio.sleep(POLL_S)


async def sweep_forever(admission: RunAdmission | None = None) -> None:
    """Decide admission every `run_admission_sweep_s` from start-up on; the first sweep also watches
    the runs a previous server process admitted. With nothing waiting a sweep is one thread search."""
    admission = admission or RunAdmission()
    watch_all = True
    while True:
        try:
            await admission.pump(watch_all=watch_all)
            watch_all = False
        except Exception:
            logger.exception("run admission sweep failed; trying again")
        period = admission.settings.run_admission_sweep_s
        if admission.coordination.shared:  # jobs may wait for another process's run lock
            period = min(period, SHARED_SWEEP_S)
        await asyncio.sleep(period)


@asynccontextmanager
async def admission_lifespan(app: Any) -> AsyncIterator[None]:
    """The server app's lifespan: the admission sweep runs while the server does."""
    sweep = None
    settings = get_settings()
    if settings.run_admission or coordination_for(settings).shared:
        sweep = asyncio.get_running_loop().create_task(sweep_forever(), name="librarian-run-admission")
    try:
        yield
    finally:
        for task in [*([sweep] if sweep else []), *_watchers.values()]:
            task.cancel()
        for task in [*([sweep] if sweep else []), *list(_watchers.values())]:
            with suppress(asyncio.CancelledError, Exception):
                await task
