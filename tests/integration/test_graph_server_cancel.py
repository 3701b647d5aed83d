"""Cancelling a server run stops global search: no model call reaches the model after the cancel.

A real `langgraph dev` serves the agent with LIBRARIAN_CHAT_MODEL pointed at the local OpenAI wire
server. The "model" answers the question with a call to `graph_global_search`, whose map step then
sends one request per batch of community summaries, at most 4 at a time. The wire server holds every
map request, so the run is mid-map with more batches still to go when the test cancels it through the
Platform API (POST /threads/{id}/runs/{run_id}/cancel). Then the held requests are released: if the
cancel did not reach the map workers, they would go on to the next batches and the reduce, and those
requests would reach the wire server. Requests already in flight at the cancel may finish; no new one
may start.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from librarian.graph.query.global_batches import build_batches
from librarian.graph.query.global_inputs import augmented_text, load_communities
from librarian.graph.query.global_search import MAP_CONCURRENCY, MAP_PROMPT, REDUCE_PROMPT
from librarian.stack import Stack
from tests.graph_fixtures import CHUNKS, axis, fixture_graph, publish_graph
from tests.graph_vectors import index_graph_chunks
from tests.integration.server_fixtures import DevServer, bearer, running_server, token
from tests.integration.tenant_corpus import clean_settings
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ORG = "acme"
QUESTION = "What are the main themes across these documents?"
HOLD_LIMIT_S = 120.0  # a held request is answered at the latest then, so no thread hangs forever
QUIET_S = 3.0  # after the release, how long no new model request may arrive
# ~18k tokens per leaf summary: each is split into 3 parts, one batch each, so the map has 6 batches
LONG_SUMMARY = " ".join(["Scrooge walks through foggy London at night, counting every coin he owns."] * 1500)
MAP_HEAD = MAP_PROMPT.split("\n", 1)[0]
REDUCE_HEAD = REDUCE_PROMPT.split("\n", 1)[0]


def kind_of(body: Any) -> str:
    """Which step a chat request belongs to: the agent's model turn, a map batch or the reduce."""
    messages = (body or {}).get("messages") or [{}]
    content = str(messages[-1].get("content") or "")
    return "map" if content.startswith(MAP_HEAD) else "reduce" if content.startswith(REDUCE_HEAD) else "agent"


class HoldingWireServer(OpenAIWireServer):
    """The wire server, holding every map request until `release` is set.

    The hold happens before the base class takes its lock, so held requests do not block others, and
    each chat request's arrival is recorded the moment it comes in (`arrivals`), held or not.
    """

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.arrivals: list[str] = []
        self._arrival_lock = threading.Lock()

    def handle(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if path.split("?")[0].endswith("/chat/completions"):
            kind = kind_of(body)
            with self._arrival_lock:
                self.arrivals.append(kind)
            if kind == "map":
                self.release.wait(HOLD_LIMIT_S)
        return super().handle(method, path, headers, body)

    def arrived(self, kind: str | None = None) -> int:
        with self._arrival_lock:
            return sum(1 for k in self.arrivals if kind is None or k == kind)


def scripted_reply(body: dict[str, Any]) -> TextReply:
    """What the model says after its first turn (a call to graph_global_search)."""
    kind = kind_of(body)
    if kind == "map":
        return TextReply(json.dumps({"answer": "Scrooge counts coins.", "usefulness": 60}))
    if kind == "reduce":
        return TextReply(json.dumps({"answer": "Money [Community ID: 2]."}))
    return TextReply("The main theme is money [1].")


def publish_long_graph(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """The fixture graph with long leaf summaries, published and indexed in the server's data
    directory; returns how many map batches global search makes of it."""
    stack = Stack(clean_settings(data_dir, monkeypatch))
    entities, edges, claims, communities = fixture_graph()
    communities = [
        dataclasses.replace(c, summary=f"{c.summary} {LONG_SUMMARY}") if c.is_leaf else c for c in communities
    ]
    embeddings = {e.name: axis(3) if "scrooge" in e.name else axis(4) for e in entities}
    graph = stack.graph_store.scope(ORG)
    publish_graph(graph, CHUNKS, entities, edges, claims, communities, embeddings, embedding_model="axes-8")
    index_graph_chunks(stack, ORG, CHUNKS)  # global search cites only what the index holds
    inputs = load_communities(graph, graph.published_version(), None)
    skeleton = MAP_PROMPT.format(query=QUESTION, content="")
    batches = build_batches([(c.id, augmented_text(c)) for c in inputs], skeleton, 8000 - 512)
    stack.graph_store.close()
    return len(batches)


@pytest.fixture(scope="module")
def wire() -> Iterator[HoldingWireServer]:
    with HoldingWireServer() as server:
        try:
            yield server
        finally:
            server.release.set()  # let any held handler thread finish


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, wire: HoldingWireServer
) -> Iterator[tuple[DevServer, int]]:
    tmp = tmp_path_factory.mktemp("cancelserver")
    with pytest.MonkeyPatch.context() as mp:
        batches = publish_long_graph(tmp / "data", mp)
    env = {
        "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
        "LIBRARIAN_CHAT_BASE_URL": wire.base_url,
        "OPENAI_API_KEY": TEST_API_KEY,
    }
    with running_server(tmp, env) as server:
        yield server, batches


def wait_until(condition: Any, deadline_s: float, what: str, context: Any = str) -> None:
    """Poll `condition` until it holds; past the deadline fail, saying what `context()` shows."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {deadline_s}s\n{context()}"
        time.sleep(0.05)


def test_cancelled_run_sends_no_model_request_after_the_cancel(
    served: tuple[DevServer, int], wire: HoldingWireServer
) -> None:
    from langgraph_sdk import get_sync_client

    server, batches = served
    assert batches > MAP_CONCURRENCY  # batches remain to be mapped while the first ones are held
    wire.chat_script.append(ToolCallReply("graph_global_search", {"query": QUESTION}))
    wire.default_reply = scripted_reply
    client = get_sync_client(url=server.url, headers=bearer(token("ada", ORG)), timeout=60)
    thread = client.threads.create()
    run = client.runs.create(
        thread["thread_id"], "agent", input={"messages": [{"role": "user", "content": QUESTION}]}
    )

    def context() -> str:
        runs = client.runs.list(thread["thread_id"])
        return f"model requests: {wire.arrivals}; runs: {[r['status'] for r in runs]}\n{server.log_tail(60)}"

    wait_until(lambda: wire.arrived("map") == MAP_CONCURRENCY, 180, "the first map batches", context)
    assert wire.arrived() == 1 + MAP_CONCURRENCY  # the agent's turn, then the map workers

    client.runs.cancel(thread["thread_id"], run["run_id"])  # returns once the server has accepted it
    at_cancel = wire.arrived()
    wire.release.set()  # the held map requests now answer; a worker still running would go on

    def status() -> str:
        return client.runs.get(thread["thread_id"], run["run_id"])["status"]

    wait_until(lambda: status() not in ("pending", "running"), 60, "the end of the run", context)
    assert status() == "interrupted"
    quiet_until = time.monotonic() + QUIET_S
    while time.monotonic() < quiet_until:
        assert wire.arrived() == at_cancel, f"model requests after the cancel: {wire.arrivals[at_cancel:]}"
        time.sleep(0.05)
    assert wire.arrived("reduce") == 0 and wire.arrived("map") == MAP_CONCURRENCY < batches
