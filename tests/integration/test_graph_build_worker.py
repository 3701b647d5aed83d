"""A served graph build runs its CPU-heavy stages in the low-priority ingest worker, not in the process
that answers questions, and builds the same graph as plain Python does inline.

A real `langgraph dev` builds one organization's graph. What shows where the work ran is read from
`/proc`, never from the product: the native libraries only the build needs (spaCy's for extraction,
graspologic's Leiden for communities) are mapped into the worker and not into the server process,
and the CPU time the build costs is the worker's, not the server's (the server only routes,
checkpoints and answers the test's polls). Then the same files are ingested and built inline in this
process, in a fresh data directory, and the two graphs are compared record by record. A worker
killed mid-build is replaced (the stage retries), and a cancel stops the build at the next stage
boundary, as inline.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.stack import Stack
from services.documents import DocumentService
from services.graph_index_service import GraphIndexService
from tests.conftest import SHARED_DIR
from tests.integration.server_fixtures import (
    DOCS,
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)
from tests.integration.tenant_corpus import clean_settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ORG = "acme"
ADMIN = token("ada", ORG, role="admin")
CAROL = SHARED_DIR / "data" / "christmas-carol" / "body_only.txt"
CAROL_BYTES = 60_000  # the first staves: enough text for the build to cost seconds of CPU
FILES = {
    "concepts_chunking.md": DOCS / "md" / "docling-docs" / "concepts_chunking.md",
    "multi_page.pdf": DOCS / "pdf" / "docling" / "multi_page.pdf",
}
# Native code only a build loads: spaCy (extraction) and graspologic's Leiden (communities).
BUILD_LIBRARIES = ("spacy", "graspologic_native")
BUILD_DEADLINE_S = 600.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def corpus() -> dict[str, bytes]:
    if not CAROL.is_file() or not all(p.is_file() for p in FILES.values()):
        pytest.skip(f"example documents not found under {SHARED_DIR} (set LIBRARIAN_SHARED_DIR)")
    text = CAROL.read_bytes()[:CAROL_BYTES]
    return {"carol.txt": text[: text.rfind(b"\n\n")], **{n: p.read_bytes() for n, p in FILES.items()}}


# --- processes, read from /proc ---------------------------------------------------------------------


def stat_fields(pid: int) -> list[str]:
    """/proc/{pid}/stat after the command name: fields[0] is the state (field 3 of proc(5))."""
    return (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()


def cpu_seconds(pid: int) -> float:
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def niceness(pid: int) -> int:
    return int(stat_fields(pid)[16])


def mapped(pid: int, library: str) -> bool:
    """Whether a shared object of `library` (its site-packages folder) is mapped into the process."""
    return f"/{library}/" in (Path("/proc") / str(pid) / "maps").read_text()


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(stat_fields(int(entry.name))[1]) == pid:
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    return found


def ingest_worker(server: DevServer) -> int:
    """The server's ingest worker: its spawned child at a lower priority (LIBRARIAN_INGEST_WORKER_NICE)."""
    assert server.process is not None
    leader = server.process.pid
    workers = [
        pid
        for pid in children(leader)
        if b"spawn_main" in (Path("/proc") / str(pid) / "cmdline").read_bytes()
        and niceness(pid) > niceness(leader)
    ]
    assert len(workers) == 1, f"expected one niced worker under {leader}, found {workers}"
    return workers[0]


# --- the served build -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    env = {"LIBRARIAN_GRAPH_AUTO_BUILD": "false"}  # the build starts when the test asks for it
    with running_server(tmp_path_factory.mktemp("graphworker"), env) as srv:
        yield srv


def graph_status(http: httpx.Client) -> dict[str, Any]:
    response = http.get(f"/orgs/{ORG}/graph", headers=bearer(ADMIN))
    assert response.status_code == 200, response.text
    return response.json()


def start_build(http: httpx.Client) -> None:
    """Ask for a build and wait until it runs."""
    response = http.post(f"/orgs/{ORG}/graph", headers=bearer(ADMIN))
    assert response.status_code == 202, response.text
    deadline = time.monotonic() + BUILD_DEADLINE_S
    while graph_status(http)["lastBuild"]["status"] != "running":
        assert time.monotonic() < deadline, "the build never started"
        time.sleep(0.1)


def wait_for_end(http: httpx.Client) -> dict[str, Any]:
    """Poll until the running build has ended (and the published graph reflects it, if it published)."""
    deadline = time.monotonic() + BUILD_DEADLINE_S
    while True:
        status = graph_status(http)
        last = status["lastBuild"]["status"]
        if last in ("failed", "cancelled") or (last == "published" and status["upToDate"]):
            return status
        assert time.monotonic() < deadline, f"the build did not end: {status}"
        time.sleep(1.0)  # polls cost the server CPU too: few of them


def wait_for_published(http: httpx.Client, documents: int) -> dict[str, Any]:
    status = wait_for_end(http)
    assert status["lastBuild"]["status"] == "published", status
    assert status["documents"] == documents
    return status


@pytest.fixture(scope="module")
def served_build(server: DevServer) -> dict[str, Any]:
    """Ingest the corpus over HTTP, then build once; what the build cost each process."""
    files = corpus()
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for name, data in files.items():
            response = upload(http, ORG, ADMIN, name, data)
            assert response.status_code == 202, response.text
            wait_for_status(http, ORG, ADMIN, response.json()["path"], done=("indexed",))
        assert server.process is not None
        leader, worker = server.process.pid, ingest_worker(server)
        libraries_before = {lib: mapped(leader, lib) for lib in BUILD_LIBRARIES}
        server_cpu, worker_cpu = cpu_seconds(leader), cpu_seconds(worker)
        start_build(http)
        report = wait_for_published(http, documents=len(files))
        return {
            "report": report,
            "leader": leader,
            "worker": worker,
            "libraries_before": libraries_before,
            "server_cpu": cpu_seconds(leader) - server_cpu,
            "worker_cpu": cpu_seconds(worker) - worker_cpu,
        }


@pytest.fixture(scope="module")
def inline_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same files ingested and built in this process (plain Python builds inline); its CPU time."""
    with pytest.MonkeyPatch.context() as mp:
        stack = Stack(clean_settings(tmp_path_factory.mktemp("inline") / "data", mp))
    docs = DocumentService(stack, InMemorySaver())
    for name, data in corpus().items():
        assert docs.ingest(ORG, docs.upload(ORG, name, data)).status == "indexed"
    started = time.process_time()
    report = GraphIndexService(stack, InMemorySaver()).build(ORG)
    cpu = time.process_time() - started
    assert report["lastBuild"]["status"] == "published", report
    return {"stack": stack, "report": report, "cpu": cpu}


def test_the_heavy_stages_run_in_the_worker_not_in_the_server(served_build, inline_build):
    leader, worker = served_build["leader"], served_build["worker"]
    assert served_build["libraries_before"] == dict.fromkeys(BUILD_LIBRARIES, False)  # ingest needs neither
    for library in BUILD_LIBRARIES:  # extraction and community detection ran in the worker
        assert mapped(worker, library), f"{library} was not loaded by the worker"
        assert not mapped(leader, library), f"{library} was loaded by the server process"
    assert niceness(worker) >= niceness(leader) + 10  # LIBRARIAN_INGEST_WORKER_NICE's default
    # Merge, summaries and embeddings have no library of their own: their CPU time tells. The inline
    # build's CPU (model loads included) is the yardstick of what the build costs.
    server_cpu, worker_cpu, inline_cpu = (
        served_build["server_cpu"],
        served_build["worker_cpu"],
        inline_build["cpu"],
    )
    figures = f"server {server_cpu:.2f}s, worker {worker_cpu:.2f}s, inline build {inline_cpu:.2f}s CPU"
    assert worker_cpu >= 0.5 * inline_cpu, figures
    assert server_cpu <= 0.25 * inline_cpu, figures


def test_the_worker_builds_the_graph_plain_python_builds_inline(served_build, inline_build, server):
    with pytest.MonkeyPatch.context() as mp:
        served_stack = Stack(clean_settings(server.workdir.parent / "data", mp))
    served, inline = served_stack.graph_store.scope(ORG), inline_build["stack"].graph_store.scope(ORG)
    report, expected = served_build["report"], inline_build["report"]
    for key in ("entities", "edges", "claims", "communitiesPerLevel", "documents"):
        assert report[key] == expected[key], key
    assert report["entities"] > 50 and sum(report["communitiesPerLevel"].values()) > 5

    # whole records, provenance and summaries included
    assert served.entities() == inline.entities()
    assert served.edges() == inline.edges()
    names = [e.name for e in inline.entities()]
    assert served.claims_for(names) == inline.claims_for(names)
    assert served.communities() == inline.communities()  # members, fingerprints, titles, summaries
    for vectors in ("summary_embeddings", "entity_name_embeddings"):
        served_keys, served_vectors = getattr(served, vectors)()
        inline_keys, inline_vectors = getattr(inline, vectors)()
        assert served_keys == inline_keys and served_vectors.shape == inline_vectors.shape
        np.testing.assert_allclose(served_vectors, inline_vectors, atol=1e-6)


def test_a_worker_killed_mid_build_is_replaced_and_the_build_publishes(served_build, server):
    """The stage the kill interrupts (or the next one, finding the pool broken) fails as transient;
    its retry runs on a fresh worker, and the build publishes as if nothing happened."""
    killed = served_build["worker"]
    more = CAROL.read_bytes()[CAROL_BYTES : 2 * CAROL_BYTES]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        response = upload(http, ORG, ADMIN, "carol-more.txt", more[: more.rfind(b"\n\n")])
        assert response.status_code == 202, response.text
        wait_for_status(http, ORG, ADMIN, response.json()["path"], done=("indexed",))
        assert ingest_worker(server) == killed  # ingest used the same worker
        start_build(http)
        os.kill(killed, signal.SIGKILL)  # mid-extraction: the new document takes seconds of spaCy
        report = wait_for_published(http, documents=len(FILES) + 2)
    assert report["lastBuild"]["extracted"] == ["docs/carol-more.txt"]
    assert "the ingest worker process died; retrying on a new one" in server.log()  # a stage retried
    replacement = ingest_worker(server)
    assert replacement != killed and mapped(replacement, "spacy")
    assert server.process is not None and not mapped(server.process.pid, "spacy")
    with pytest.MonkeyPatch.context() as mp:
        served_stack = Stack(clean_settings(server.workdir.parent / "data", mp))
    versions = served_stack.graph_store.scope(ORG).versions()
    assert [(v.version, v.status) for v in versions] == [(report["version"], "published")]


def test_a_build_cancelled_while_the_worker_extracts_ends_cancelled_at_the_next_boundary(
    served_build, server
):
    """The worker cannot see the cancel flag; the node after its stage does, and the build ends
    `cancelled` with the published graph as it was."""
    rest = CAROL.read_bytes()[2 * CAROL_BYTES :]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        published = graph_status(http)
        response = upload(http, ORG, ADMIN, "carol-rest.txt", rest)
        assert response.status_code == 202, response.text
        path = response.json()["path"]
        wait_for_status(http, ORG, ADMIN, path, done=("indexed",))
        start_build(http)
        cancelled = http.post(f"/orgs/{ORG}/graph/cancel", headers=bearer(ADMIN))
        assert cancelled.status_code == 202 and cancelled.json()["stopping"], cancelled.text
        status = wait_for_end(http)
    assert status["lastBuild"]["status"] == "cancelled", status["lastBuild"]
    assert status["version"] == published["version"] and status["staleDocuments"] == [path]
    with pytest.MonkeyPatch.context() as mp:
        served_stack = Stack(clean_settings(server.workdir.parent / "data", mp))
    versions = served_stack.graph_store.scope(ORG).versions()
    assert [(v.version, v.status) for v in versions] == [(published["version"], "published")]
