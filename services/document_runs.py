"""Where document runs execute: in this process (`LocalRuns`) or on the LangGraph server (`ServerRuns`).

Both keep the same promises to `DocumentOps`: runs of one path execute one at a time and in order
(a follow-up run starts only after a cancelled run has ended), cancelling marks the run in
`librarian.runs.cancellation` before stopping it (so a node still in flight writes no vectors), and `state`
returns the thread's latest snapshot with its runs, newest first.

On the server, a run is admitted to the server's run slots within the organization's share
(`services.run_admission`); until then it waits on its thread, and `state` lists it as a queued run.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import SimpleNamespace
from typing import Any

from graphs.ingest import build_ingest_graph
from graphs.reindex import build_reindex_graph
from librarian.errors import ConfigError, ContractMismatchError, TenantError
from librarian.locks import KeyedLocks
from librarian.runs import cancellation
from librarian.runs.coordination import coordination_for
from librarian.runs.server_client import sdk_client, thread_runs
from librarian.runs.threads import server_thread_id, thread_id
from librarian.stack import Stack
from librarian.tracing import install_metadata_guard, traced_config
from services.run_admission import RANK_DOCUMENT, RANK_FOLLOW_UP, Job, RunAdmission
from services.run_backend import ACTIVE_RUN_STATES, RunRef

logger = logging.getLogger(__name__)

Observer = Callable[[str, dict[str, Any]], None]
_observer: ContextVar[Observer | None] = ContextVar("librarian_ingest_observer", default=None)


HISTORY_LIMIT = 500  # checkpoints looked back for a run of the current epoch (a run writes ~10)


def _of_epoch(history: Any, epoch: int) -> Any:
    """The newest snapshot of `history` (newest first) whose run was started for `epoch`."""
    for count, snapshot in enumerate(history):
        if count >= HISTORY_LIMIT:
            return None
        if _of_run(snapshot, epoch):
            return snapshot
    return None


def _of_run(snapshot: Any, epoch: int) -> bool:
    """Written by a run of `epoch`. An `input` checkpoint holds the values from before its run's
    input: a superseded run's one carries the newer epoch of the state it started from."""
    source = (getattr(snapshot, "metadata", None) or {}).get("source")
    return source != "input" and (snapshot.values or {}).get("epoch") == epoch


class LocalRuns:
    """Runs the graphs directly on a sync checkpointer, in a worker thread per call.

    Serialization per path is `KeyedLocks`: a thread lock plus a file lock (other processes on the
    same data directory), and with PostgreSQL the path's run lock, shared with the servers' runs.
    Cancel sets the run's flag; the run stops before its next vector write.
    """

    def __init__(self, stack: Stack, checkpointer: Any) -> None:
        self.stack = stack
        self.ingest_graph = build_ingest_graph(lambda: stack, checkpointer)
        self.reindex_graph = build_reindex_graph(lambda: stack, checkpointer)
        self._locks = KeyedLocks(stack.settings.data_dir / "locks")
        self._guard = threading.Lock()  # guards `_active`
        self._active: dict[str, set[str]] = {}  # thread key -> run ids started or waiting

    def thread_of(self, org: str, path: str) -> str:
        return thread_id(org, path)

    @contextmanager
    def observing(self, on_update: Observer | None) -> Iterator[None]:
        """Stream node updates of runs started in this context to `on_update` (CLI progress)."""
        token = _observer.set(on_update)
        try:
            yield
        finally:
            _observer.reset(token)

    async def start(
        self,
        org: str,
        path: str,
        run_input: dict[str, Any],
        *,
        graph: str = "ingest",
        owner: str | None = None,
    ) -> RunRef:
        compiled = self.reindex_graph if graph == "reindex" else self.ingest_graph
        run_id = str(uuid.uuid4())
        key = thread_id(org, path)
        with self._guard:
            self._active.setdefault(key, set()).add(run_id)
        on_update = _observer.get()
        try:
            await asyncio.to_thread(self._run, compiled, run_input, org, path, run_id, on_update, owner)
        finally:
            with self._guard:
                self._active.get(key, set()).discard(run_id)
                if not self._active.get(key):
                    self._active.pop(key, None)
            cancellation.forget_run(run_id)
        return RunRef(thread_id=key, run_id=run_id)

    def resume(self, org: str, path: str) -> None:
        config = {"configurable": {"thread_id": thread_id(org, path)}}
        coordination = coordination_for(self.stack.settings)
        with self._locks.hold(thread_id(org, path)), coordination.run_lock(org, path):
            if self.ingest_graph.get_state(config).next:
                self._stream(self.ingest_graph, None, org, path, str(uuid.uuid4()), None)

    def _run(
        self, graph: Any, run_input: Any, org: str, path: str, run_id: str, on_update: Any, owner: str | None
    ) -> None:
        coordination = coordination_for(self.stack.settings)
        with self._locks.hold(thread_id(org, path)), coordination.run_lock(org, path):
            if cancellation.is_cancelled(run_id):
                return  # cancelled while it waited for the path: it never started
            if coordination.superseded(org, path, run_input.get("epoch")):
                return  # a newer upload, delete or cancel came while it waited: its run is next
            self._stream(graph, run_input, org, path, run_id, on_update, owner)

    def _stream(
        self,
        graph: Any,
        run_input: Any,
        org: str,
        path: str,
        run_id: str,
        on_update: Any,
        owner: str | None = None,
    ) -> None:
        install_metadata_guard()  # traces (if on) carry identifiers only in their metadata
        config = {"run_id": uuid.UUID(run_id), "configurable": {"thread_id": thread_id(org, path)}}
        config = traced_config(config, org, owner)  # whose run it is, for the trace
        try:
            for update in graph.stream(
                run_input, config, context={"organization_id": org}, stream_mode="updates"
            ):
                if on_update:
                    for node, value in update.items():
                        on_update(node, value if isinstance(value, dict) else {})
        except (ConfigError, ContractMismatchError, TenantError):
            raise  # the caller's setup is wrong: no status could describe that
        except cancellation.IngestCancelledError:
            logger.info("ingest of %s in %s was cancelled", path, org)
        except Exception as exc:  # the failure is in the checkpoint; `status` reports it
            logger.warning("ingest of %s in %s failed: %s", path, org, exc)

    async def cancel_active(self, org: str, path: str) -> int:
        with self._guard:
            active = list(self._active.get(thread_id(org, path), ()))
        for run_id in active:
            cancellation.cancel_run(run_id)
        return len(active)

    async def state_of_epoch(self, org: str, path: str, epoch: int) -> Any:
        config = {"configurable": {"thread_id": thread_id(org, path)}}
        return await asyncio.to_thread(_of_epoch, self.ingest_graph.get_state_history(config), epoch)

    async def state(self, org: str, path: str) -> tuple[Any, list[dict[str, Any]]]:
        config = {"configurable": {"thread_id": thread_id(org, path)}}
        snapshot = await asyncio.to_thread(self.ingest_graph.get_state, config)
        with self._guard:
            running = bool(self._active.get(thread_id(org, path)))
        return snapshot, ([{"status": "running"}] if running else [])


class ServerRuns:
    """Runs on the LangGraph server through its in-process SDK client.

    That client skips the auth handlers, so the organization (already checked by the route) is
    passed as trusted run context and stamped into the thread's and run's metadata. Runs are
    admitted to the server's run slots by `RunAdmission`: one waiting for its turn has no run yet,
    and its `RunRef.run_id` is the waiting job's id (the run's metadata `job_id` once admitted).
    """

    def __init__(self, client: Any = None, admission: RunAdmission | None = None) -> None:
        self._client = client
        self._admission = admission

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = sdk_client()
        return self._client

    @property
    def admission(self) -> RunAdmission:
        if self._admission is None:
            self._admission = RunAdmission(self.client)
        return self._admission

    def thread_of(self, org: str, path: str) -> str:
        return server_thread_id(org, path)

    async def start(
        self,
        org: str,
        path: str,
        run_input: dict[str, Any],
        *,
        graph: str = "ingest",
        owner: str | None = None,
    ) -> RunRef:
        thread = server_thread_id(org, path)
        job = Job(
            org=org,
            thread=thread,
            graph=graph,
            input=run_input,
            owner=owner or "",
            kind="document",
            rank=RANK_FOLLOW_UP if run_input.get("cleanup") else RANK_DOCUMENT,
            # the auth filters show the thread to its organization by these
            stamp={"organization_id": org, "document_key": thread_id(org, path), "kind": "document"},
        )
        return RunRef(thread_id=thread, run_id=await self.admission.submit(job))

    async def withdraw_waiting(self, org: str, path: str) -> int:
        """Remove the path's run still waiting for admission (it never started); 1 if there was one."""
        return int(await self.admission.withdraw(server_thread_id(org, path)) is not None)

    async def cancel_active(self, org: str, path: str) -> int:
        """Cancel the path's waiting, queued and running runs, waiting for them to end; how many it
        cancelled.

        The run still waiting for admission goes first, so it cannot be admitted meanwhile. A run
        listed as active may end on its own before its cancel arrives: the server then answers 404
        ("no matching runs to cancel"), which is not counted (nothing was cancelled) and is no
        failure of the caller's upload, delete or cancel.
        """
        thread = server_thread_id(org, path)
        cancelled = await self.withdraw_waiting(org, path)
        active = [r for r in await thread_runs(self.client, thread) if r["status"] in ACTIVE_RUN_STATES]
        for run in active:
            cancellation.cancel_run(run["run_id"])
        for run in active:
            cancelled += await self._cancel_run(thread, run["run_id"])
        return cancelled

    async def _cancel_run(self, thread: str, run_id: str) -> int:
        """1 when the run was cancelled (and has ended), 0 when it had already ended."""
        import httpx

        try:
            await self.client.runs.cancel(thread, run_id, wait=True, action="interrupt")
        except httpx.HTTPStatusError as error:  # the SDK's NotFoundError is one too
            if error.response.status_code != 404:
                raise
            logger.info("run %s of thread %s ended before its cancel", run_id, thread)
            return 0
        return 1

    async def state(self, org: str, path: str) -> tuple[Any, list[dict[str, Any]]]:
        """The thread's latest snapshot and its runs, newest first; survives a crash of the server.

        The checkpoints are durable (`server_checkpointer`), but the dev server saves its thread and
        run records only every second, so a kill -9 can lose the newest. A thread the server does not
        know is read straight from the checkpointer; a snapshot still pending (tasks left, no error)
        whose run the server does not know was cut off by such a crash, and no run will finish it:
        it is marked `interrupted` (`document_status` reads that as failed, upload again).
        """
        from langgraph_sdk.errors import NotFoundError

        thread = server_thread_id(org, path)
        try:
            state = await self.client.threads.get_state(thread)
        except NotFoundError:
            snapshot = await self._checkpointed_state(thread)
            if snapshot is not None and snapshot.next and not any(t.error for t in snapshot.tasks):
                snapshot.interrupted = True  # no record, so no run: the crash took it
            return snapshot, []
        tasks = [SimpleNamespace(**task) for task in state.get("tasks") or []]
        snapshot = SimpleNamespace(
            values=state.get("values") or {}, next=state.get("next") or [], tasks=tasks, interrupted=False
        )
        runs = await thread_runs(self.client, thread)
        waiting = await self.admission.waiting_on(thread)  # not admitted yet: a queued run to readers
        runs = [waiting.as_run(), *runs] if waiting is not None else runs
        errors = any(getattr(t, "error", None) for t in tasks)
        if snapshot.next and not errors and not any(r["status"] in ACTIVE_RUN_STATES for r in runs):
            run_id = (state.get("metadata") or {}).get("run_id")
            snapshot.interrupted = bool(run_id) and not await self._run_known(thread, run_id)
        return snapshot, runs

    async def state_of_epoch(self, org: str, path: str, epoch: int) -> Any:
        from librarian.checkpoint import server_saver

        saver = await server_saver()
        config = {"configurable": {"thread_id": server_thread_id(org, path)}}
        async for snapshot in build_ingest_graph(checkpointer=saver).aget_state_history(
            config, limit=HISTORY_LIMIT
        ):
            if _of_run(snapshot, epoch):
                return SimpleNamespace(
                    values=snapshot.values, next=snapshot.next, tasks=snapshot.tasks, interrupted=False
                )
        return None

    async def _run_known(self, thread: str, run_id: str) -> bool:
        from langgraph_sdk.errors import NotFoundError

        try:
            await self.client.runs.get(thread, run_id)
        except NotFoundError:
            return False
        return True

    async def _checkpointed_state(self, thread: str) -> Any:
        """The thread's state read from the server's checkpointer, with the graph that wrote it."""
        from librarian.checkpoint import server_saver

        saver = await server_saver()
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        found = await saver.aget_tuple(config)
        if found is None:
            return None
        build = build_reindex_graph if found.metadata.get("graph_id") == "reindex" else build_ingest_graph
        state = await build(checkpointer=saver).aget_state({"configurable": {"thread_id": thread}})
        return SimpleNamespace(values=state.values, next=state.next, tasks=state.tasks, interrupted=False)
