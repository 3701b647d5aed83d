"""Librarian's `/mcp`, driven by the official MCP client (`mcp` streamable HTTP + `ClientSession`).

One real `langgraph dev` server for the module, with the offline (extractive) agent. Acme has its
canary document and a PDF; Globex has its own notes on a "Project Bluebird". The checks: only the
tools a caller can run are listed, `ask_library` answers as the caller with readable citations and
a thread to continue, another organization's documents never appear, another user's or
organization's thread is refused, and bad input is a JSON-RPC error rather than a crash.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from librarian.runs.threads import server_thread_id
from tests.integration.server_fixtures import (
    A_CANARY,
    A_FILES,
    A_SECRET_DOC,
    B_CANARY,
    B_NOTES_DOC,
    DOCS,
    LEGAL_QUESTION,
    ORG_A,
    ORG_B,
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ALICE = token("alice", ORG_A)
CAROL = token("carol", ORG_A)  # Alice's colleague: same organization, another user
READER = token("rita", ORG_A, role="reader")
BOB = token("bob", ORG_B)
LAUNCH_QUESTION = "What is the launch code of Project Bluebird?"
ACME_PATHS = {"docs/alpha-secret.md", "docs/multi_page.pdf"}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    if not DOCS.is_dir():
        pytest.skip(f"example documents not found at {DOCS}")
    with running_server(tmp_path_factory.mktemp("mcpserver")) as srv:
        yield srv


@pytest.fixture(scope="module")
def world(server) -> DevServer:
    """Acme: the canary document and a PDF; Globex: its Bluebird notes. All indexed."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        uploads = [
            (ORG_A, ALICE, "alpha-secret.md", A_SECRET_DOC),
            (ORG_A, ALICE, "multi_page.pdf", A_FILES["multi_page.pdf"].read_bytes()),
            (ORG_B, BOB, "beta-notes.md", B_NOTES_DOC),
        ]
        for org, tok, name, data in uploads:
            assert upload(http, org, tok, name, data).status_code == 202
        for org, tok, name, _ in uploads:
            assert wait_for_status(http, org, tok, f"docs/{name}")["status"] == "indexed"
    return server


@asynccontextmanager
async def session(server: DevServer, tok: str | None) -> AsyncIterator[ClientSession]:
    headers = bearer(tok) if tok else {}
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as mcp_session,
    ):
        await mcp_session.initialize()
        yield mcp_session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


# --- the handshake and the listing -----------------------------------------------------------------


async def test_initialize_names_the_server_and_lists_only_what_the_caller_can_run(server):
    for tok in (ALICE, READER):
        async with session(server, tok) as mcp_session:
            info = mcp_session.initialize_result
            assert info is not None and info.server_info.name == "Librarian"
            assert info.capabilities.tools is not None
            await mcp_session.send_ping()
            tools = {tool.name: tool for tool in (await mcp_session.list_tools()).tools}
    assert set(tools) == {"ask_library", "search_documents"}  # no ingest, reindex, graph_index, agent
    ask = tools["ask_library"]
    assert ask.input_schema["required"] == ["question"]
    assert set(ask.input_schema["properties"]) == {"question", "thread_id"}
    assert ask.output_schema is not None
    assert set(ask.output_schema["required"]) == {"answer", "sources", "thread_id"}


async def test_the_high_level_client_falls_back_to_the_handshake(server):
    """`mcp.Client` probes `server/discover` (2026-07-28) first; -32601 sends it to `initialize`."""
    async with (
        httpx2.AsyncClient(headers=bearer(ALICE), timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == {"ask_library", "search_documents"}


def test_no_token_is_a_401(server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    response = httpx.post(f"{server.url}/mcp", json=body, headers=headers)
    assert response.status_code == 401
    assert "Traceback" not in response.text


def _raised(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `kind` was raised, alone or inside the client's task-group exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_raised(inner, kind) for inner in exc.exceptions)
    return isinstance(exc, kind)


async def test_the_official_client_without_a_token_cannot_connect(server):
    with pytest.raises(BaseException) as refused:  # the MCPError comes in exception groups
        async with session(server, None):
            pass
    assert _raised(refused.value, MCPError), refused.value


def test_protocol_edges(server):
    """Unknown method -32601, GET 405, a notification 202, a malformed body 400 (never a 5xx)."""
    url = f"{server.url}/mcp"
    headers = {**bearer(ALICE), "Accept": "application/json, text/event-stream"}
    unknown = httpx.post(url, json={"jsonrpc": "2.0", "id": 7, "method": "resources/list"}, headers=headers)
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32601
    assert unknown.json()["id"] == 7
    assert httpx.get(url, headers=headers).status_code == 405
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx.post(url, json=note, headers=headers).status_code == 202
    broken = httpx.post(url, content=b"{not json", headers={**headers, "Content-Type": "application/json"})
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
    batch = httpx.post(url, json=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}], headers=headers)
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600


# --- asking ----------------------------------------------------------------------------------------


async def test_ask_library_answers_with_readable_citations_and_a_thread(world):
    async with session(world, ALICE) as mcp_session:
        result = await mcp_session.call_tool("ask_library", {"question": LAUNCH_QUESTION})
        assert not result.is_error, text_of(result)
        answer = result.structured_content
        assert A_CANARY in answer["answer"]
        assert answer["sources"] and {s["path"] for s in answer["sources"]} <= ACME_PATHS
        cited = answer["sources"][0]
        assert f"[{cited['n']}]" in answer["answer"] and cited["text"]
        uuid.UUID(answer["thread_id"])
        text = result.content[0].text
        assert text == answer["answer"] and "alpha-secret.md" in text
        assert text.count("Sources:") == 1  # the agent's own footer is not repeated
        assert answer["thread_id"] in text_of(result)  # text-only hosts can follow up too

        pdf = await mcp_session.call_tool("ask_library", {"question": LEGAL_QUESTION})
        pages = [s for s in pdf.structured_content["sources"] if s["path"] == "docs/multi_page.pdf"]
        assert pages and all(isinstance(s["page"], int) and s["page"] >= 1 for s in pages)
        assert f"multi_page.pdf, page {pages[0]['page']}" in pdf.content[0].text

        follow_up = await mcp_session.call_tool(
            "ask_library", {"question": "Who leads the Bluebird crew?", "thread_id": answer["thread_id"]}
        )
        assert not follow_up.is_error, text_of(follow_up)
        assert follow_up.structured_content["thread_id"] == answer["thread_id"]
        assert "Ada Quill" in follow_up.structured_content["answer"]


async def test_a_reader_may_ask(world):
    async with session(world, READER) as mcp_session:
        result = await mcp_session.call_tool("ask_library", {"question": LAUNCH_QUESTION})
    assert not result.is_error and A_CANARY in result.structured_content["answer"]


async def test_another_organization_never_sees_acme(world):
    async with session(world, BOB) as mcp_session:
        asked = await mcp_session.call_tool("ask_library", {"question": LAUNCH_QUESTION})
        searched = await mcp_session.call_tool(
            "search_documents", {"query": "Bluebird launch code pier seven"}
        )
    assert not asked.is_error and not searched.is_error
    for result in (asked, searched):
        assert A_CANARY not in str(result.structured_content) and A_CANARY not in text_of(result)
        assert "alpha-secret" not in text_of(result)
    assert {s["path"] for s in asked.structured_content["sources"]} <= {"docs/beta-notes.md"}
    assert {r["path"] for r in searched.structured_content["results"]} <= {"docs/beta-notes.md"}
    assert B_CANARY in text_of(searched)


def _message_count(server: DevServer, thread_id: str) -> int:
    state = httpx.get(f"{server.url}/threads/{thread_id}/state", headers=bearer(ALICE), timeout=30)
    assert state.status_code == 200, state.text
    return len(state.json()["values"]["messages"])


async def test_another_users_or_organizations_thread_is_refused(world):
    async with session(world, ALICE) as mcp_session:
        mine = await mcp_session.call_tool("ask_library", {"question": LAUNCH_QUESTION})
        document_thread = await mcp_session.call_tool(  # readable as a status, never a conversation
            "ask_library",
            {"question": "And the budget?", "thread_id": server_thread_id(ORG_A, "docs/alpha-secret.md")},
        )
    thread_id = mine.structured_content["thread_id"]
    before = _message_count(world, thread_id)
    refusals = [document_thread]
    for tok in (BOB, CAROL):
        async with session(world, tok) as mcp_session:
            for target in (thread_id, str(uuid.uuid4())):
                refusals.append(
                    await mcp_session.call_tool(
                        "ask_library", {"question": "And the budget?", "thread_id": target}
                    )
                )
    for refused in refusals:
        assert refused.is_error and refused.structured_content is None
        assert "no conversation of yours" in text_of(refused)
        assert A_CANARY not in text_of(refused)
    assert len({text_of(refused) for refused in refusals}) == 1  # the same whether or not it exists
    assert _message_count(world, thread_id) == before  # not continued


async def test_search_documents_returns_excerpts_with_file_and_page(world):
    async with session(world, ALICE) as mcp_session:
        result = await mcp_session.call_tool("search_documents", {"query": LEGAL_QUESTION, "top_k": 3})
    assert not result.is_error
    results = result.structured_content["results"]
    assert 1 <= len(results) <= 3 and [r["n"] for r in results] == list(range(1, len(results) + 1))
    first = results[0]
    assert first["path"] in ACME_PATHS and first["text"]
    assert text_of(result).startswith(f"[1] {first['filename']}")


async def test_bad_arguments_are_invalid_params(world):
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("ask_library", {}),
        ("ask_library", {"question": "   "}),
        ("ask_library", {"question": "x", "thread_id": "not-a-thread"}),
        ("ask_library", {"question": "x", "threadId": str(uuid.uuid4())}),
        ("search_documents", {"query": "x", "top_k": 99}),
        ("ingest", {"path": "docs/x.md"}),
        ("agent", {"messages": []}),
    ]
    async with session(world, ALICE) as mcp_session:
        for name, arguments in attempts:
            with pytest.raises(MCPError) as refused:
                await mcp_session.call_tool(name, arguments)
            assert refused.value.code == -32602, (name, arguments, refused.value)
