"""A hostile tenant against a real `langgraph dev`: graph access by role, clean 4xx, tokens, names, ids.

Each test is the server-level proof of one finding of the abuse run (issue 14) and failed before its
fix: readers could create and run ingest assistants and schedule ingest crons (1); five requests
crashed platform code with a 500 (2); tokens with a string or astronomic `exp` were accepted (3);
look-alike slashes and Windows device names were valid file names (4); creating a thread or
assistant with another organization's id answered differently from a fresh id (6). The `X-Api-Key`
header (issue 15) and a bounded OpenAPI fuzz of the whole server close the module.

One server for the module; no chat model is needed (the agent answers extractively).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest

from bench.fuzz_server import fuzz, still_answers
from tests.integration.server_fixtures import (
    ORG_A,
    ORG_B,
    SECRET,
    DevServer,
    bearer,
    running_server,
    token,
    upload,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")  # langgraph_api.graph
MEMBER = token("mallory", ORG_B)
READER = token("rita", ORG_B, role="reader")
ADMIN = token("ada", ORG_B, role="admin")
ALICE = token("alice", ORG_A)
MEMBER_A = token("amos", ORG_A)  # a member of the other organization
QUESTION = {"messages": [{"role": "user", "content": "What is the refund policy?"}]}
NON_CLIENT_GRAPHS = ("ingest", "reindex", "graph_index")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    with running_server(tmp_path_factory.mktemp("abuse")) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def assert_error_shape(response: httpx.Response, *statuses: int) -> dict[str, Any]:
    """A 4xx (one of `statuses` if given) with `{"error": {"code", "message"}}` and no traceback."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    if statuses:
        assert response.status_code in statuses, (response.status_code, response.text[:300])
    body = response.json()
    error = body["error"]
    assert isinstance(error["code"], str | int) and isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in response.text
    return error


def _thread(http: httpx.Client, tok: str) -> str:
    response = http.post("/threads", json={}, headers=bearer(tok))
    assert response.status_code == 200, response.text
    return response.json()["thread_id"]


def _default_assistant(graph: str) -> str:
    return str(uuid.uuid5(NAMESPACE_GRAPH, graph))


# --- finding 1: only the agent graph, through every entry point -------------------------------------


@pytest.mark.parametrize("tok", [READER, MEMBER, ADMIN], ids=["reader", "member", "admin"])
def test_assistants_can_only_be_made_for_the_agent_graph(http, tok):
    for graph in NON_CLIENT_GRAPHS:
        response = http.post(
            "/assistants", json={"graph_id": graph, "name": f"x-{graph}"}, headers=bearer(tok)
        )
        assert_error_shape(response, 403)
    assert_error_shape(http.post("/assistants", json={"graph_id": "no-such-graph"}, headers=bearer(tok)))
    made = http.post("/assistants", json={"graph_id": "agent", "name": "helper"}, headers=bearer(tok))
    assert made.status_code == 200, made.text
    assistant = made.json()["assistant_id"]
    for graph in NON_CLIENT_GRAPHS:
        repoint = http.patch(f"/assistants/{assistant}", json={"graph_id": graph}, headers=bearer(tok))
        assert_error_shape(repoint, 403)
    assert http.get(f"/assistants/{assistant}", headers=bearer(tok)).json()["graph_id"] == "agent"
    rename = http.patch(f"/assistants/{assistant}", json={"name": "helper-2"}, headers=bearer(tok))
    assert rename.status_code == 200 and rename.json()["graph_id"] == "agent"


def _run_entry_points(thread: str, assistant_id: str) -> list[tuple[str, Any]]:
    body = {"assistant_id": assistant_id, "input": {"path": "docs/never-uploaded.md"}}
    cron = {"assistant_id": assistant_id, "schedule": "*/5 * * * *", "input": {"path": "docs/x.md"}}
    return [
        ("/runs", body),
        ("/runs/wait", body),
        ("/runs/stream", body),
        ("/runs/batch", [body]),
        (f"/threads/{thread}/runs", body),
        (f"/threads/{thread}/runs/wait", body),
        (f"/threads/{thread}/runs/stream", body),
        ("/runs/crons", cron),
        (f"/threads/{thread}/runs/crons", cron),
    ]


@pytest.mark.parametrize("tok", [READER, MEMBER], ids=["reader", "member"])
def test_non_agent_graphs_cannot_be_run_or_scheduled_anywhere(http, tok):
    thread = _thread(http, tok)
    refused = 0
    for graph in NON_CLIENT_GRAPHS:
        for assistant_id in (graph, _default_assistant(graph)):
            for path, body in _run_entry_points(thread, assistant_id):
                response = http.post(path, json=body, headers=bearer(tok))
                assert_error_shape(response)
                refused += 1
    assert refused == len(NON_CLIENT_GRAPHS) * 2 * 9
    # Nothing was scheduled and no ingest run exists on the caller's thread.
    assert http.post("/runs/crons/search", json={}, headers=bearer(tok)).json() == []
    assert http.get(f"/threads/{thread}/runs", headers=bearer(tok)).json() == []


def test_mcp_and_a2a_cannot_run_ingest(http):
    headers = {**bearer(READER), "Accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    for name in NON_CLIENT_GRAPHS[:2]:
        response = http.post(
            "/mcp",
            json={**call, "params": {"name": name, "arguments": {"path": "docs/x.md"}}},
            headers=headers,
        )
        assert response.status_code < 500, response.text[:300]
        assert "error" in response.json()  # a refusal, as HTTP 4xx or as a JSON-RPC error
        message = {"role": "user", "parts": [{"kind": "text", "text": "docs/x.md"}], "messageId": "m1"}
        a2a = http.post(
            f"/a2a/{_default_assistant(name)}",
            json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}},
            headers=headers,
        )
        assert a2a.status_code < 500 and "error" in a2a.json(), a2a.text[:300]


def test_protocol_v2_run_start_follows_the_same_rules(http):
    """`POST /threads/{id}/commands` `run.start` (the v2 streaming protocol) creates runs too."""
    thread = _thread(http, READER)

    def start(thread_id: str, assistant_id: str, tok: str = READER) -> dict[str, Any]:
        command = {
            "id": 1,
            "method": "run.start",
            "params": {"assistant_id": assistant_id, "input": QUESTION},
        }
        response = http.post(f"/threads/{thread_id}/commands", json=command, headers=bearer(tok))
        assert response.status_code < 500, response.text[:300]
        return response.json()

    for assistant_id in ("ingest", _default_assistant("ingest"), _default_assistant("reindex")):
        answer = start(thread, assistant_id)
        assert answer["type"] == "error" and "only the agent graph" in answer["message"], answer
    assert start(thread, "agent")["type"] == "success"
    foreign, fresh = start(thread, "agent", MEMBER_A), start(str(uuid.uuid4()), "agent", MEMBER_A)
    # Another organization's thread and a fresh id get the same refusal (webapi/thread_gate.py).
    assert foreign == fresh and foreign["error"]["code"] == "not_found", (foreign, fresh)


def test_readers_still_ask_the_agent(http):
    response = http.post(
        "/runs/wait", json={"assistant_id": "agent", "input": QUESTION}, headers=bearer(READER)
    )
    assert response.status_code == 200, response.text
    assert response.json()["messages"][-1]["type"] == "ai"
    made = http.post("/assistants", json={"graph_id": "agent"}, headers=bearer(READER)).json()
    own = http.post(
        "/runs/wait", json={"assistant_id": made["assistant_id"], "input": QUESTION}, headers=bearer(READER)
    )
    assert own.status_code == 200, own.text
    cron = http.post(
        "/runs/crons", json={"assistant_id": "agent", "schedule": "0 9 * * 1"}, headers=bearer(READER)
    )
    assert cron.status_code == 200, cron.text
    assert http.delete(f"/runs/crons/{cron.json()['cron_id']}", headers=bearer(READER)).status_code in (
        200,
        204,
    )


# --- finding 2: the requests that crashed platform code are clean 4xx ------------------------------


def test_requests_that_crashed_the_platform_are_clean_4xx(http):
    thread = _thread(http, MEMBER)  # a thread without values is what made the values filter crash
    mcp_headers = {**bearer(MEMBER), "Accept": "application/json, text/event-stream"}
    attempts = [
        ("POST", "/threads/search", {"values": {"messages": []}}),
        ("POST", "/runs/crons", {"limit": -5, "offset": -10}),
        ("POST", f"/threads/{thread}/runs/crons", {"limit": -5, "offset": -10}),
        ("POST", "/runs/crons", {"metadata": {"a\u0000b": 1}}),
        ("POST", f"/threads/{thread}/runs/crons", {"metadata": {"a\u0000b": 1}}),
        ("POST", "/runs/crons", {"assistant_id": "agent"}),  # no schedule
        ("POST", "/runs/crons", {"schedule": "* * * * *"}),  # no assistant
        ("POST", "/store/items/search", {}),
        ("PUT", "/store/items", {"namespace": ["x"], "key": "k", "value": {}}),
        ("GET", f"/threads/{thread}/history?limit=-38851757353761299360104240938620", None),
        ("GET", f"/threads/{thread}/storage", None),  # a 501 with Librarian's checkpointer
        ("POST", "/threads/%29%0E/commands", 60.0),  # not a thread id
    ]
    for method, path, body in attempts:
        response = http.request(method, path, json=body, headers=bearer(MEMBER))
        assert_error_shape(response)
    mcp = http.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "ingest", "arguments": {}},
        },
        headers=mcp_headers,
    )
    # `ingest` is not a tool of Librarian's /mcp: a JSON-RPC error (HTTP 200, as MCP clients expect).
    assert mcp.status_code == 200 and mcp.json()["error"]["code"] == -32602, mcp.text[:300]
    bad_context = http.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "agent", "arguments": QUESTION, "context": "not-an-object"},
        },
        headers=mcp_headers,
    )
    assert bad_context.status_code < 500, bad_context.text[:300]
    assert http.post("/threads/search", json={"metadata": {}}, headers=bearer(MEMBER)).status_code == 200


# --- finding 3: tokens ------------------------------------------------------------------------------


def _signed(**overrides: Any) -> str:
    now = int(time.time())
    claims = {"sub": "mallory", "org": ORG_B, "orgs": [ORG_B], "iat": now, "exp": now + 600, **overrides}
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, SECRET, algorithm="HS256")


def test_tokens_that_never_expire_are_refused(http):
    now = int(time.time())
    huge = jwt.api_jws.encode(
        json.dumps({"sub": "mallory", "org": ORG_B, "orgs": [ORG_B], "iat": now, "exp": 1e308}).encode(),
        SECRET,
        algorithm="HS256",
    )
    tokens = {
        "exp-string": _signed(exp=str(now + 600)),
        "exp-string-far": _signed(exp="99999999999"),
        "exp-1e308": huge,
        "iat-string": _signed(iat=str(now)),
        "nbf-string": _signed(nbf=str(now)),
        "lifetime-48h": _signed(exp=now + 48 * 3600),
        "no-iat-10y": _signed(iat=None, exp=now + 10 * 365 * 86400),
    }
    for name, tok in tokens.items():
        response = http.post("/threads/search", json={}, headers=bearer(tok))
        assert response.status_code == 401, (name, response.status_code)
        assert_error_shape(response, 401)
    assert http.post("/threads/search", json={}, headers=bearer(_signed())).status_code == 200


# --- finding 4: file names ----------------------------------------------------------------------------


def test_lookalike_slashes_and_device_names_are_refused_on_upload(http):
    names = [
        "a\u2215b.md",
        "a\u2044b.md",
        "a\uff0fb.md",
        "CON",
        "aux.md",
        "NUL.txt",
        "com1.pdf",
        "LPT\u00b9.md",
    ]
    for name in names:
        response = upload(http, ORG_B, MEMBER, name, b"# hello\n\nsome text\n", "text/markdown")
        error = assert_error_shape(response, 400)
        assert "file name" in error["message"], error
    listing = http.get(f"/orgs/{ORG_B}/documents", headers=bearer(MEMBER)).json()["documents"]
    assert not {d["path"] for d in listing} & {f"docs/{n}" for n in names}


# --- finding 6: no existence oracle ----------------------------------------------------------------


def _answer(response: httpx.Response) -> tuple[int, str]:
    """What a caller can observe of an answer (the refusal never echoes the id)."""
    return response.status_code, response.text


def test_creating_with_another_orgs_id_answers_like_a_fresh_id(http):
    acme_thread = _thread(http, ALICE)
    acme_assistant = http.post("/assistants", json={"graph_id": "agent"}, headers=bearer(ALICE)).json()
    fresh = str(uuid.uuid4())
    for body_key, path, existing, extra in [
        ("thread_id", "/threads", acme_thread, {}),
        ("thread_id", "/threads", acme_thread, {"if_exists": "do_nothing"}),
        ("assistant_id", "/assistants", acme_assistant["assistant_id"], {"graph_id": "agent"}),
        (
            "assistant_id",
            "/assistants",
            acme_assistant["assistant_id"],
            {"graph_id": "agent", "if_exists": "do_nothing"},
        ),
    ]:
        taken = http.post(path, json={body_key: existing, **extra}, headers=bearer(MEMBER))
        new = http.post(path, json={body_key: fresh, **extra}, headers=bearer(MEMBER))
        assert _answer(taken) == _answer(new), (path, taken.text, new.text)
        assert_error_shape(taken, 403)
    run = {"assistant_id": "agent", "input": QUESTION, "if_not_exists": "create"}
    taken = http.post(f"/threads/{acme_thread}/runs/wait", json=run, headers=bearer(MEMBER))
    new = http.post(f"/threads/{fresh}/runs/wait", json=run, headers=bearer(MEMBER))
    assert taken.status_code == new.status_code == 403 and taken.json() == new.json()
    # Acme's thread is untouched and the server still assigns ids to clients that let it.
    assert (
        http.get(f"/threads/{acme_thread}", headers=bearer(ALICE)).json()["metadata"]["organization_id"]
        == ORG_A
    )
    assert http.post("/threads", json={"metadata": {"topic": "x"}}, headers=bearer(MEMBER)).status_code == 200


# --- issue 15: X-Api-Key --------------------------------------------------------------------------


def test_x_api_key_is_accepted_with_the_same_checks(http):
    assert http.post("/threads/search", json={}, headers={"X-Api-Key": MEMBER}).status_code == 200
    assert http.get(f"/orgs/{ORG_B}/documents", headers={"X-Api-Key": MEMBER}).status_code == 200
    both_same = {"X-Api-Key": MEMBER, **bearer(MEMBER)}
    assert http.post("/threads/search", json={}, headers=both_same).status_code == 200
    expired = token("mallory", ORG_B, ttl_s=-3600)
    for name, headers in {
        "garbage": {"X-Api-Key": "lsv2_pt_0123456789abcdef"},
        "expired": {"X-Api-Key": expired},
        "forged": {"X-Api-Key": jwt.encode({"sub": "m", "org": ORG_B, "exp": 2**31}, "k" * 40)},
        "two-tokens": {"X-Api-Key": READER, **bearer(MEMBER)},
        "bearer-bad-key-good": {"X-Api-Key": MEMBER, **bearer("not.a.jwt")},
        "not-a-member": {"X-Api-Key": MEMBER},
    }.items():
        path = f"/orgs/{ORG_A}/documents" if name == "not-a-member" else "/threads/search"
        response = http.request("GET" if path.startswith("/orgs") else "POST", path, json={}, headers=headers)
        assert response.status_code == (403 if name == "not-a-member" else 401), (name, response.text)


# --- bounded fuzz of the whole OpenAPI ------------------------------------------------------------------


def test_fuzz_every_operation_gets_no_5xx_and_the_server_still_answers(server):
    """A small fixed budget (`bench/fuzz_server.py` runs the same fuzz with a larger one)."""
    tokens = {
        "member": token("fuzz-member", "fuzzorg"),
        "reader": token("fuzz-reader", "fuzzorg", role="reader"),
    }
    report = fuzz(server.url, tokens, examples=3, deadline_s=150)
    print(f"\nfuzz: {report.summary()}")
    assert report.operations >= 60 and report.requests >= 150, report.summary()
    assert report.server_errors == 0, "\n".join(report.failures[:10])
    assert still_answers(server.url, tokens["member"])
