"""Where document runs execute: in this process (`LocalRuns`) or on the LangGraph server (`ServerRuns`).

Both keep the same promises to `DocumentOps`: runs of one path execute one at a time and in order
(a follow-up run starts only after a cancelled run has ended), cancelling marks the run in
`librarian.runs.cancellation` before stopping it (so a node still in flight writes no vectors), and `state`
returns the thread's latest snapshot with its runs, newest first.
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
from librarian.runs.server_client import sdk_client, thread_runs
from librarian.runs.threads import server_thread_id, thread_id
from librarian.stack import Stack
from services.run_backend import ACTIVE_RUN_STATES, RunRef

logger = logging.getLogger(__name__)

Observer = Callable[[str, dict[str, Any]], None]
_observer: ContextVar[Observer | None] = ContextVar("librarian_ingest_observer", default=None)


class LocalRuns:
    """Runs the graphs directly on a sync checkpointer, in a worker thread per call.

    Serialization per path is `KeyedLocks`: a thread lock plus a file lock (other processes on the
    same data directory). Cancel sets the run's flag; the run stops before its next vector write.
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
            await asyncio.to_thread(self._run, compiled, run_input, org, path, run_id, on_update)
        finally:
            with self._guard:
                self._active.get(key, set()).discard(run_id)
                if not self._active.get(key):
                    self._active.pop(key, None)
            cancellation.forget_run(run_id)
        return RunRef(thread_id=key, run_id=run_id)

    def resume(self, org: str, path: str) -> None:
        config = {"configurable": {"thread_id": thread_id(org, path)}}
        with self._locks.hold(thread_id(org, path)):
            if self.ingest_graph.get_state(config).next:
                self._stream(self.ingest_graph, None, org, path, str(uuid.uuid4()), None)

    def _run(self, graph: Any, run_input: Any, org: str, path: str, run_id: str, on_update: Any) -> None:
        with self._locks.hold(thread_id(org, path)):
            if cancellation.is_cancelled(run_id):
                return  # cancelled while it waited for the path: it never started
            self._stream(graph, run_input, org, path, run_id, on_update)

    def _stream(self, graph: Any, run_input: Any, org: str, path: str, run_id: str, on_update: Any) -> None:
        config = {"run_id": uuid.UUID(run_id), "configurable": {"thread_id": thread_id(org, path)}}
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

    async def state(self, org: str, path: str) -> tuple[Any, list[dict[str, Any]]]:
        config = {"configurable": {"thread_id": thread_id(org, path)}}
        snapshot = await asyncio.to_thread(self.ingest_graph.get_state, config)
        with self._guard:
            running = bool(self._active.get(thread_id(org, path)))
        return snapshot, ([{"status": "running"}] if running else [])


class ServerRuns:
    """Runs on the LangGraph server through its in-process SDK client.

    That client skips the auth handlers, so the organization (already checked by the route) is
    passed as trusted run context and stamped into the thread's and run's metadata.
    """

    def __init__(self, client: Any = None) -> None:
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = sdk_client()
        return self._client

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
        run = await self.client.runs.create(
            thread,
            graph,
            input=run_input,
            context={"organization_id": org},
            metadata={"organization_id": org, "owner": owner or ""},
            multitask_strategy="enqueue",
            if_not_exists="create",  # the thread id is derived, never listed by clients' choice
        )
        # Stamped on every start (idempotent): the auth filters show the thread to its organization.
        metadata = {"organization_id": org, "document_key": thread_id(org, path), "kind": "document"}
        await self.client.threads.update(thread, metadata=metadata)
        return RunRef(thread_id=thread, run_id=run["run_id"])

    async def cancel_active(self, org: str, path: str) -> int:
        thread = server_thread_id(org, path)
        active = [r for r in await thread_runs(self.client, thread) if r["status"] in ACTIVE_RUN_STATES]
        for run in active:
            cancellation.cancel_run(run["run_id"])
        for run in active:
            await self.client.runs.cancel(thread, run["run_id"], wait=True, action="interrupt")
        return len(active)

    async def state(self, org: str, path: str) -> tuple[Any, list[dict[str, Any]]]:
        from langgraph_sdk.errors import NotFoundError

        thread = server_thread_id(org, path)
        try:
            state = await self.client.threads.get_state(thread)
        except NotFoundError:
            return None, []
        tasks = [SimpleNamespace(**task) for task in state.get("tasks") or []]
        snapshot = SimpleNamespace(
            values=state.get("values") or {}, next=state.get("next") or [], tasks=tasks
        )
        return snapshot, await thread_runs(self.client, thread)
