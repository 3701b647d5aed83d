"""Issue 23 §6 against a real `langgraph dev`: each test failed on the code before its fix.

1. A chat model at a local OpenAI-compatible server (`LIBRARIAN_CHAT_BASE_URL`) starts without
   `OPENAI_API_KEY`; without a base URL the missing key stops start-up in one line, not a traceback.
2. Deeply nested JSON bodies to the Platform API are a 400 in the error shape, not a 500.
3. CORS is granted to `LIBRARIAN_CORS_ORIGINS` only (default: Agent Chat UI's dev origin), not `*`.
4. `GET /metrics` needs an admin token; `/ok` and `/` stay open.
5. SIGTERM to `langgraph dev` ends its ingest worker and multiprocessing children too.
6. A chat model's answer ends with file and page of each number it cites.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from librarian.settings import NO_KEY_NEEDED
from tests.e2e.pdf import AURORA_QUESTION, aurora_pdf
from tests.integration.server_fixtures import (
    DevServer,
    answer_text,
    ask,
    bearer,
    running_server,
    server_env,
    token,
    upload,
    wait_for_status,
)
from tests.wire.openai_server import OpenAIWireServer, TextReply, ToolCallReply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ORG = "acme"
MEMBER = token("mia", ORG)
ADMIN = token("ada", ORG, role="admin")
AGENT_CHAT_UI = "http://localhost:3000"
STRANGER = "https://evil.example"
EXIT_DEADLINE_S = 90.0
CHILDREN_DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    with running_server(tmp_path_factory.mktemp("hardening")) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def assert_error_shape(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert isinstance(error["code"], str) and error["message"] and "Traceback" not in response.text
    return error


# --- 2. nesting ----------------------------------------------------------------------------------


def _platform_routes(http: httpx.Client) -> list[str]:
    thread = http.post("/threads", json={}, headers=bearer(MEMBER)).json()["thread_id"]
    return [
        "/threads",
        "/assistants",
        "/threads/search",
        "/runs/wait",
        f"/threads/{thread}/runs",
        f"/threads/{thread}/state",
    ]


DEEP = {
    "array-100k": b"[" * 100_000 + b"]" * 100_000,
    "object-5k": b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    "metadata-1k": b'{"metadata":' + b'{"a":' * 1_000 + b"1" + b"}" * 1_001,
}


def test_deeply_nested_bodies_are_a_400_on_every_platform_route(http):
    json_headers = {**bearer(MEMBER), "content-type": "application/json"}
    for route in _platform_routes(http):
        for name, body in DEEP.items():
            error = assert_error_shape(http.post(route, content=body, headers=json_headers), 400)
            assert error["code"] == "too_deep", (route, name)
    patch = http.patch(
        f"/assistants/{'0' * 8}-0000-4000-8000-{'0' * 12}", content=DEEP["array-100k"], headers=json_headers
    )
    assert assert_error_shape(patch, 400)["code"] == "too_deep"
    assert http.get("/ok").status_code == 200


def _nested(levels: int, kinds: list[str], leaf: Any) -> Any:
    value = leaf
    for i in range(levels):
        value = [value] if kinds[i % len(kinds)] == "list" else {kinds[i % len(kinds)]: value}
    return value


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    levels=st.integers(65, 800),
    kinds=st.lists(st.sampled_from(["list", "metadata", "values"]), min_size=1, max_size=3),
    leaf=st.text(alphabet='[]{}"\\ab', max_size=10),
    route=st.sampled_from(["/threads", "/assistants", "/threads/search"]),
)
def test_generated_nesting_past_the_limit_is_a_400(http, levels, kinds, leaf, route):
    body = json.dumps({"metadata": _nested(levels - 1, kinds, leaf)})
    response = http.post(route, content=body, headers={**bearer(MEMBER), "content-type": "application/json"})
    assert assert_error_shape(response, 400)["code"] == "too_deep"


def test_ordinary_bodies_still_work(http):
    made = http.post("/threads", json={"metadata": {"topic": {"a": [1, {"b": [2]}]}}}, headers=bearer(MEMBER))
    assert made.status_code == 200, made.text


# --- 3. CORS -------------------------------------------------------------------------------------


def test_other_origins_get_no_cors_grant(http):
    response = http.get("/threads/search", headers={**bearer(MEMBER), "origin": STRANGER})
    assert not [k for k in response.headers if k.startswith("access-control-")], dict(response.headers)
    preflight = http.options(
        "/threads",
        headers={
            "origin": STRANGER,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, x-api-key",
            "access-control-request-private-network": "true",
        },
    )
    assert preflight.status_code == 403
    assert not [k for k in preflight.headers if k.startswith("access-control-")], dict(preflight.headers)


def test_agent_chat_ui_origin_is_granted_by_default(http):
    preflight = http.options(
        "/threads",
        headers={
            "origin": AGENT_CHAT_UI,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, x-api-key",
        },
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == AGENT_CHAT_UI
    assert preflight.headers["access-control-allow-headers"] == "content-type, x-api-key"
    made = http.post("/threads", json={}, headers={"x-api-key": MEMBER, "origin": AGENT_CHAT_UI})
    assert made.status_code == 200 and made.headers["access-control-allow-origin"] == AGENT_CHAT_UI


# --- 4. /metrics ---------------------------------------------------------------------------------


def test_metrics_need_an_admin_token(http):
    assert assert_error_shape(http.get("/metrics"), 401)["code"] == "unauthenticated"
    assert assert_error_shape(http.get("/metrics?format=json"), 401)["code"] == "unauthenticated"
    assert_error_shape(http.get("/metrics", headers=bearer(MEMBER)), 403)
    served = http.get("/metrics", headers=bearer(ADMIN))
    assert served.status_code == 200 and served.content
    assert http.get("/ok").status_code == 200
    assert http.get("/").status_code == 200


# --- 5. the ingest worker ends with the server ---------------------------------------------------


def session_members(session: int) -> list[int]:
    """Processes of a session (the dev server runs in its own), wherever they were reparented."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == session and fields[0] != "Z":  # fields: state ppid pgrp session ...
            members.append(int(entry.name))
    return members


def still_running_after(pids: list[int], deadline_s: float) -> list[int]:
    """Wait until every process has exited or the deadline passes (a pidfd becomes readable when
    its process exits: no polling); the ones still running."""
    fds = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + deadline_s
    try:
        pending = set(fds)
        while pending and (left := deadline - time.monotonic()) > 0:
            pending -= set(select.select(list(pending), [], [], left)[0])
        return sorted(fds[fd] for fd in pending)
    finally:
        for fd in fds:
            os.close(fd)


def _command(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except FileNotFoundError:
        return "(gone)"


def test_sigterm_ends_the_server_with_its_worker_processes(tmp_path):
    """The ingest worker (parse, embed), the page renderer and multiprocessing's resource tracker."""
    (tmp_path / "work").mkdir()
    server = DevServer(tmp_path / "work", server_env(tmp_path / "data")).start()
    leader = server.process.pid
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert (
                upload(client, ORG, MEMBER, "aurora.pdf", aurora_pdf(), "application/pdf").status_code == 202
            )
            assert wait_for_status(client, ORG, MEMBER, "docs/aurora.pdf")["status"] == "indexed"
            page = client.get(f"/orgs/{ORG}/documents/docs/aurora.pdf/pages/1.png", headers=bearer(MEMBER))
            assert page.status_code == 200, page.text
        children = [pid for pid in session_members(leader) if pid != leader]
        assert len(children) >= 3, [_command(pid) for pid in children]  # worker, renderer, tracker
        os.kill(leader, signal.SIGTERM)  # what `kill` or Ctrl-C sends to `langgraph dev`
        assert server.wait_exit(EXIT_DEADLINE_S) is not None
        left = still_running_after(children, CHILDREN_DEADLINE_S)
        assert not left, f"still running after the server exited: {[_command(pid) for pid in left]}"
    finally:
        server.kill()
        for pid in session_members(leader):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# --- 1 and 6: a keyless local chat server, readable citations ------------------------------------


def _scripted(body: dict[str, Any]) -> TextReply | ToolCallReply:
    if any(m["role"] == "tool" for m in body["messages"]):
        return TextReply("The Keller observatory records auroras on ninety nights each winter [1].")
    return ToolCallReply("search_documents", {"query": AURORA_QUESTION})


@pytest.fixture(scope="module")
def chat_server(tmp_path_factory) -> Iterator[tuple[DevServer, OpenAIWireServer]]:
    with OpenAIWireServer(api_key=NO_KEY_NEEDED) as wire:  # accepts what the SDK gets without a key
        wire.default_reply = _scripted  # type: ignore[assignment]
        env = {"LIBRARIAN_CHAT_MODEL": "openai:gpt-test", "LIBRARIAN_CHAT_BASE_URL": wire.base_url}
        assert "OPENAI_API_KEY" not in server_env(Path("/nonexistent"), env)
        with running_server(tmp_path_factory.mktemp("keyless"), env) as srv:
            yield srv, wire


def test_a_local_chat_server_needs_no_openai_key(chat_server):
    server, _ = chat_server
    assert httpx.get(f"{server.url}/ok", timeout=10).status_code == 200


def test_a_chat_model_answer_names_file_and_page_of_each_citation(chat_server):
    server, wire = chat_server
    with httpx.Client(base_url=server.url, timeout=60) as client:
        assert upload(client, ORG, MEMBER, "aurora.pdf", aurora_pdf(), "application/pdf").status_code == 202
        assert wait_for_status(client, ORG, MEMBER, "docs/aurora.pdf")["status"] == "indexed"
    state = ask(server.url, MEMBER, AURORA_QUESTION)
    assert wire.chat_requests, "the chat model was not called"
    cited = state["sources"][0]
    answer = answer_text(state)
    assert answer.endswith(f"\n\nSources:\n[1] {cited['filename']}, page {cited['page']}"), answer
    assert cited["filename"] == "aurora.pdf" and cited["page"] >= 1


def test_an_openai_chat_model_without_key_refuses_to_start_in_one_line(tmp_path):
    (tmp_path / "work").mkdir()
    env = server_env(tmp_path / "data", {"LIBRARIAN_CHAT_MODEL": "openai:gpt-4.1-mini"})
    server = DevServer(tmp_path / "work", env)
    with pytest.raises(RuntimeError, match="exited"):
        server.start(deadline_s=EXIT_DEADLINE_S)
    log = server.log()
    reasons = [line for line in log.splitlines() if line.startswith("librarian: refusing to start:")]
    assert len(reasons) == 1 and "OPENAI_API_KEY is not set" in reasons[0], log[-3000:]
    assert "OpenAIError" not in log, log[-3000:]
