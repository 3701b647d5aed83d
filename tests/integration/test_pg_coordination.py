"""PostgreSQL coordination of document runs, on the real server: locks across processes and crashes,
epochs, fences, quotas and turns (`librarian/runs/pg_coordination.py`)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from librarian.runs.pg_coordination import PostgresCoordination
from tests.conftest import POSTGRES_URL, REPO_DIR, require_postgres

pytestmark = pytest.mark.postgres
DEADLINE_S = 20.0

HOLDER = """
import sys
from librarian.runs.pg_coordination import PostgresCoordination
coordination = PostgresCoordination(sys.argv[1])
held = coordination.try_run_lock(sys.argv[2], sys.argv[3])
print("held" if held else "taken", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def coordination() -> PostgresCoordination:
    require_postgres()
    found = PostgresCoordination(POSTGRES_URL)
    yield found
    found.close()


@pytest.fixture
def org() -> str:
    return f"org-{uuid.uuid4().hex[:12]}"


def _holder(org: str, path: str) -> subprocess.Popen[str]:
    """Another process that takes the path's run lock and keeps it until killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, POSTGRES_URL, org, path],
        cwd=REPO_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_epochs_start_at_zero_rise_by_one_and_mark_older_runs_superseded(coordination, org) -> None:
    assert coordination.epoch(org, "docs/a.md") == 0
    first = coordination.bump(org, "docs/a.md")
    second = coordination.bump(org, "docs/a.md")
    assert (first, second) == (1, 2)
    assert coordination.superseded(org, "docs/a.md", first)
    assert not coordination.superseded(org, "docs/a.md", second)
    assert not coordination.superseded(org, "docs/a.md", None)  # runs without an epoch never are
    assert coordination.epoch(org, "docs/b.md") == 0  # per path
    assert coordination.epoch(f"{org}-other", "docs/a.md") == 0  # per organization


def test_a_run_lock_held_by_another_process_is_exclusive_and_dies_with_it(coordination, org) -> None:
    holder = _holder(org, "docs/big.pdf")
    try:
        assert coordination.run_lock_held(org, "docs/big.pdf")
        assert coordination.ingests_running(org)  # what a graph build of the organization waits for
        assert not coordination.ingests_running(f"{org}-other")
        assert coordination.try_run_lock(org, "docs/big.pdf") is None
        other = coordination.try_run_lock(org, "docs/other.pdf")  # other paths are free
        assert other is not None
        other.release()
    finally:
        os.killpg(holder.pid, signal.SIGKILL)  # kill -9: no release, only the dead connection
        holder.wait()
    _until(lambda: not coordination.run_lock_held(org, "docs/big.pdf"), "the dead holder's lock to go")
    assert not coordination.ingests_running(org)
    taken = coordination.try_run_lock(org, "docs/big.pdf")
    assert taken is not None
    assert coordination.run_lock_held(org, "docs/big.pdf")
    taken.release()
    taken.release()  # idempotent
    assert not coordination.run_lock_held(org, "docs/big.pdf")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    org_name=st.text(min_size=1, max_size=40),
    path=st.text(min_size=1, max_size=200),
    other=st.text(min_size=1, max_size=200),
)
def test_held_reads_the_lock_of_any_name_and_only_that_one(coordination, org_name, path, other) -> None:
    """pg_locks shows a 64-bit key as two 32-bit halves: the reading must agree for every key (half
    of them are negative) and never see another name's lock."""
    org_name, path, other = (s.replace("\x00", "") or "x" for s in (org_name, path, other))
    held = coordination.try_run_lock(org_name, path)
    assert held is not None
    try:
        assert coordination.run_lock_held(org_name, path)
        assert coordination.ingests_running(org_name)
        if other != path:
            assert not coordination.run_lock_held(org_name, other)
    finally:
        held.release()
    assert not coordination.run_lock_held(org_name, path)


def test_the_fence_orders_two_processes_views_of_one_path(org) -> None:
    """Two coordinations (two pools, as two replicas have) take the same fence in turns."""
    require_postgres()
    first, second = PostgresCoordination(POSTGRES_URL), PostgresCoordination(POSTGRES_URL)
    inside, overlaps = [0], [0]
    guard = threading.Lock()

    def writer(coordination: PostgresCoordination) -> None:
        for _ in range(15):
            with coordination.fence(org, "docs/a.md"):
                with guard:
                    inside[0] += 1
                    overlaps[0] = max(overlaps[0], inside[0])
                time.sleep(0.002)  # widen the window a second holder would need
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=writer, args=(c,)) for c in (first, second, first, second)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_S)
        assert overlaps[0] == 1
    finally:
        first.close()
        second.close()


def test_an_organizations_slots_hold_across_processes_and_other_organizations_are_free(org) -> None:
    require_postgres()
    replicas = [PostgresCoordination(POSTGRES_URL), PostgresCoordination(POSTGRES_URL)]
    running, most = [0], [0]

    async def step(coordination: PostgresCoordination) -> None:
        async with coordination.org_slot(org, 2):
            running[0] += 1
            most[0] = max(most[0], running[0])
            await asyncio.sleep(0.05)
            running[0] -= 1

    async def scenario() -> float:
        await asyncio.gather(*(step(replicas[i % 2]) for i in range(6)))
        started = time.monotonic()
        # both of the organization's slots taken, on two processes: another organization is not blocked
        async with (
            replicas[0].org_slot(org, 2),
            replicas[1].org_slot(org, 2),
            replicas[0].org_slot(f"{org}-other", 2),
        ):
            return time.monotonic() - started

    try:
        other_wait = asyncio.run(scenario())
    finally:
        for coordination in replicas:
            coordination.close()
    assert most[0] == 2
    assert other_wait < 5.0


def test_turns_of_one_path_do_not_overlap_across_processes(org) -> None:
    require_postgres()
    replicas = [PostgresCoordination(POSTGRES_URL), PostgresCoordination(POSTGRES_URL)]
    log: list[str] = []

    async def writer(index: int) -> None:
        async with replicas[index % 2].turn(org, "docs/a.md"):
            log.append("in")
            await asyncio.sleep(0.01)
            log.append("out")

    async def scenario() -> None:
        await asyncio.wait_for(asyncio.gather(*(writer(i) for i in range(8))), DEADLINE_S)

    try:
        asyncio.run(scenario())
    finally:
        for coordination in replicas:
            coordination.close()
    assert log == ["in", "out"] * 8


def test_graph_build_requests_coalesce_into_the_queued_build_and_a_start_covers_them(org) -> None:
    require_postgres()
    first, second = PostgresCoordination(POSTGRES_URL), PostgresCoordination(POSTGRES_URL)
    try:
        request, queued = first.request_graph_build(org, "job-1")
        assert (request, queued) == (1, None)
        assert second.request_graph_build(org, "job-2") == (0, "job-1")  # absorbed by the queued one
        assert second.start_graph_build(org, request)  # the build starts: covers both requests
        assert not first.start_graph_build(org, request)  # nothing left for a second start
        request, queued = second.request_graph_build(org, "job-3")  # a change during the build
        assert (request, queued) == (2, None)
        assert first.request_graph_build(org, "job-4") == (0, "job-3")  # exactly one more
    finally:
        second.close()  # the process that queued job-3 ends before job-3 starts
    try:
        # Its queued build is void: the next request queues a new one instead of waiting for it.
        assert first.request_graph_build(org, "job-5") == (3, None)
    finally:
        first.close()


def test_an_admins_cancel_reaches_a_build_running_elsewhere_and_voids_the_queued_one(org) -> None:
    require_postgres()
    first, second = PostgresCoordination(POSTGRES_URL), PostgresCoordination(POSTGRES_URL)
    try:
        assert first.cancel_graph_build(org) == (False, None)  # nothing asked, nothing running
        request, _ = first.request_graph_build(org, "job-1")
        assert second.start_graph_build(org, request)
        running = second.try_graph_lock(org)  # the build runs on the second process
        assert running is not None
        assert first.try_graph_lock(org) is None  # one build at a time
        assert first.request_graph_build(org, "job-2") == (2, None)  # a change during the build
        assert first.cancel_graph_build(org) == (True, "job-2")
        assert second.graph_cancel_requested(org)  # what the running build reads at its next stage
        assert not second.start_graph_build(org, 2)  # the voided build never runs
        running.release()
        request, _ = second.request_graph_build(org, "job-3")
        assert second.start_graph_build(org, request)
        assert not first.graph_cancel_requested(org)  # a new build starts uncancelled
    finally:
        first.close()
        second.close()
