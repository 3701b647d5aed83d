"""One organization's upload burst must not take the server's run slots from everyone else (issue 24).

A real `langgraph dev` with 4 run slots (`--n-jobs-per-worker 4`). Organization B measures its idle
question latency; then organization A uploads 8 markdown files of 150 KB at once, and B's next
questions must finish within a bound relative to idle while A's documents are still ingesting. All
of A's documents must still end `indexed`.

Before run admission (`services/run_admission.py`), A's 8 ingest runs went straight into the server's
queue: 4 of them held the 4 slots while they waited for A's ingest quota
(`LIBRARIAN_INGEST_CONCURRENCY_PER_ORG`, 1) and B's question queued behind the rest (215 s against an
idle 0.9 s). Now A's uploads beyond its quota wait outside the queue (status `queued`), and a delete
or a cancel of such an upload removes it before it ever runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import httpx
import pytest

from services.run_admission import RANK_DOCUMENT, RANK_FOLLOW_UP, RANK_GRAPH, Job, Limits, choose
from tests.integration.server_fixtures import (
    DevServer,
    ask,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

JOBS = 4
BURST = 8
DOC_BYTES = 150 * 1024
ORG_A, ORG_B, ORG_C = "burster", "bystander", "canceller"
A, B = token("alice", ORG_A), token("bob", ORG_B)
C, C_ADMIN = token("carl", ORG_C), token("cleo", ORG_C, role="admin")
B_NOTE = b"# Bystander notes\n\nThe bystander team meets on Thursdays in the north room.\n"
QUESTION = "When does the bystander team meet?"
FINAL = ("indexed", "skipped", "failed", "deleted", "cancelled")


def burst_document(seed: int, size: int = DOC_BYTES) -> bytes:
    """About `size` bytes of distinct markdown (no parse-cache hits across documents)."""
    parts, total, i = [], 0, 0
    while total < size:
        part = f"# Record {seed}-{i}\n\n" + (
            f"Maintenance record {seed}-{i}: the pump and the valve of line {i} were checked. " * 12
        )
        parts.append(part)
        total += len(part) + 2
        i += 1
    return "\n\n".join(parts).encode()[:size]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    with running_server(tmp_path_factory.mktemp("fairslots"), jobs=JOBS) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        yield client


def ask_within(url: str, tok: str, deadline_s: float) -> float:
    """B's question through `/runs/wait`; its latency, or a failure once `deadline_s` has passed."""
    pool = ThreadPoolExecutor(max_workers=1)
    started = time.monotonic()
    future = pool.submit(ask, url, tok, QUESTION)
    try:
        state = future.result(timeout=deadline_s)
    except FutureTimeout:
        pytest.fail(f"B's question did not finish within {deadline_s:.1f}s (its run queued behind A's)")
    finally:
        pool.shutdown(wait=False)
    elapsed = time.monotonic() - started
    assert "__error__" not in state and "Thursdays" in state["messages"][-1]["content"], state
    return elapsed


def upload_all(url: str, org: str, tok: str, docs: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    """Send the uploads at once, each on its own connection; their 202 bodies."""

    def send(doc: tuple[str, bytes]) -> httpx.Response:
        with httpx.Client(base_url=url, timeout=120) as own:
            return upload(own, org, tok, *doc)

    with ThreadPoolExecutor(max_workers=len(docs)) as pool:
        responses = list(pool.map(send, docs))
    assert [r.status_code for r in responses] == [202] * len(docs), [r.text for r in responses]
    return [r.json() for r in responses]


def statuses(http: httpx.Client, org: str, tok: str) -> dict[str, str]:
    listing = http.get(f"/orgs/{org}/documents", headers=bearer(tok)).json()["documents"]
    return {d["path"]: d["status"] for d in listing}


def test_a_question_finds_a_slot_during_another_organizations_upload_burst(server, http):
    response = upload(http, ORG_B, B, "notes.md", B_NOTE)
    assert response.status_code == 202, response.text
    wait_for_status(http, ORG_B, B, response.json()["path"], done=("indexed",))
    for _ in range(2):  # warm-up: the first runs load models
        ask_within(server.url, B, 120)
    idle = [ask_within(server.url, B, 120) for _ in range(3)]
    bound = max(10 * statistics.median(idle), 15.0)

    accepted = upload_all(server.url, ORG_A, A, [(f"burst-{n}.md", burst_document(n)) for n in range(BURST)])
    during = [ask_within(server.url, B, bound) for _ in range(3)]
    still_ingesting = [p for p, s in statuses(http, ORG_A, A).items() if s not in FINAL]

    print(
        f"B idle {[round(x, 2) for x in idle]}s, during A's burst {[round(x, 2) for x in during]}s "
        f"(bound {bound:.1f}s); A still ingesting {len(still_ingesting)}/{BURST} after B's answers"
    )
    assert still_ingesting, "A's burst was over before B asked: nothing was measured"
    for doc in accepted:
        status = wait_for_status(http, ORG_A, A, doc["path"], done=FINAL, deadline_s=900)
        assert status["status"] == "indexed", status


def thread_runs(http: httpx.Client, thread: str, tok: str) -> list[dict[str, Any]]:
    response = http.get(f"/threads/{thread}/runs", headers=bearer(tok))
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("action", ["delete", "cancel"])
def test_a_waiting_upload_that_is_deleted_or_cancelled_never_runs(server, http, action):
    first = upload(http, ORG_C, C, f"first-{action}.md", burst_document(100)).json()
    waiting = upload(http, ORG_C, C, f"waiting-{action}.md", b"# Wait\n\nIn line.\n").json()
    path = waiting["path"]
    # C's share is one run: the first upload holds it (or waits first), the second waits outside the queue
    assert http.get(f"/orgs/{ORG_C}/documents/{path}", headers=bearer(C)).json()["status"] == "queued"
    assert thread_runs(http, waiting["thread_id"], C) == []
    if action == "delete":
        response = http.delete(f"/orgs/{ORG_C}/documents/{path}", headers=bearer(C))
        assert response.status_code == 200, response.text
    else:
        response = http.post(f"/orgs/{ORG_C}/documents/{path}/cancel", headers=bearer(C_ADMIN))
        assert response.status_code == 202, response.text
    expected = "deleted" if action == "delete" else "cancelled"
    status = wait_for_status(http, ORG_C, C, path, done=(expected,), deadline_s=600)
    assert status["chunkCount"] == 0
    print(f"{action} of a waiting upload: {expected}; the first upload meanwhile: {statuses(http, ORG_C, C)}")
    # one run only: the follow-up that records the outcome; the withdrawn ingest never ran
    runs = thread_runs(http, waiting["thread_id"], C)
    assert len(runs) == 1 and runs[0]["status"] == "success", runs
    assert wait_for_status(http, ORG_C, C, first["path"], deadline_s=600)["status"] == "indexed"


PICKLE_INTERVAL_S = 10.0  # the dev server saves its threads and runs every 10 s


def test_uploads_waiting_for_their_turn_survive_a_server_crash(tmp_path):
    """kill -9 while two uploads wait outside the queue; the restarted server admits and indexes them."""
    org, tok = "restarter", token("rita", "restarter")
    with running_server(tmp_path, jobs=JOBS) as first:
        with httpx.Client(base_url=first.url, timeout=120) as http:
            docs = [("long.md", burst_document(0, 3 * DOC_BYTES))]
            docs += [(f"next-{n}.md", burst_document(n + 1)) for n in range(2)]
            paths = [upload(http, org, tok, name, data).json()["path"] for name, data in docs]
            saved_by = time.monotonic() + PICKLE_INTERVAL_S + 1.5
            while time.monotonic() < saved_by:  # the waiting jobs must be in the server's saved state
                now = statuses(http, org, tok)
                assert [now[p] for p in paths[1:]] == ["queued", "queued"], f"admitted before the kill: {now}"
                time.sleep(0.25)
            first.kill()
        workdir, env = first.workdir, first.env
    second = DevServer(workdir, env, jobs=JOBS).start()
    try:
        with httpx.Client(base_url=second.url, timeout=120) as http:
            for path in paths:
                status = wait_for_status(http, org, tok, path, done=FINAL, deadline_s=600)
                assert status["status"] == "indexed", status
    finally:
        second.stop()


# --- the policy alone (no server) -----------------------------------------------------------------


def job(org: str, n: int, *, kind: str = "document", rank: int = RANK_DOCUMENT, thread: str = "") -> Job:
    graph = "graph_index" if kind == "graph" else "ingest"
    return Job(org, thread or f"{org}-{kind}-{n}", graph, {}, "u", kind, rank, since=float(n))


def test_admission_keeps_a_slot_for_questions_and_each_organization_to_its_share():
    waiting = [job("a", n) for n in range(8)] + [job("b", 9), job("c", 10, kind="graph", rank=RANK_GRAPH)]
    chosen = choose(waiting, {}, set(), Limits(per_org=1, total=JOBS - 1))
    assert [(j.org, j.since) for j in chosen] == [("a", 0.0), ("b", 9.0), ("c", 10.0)]
    assert choose(waiting, {"a": 1, "b": 1, "c": 1}, set(), Limits(per_org=1, total=JOBS - 1)) == []


def test_admission_order_follow_ups_then_documents_then_builds_fewest_slots_first():
    limits = Limits(per_org=1, total=3)
    follow_up, document = job("a", 5, rank=RANK_FOLLOW_UP), job("a", 1)
    # a follow-up (no parsing, no embedding) may take one slot beyond its organization's share
    assert choose([document, follow_up], {"a": 1}, set(), limits) == [follow_up]
    # a build waits while a document of its organization waits, even one behind its own busy thread
    build, busy = job("a", 0, kind="graph", rank=RANK_GRAPH), job("a", 2, thread="busy")
    assert choose([build, busy], {}, {"busy"}, limits) == []
    assert choose([build], {}, set(), limits) == [build]
    # several slots per organization: the one holding fewest goes first, then the oldest job
    older, newer = job("a", 1), job("b", 2)
    assert choose([older, newer], {"a": 1}, set(), Limits(per_org=4, total=3)) == [newer, older]
