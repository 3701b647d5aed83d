"""Parse as a durable job: Reducto's async API through the real `reductoai` SDK against the wire server.

The ingest graph submits (`POST /parse_async`), checkpoints the job id, and polls (`GET /job/{id}`)
from `await_parse`; these tests hold the wire server's jobs pending, rate limit it, fail its jobs and
interrupt runs, and read what the server recorded (submissions, poll times) rather than sleeping.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from graphs.ingest import build_ingest_graph
from librarian.runs.cancellation import IngestCancelledError, cancel_run
from librarian.runs.threads import thread_id
from librarian.stack import Stack
from tests.wire.reducto_server import ReductoWireServer

ORG = "acme"
DOC = b"Ducks live on lakes.\n\nGeese fly south in winter.\n\nSwans are large."
DEADLINE_S = 60.0


def wait_until(condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


async def await_until(condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@pytest.fixture
def wire() -> Iterator[ReductoWireServer]:
    server = ReductoWireServer(api_key="test-key").start()
    yield server
    server.stop()


def reducto_settings(settings, wire: ReductoWireServer, **overrides):
    values = {
        "parser": "reducto",
        "reducto_api_key": "test-key",
        "reducto_base_url": wire.base_url,
        "reducto_poll_interval_s": 0.05,
        **overrides,
    }
    return settings.model_copy(update=values)


@pytest.fixture
def rstack(settings, wire) -> Stack:
    return Stack(reducto_settings(settings, wire))


def store(stack: Stack, name: str = "notes.txt", data: bytes = DOC) -> str:
    path = f"docs/{name}"
    stack.files.write(ORG, path, data)
    return path


def run_config(path: str, run_id: str | None = None) -> dict:
    config: dict = {"configurable": {"thread_id": thread_id(ORG, path)}}
    if run_id:
        config["run_id"] = run_id
    return config


def job_ids_polled(wire: ReductoWireServer) -> set[str]:
    return {r.path.rsplit("/", 1)[-1] for r in wire.polls()}


def threads_in_blocking_wait() -> list[str]:
    """Threads whose stack is in the blocking wait loop (the awaitable one runs in no thread's stack
    while it sleeps)."""
    names = {"wait_for_job", "call_rate_limited"}
    waiting = []
    for ident, frame in sys._current_frames().items():
        while frame is not None:
            if frame.f_code.co_name in names:
                waiting.append(str(ident))
                break
            frame = frame.f_back
    return waiting


# --- the blocking form (plain Python) ----------------------------------------------------------------


def test_plain_python_submits_once_polls_a_pending_job_and_indexes(rstack, wire) -> None:
    wire.pending_polls = 3
    path = store(rstack)
    graph = build_ingest_graph(lambda: rstack)
    result = graph.invoke({"path": path}, context={"organization_id": ORG})
    assert result["status"] == "indexed" and result["chunkCount"] == 3
    assert wire.submissions == 1 and len(wire.requests_to("/parse")) == 0  # the job API, not /parse
    assert len(wire.polls()) == 4 and job_ids_polled(wire) == set(wire.jobs)
    body = wire.requests_to("/parse_async")[0].json
    assert body["retrieval"]["chunking"]["chunk_mode"] == "variable"
    assert body["input"].startswith("reducto://")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["blocking", "async"])
def test_a_large_result_is_downloaded_from_its_url(rstack, wire, asynchronous) -> None:
    wire.result_type = "url"
    path = store(rstack)
    graph = build_ingest_graph(lambda: rstack)
    if asynchronous:
        result = asyncio.run(graph.ainvoke({"path": path}, context={"organization_id": ORG}))
    else:
        result = graph.invoke({"path": path}, context={"organization_id": ORG})
    assert result["status"] == "indexed" and result["chunkCount"] == 3
    assert [r.path.split("/")[1] for r in wire.requests if r.method == "GET" and "/results/" in r.path] == [
        "results"
    ]


def test_sync_mode_keeps_the_blocking_parse(settings, wire) -> None:
    stack = Stack(reducto_settings(settings, wire, reducto_mode="sync"))
    path = store(stack)
    result = build_ingest_graph(lambda: stack).invoke({"path": path}, context={"organization_id": ORG})
    assert result["status"] == "indexed"
    assert len(wire.requests_to("/parse")) == 1 and wire.submissions == 0


def test_a_failed_job_is_a_document_status(rstack, wire) -> None:
    wire.fail_jobs_with = {"code": 422, "name": "DOCUMENT_CORRUPT", "message": "xref table is broken"}
    path = store(rstack)
    result = build_ingest_graph(lambda: rstack).invoke({"path": path}, context={"organization_id": ORG})
    assert (result["status"], result["error"]) == ("failed", "corrupt_file")
    assert "xref table is broken" in result["reason"]
    assert not rstack.index.list_ids(namespace=ORG)


def test_a_job_failing_on_the_provider_side_names_the_job(rstack, wire) -> None:
    wire.fail_jobs_with = {"code": 500, "name": "GPU_POOL_SATURATED", "message": "no capacity"}
    path = store(rstack)
    result = build_ingest_graph(lambda: rstack).invoke({"path": path}, context={"organization_id": ORG})
    assert (result["status"], result["error"]) == ("failed", "parse_job_failed")
    (job_id,) = wire.jobs
    assert job_id in result["reason"] and "GPU_POOL_SATURATED" in result["reason"]


def test_a_job_pending_past_the_maximum_wait_fails_clearly(settings, wire) -> None:
    stack = Stack(reducto_settings(settings, wire, reducto_job_max_wait_s=0.3))
    wire.hold_jobs.set()
    path = store(stack)
    result = build_ingest_graph(lambda: stack).invoke({"path": path}, context={"organization_id": ORG})
    assert (result["status"], result["error"]) == ("failed", "parse_timeout")
    assert "LIBRARIAN_REDUCTO_JOB_MAX_WAIT_S" in result["reason"]
    assert wire.submissions == 1


@pytest.mark.parametrize("asynchronous", [False, True], ids=["blocking", "async"])
def test_429_is_retried_after_the_providers_retry_after(rstack, wire, asynchronous) -> None:
    wire.pending_polls = 1
    wire.fail_next("/parse_async", 429, {"detail": "slow down"}, headers={"Retry-After": "0.4"})
    wire.fail_next("/job", 429, {"detail": "slow down"}, headers={"Retry-After": "0.3"})
    path = store(rstack)
    graph = build_ingest_graph(lambda: rstack)
    run = {"path": path}
    if asynchronous:
        result = asyncio.run(graph.ainvoke(run, context={"organization_id": ORG}))
    else:
        result = graph.invoke(run, context={"organization_id": ORG})
    assert result["status"] == "indexed"
    submits = wire.requests_to("/parse_async")
    assert len(submits) == 2 and wire.submissions == 2 and len(wire.jobs) == 1  # one 429, one job
    assert submits[1].at - submits[0].at >= 0.4
    polls = wire.polls()
    assert len(polls) == 3  # 429, pending, completed
    assert polls[1].at - polls[0].at >= 0.3
    assert polls[2].at - polls[1].at < 0.3  # a plain pending poll waits the poll interval only


def test_429_until_attempts_run_out_fails_with_a_clear_status(settings, wire) -> None:
    stack = Stack(reducto_settings(settings, wire, reducto_rate_limit_attempts=3))
    for _ in range(3):
        wire.fail_next("/parse_async", 429, {"detail": "slow down"}, headers={"Retry-After": "0"})
    path = store(stack)
    result = build_ingest_graph(lambda: stack).invoke({"path": path}, context={"organization_id": ORG})
    assert (result["status"], result["error"]) == ("failed", "rate_limited")
    assert "429" in result["reason"] and "3 attempts" in result["reason"]
    assert wire.submissions == 3 and not wire.jobs and not wire.polls()


def test_a_429_without_retry_after_backs_off_on_its_own(rstack, wire) -> None:
    wire.fail_next("/job", 429, {"detail": "slow down"})
    path = store(rstack)
    result = build_ingest_graph(lambda: rstack).invoke({"path": path}, context={"organization_id": ORG})
    assert result["status"] == "indexed"
    polls = wire.polls()
    assert len(polls) == 2 and polls[1].at - polls[0].at >= 1.0  # JobPolicy.rate_limit_backoff


def test_plain_python_resume_polls_the_checkpointed_job(settings, wire, tmp_path) -> None:
    """A run killed while it waits (here: its wait raises) resumes from SQLite without resubmitting."""
    wire.pending_polls = 2
    stack = Stack(reducto_settings(settings, wire))
    path = store(stack)
    config = run_config(path)
    original = stack.parser.jobs

    class Crash(Exception):
        pass

    def crashing_jobs():
        client = original()

        def poll(job_id: str, filename: str):
            raise Crash("the process died while waiting")

        client.poll = poll  # the first run dies on its first poll, after the submit was checkpointed
        return client

    stack.parser.jobs = crashing_jobs
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        with pytest.raises(Crash):
            build_ingest_graph(lambda: stack, saver).invoke(
                {"path": path}, config, context={"organization_id": ORG}
            )
        (job_id,) = wire.jobs
        state = build_ingest_graph(lambda: stack, saver).get_state(config)
        assert state.values["parseJob"]["jobId"] == job_id and state.next == ("await_parse",)

    fresh = Stack(reducto_settings(settings, wire))
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        result = build_ingest_graph(lambda: fresh, saver).invoke(
            None, config, context={"organization_id": ORG}
        )
    assert result["status"] == "indexed" and result["chunkCount"] == 3
    assert wire.submissions == 1 and len(wire.requests_to("/upload")) == 1
    assert job_ids_polled(wire) == {job_id}


def test_cancelling_a_document_while_it_waits_ends_it_cancelled(settings, wire) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from services.documents import DocumentService

    stack = Stack(reducto_settings(settings, wire))
    service = DocumentService(stack, InMemorySaver())
    wire.hold_jobs.set()
    path = service.upload(ORG, "notes.txt", DOC)
    outcome: dict = {}
    ingest = threading.Thread(target=lambda: outcome.setdefault("status", service.ingest(ORG, path)))
    ingest.start()
    wait_until(lambda: len(wire.polls()) >= 2, "the run to wait on its pending job")
    assert threads_in_blocking_wait()  # plain Python's run waits in its own thread (the contrast below)
    started = time.monotonic()
    status = service.cancel(ORG, path)
    ingest.join(DEADLINE_S)
    assert not ingest.is_alive()
    assert status.status == "cancelled" and time.monotonic() - started < 10
    polls_at_cancel = len(wire.polls())
    assert "status" in outcome  # the ingest call returned: its run stopped waiting
    assert service.status(ORG, path).status == "cancelled"
    assert not stack.index.list_ids(namespace=ORG)
    assert len(wire.polls()) == polls_at_cancel and wire.submissions == 1


# --- the awaitable form (the server) ------------------------------------------------------------------


def test_async_run_interrupted_after_submit_resumes_on_the_same_job(settings, wire, tmp_path) -> None:
    """The job id is in the checkpoint before the wait; a fresh graph and saver poll that job."""
    database = str(tmp_path / "checkpoints.sqlite")

    async def scenario() -> None:
        wire.hold_jobs.set()
        stack = Stack(reducto_settings(settings, wire))
        path = store(stack)
        config = run_config(path)
        async with AsyncSqliteSaver.from_conn_string(database) as saver:
            graph = build_ingest_graph(lambda: stack, saver)
            run = asyncio.create_task(graph.ainvoke({"path": path}, config, context={"organization_id": ORG}))
            await await_until(lambda: len(wire.polls()) >= 2, "the run to wait on its pending job")
            assert not threads_in_blocking_wait()  # the wait occupies no thread
            state = await graph.aget_state(config)
            (job_id,) = wire.jobs
            assert state.values["parseJob"]["jobId"] == job_id and state.next == ("await_parse",)
            run.cancel()  # what a server restart (or a cancelled task) does to the waiting run
            with pytest.raises(asyncio.CancelledError):
                await run
        wire.hold_jobs.clear()
        fresh = Stack(reducto_settings(settings, wire))
        async with AsyncSqliteSaver.from_conn_string(database) as saver:
            result = await build_ingest_graph(lambda: fresh, saver).ainvoke(
                None, config, context={"organization_id": ORG}
            )
        assert result["status"] == "indexed" and result["chunkCount"] == 3
        assert wire.submissions == 1 and job_ids_polled(wire) == {job_id}

    asyncio.run(scenario())


def test_async_wait_stops_when_the_run_is_cancelled(rstack, wire) -> None:
    async def scenario() -> None:
        wire.hold_jobs.set()
        path = store(rstack)
        run_id = "6f1b7c1e-0000-4000-8000-000000000001"
        graph = build_ingest_graph(lambda: rstack)
        run = asyncio.create_task(
            graph.ainvoke({"path": path}, run_config(path, run_id), context={"organization_id": ORG})
        )
        await await_until(lambda: len(wire.polls()) >= 2, "the run to wait on its pending job")
        cancel_run(run_id)
        started = time.monotonic()
        with pytest.raises(IngestCancelledError):
            await asyncio.wait_for(run, DEADLINE_S)
        assert time.monotonic() - started < 5
        assert not rstack.index.list_ids(namespace=ORG)

    asyncio.run(scenario())


def test_a_waiting_job_holds_no_worker_while_another_document_parses_locally(settings, wire) -> None:
    """One organization, one ingest slot, one worker process: a document waiting on Reducto leaves
    them free, so another document's local parse and embed finish while the job is still pending."""
    from librarian.runs.ingest_worker import IngestOffload

    local_settings = settings.model_copy(update={"ingest_concurrency_per_org": 1})
    local = Stack(local_settings)
    remote = Stack(reducto_settings(local_settings, wire))
    offload = IngestOffload()
    try:
        offload.worker_pid(local_settings)  # the worker's stack parses locally

        async def scenario() -> None:
            wire.hold_jobs.set()
            waiting_path = store(remote, "slow.pdf")
            local_path = store(local, "fast.md", b"# Fast\n\nParsed by the local parser in the worker.")
            waiting = asyncio.create_task(
                build_ingest_graph(lambda: remote, offload=offload).ainvoke(
                    {"path": waiting_path}, context={"organization_id": ORG}
                )
            )
            await await_until(lambda: len(wire.polls()) >= 1, "the Reducto job to be pending")
            fast = await asyncio.wait_for(
                build_ingest_graph(lambda: local, offload=offload).ainvoke(
                    {"path": local_path}, context={"organization_id": ORG}
                ),
                DEADLINE_S,
            )
            assert fast["status"] == "indexed" and fast["parser"].startswith("local")
            assert not waiting.done() and wire.hold_jobs.is_set()
            wire.hold_jobs.clear()
            slow = await asyncio.wait_for(waiting, DEADLINE_S)
            assert slow["status"] == "indexed" and wire.submissions == 1

        asyncio.run(scenario())
    finally:
        offload.shutdown()
