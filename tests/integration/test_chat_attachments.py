"""Files attached in the chat go to the library, through a real `langgraph dev` server and the SDK.

A PDF attached to a chat message (as Agent Chat UI, the LangGraph SDK or an OpenAI-style client sends
it: a content block with base64 data) must be stored and indexed like an upload, the thread must keep
a reference to it and never its bytes (state and every checkpoint of its history), the turn must say
that the file is being indexed, and a later turn must find its content with a citation to it. A
reader cannot attach; bad or oversized data is refused with a message; in each case nothing is stored.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.e2e.pdf import text_pdf
from tests.integration.server_fixtures import (
    DevServer,
    bearer,
    running_server,
    token,
    wait_for_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

MAX_UPLOAD = 256 * 1024
ORG = "harbourco"
WRITER = token("wendy", ORG)
READER = token("rita", ORG, role="reader")
FACT = "The Zanzibar harbour protocol requires seventeen blue lanterns at the north gate."
QUESTION = "How many blue lanterns does the Zanzibar harbour protocol require?"
PDF = text_pdf([[(72, 72, 14, FACT)], [(72, 72, 12, "Appendix: lantern maintenance is done every Tuesday.")]])


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("attachserver")
    with running_server(tmp, {"LIBRARIAN_MAX_UPLOAD_BYTES": str(MAX_UPLOAD)}) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def sdk(server: DevServer, tok: str) -> Any:
    return get_sync_client(url=server.url, headers=bearer(tok), timeout=120)


def agent_chat_ui_block(data: bytes, filename: str, mime: str = "application/pdf") -> dict[str, Any]:
    """The block Agent Chat UI sends for an attached PDF (LangChain's base64 data block)."""
    return {
        "type": "file",
        "source_type": "base64",
        "mime_type": mime,
        "data": base64.b64encode(data).decode(),
        "metadata": {"filename": filename},
    }


def openai_file_block(data: bytes, filename: str) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {
        "type": "file",
        "file": {"filename": filename, "file_data": f"data:application/pdf;base64,{encoded}"},
    }


def user_message(text: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}, *blocks]}


def document_paths(http: httpx.Client, tok: str = WRITER) -> set[str]:
    response = http.get(f"/orgs/{ORG}/documents", headers=bearer(tok))
    assert response.status_code == 200, response.text
    return {d["path"] for d in response.json()["documents"]}


def files_on_disk(server: DevServer) -> set[str]:
    root = server.workdir.parent / "data" / "files" / "orgs" / ORG / "docs"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def assert_no_bytes(thread_json: str, data: bytes) -> None:
    encoded = base64.b64encode(data).decode()
    for piece in (encoded[:64], encoded[len(encoded) // 2 : len(encoded) // 2 + 64], encoded[-64:]):
        assert piece not in thread_json, "the attachment's base64 is still in the thread"


def refusal_of(call) -> httpx.Response:
    with pytest.raises(httpx.HTTPStatusError) as caught:
        call()
    return caught.value.response


# --- the attached PDF goes to the library ------------------------------------------------------------


@pytest.fixture(scope="module")
def attached(server, http) -> dict[str, Any]:
    """One conversation: a turn that attaches the PDF (as Agent Chat UI sends it)."""
    client = sdk(server, WRITER)
    thread = client.threads.create()
    started = time.monotonic()
    state = client.runs.wait(
        thread["thread_id"],
        "agent",
        input={
            "messages": [
                user_message("Please add this to the library.", agent_chat_ui_block(PDF, "lanterns.pdf"))
            ]
        },
        raise_error=False,
    )
    print(f"attachment turn answered in {time.monotonic() - started:.2f}s")
    return {"client": client, "thread_id": thread["thread_id"], "state": state}


def test_the_turn_says_the_file_is_being_indexed(attached):
    messages = attached["state"]["messages"]
    reply = messages[-1]
    assert reply["type"] == "ai"
    assert "lanterns.pdf" in reply["content"] and "being indexed" in reply["content"]
    assert "seventeen" not in reply["content"]  # it has not read the file, and does not pretend to
    assert reply["response_metadata"]["answer_mode"] == "attachments"


def test_the_thread_keeps_a_reference_not_the_bytes(attached):
    client, thread_id = attached["client"], attached["thread_id"]
    human = next(m for m in attached["state"]["messages"] if m["type"] == "human")
    texts = [b["text"] for b in human["content"] if b.get("type") == "text"]
    assert texts[0] == "Please add this to the library."
    assert "docs/lanterns.pdf" in texts[1] and "queued" in texts[1]
    assert all(b.get("type") == "text" for b in human["content"])
    record = human["additional_kwargs"]["attachments"][0]
    assert record["path"] == "docs/lanterns.pdf" and record["size_bytes"] == len(PDF)
    assert_no_bytes(json.dumps(client.threads.get_state(thread_id)), PDF)
    history = client.threads.get_history(thread_id, limit=100)
    assert any(h["metadata"].get("source") == "input" for h in history)  # the input checkpoint too
    assert_no_bytes(json.dumps(history), PDF)
    run = client.runs.list(thread_id)[0]
    assert_no_bytes(json.dumps(run), PDF)


def test_the_file_is_in_the_library_and_becomes_indexed(attached, http, server):
    assert "docs/lanterns.pdf" in document_paths(http)
    assert (
        server.workdir.parent / "data" / "files" / "orgs" / ORG / "docs" / "lanterns.pdf"
    ).read_bytes() == PDF
    status = wait_for_status(http, ORG, WRITER, "docs/lanterns.pdf", deadline_s=180)
    assert status["status"] == "indexed", status
    assert status["chunkCount"] >= 1


def test_a_later_turn_finds_its_content_with_a_citation(attached, http):
    wait_for_status(http, ORG, WRITER, "docs/lanterns.pdf", deadline_s=180)
    client, thread_id = attached["client"], attached["thread_id"]
    state = client.runs.wait(
        thread_id, "agent", input={"messages": [{"role": "user", "content": QUESTION}]}, raise_error=False
    )
    answer = state["messages"][-1]["content"]
    assert "seventeen blue lanterns" in answer
    assert "[1]" in answer and "lanterns.pdf" in answer
    assert any(s["path"] == "docs/lanterns.pdf" for s in state["sources"])


def test_an_openai_style_file_part_streamed_like_a_chat_client(server, http):
    """`runs.stream` (what Agent Chat UI calls) with OpenAI's `file` block shape."""
    data = text_pdf([[(72, 72, 12, "The ferry timetable changes on the first of May.")]])
    client = sdk(server, WRITER)
    thread = client.threads.create()
    parts = list(
        client.runs.stream(
            thread["thread_id"],
            "agent",
            input={
                "messages": [user_message("Here is the timetable.", openai_file_block(data, "ferry.pdf"))]
            },
            stream_mode=["values", "messages-tuple"],
        )
    )
    assert not [p for p in parts if p.event == "error"], parts
    assert_no_bytes(json.dumps([p.data for p in parts]), data)
    final = [p.data for p in parts if p.event == "values"][-1]
    assert "ferry.pdf" in final["messages"][-1]["content"]
    assert "docs/ferry.pdf" in document_paths(http)


# --- refusals: nothing stored ---------------------------------------------------------------------


def test_a_reader_cannot_attach(server, http):
    client = sdk(server, READER)
    thread = client.threads.create()
    block = agent_chat_ui_block(PDF, "reader-notes.pdf")
    refused = refusal_of(
        lambda: client.runs.wait(
            thread["thread_id"], "agent", input={"messages": [user_message("add", block)]}
        )
    )
    assert refused.status_code == 403
    assert "cannot add documents" in refused.text and "nothing was stored" in refused.text
    assert "docs/reader-notes.pdf" not in document_paths(http, READER)
    assert "reader-notes.pdf" not in files_on_disk(server)
    assert not (client.threads.get_state(thread["thread_id"])["values"] or {}).get("messages")


def test_a_run_on_someone_elses_conversation_stores_nothing(server, http):
    thread = sdk(server, WRITER).threads.create()
    other = sdk(server, token("walt", ORG))  # a writer of the same organization, not the owner
    block = agent_chat_ui_block(PDF, "walts.pdf")
    refused = refusal_of(
        lambda: other.runs.wait(
            thread["thread_id"], "agent", input={"messages": [user_message("add", block)]}
        )
    )
    assert refused.status_code == 404
    assert "docs/walts.pdf" not in document_paths(http)
    assert "walts.pdf" not in files_on_disk(server)


@pytest.mark.parametrize(
    ("name", "block", "status", "says"),
    [
        (
            "big.pdf",
            agent_chat_ui_block(b"%PDF-1.4\n" + b"0" * (MAX_UPLOAD + 1), "big.pdf"),
            413,
            "upload limit",
        ),
        (
            "broken.pdf",
            {**agent_chat_ui_block(b"x", "broken.pdf"), "data": "this is not base64!!"},
            400,
            "not valid base64",
        ),
        (
            "fake.pdf",
            agent_chat_ui_block(b"just some text, no PDF here", "fake.pdf"),
            400,
            "declared as a PDF",
        ),
        ("bad:name.pdf", agent_chat_ui_block(PDF, "bad:name.pdf"), 400, "must not contain"),
    ],
)
def test_a_bad_attachment_is_refused_with_a_message(server, http, name, block, status, says):
    client = sdk(server, WRITER)
    thread = client.threads.create()
    refused = refusal_of(
        lambda: client.runs.wait(
            thread["thread_id"], "agent", input={"messages": [user_message("add", block)]}
        )
    )
    assert refused.status_code == status, refused.text
    assert says in refused.text
    assert f"docs/{name}" not in document_paths(http)
    assert name not in files_on_disk(server)


# --- plain Python: build_agent(attachments=LocalAttachments(service)) -------------------------------


@pytest.fixture
def local(settings) -> dict[str, Any]:
    """A real embedded stack and document service in a temporary directory (no server)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from librarian.stack import Stack
    from services.chat_attachments import LocalAttachments
    from services.documents import DocumentService

    stack = Stack(settings)
    service = DocumentService(stack, InMemorySaver())
    return {"stack": stack, "service": service, "library": LocalAttachments(service)}


def plain_turn(agent: Any, content: Any, *, run_async: bool = False) -> dict[str, Any]:
    """One turn in plain Python; `run_async` as the server runs graphs (`ainvoke`, async hooks)."""
    import asyncio

    from langchain_core.messages import HumanMessage

    args = ({"messages": [HumanMessage(content)]}, {"configurable": {"thread_id": "plain"}})
    context = {"organization_id": ORG}
    if run_async:
        return asyncio.run(agent.ainvoke(*args, context=context))
    return agent.invoke(*args, context=context)


def test_plain_python_extractive_agent_stores_and_later_finds_the_file(local):
    from langgraph.checkpoint.memory import InMemorySaver

    from graphs.agent import build_agent

    agent = build_agent(lambda: local["stack"], checkpointer=InMemorySaver(), attachments=local["library"])
    state = plain_turn(
        agent, [{"type": "text", "text": "file this"}, agent_chat_ui_block(PDF, "lanterns.pdf")]
    )
    assert (
        "lanterns.pdf" in state["messages"][-1].content and "being indexed" in state["messages"][-1].content
    )
    assert_no_bytes(json.dumps([m.model_dump() for m in state["messages"]]), PDF)
    local["library"].wait(timeout_s=180)
    assert local["service"].status(ORG, "docs/lanterns.pdf").status == "indexed"
    answer = plain_turn(agent, QUESTION)["messages"][-1].content
    assert "seventeen blue lanterns" in answer and "lanterns.pdf" in answer and "[1]" in answer


def test_plain_python_chat_model_never_sees_the_bytes(local, openai_server):
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    from graphs.agent import build_agent
    from tests.wire.openai_server import TEST_API_KEY, TextReply, ToolCallReply

    model = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    agent = build_agent(
        lambda: local["stack"], model=model, checkpointer=InMemorySaver(), attachments=local["library"]
    )
    block = openai_file_block(PDF, "lanterns.pdf")
    state = plain_turn(agent, [{"type": "text", "text": "file this"}, block], run_async=True)
    assert "being indexed" in state["messages"][-1].content
    assert openai_server.chat_requests == []  # the turn ended before the model could answer about it
    local["library"].wait(timeout_s=180)
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": QUESTION}),
        TextReply("It requires seventeen blue lanterns [1]."),
    ]
    answer = plain_turn(agent, QUESTION)["messages"][-1].content
    assert "seventeen blue lanterns" in answer and "lanterns.pdf" in answer
    sent = json.dumps(openai_server.chat_requests)
    assert "docs/lanterns.pdf" in sent  # the reference, in the history the model reads
    assert_no_bytes(sent, PDF)


def test_receive_run_attachments_over_the_real_document_operations(local):
    import asyncio

    from librarian.attachments import AttachmentRefusedError
    from services.chat_attachments import LibraryAttachments, receive_run_attachments

    library = LibraryAttachments(local["service"].ops)
    refused_input = {"messages": [user_message("add", agent_chat_ui_block(PDF, "reader.pdf"))]}
    before = json.dumps(refused_input)
    with pytest.raises(AttachmentRefusedError, match="nothing was stored"):
        asyncio.run(
            receive_run_attachments(refused_input, org=ORG, owner="rita", may_write=False, library=library)
        )
    assert json.dumps(refused_input) == before
    assert local["service"].list(ORG) == []

    run_input = {"messages": [user_message("add", agent_chat_ui_block(PDF, "lanterns.pdf"))]}
    messages = run_input["messages"]
    stored = asyncio.run(
        receive_run_attachments(run_input, org=ORG, owner="wendy", may_write=True, library=library)
    )
    assert [s.path for s in stored] == ["docs/lanterns.pdf"]
    assert run_input["messages"] is messages  # rewritten in place: the server keeps this list
    assert_no_bytes(json.dumps(run_input), PDF)
    assert local["service"].status(ORG, "docs/lanterns.pdf").status == "indexed"  # LocalRuns ran it
