"""Cancelling a graph build: it stops at the next stage boundary, its queued successor never runs, and the
published graph stays as it was.

In plain Python the cancel flag is set between two stages. Through a real `langgraph dev` server an
admin calls POST /orgs/{org}/graph/cancel while the build is mid-way: the LLM summarizer points at the
local OpenAI wire server, which holds every summary request until the test lets them go, so the build
sits in its `summarize` stage with summaries left to write when the cancel arrives.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.runs import cancellation
from services.documents import DocumentService
from services.graph_index_service import GraphIndexService
from tests.integration.server_fixtures import (
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply

ORG = "acme"
ADMIN = token("ada", ORG, role="admin")
MEMBER = token("max", ORG)
READER = token("rex", ORG, role="reader")
CAROL = b"Ebenezer Scrooge employs Bob Cratchit in London. Mr. Scrooge fears Jacob Marley."
TIM = b"Bob Cratchit carries Tiny Tim home from the church. Tiny Tim blesses Bob Cratchit."
SPIRITS = (
    b"The Ghost of Christmas Past shows Fezziwig to Scrooge. Belle leaves Scrooge in the city. "
    b"Fred invites Scrooge to dinner in Camden Town."
)
SUMMARY = TextReply(json.dumps({"communityName": "Counting-house", "summaryContent": "Scrooge employs Bob."}))
HOLD_LIMIT_S = 120.0  # a held request is answered at the latest then, so no thread hangs forever
QUIET_S = 3.0


# --- plain Python: the flag between two stages ----------------------------------------------------------


@pytest.fixture
def services(stack):
    saver = InMemorySaver()
    return DocumentService(stack, saver), GraphIndexService(stack, saver)


def add(docs: DocumentService, name: str, data: bytes) -> str:
    path = docs.upload(ORG, name, data)
    assert docs.ingest(ORG, path).status == "indexed"
    return path


def test_a_build_cancelled_between_stages_ends_there_and_the_published_graph_stays(services, stack):
    docs, graphs = services
    add(docs, "carol.txt", CAROL)
    assert graphs.build(ORG)["version"] == 1
    add(docs, "tim.txt", TIM)
    run_id = str(uuid.uuid4())
    nodes: list[str] = []

    def on_update(update: dict[str, Any]) -> None:
        nodes.extend(update)
        if "communities" in update:  # the build has written a new version, not published it
            cancellation.cancel_run(run_id)

    config = {**graphs.config(ORG), "run_id": uuid.UUID(run_id)}
    for update in graphs.graph.stream({}, config, context={"organization_id": ORG}, stream_mode="updates"):
        on_update(update)

    assert nodes[-2:] == ["communities", "summarize"]  # summarize found the cancel and ended the build
    report = graphs.status(ORG)
    assert report["lastBuild"]["status"] == "cancelled"
    assert report["version"] == 1 and report["documents"] == 1  # the published graph is the old one
    assert [v.status for v in stack.graph_store.scope(ORG).versions()] == ["published"]  # its draft went
    assert report["staleDocuments"] == ["docs/tim.txt"]

    rebuilt = graphs.build(ORG)  # the next build starts afresh, whatever the last one ended with
    assert rebuilt["lastBuild"]["status"] == "published" and rebuilt["version"] == 2
    assert rebuilt["documents"] == 2 and rebuilt["upToDate"]


# --- through the server -----------------------------------------------------------------------------------


class GatedWireServer(OpenAIWireServer):
    """The wire server; while `gate` is clear every chat request waits for it (up to HOLD_LIMIT_S).

    Arrivals are counted before the wait and outside the base class's lock, so held requests block
    nobody else."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self._arrived = 0
        self._arrival_lock = threading.Lock()

    def handle(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if path.split("?")[0].endswith("/chat/completions"):
            with self._arrival_lock:
                self._arrived += 1
            self.gate.wait(HOLD_LIMIT_S)
        return super().handle(method, path, headers, body)

    def arrived(self) -> int:
        with self._arrival_lock:
            return self._arrived


@pytest.fixture(scope="module")
def wire() -> Iterator[GatedWireServer]:
    with GatedWireServer() as server:
        server.default_reply = SUMMARY
        try:
            yield server
        finally:
            server.gate.set()  # let any held handler thread finish


@pytest.fixture(scope="module")
def server(tmp_path_factory, wire: GatedWireServer) -> Iterator[DevServer]:
    env = {
        "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
        "LIBRARIAN_CHAT_BASE_URL": wire.base_url,
        "OPENAI_API_KEY": TEST_API_KEY,
        "LIBRARIAN_GRAPH_SUMMARIZER": "llm",
        "LIBRARIAN_GRAPH_AUTO_BUILD": "false",  # builds start when the test asks for them
    }
    with running_server(tmp_path_factory.mktemp("graphcancel"), env) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server: DevServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def graph_status(http: httpx.Client) -> dict[str, Any]:
    response = http.get(f"/orgs/{ORG}/graph", headers=bearer(READER))
    assert response.status_code == 200, response.text
    return response.json()


def wait_until(condition: Any, deadline_s: float, what: str, context: Any = lambda: "") -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {deadline_s}s\n{context()}"
        time.sleep(0.1)


def build_ended(http: httpx.Client) -> dict[str, Any]:
    last: dict[str, Any] = {}

    def ended() -> bool:
        nonlocal last
        last = graph_status(http)
        return last["lastBuild"]["status"] not in ("queued", "running")

    wait_until(ended, 300, "the end of the build", lambda: json.dumps(last["lastBuild"]))
    return last


def add_document(http: httpx.Client, name: str, data: bytes) -> None:
    response = upload(http, ORG, MEMBER, name, data)
    assert response.status_code == 202, response.text
    wait_for_status(http, ORG, MEMBER, response.json()["path"], done=("indexed",))


def rebuild(http: httpx.Client) -> dict[str, Any]:
    response = http.post(f"/orgs/{ORG}/graph", headers=bearer(ADMIN))
    assert response.status_code == 202, response.text
    return response.json()


def cancel(http: httpx.Client, tok: str = ADMIN) -> httpx.Response:
    return http.post(f"/orgs/{ORG}/graph/cancel", headers=bearer(tok))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_only_admins_cancel_and_only_a_queued_or_running_build(http):
    for tok in (MEMBER, READER):
        refused = cancel(http, tok)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert cancel(http, token("olga", "globex", role="admin")).status_code == 403  # not its organization
    idle = cancel(http)
    assert idle.status_code == 409 and idle.json()["error"]["code"] == "no_active_build"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_admin_cancels_a_running_build_mid_way_and_its_queued_successor(server, http, wire):
    add_document(http, "carol.txt", CAROL)
    rebuild(http)
    first = build_ended(http)
    assert first["lastBuild"]["status"] == "published" and first["version"] == 1

    add_document(http, "spirits.txt", SPIRITS)  # new people, new communities: summaries to write
    wire.gate.clear()
    held_before = wire.arrived()
    running = rebuild(http)
    context = lambda: f"{graph_status(http)['lastBuild']}\n{server.log_tail(40)}"  # noqa: E731
    wait_until(lambda: wire.arrived() > held_before, 300, "a summary request of the build", context)
    queued = rebuild(http)  # behind the running build
    assert queued["coalesced"] is False and queued["run_id"] != running["run_id"]

    response = cancel(http)
    at_cancel = wire.arrived()
    wire.gate.set()  # the held summaries answer; the build stops at its next stage boundary

    assert response.status_code == 202, response.text
    body = response.json()
    assert body["organization_id"] == ORG and body["thread_id"] == running["thread_id"]
    assert body["stopping"] == [running["run_id"]] and body["removed"] == [queued["run_id"]]
    status = build_ended(http)
    last = status["lastBuild"]
    assert last["status"] == "cancelled", last
    # the published graph is the one from before: same version, one document, the new one stale
    assert status["version"] == 1 and status["documents"] == 1
    assert status["staleDocuments"] == ["docs/spirits.txt"]
    quiet_until = time.monotonic() + QUIET_S  # no summary after the cancel, and the queued build never ran
    while time.monotonic() < quiet_until:
        assert wire.arrived() == at_cancel
        assert graph_status(http)["lastBuild"]["status"] == "cancelled"
        time.sleep(0.25)
    again = cancel(http)
    assert again.status_code == 409  # nothing left to cancel

    rebuild(http)  # a cancelled build leaves nothing in the way of the next one
    after = build_ended(http)
    assert after["lastBuild"]["status"] == "published" and after["version"] == 2 and after["upToDate"]
