"""LangSmith traces: whose run it is in every run's metadata, no document text in metadata or tags.

Tracing is switched on the way an operator does it (`LANGSMITH_TRACING=true`, `LANGSMITH_ENDPOINT`,
`LANGSMITH_API_KEY`, `LANGSMITH_PROJECT`), with the endpoint on the local LangSmith wire server, so
the real `langsmith` SDK batches, compresses (zstd) and sends what LangChain's tracer records. The
chat model is the real `ChatOpenAI` against the local OpenAI wire server, with the LLM reranker and
the LLM support judge on, so a question makes internal model calls (`librarian.internal_model`).

The corpus holds one document with a marker sentence; whatever path its text takes through a run, it
may be an input or an output but never metadata or a tag. In process: an ingest with a user, a
notebook-style agent run, `librarian ask`, and a run whose configuration carries document text
(what LangChain copies into metadata). On a `langgraph dev` server: an authenticated user's agent run
and an upload's ingest run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from librarian import tracing
from librarian.answers.support_llm import JUDGE_INSTRUCTIONS
from librarian.retrieval.scorers import LLM_INSTRUCTIONS
from librarian.sync import run_sync
from tests.conftest import REPO_DIR
from tests.integration.server_fixtures import (
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)
from tests.wire.langsmith_server import TEST_API_KEY as LANGSMITH_KEY
from tests.wire.langsmith_server import LangSmithWireServer, ancestors, metadata_of
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

ORG = "trace-org"
USER = "ada"
MARKER = "ZEPHYRMARK"
SENTENCE = f"The zephyr lantern protocol needs seventeen brass keys and the {MARKER} seal."
DOCUMENT = f"# Zephyr lantern\n\n{SENTENCE}\n\nLanterns are lit at dusk by the harbour guild.\n".encode()
QUESTION = "How many brass keys does the zephyr lantern protocol need?"
ANSWER = "It needs seventeen brass keys [1]."
FLUSH_DEADLINE_S = 60.0


def scripted(body: dict[str, Any]) -> TextReply | list[ToolCallReply]:
    """The model, from the request alone: the agent searches once then answers; the reranker and the
    support judge get a score."""
    messages = body.get("messages") or [{}]
    if body.get("tools"):
        if messages[-1].get("role") == "tool":
            return TextReply(ANSWER)
        return [ToolCallReply("search_documents", {"query": "zephyr lantern brass keys"})]
    first = str(messages[0].get("content") or "")
    if first in (LLM_INSTRUCTIONS, JUDGE_INSTRUCTIONS):
        return TextReply("0.9")
    return TextReply("(unexpected request)")


def prompted_with(run: dict[str, Any], instructions: str) -> bool:
    """A model call whose messages include `instructions` (compared as JSON: they span lines)."""
    return run.get("run_type") == "llm" and json.dumps(instructions)[1:-1] in json.dumps(run.get("inputs"))


def is_rerank_call(run: dict[str, Any]) -> bool:
    return prompted_with(run, LLM_INSTRUCTIONS)


def is_judge_call(run: dict[str, Any]) -> bool:
    return prompted_with(run, JUDGE_INSTRUCTIONS)


def trace_of(runs: list[dict[str, Any]], root: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in runs if str(r.get("trace_id")) == str(root["id"])]


def roots(runs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Root runs by name; `chat` names the server's agent runs, whatever the graph calls itself."""
    if name == "chat":
        return [r for r in runs if not r.get("parent_run_id") and metadata_of(r).get("kind") == "chat"]
    return [r for r in runs if not r.get("parent_run_id") and r.get("name") == name]


def ended(run: dict[str, Any]) -> bool:
    return bool(run.get("end_time"))


def complete_trace(name: str, *, count: int = 1, with_llm: bool = False):
    """A predicate: `count` root runs named `name` have ended, with every run of their traces ended
    (and, if asked, with the internal model calls in them)."""

    def done(runs: list[dict[str, Any]]) -> bool:
        found = roots(runs, name)
        if len(found) < count or not all(ended(r) for r in found):
            return False
        traces = [trace_of(runs, root) for root in found]
        if not all(all(ended(r) for r in trace) for trace in traces):
            return False
        return not with_llm or all(any(is_rerank_call(r) for r in trace) for trace in traces)

    return done


def assert_no_document_text(runs: list[dict[str, Any]]) -> None:
    """(b) The marker is in the corpus, but no run's metadata or tags may carry it."""
    for run in runs:
        where = json.dumps({"metadata": metadata_of(run), "tags": run.get("tags") or []}, default=str)
        assert MARKER not in where and "zephyr lantern" not in where.lower(), (run.get("name"), where[:800])


def assert_identity(trace: list[dict[str, Any]], user: str | None) -> None:
    """(a) Every run of the trace, the root and each child, names the organization (and the user)."""
    assert trace
    for run in trace:
        metadata = metadata_of(run)
        assert metadata.get("organization_id") == ORG, (run.get("name"), metadata)
        if user is not None:
            assert metadata.get("user_id") == user, (run.get("name"), metadata)


def assert_nested_under_nodes(trace: list[dict[str, Any]]) -> None:
    """(c) Internal model calls sit under the tool and node that made them, never at the top."""
    rerank = [r for r in trace if is_rerank_call(r)]
    judge = [r for r in trace if is_judge_call(r)]
    assert rerank and judge, sorted({str(r.get("name")) for r in trace})
    for call in rerank:
        names = [str(a.get("name")) for a in ancestors(trace, call)]
        assert "search_documents" in names and "tools" in names, names
    for call in judge:
        chain = ancestors(trace, call)
        assert len(chain) >= 2 and chain[0].get("parent_run_id"), [a.get("name") for a in chain]
        assert any(metadata_of(a).get("langgraph_node") for a in chain), [a.get("name") for a in chain]


# ------------------------------------------------------------------------------------ in process


@pytest.fixture(scope="module")
def langsmith_wire() -> Iterator[LangSmithWireServer]:
    with LangSmithWireServer() as server:
        yield server


@pytest.fixture(scope="module")
def openai_wire() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        server.default_reply = scripted
        yield server


def _reset_langsmith() -> None:
    """Forget the process's LangSmith client and cached variables (tracing settings changed)."""
    from langsmith import run_trees
    from langsmith import utils as ls_utils

    ls_utils.get_env_var.cache_clear()
    run_trees.configure(client=None)


@pytest.fixture(scope="module")
def traced_env(
    tmp_path_factory: pytest.TempPathFactory,
    langsmith_wire: LangSmithWireServer,
    openai_wire: OpenAIWireServer,
) -> Iterator[Path]:
    """Tracing on (to the wire server) and a stack with a chat model, from the environment alone."""
    from librarian.settings import get_settings

    data_dir = tmp_path_factory.mktemp("tracing") / "data"
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith(("LIBRARIAN_", "LANGSMITH_", "LANGCHAIN_")) and name != "LIBRARIAN_SHARED_DIR":
                mp.delenv(name)
        env = {
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_ENDPOINT": langsmith_wire.url,
            "LANGSMITH_API_KEY": LANGSMITH_KEY,
            "LANGSMITH_PROJECT": "librarian-tests",
            "LIBRARIAN_DATA_DIR": str(data_dir),
            "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
            "LIBRARIAN_CHAT_BASE_URL": openai_wire.base_url,
            "LIBRARIAN_RERANKER": "llm",
            "LIBRARIAN_SUPPORT_JUDGE": "llm",
            "OPENAI_API_KEY": TEST_API_KEY,
        }
        for name, value in env.items():
            mp.setenv(name, value)
        get_settings.cache_clear()
        _reset_langsmith()
        try:
            yield data_dir
        finally:
            tracing.flush()
            get_settings.cache_clear()
    _reset_langsmith()


@pytest.fixture(scope="module")
def stack(traced_env: Path) -> Any:
    from librarian.settings import get_settings
    from librarian.stack import get_stack

    return get_stack(get_settings())


@pytest.fixture(scope="module")
def ingested(stack: Any, langsmith_wire: LangSmithWireServer) -> list[dict[str, Any]]:
    """The marker document ingested in process by user `ada` (`DocumentOps`, `LocalRuns`)."""
    from services.documents import DocumentService

    service = DocumentService(stack, InMemorySaver())

    async def ingest() -> str:
        path, _ = await service.ops.upload_and_ingest(ORG, "zephyr.md", DOCUMENT, owner=USER)
        return path

    path = asyncio.run(ingest())
    assert service.status(ORG, path).status == "indexed"
    tracing.flush()
    return langsmith_wire.wait_for(complete_trace("ingest"), FLUSH_DEADLINE_S)


def test_in_process_ingest_is_traced_with_organization_and_user(ingested):
    root = roots(ingested, "ingest")[0]
    trace = trace_of(ingested, root)
    assert {r.get("name") for r in trace} >= {"ingest", "load_file", "parse", "upsert_batch", "finalize"}
    assert_identity(trace, USER)
    assert SENTENCE in json.dumps([r.get("outputs") for r in trace])  # the text is an output, as it may be
    assert_no_document_text(ingested)


@pytest.mark.asyncio(loop_scope="module")  # ChatOpenAI's pooled client is bound to a loop
async def test_in_process_agent_run_carries_identity_and_nesting(stack, ingested, langsmith_wire):
    from graphs.agent import build_agent

    agent = build_agent(lambda: stack)
    with tracing.trace_scope(ORG, USER):  # a notebook's run: trusted organization, its user
        state = await agent.ainvoke(
            {"messages": [HumanMessage(QUESTION)]}, {"run_name": "notebook"}, context={"organization_id": ORG}
        )
    assert ANSWER in str(state["messages"][-1].content)
    tracing.flush()
    runs = langsmith_wire.wait_for(complete_trace("notebook", with_llm=True), FLUSH_DEADLINE_S)
    trace = trace_of(runs, roots(runs, "notebook")[0])
    assert_identity(trace, USER)
    assert_nested_under_nodes(trace)
    assert SENTENCE in json.dumps([r.get("outputs") for r in trace])  # search results are outputs
    assert_no_document_text(runs)


@pytest.mark.asyncio(loop_scope="module")
async def test_document_text_in_the_run_configuration_never_reaches_metadata(stack, ingested, langsmith_wire):
    """LangChain copies every string of `configurable` into trace metadata (and the server mirrors a
    run's context there): an attachment's text put there is dropped before it leaves the process,
    while identifiers in the same place stay."""
    from graphs.agent import build_agent

    agent = build_agent(lambda: stack)
    config = {"configurable": {"attachment_text": SENTENCE, "attachment_id": "att-42"}, "run_name": "leaky"}
    with tracing.trace_scope(ORG, USER):
        await agent.ainvoke({"messages": [HumanMessage(QUESTION)]}, config, context={"organization_id": ORG})
    tracing.flush()
    runs = langsmith_wire.wait_for(complete_trace("leaky", with_llm=True), FLUSH_DEADLINE_S)
    trace = trace_of(runs, roots(runs, "leaky")[0])
    assert all(metadata_of(r).get("attachment_id") == "att-42" for r in trace)
    assert all("attachment_text" not in metadata_of(r) for r in trace)
    assert_no_document_text(runs)


def test_hide_inputs_and_outputs_keep_document_text_out_of_langsmith(stack, ingested, langsmith_wire):
    """The customer's switch: with LANGSMITH_HIDE_INPUTS/OUTPUTS the trace keeps its shape and its
    identifiers, and no document text at all."""
    from services.documents import DocumentService

    service = DocumentService(stack, InMemorySaver())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LANGSMITH_HIDE_INPUTS", "true")
        mp.setenv("LANGSMITH_HIDE_OUTPUTS", "true")
        _reset_langsmith()
        path, _ = run_sync(service.ops.upload_and_ingest(ORG, "hidden.md", DOCUMENT, owner=USER))
        tracing.flush()
        runs = langsmith_wire.wait_for(complete_trace("ingest", count=2), FLUSH_DEADLINE_S)
    _reset_langsmith()
    assert service.status(ORG, path).status == "indexed"
    first = {str(r["id"]) for r in ingested}
    root = next(r for r in roots(runs, "ingest") if str(r["id"]) not in first)
    trace = trace_of(runs, root)
    assert {r.get("name") for r in trace} >= {"ingest", "parse", "upsert_batch"}
    assert_identity(trace, USER)
    assert all(MARKER not in json.dumps(run, default=str) for run in trace)


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """`librarian ARGV` in its own process, with this module's environment (tracing on): the command
    must send its trace before it exits."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("librarian")), *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_DIR), "COLUMNS": "120"},
    )


def test_librarian_ask_is_one_trace_of_its_organization(ingested, langsmith_wire):
    done = run_cli("ask", QUESTION, "--org", ORG, "--mode", "search")
    assert done.returncode == 0 and "seventeen brass keys" in done.stdout, done.stderr[-2000:]
    runs = langsmith_wire.wait_for(complete_trace("librarian ask", with_llm=True), FLUSH_DEADLINE_S)
    root = roots(runs, "librarian ask")[0]
    assert root["inputs"] == {"query": QUESTION}
    trace = trace_of(runs, root)
    assert_identity(trace, None)
    assert_nested_under_nodes(trace)
    assert_no_document_text(runs)


def test_librarian_search_is_one_trace_of_its_organization(ingested, langsmith_wire):
    done = run_cli("search", "zephyr lantern brass keys", "--org", ORG)
    assert done.returncode == 0 and "zephyr.md" in done.stdout, done.stderr[-2000:]
    runs = langsmith_wire.wait_for(complete_trace("librarian search"), FLUSH_DEADLINE_S)
    assert_identity(trace_of(runs, roots(runs, "librarian search")[0]), None)
    assert_no_document_text(runs)


# ---------------------------------------------------------------------------- a langgraph dev server


@pytest.fixture(scope="module")
def server_wire() -> Iterator[LangSmithWireServer]:
    with LangSmithWireServer() as server:
        yield server


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, server_wire: LangSmithWireServer, openai_wire: OpenAIWireServer
) -> Iterator[DevServer]:
    """A dev server whose LANGSMITH_* variables turn tracing on (`server_env` lets extra ones win)."""
    env = {
        "LANGSMITH_TRACING": "true",
        "LANGSMITH_ENDPOINT": server_wire.url,
        "LANGSMITH_API_KEY": LANGSMITH_KEY,
        "LANGSMITH_PROJECT": "librarian-server-tests",
        "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
        "LIBRARIAN_CHAT_BASE_URL": openai_wire.base_url,
        "LIBRARIAN_RERANKER": "llm",
        "LIBRARIAN_SUPPORT_JUDGE": "llm",
        "OPENAI_API_KEY": TEST_API_KEY,
    }
    with running_server(tmp_path_factory.mktemp("traceserver"), env) as server:
        yield server


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_server_traces_an_upload_and_a_users_question_with_organization_and_user(
    served: DevServer, server_wire: LangSmithWireServer
):
    from langgraph_sdk import get_sync_client

    tok = token(USER, ORG)
    with httpx.Client(base_url=served.url, timeout=60) as http:
        response = upload(http, ORG, tok, "zephyr.md", DOCUMENT, "text/markdown")
        assert response.status_code == 202, response.text
        assert wait_for_status(http, ORG, tok, "docs/zephyr.md")["status"] == "indexed"
    ingest = server_wire.wait_for(complete_trace("ingest"), FLUSH_DEADLINE_S)
    assert_identity(trace_of(ingest, roots(ingest, "ingest")[0]), USER)
    built = server_wire.wait_for(complete_trace("graph_index"), FLUSH_DEADLINE_S)  # the upload's build
    assert_identity(trace_of(built, roots(built, "graph_index")[0]), USER)

    # api_key=None: the SDK would otherwise send this process's LANGSMITH_API_KEY as X-Api-Key
    client = get_sync_client(url=served.url, api_key=None, headers=bearer(tok), timeout=120)
    thread = client.threads.create()
    run = client.runs.wait(
        thread["thread_id"],
        "agent",
        input={"messages": [{"role": "user", "content": QUESTION}]},
        # a client's own metadata: an id stays, a sentence (a title made of the question) does not
        metadata={"client_ref": "ticket-7", "title": SENTENCE, "organization_id": "globex", "user_id": "eve"},
    )
    assert ANSWER in json.dumps(run), served.log_tail(60)
    runs = server_wire.wait_for(complete_trace("chat", with_llm=True), FLUSH_DEADLINE_S)
    root = roots(runs, "chat")[0]
    trace = trace_of(runs, root)
    assert_identity(trace, USER)  # stamped by the auth handler over what the client sent
    assert metadata_of(root).get("client_ref") == "ticket-7"
    assert metadata_of(root).get("langgraph_auth_user_id") == USER
    assert_nested_under_nodes(trace)
    assert_no_document_text(runs)


# ------------------------------------------------------------------------ the wire server itself


@pytest.fixture
def sdk_defaults(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No LANGSMITH_* variable of this module (or the shell): the test's client says it all."""
    from langsmith import utils as ls_utils

    for name in list(os.environ):
        if name.startswith(("LANGSMITH_", "LANGCHAIN_")):
            monkeypatch.delenv(name)
    ls_utils.get_env_var.cache_clear()
    yield
    ls_utils.get_env_var.cache_clear()


@pytest.mark.usefixtures("sdk_defaults")
@pytest.mark.parametrize(
    ("zstd", "multipart"), [(True, True), (False, True), (False, False)], ids=["zstd", "multipart", "batch"]
)
def test_the_sdk_sends_runs_the_wire_server_records_in_each_format(zstd, multipart):
    """Each way the SDK may send (zstd multipart, plain multipart, JSON batch) arrives whole, with the
    guard as the client's `hide_metadata`."""
    import langsmith

    with LangSmithWireServer(zstd=zstd, multipart=multipart) as wire:
        guard = tracing.identifier_metadata
        client = langsmith.Client(api_url=wire.url, api_key=LANGSMITH_KEY, hide_metadata=guard)
        metadata = {"note": SENTENCE, "organization_id": ORG}
        if zstd:  # the SDK turns compression on once its background thread has read `/info`
            deadline = time.monotonic() + FLUSH_DEADLINE_S
            while client.compressed_traces is None and time.monotonic() < deadline:
                time.sleep(0.01)
        with (
            langsmith.tracing_context(enabled=True, client=client, project_name="wire-check"),
            langsmith.trace("outer", inputs={"q": SENTENCE}, metadata=metadata),
            langsmith.trace("inner", inputs={}) as inner,
        ):
            inner.end(outputs={"text": SENTENCE})
        client.flush()
        runs = wire.wait_for(complete_trace("outer"), FLUSH_DEADLINE_S)
        assert set(wire.requests) == {"multipart+zstd" if zstd else "multipart" if multipart else "batch"}
        outer = roots(runs, "outer")[0]
        inner_run = next(r for r in runs if r.get("name") == "inner")
        assert str(inner_run["parent_run_id"]) == str(outer["id"])
        assert inner_run["outputs"] == {"text": SENTENCE} and outer["inputs"] == {"q": SENTENCE}
        assert metadata_of(outer).get("organization_id") == ORG and "note" not in metadata_of(outer)
