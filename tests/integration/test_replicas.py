"""Races between two server replicas over one PostgreSQL database and one data directory (issue 25, item 3).

Librarian's promises about one path (DESIGN §2: the index ends equal to the last upload, a delete
leaves no searchable ghost, statuses are the checkpoints) and about fairness between organizations
were made, and tested, for one server process. With `LIBRARIAN_POSTGRES_URL` set, several replicas
share the checkpoints, the file store and the index, so the same promises must hold whichever
replica each request reaches. These tests send the requests of each race to both replicas of
`tests/integration/replicas.py` through the public HTTP API only, and check the outcome against the
stored file and the index on the shared disk.

Each test has its own organizations, so they share the module's pair of servers without reading each
other's documents. The crash test kills replica A and restarts it, so it runs last.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.integration.replicas import (
    ACTIVE,
    Replicas,
    content_digest,
    p50,
    running_replicas,
    view,
)
from tests.integration.server_fixtures import token

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(900)]

MARKERS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
LONG_PARTS = 150  # about 250 chunks: an ingest of 10-20 s on 2 cores


@pytest.fixture(scope="module")
def replicas(tmp_path_factory) -> Iterator[Replicas]:
    # No graph builds: they are not what races here, and they would only slow the ingests down.
    env = {"LIBRARIAN_GRAPH_AUTO_BUILD": "false"}
    with running_replicas(tmp_path_factory.mktemp("replicas"), env) as pair:
        yield pair


def marker(word: str) -> str:
    """A word no other text contains, so a search for it finds exactly the chunks that carry it."""
    return f"zq{word}marker"


def sections(i: int) -> int:
    """Chunks of version `i` (one per section): few for the odd versions, many for the even ones.

    Distinct for every version, so a count tells the versions apart; the even versions (sent to A)
    take several times longer to ingest than the odd ones (sent to B), so an ingest of an even
    version that nothing stops is still writing when a later odd version's ingest has finished.
    """
    return 2 + i if i % 2 else 60 + i


def version(i: int) -> bytes:
    """Version `i` of one document: its own marker in every section, `sections(i)` sections."""
    word = marker(MARKERS[i])
    return "\n\n".join(
        f"# Section {s} of revision {i}\n\n" + f"The {word} rule {s} says the valve {s} opens slowly. " * 12
        for s in range(sections(i))
    ).encode()


def long_document(parts: int, word: str) -> bytes:
    """About five chunks per three parts, each carrying `word`: an ingest that runs for many seconds."""
    return "\n\n".join(
        f"# Part {i}\n\n" + f"The {word} crane {i} procedure is done step by step with care. " * 16
        for i in range(parts)
    ).encode()


def ids_of(records: dict[str, dict[str, Any]]) -> set[str]:
    return set(records)


def hashes_of(records: dict[str, dict[str, Any]]) -> set[str]:
    return {str(m.get("contentHash")) for m in records.values()}


# --- 1. ten racing uploads of one path --------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["all_at_once", "b_while_a_ingests"])
def test_racing_uploads_across_replicas_leave_exactly_the_stored_version(
    replicas: Replicas, schedule: str
) -> None:
    """Ten versions of one path, the even ones uploaded through A and the odd ones through B.

    One server serialises a path's writes in its event loop (`path_turn`) and cancels the path's
    running ingest before storing a new file; neither reaches the other replica. Whichever file is
    stored last, the path must end as a clean ingest of exactly that file: both replicas agreeing
    on its status, its chunks and none of the other nine versions' in the index.

    Schedules: `all_at_once` sends the ten together. `b_while_a_ingests` sends A's five together,
    then, once A reads running with a content hash (its last ingest has read its file), B's five
    together: the uploads through B land while A still ingests an older version, the case a replica
    cannot handle alone because it neither sees nor cancels the other's run.
    """
    org, name, path = f"replica-uploads-{schedule.replace('_', '-')}", "versions.md", "docs/versions.md"
    member = token("mia", org)
    a, b = replicas.servers
    versions = [version(i) for i in range(len(MARKERS))]
    assert len({v.count(b"# Section") for v in versions}) == len(versions)  # distinct chunk counts
    waves = [range(len(versions))] if schedule == "all_at_once" else [range(0, 10, 2), range(1, 10, 2)]

    def send(i: int, gate: threading.Barrier) -> tuple[int, int, str]:
        server = a if i % 2 == 0 else b
        gate.wait(timeout=60)
        response = replicas.upload(server, org, member, name, versions[i])
        return i, response.status_code, response.text[:200]

    answers = []
    for n, wave in enumerate(waves):
        if n:  # A's last ingest has read its file (the hash is set once the file is read and parsed)
            replicas.wait_status(
                a, org, member, path, lambda s: s.get("status") == "running" and bool(s.get("contentHash"))
            )
        gate = threading.Barrier(len(wave))
        with ThreadPoolExecutor(max_workers=len(wave)) as pool:
            answers += list(pool.map(lambda i, g=gate: send(i, g), wave))
    assert all(code == 202 for _, code, _ in answers), answers

    statuses = replicas.settle(org, member, path)
    stored = replicas.stored_file(org, path).read_bytes()
    assert stored in versions, "the stored file is none of the uploaded versions"
    k = versions.index(stored)
    digest = content_digest(stored)
    records = replicas.index_records(org, path)
    hits = {MARKERS[i]: replicas.hits(member, marker(MARKERS[i]), path) for i in range(len(versions))}
    clean = replicas.clean_ingest(replicas.servers[0], f"{org}-clean", name, stored)
    clean_ids = ids_of(replicas.index_records(f"{org}-clean", path))
    assert clean["status"] == "indexed" and clean["chunkCount"] == sections(k), clean

    problems = []
    if [view(s) for s in statuses] != [("indexed", clean["chunkCount"], digest)] * 2:
        problems.append(
            f"statuses (A, B) {[view(s) for s in statuses]}, expected indexed/{sections(k)}/{digest[:12]}"
        )
    if ids_of(records) != clean_ids:
        extra, missing = len(ids_of(records) - clean_ids), len(clean_ids - ids_of(records))
        problems.append(
            f"index has {len(records)} chunk ids, a clean ingest {len(clean_ids)}: "
            f"{extra} more, {missing} missing"
        )
    if hashes_of(records) != {digest}:
        stale = sorted(h[:12] for h in hashes_of(records) - {digest})
        problems.append(f"index holds chunks of other versions (content hashes {stale})")
    if not all(hits[MARKERS[k]].values()):
        problems.append(f"the stored version's marker {MARKERS[k]} is not found on both: {hits[MARKERS[k]]}")
    ghosts = {w: {r: len(t) for r, t in found.items() if t} for w, found in hits.items() if w != MARKERS[k]}
    ghosts = {w: found for w, found in ghosts.items() if found}
    if ghosts:
        problems.append(f"other versions' markers still searchable (replica: excerpts): {ghosts}")
    print(
        f"{schedule}: stored version {k} ({sections(k)} chunks); "
        f"statuses {[view(s) for s in statuses]}; ghosts {ghosts}"
    )
    assert not problems, "\n".join(problems)


# --- 2. a delete through B of an ingest running on A --------------------------------------------------


def test_a_delete_through_one_replica_stops_an_ingest_running_on_the_other(replicas: Replicas) -> None:
    """A large ingest runs on A; B is asked to delete the document.

    On one server the delete cancels the path's run and its write fence keeps the cancelled run
    from writing after the delete's vector purge. B cannot see or cancel A's run unless the replicas
    coordinate; if A keeps writing, the deleted document stays searchable (DESIGN §2.7: "a
    searchable ghost is not" acceptable).
    """
    org, name = "replica-delete", "manual.md"
    member = token("mia", org)
    word = marker("delete")
    data = long_document(LONG_PARTS, word)
    a, b = replicas.servers
    response = replicas.upload(a, org, member, name, data)
    assert response.status_code == 202, response.text
    path = response.json()["path"]
    running = replicas.wait_status(
        a, org, member, path, lambda s: s.get("status") == "running", deadline_s=120, what="running"
    )
    seen_on_b = replicas.status(b, org, member, path)
    deleted = replicas.delete(b, org, member, path)
    assert deleted.status_code == 200, deleted.text

    statuses = replicas.settle(org, member, path)
    records = replicas.index_records(org, path)
    excerpts = {replica: len(found) for replica, found in replicas.hits(member, word, path).items()}
    print(
        f"at the delete: A {view(running)}, B {view(seen_on_b)} ({seen_on_b.get('error')}); "
        f"settled: {[view(s) for s in statuses]}; index records {len(records)}; excerpts found {excerpts}"
    )
    problems = []
    if [s.get("status") for s in statuses] != ["deleted", "deleted"]:
        problems.append(f"statuses (A, B) {[view(s) for s in statuses]}, expected deleted on both")
    if records:
        problems.append(f"{len(records)} chunks of the deleted document are in the index")
    if any(excerpts.values()):
        problems.append(f"its chunks are searchable (excerpts found per replica): {excerpts}")
    if replicas.stored_file(org, path).exists():
        problems.append("its file is still stored")
    assert not problems, "\n".join(problems)


# --- 4. one organization's burst against another's questions ----------------------------------------

QUIET_DOC = (
    b"# Project Bluebird\n\n"
    b"The launch code of Project Bluebird is QUIET-7731. The launch happens at dawn from pier seven, "
    b"and the budget of Project Bluebird is four million.\n\n"
    b"## Bluebird crew\n\nThe Bluebird crew is led by captain Ada Quill, who reports to the board.\n"
)
QUESTIONS = [
    "What is the launch code of Project Bluebird?",
    "Who leads the Bluebird crew?",
    "What is the budget of Project Bluebird?",
    "Where does the launch happen?",
]
IDLE_SAMPLES = 40
MIN_BURST_SAMPLES = 30
BURST_UPLOADS = 4
BURST_PARTS = 90  # about 150 chunks each
MAX_RATIO = 2.0


def test_one_organizations_ingest_burst_leaves_anothers_searches_within_twice_idle(
    replicas: Replicas,
) -> None:
    """Searches of a quiet organization while a busy one ingests several large files on both replicas.

    On one server, admission and the low-priority ingest worker keep questions near their idle
    latency (issue 24). Here the burst lands on both replicas at once, over one index; the quiet
    organization's p50 must stay within twice its idle p50, measured first in this test on the
    same replicas. p50 rather than the maximum, and many samples, because the machine is shared.
    """
    quiet, busy = "replica-quiet", "replica-busy"
    reader, loader = token("rita", quiet), token("lou", busy)
    a = replicas.servers[0]
    response = replicas.upload(a, quiet, reader, "bluebird.md", QUIET_DOC)
    assert response.status_code == 202, response.text
    quiet_path = response.json()["path"]
    assert [s["status"] for s in replicas.settle(quiet, reader, quiet_path)] == ["indexed", "indexed"]

    def ask(n: int) -> float:
        server = replicas.next()
        found = replicas.search(server, reader, QUESTIONS[n % len(QUESTIONS)])
        assert found.of_path(quiet_path), (replicas.name(server), found.results)
        return found.seconds

    for n in range(2 * len(QUESTIONS)):  # warm both replicas: models, caches
        ask(n)
    idle = [ask(n) for n in range(IDLE_SAMPLES)]

    uploads = [
        (replicas.next(), f"load-{n}.md", long_document(BURST_PARTS, marker(f"load{n}")))
        for n in range(BURST_UPLOADS)
    ]
    with ThreadPoolExecutor(max_workers=BURST_UPLOADS) as pool:
        sent = list(pool.map(lambda u: replicas.upload(u[0], busy, loader, u[1], u[2]), uploads))
    assert all(r.status_code == 202 for r in sent), [r.text[:200] for r in sent]
    burst_paths = [(server, r.json()["path"]) for (server, _, _), r in zip(uploads, sent, strict=True)]
    first_server, first_path = burst_paths[0]  # the burst is on once its first ingest runs
    replicas.wait_status(first_server, busy, loader, first_path, lambda s: s.get("status") == "running")

    over = threading.Event()

    def watch() -> None:
        """Set `over` once no burst document reads queued or running on the replica it was sent to."""
        while not over.is_set():
            if all(replicas.status(s, busy, loader, p).get("status") not in ACTIVE for s, p in burst_paths):
                over.set()
            else:
                over.wait(0.5)

    burst: list[float] = []
    deadline = time.monotonic() + 600
    with ThreadPoolExecutor(max_workers=1) as pool:
        watcher = pool.submit(watch)
        n = 0
        while not over.is_set() and time.monotonic() < deadline:
            seconds = ask(n)
            if not over.is_set():  # the whole request fell inside the burst
                burst.append(seconds)
            n += 1
        over.set()
        watcher.result()
    for _, path in burst_paths:
        replicas.settle(busy, loader, path)

    ratio = p50(burst) / p50(idle)
    print(
        f"quiet searches: idle p50 {p50(idle) * 1000:.0f} ms ({len(idle)} samples), burst p50 "
        f"{p50(burst) * 1000:.0f} ms ({len(burst)} samples, max {max(burst or [0]) * 1000:.0f} ms): "
        f"ratio {ratio:.2f}"
    )
    assert len(burst) >= MIN_BURST_SAMPLES, (
        f"the burst ended after {len(burst)} samples: too short to measure"
    )
    assert ratio <= MAX_RATIO, (
        f"the quiet organization's search p50 went from {p50(idle) * 1000:.0f} ms idle to "
        f"{p50(burst) * 1000:.0f} ms during the other organization's burst: {ratio:.2f}x > {MAX_RATIO}x"
    )


# --- 3. kill -9 of the replica holding an ingest (last: it restarts A) --------------------------------


def test_after_a_kill_of_the_replica_holding_an_ingest_the_other_ingests_the_path(replicas: Replicas) -> None:
    """A is killed (its whole process group, SIGKILL) while it runs a large ingest; B takes the path.

    Whatever the replicas use to keep one path's ingests apart must not outlive its holder: B's
    upload of a new version must be accepted and indexed within a bounded time, equal to a clean
    ingest of that version, with nothing left of A's half-written one. After A restarts, the path
    must still read that way on both replicas (A's lost run must not come back over B's version).
    """
    org, name = "replica-crash", "manual.md"
    member = token("mia", org)
    first, second = marker("first"), marker("second")
    old, new = long_document(LONG_PARTS, first), long_document(LONG_PARTS // 5, second)
    a, b = replicas.servers
    response = replicas.upload(a, org, member, name, old)
    assert response.status_code == 202, response.text
    path = response.json()["path"]
    replicas.wait_status(
        a, org, member, path, lambda s: s.get("status") == "running", deadline_s=120, what="running"
    )
    replicas.kill(a)
    try:
        try:
            accepted = replicas.upload(b, org, member, name, new)
        except httpx.TimeoutException as exc:
            pytest.fail(f"B's upload after A's kill did not answer within the client's timeout: {exc!r}")
        assert accepted.status_code == 202, accepted.text
        digest = content_digest(new)
        on_b = replicas.wait_status(
            b,
            org,
            member,
            path,
            lambda s: s.get("status") not in ACTIVE and s.get("contentHash") == digest,
            deadline_s=180,
            what="final status of the new version",
        )
        clean = replicas.clean_ingest(b, f"{org}-clean", name, new)
        clean_ids = ids_of(replicas.index_records(f"{org}-clean", path))
        records = replicas.index_records(org, path)
        print(f"after the kill: B {view(on_b)}; clean {view(clean)}; index {len(records)} records")
        assert view(on_b) == ("indexed", clean["chunkCount"], digest), (on_b, clean)
        assert ids_of(records) == clean_ids, (len(records), len(clean_ids))
        assert hashes_of(records) == {digest}
        assert not replicas.hits_on(b, member, first, path)
        assert replicas.hits_on(b, member, second, path)
    finally:
        replicas.restart(a)

    statuses = replicas.settle(org, member, path, deadline_s=120)
    records = replicas.index_records(org, path)
    print(f"after A's restart: {[view(s) for s in statuses]}; index {len(records)} records")
    assert [view(s) for s in statuses] == [view(on_b)] * 2, statuses
    assert ids_of(records) == clean_ids and hashes_of(records) == {digest}
    assert replicas.hits(member, first, path) == {"A": [], "B": []}
