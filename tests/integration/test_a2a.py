"""A2A through the official `a2a-sdk` client: a standard client that never pre-creates threads.

The client resolves the agent card from the agent's URL, sends a message without a context (the
server creates one, owned by the caller), continues that context, and streams. A context is a
conversation, so another user of the same organization, or another organization, cannot continue it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from uuid import UUID, uuid5

import httpx
import pytest

from tests.integration.server_fixtures import (
    ORG_A,
    ORG_B,
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)

a2a_client = pytest.importorskip("a2a.client")
from a2a.types import Message, Part, Role, SendMessageRequest  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: The agent graph's default assistant: the server derives its id from the graph name.
AGENT_ID = str(uuid5(UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "agent"))
ALICE = token("alice", ORG_A)
CAROL = token("carol", ORG_A, role="admin")
BOB = token("bob", ORG_B)
DOC = b"# Tidepool survey\n\nThe tidepool survey counted 41 sea stars at Marker Rock in May.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    with running_server(tmp_path_factory.mktemp("a2a")) as srv:
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            assert upload(http, ORG_A, ALICE, "tidepool.md", DOC).status_code == 202
            wait_for_status(http, ORG_A, ALICE, "docs/tidepool.md")
        yield srv


def agent_url(server: DevServer) -> str:
    return f"{server.url}/a2a/{AGENT_ID}"


async def send(
    server: DevServer, tok: str, text: str, *, context_id: str = "", stream: bool = False
) -> list[Any]:
    """One message through the SDK client as the token's user; every response it yields."""
    async with httpx.AsyncClient(headers=bearer(tok), timeout=120) as http:
        config = a2a_client.ClientConfig(httpx_client=http, streaming=stream)
        client = await a2a_client.create_client(agent_url(server), client_config=config)
        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], context_id=context_id
        )
        return [event async for event in client.send_message(SendMessageRequest(message=message))]


def task_of(events: list[Any]) -> Any:
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


def answer_of(task: Any) -> str:
    texts = [p.text for m in task.history if m.role == Role.ROLE_AGENT for p in m.parts]
    texts += [p.text for a in task.artifacts for p in a.parts]
    return "\n".join(texts)


def test_the_agent_card_describes_librarian(server):
    card = httpx.get(f"{agent_url(server)}/.well-known/agent-card.json", headers=bearer(ALICE)).json()
    assert card["name"] == "Librarian"
    assert "documents" in card["description"] and "cit" in card["description"]
    assert card["skills"] and card["skills"][0]["name"].startswith("Librarian")
    assert card["skills"][0]["description"] == card["description"]
    assert httpx.get(f"{agent_url(server)}/.well-known/agent-card.json").status_code == 401


async def test_a_new_context_works_and_belongs_to_its_user(server):
    task = task_of(await send(server, ALICE, "How many sea stars did the tidepool survey count?"))
    assert "41" in answer_of(task) and "tidepool.md" in answer_of(task)
    context = task.context_id
    with httpx.Client(base_url=server.url, timeout=30) as http:
        thread = http.get(f"/threads/{context}", headers=bearer(ALICE))
        assert thread.status_code == 200
        assert thread.json()["metadata"]["owner"] == "alice" and thread.json()["metadata"]["kind"] == "chat"
        assert http.get(f"/threads/{context}", headers=bearer(CAROL)).status_code == 404
    follow_up = task_of(await send(server, ALICE, "Where was that?", context_id=context))
    assert follow_up.context_id == context


def stream_raw(
    server: DevServer, tok: str, text: str, *, method: str, context_id: str | None = None
) -> list[dict]:
    """`message/stream` (0.3 names) or `SendStreamingMessage` (1.0) as raw JSON-RPC: the SSE results.

    Raw because langgraph-api 0.16.7 sends its status updates without the 1.0 `statusUpdate` wrapper,
    which the 1.3 SDK's streaming client then reads as empty events (an upstream mismatch).
    """
    message: dict[str, Any] = {"role": "user", "parts": [{"kind": "text", "text": text}], "messageId": "m"}
    if context_id:
        message["contextId"] = context_id
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}
    headers = {**bearer(tok), "Accept": "text/event-stream"}
    response = httpx.post(agent_url(server), json=body, headers=headers, timeout=120)
    assert response.status_code == 200, response.text
    events = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    assert events, response.text
    return events


@pytest.mark.parametrize("method", ["message/stream", "SendStreamingMessage"])
def test_streaming_a_new_context(server, method):
    events = stream_raw(server, ALICE, "Where did the survey count sea stars?", method=method)
    assert all("error" not in e for e in events), events
    final = json.dumps(events[-1])
    assert "completed" in final.lower(), final
    context = next(v for v in _walk(events[0]) if isinstance(v, dict) and "contextId" in v)["contextId"]
    with httpx.Client(base_url=server.url, timeout=30) as http:
        state = http.get(f"/threads/{context}/state", headers=bearer(ALICE)).json()
        assert "Marker Rock" in str(state["values"]["messages"][-1]["content"])
        assert http.get(f"/threads/{context}", headers=bearer(CAROL)).status_code == 404


def _walk(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from _walk(child)


async def test_another_users_or_organizations_context_is_refused(server):
    context = task_of(await send(server, ALICE, "How many sea stars?")).context_id
    for tok in (CAROL, BOB):
        try:
            events = await send(server, tok, "What did I ask before?", context_id=context)
        except Exception as exc:  # the SDK raises the JSON-RPC error
            assert "not found" in str(exc) and "sea stars" not in str(exc)
        else:
            text = " ".join(answer_of(e.task) for e in events if e.HasField("task"))
            assert "sea stars" not in text and "Marker Rock" not in text, text
        for method in ("message/stream", "SendStreamingMessage"):
            events = stream_raw(server, tok, "What did I ask before?", method=method, context_id=context)
            assert "sea stars" not in json.dumps(events) and "error" in events[0], events
    with httpx.Client(base_url=server.url, timeout=30) as http:
        messages = http.get(f"/threads/{context}/state", headers=bearer(ALICE)).json()["values"]["messages"]
        assert all("What did I ask before" not in str(m["content"]) for m in messages)
