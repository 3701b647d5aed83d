"""The served ingest graph with Reducto's job API: a real `langgraph dev` server, the real `reductoai`
SDK, and the wire server standing in for Reducto.

On the server the wait is the awaitable `await_parse` on the server's event loop: it must run there
without a blocking call (the dev server fails such runs with `BlockingError`), submit once, and stop
promptly when the document is deleted while its job is pending.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.server_fixtures import (
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)
from tests.wire.reducto_server import ReductoWireServer

ORG = "acme"
TOKEN = token("alice", ORG)
DEADLINE_S = 60.0


def wait_until(condition, what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def wire() -> Iterator[ReductoWireServer]:
    server = ReductoWireServer(api_key="test-key").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory, wire) -> Iterator[DevServer]:
    env = {
        "LIBRARIAN_PARSER": "reducto",
        "REDUCTO_API_KEY": "test-key",
        "LIBRARIAN_REDUCTO_BASE_URL": wire.base_url,
        "LIBRARIAN_REDUCTO_POLL_INTERVAL_S": "0.05",
    }
    with running_server(tmp_path_factory.mktemp("reducto-server"), env) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def polls_of(wire: ReductoWireServer, job_id: str) -> int:
    return sum(1 for r in wire.polls() if r.path.endswith(f"/{job_id}"))


def test_served_ingest_submits_once_waits_and_indexes(wire, http) -> None:
    wire.hold_jobs.set()
    before = set(wire.jobs)
    response = upload(http, ORG, TOKEN, "slow.txt", b"Ducks live on lakes.\n\nGeese fly south.")
    assert response.status_code == 202, response.text
    path = response.json()["path"]
    wait_until(lambda: len(set(wire.jobs) - before) == 1, "the served run to submit its job")
    (job_id,) = set(wire.jobs) - before
    wait_until(lambda: polls_of(wire, job_id) >= 3, "the served run to poll its pending job")
    status = http.get(f"/orgs/{ORG}/documents/{path}", headers=bearer(TOKEN)).json()
    assert status["status"] in {"queued", "running"}, status
    wire.hold_jobs.clear()
    final = wait_for_status(http, ORG, TOKEN, path, deadline_s=DEADLINE_S)
    assert final["status"] == "indexed" and final["chunkCount"] == 2, final
    assert len(set(wire.jobs) - before) == 1  # one submission for the whole run


def test_deleting_a_document_while_its_job_is_pending_stops_the_wait(wire, http) -> None:
    wire.hold_jobs.set()
    try:
        before = set(wire.jobs)
        response = upload(http, ORG, TOKEN, "doomed.txt", b"A document deleted while Reducto works.")
        path = response.json()["path"]
        wait_until(lambda: len(set(wire.jobs) - before) == 1, "the served run to submit its job")
        (job_id,) = set(wire.jobs) - before
        wait_until(lambda: polls_of(wire, job_id) >= 2, "the served run to poll its pending job")
        started = time.monotonic()
        deleted = http.delete(f"/orgs/{ORG}/documents/{path}", headers=bearer(TOKEN))
        assert deleted.status_code in (200, 202), deleted.text
        final = wait_for_status(http, ORG, TOKEN, path, done=("deleted",), deadline_s=30)
        assert final["status"] == "deleted" and time.monotonic() - started < 30
        polls_after = polls_of(wire, job_id)
        # The wait is over: watch for 20 poll intervals (the job is still pending) and see no new poll.
        window_ends = time.monotonic() + 20 * 0.05
        while time.monotonic() < window_ends:
            assert polls_of(wire, job_id) == polls_after, "the deleted document's run still polls"
            time.sleep(0.05)
    finally:
        wire.hold_jobs.clear()
