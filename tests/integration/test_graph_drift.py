"""DRIFT search end to end on the hand-made graph: offline, through a chat model on the wire, cancelled,
and as `librarian ask --mode drift`, the agent tool and the server route.

The graph is `tests.graph_fixtures`' (Scrooge, Marley, the Cratchits, two leaf communities) embedded
with the real MiniLM and its chunks indexed (`tests.graph_vectors.build_marked_graph`), in a real
SQLite store; every text carries the marker "[A]". The chat model is a real `ChatOpenAI` pointed at
the local OpenAI wire server, which answers each DRIFT prompt by the words it starts with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from librarian.graph.query.drift_llm import FOLLOWUP_PROMPT, PRIMER_PROMPT, REDUCE_PROMPT
from librarian.graph.query.drift_offline import OFFLINE_DRIFT_NOTICE
from librarian.graph.query.drift_search import DriftCancelled, DriftOptions, drift_search
from librarian.graph.query.runs import run_drift, run_local
from librarian.settings import Settings
from librarian.stack import Stack
from services.ask import answer_with_mode
from tests.graph_fixtures import CHUNKS
from tests.graph_vectors import build_marked_graph
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply
from tools.graph_tools import make_graph_tools

pytest_plugins = ["tests.wire.fixtures"]
ORG = "acme"
QUESTION = "How does Scrooge affect the people around him?"
CHUNK_TEXT = {c.chunk_id: c.text for refs in CHUNKS.values() for c in refs}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    current = Stack(Settings(data_dir=Path(tmp_path_factory.mktemp("graph-drift")) / "data"))
    build_marked_graph(current, ORG, "[A]")
    return current


def cited_numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


async def test_offline_drift_quotes_the_documents_and_cites_the_local_evidence(stack: Stack) -> None:
    result = await run_drift(stack, ORG, QUESTION, options=DriftOptions(primer_k=2, followups=2, depth=2))
    assert result["status"] == "completed"
    # the primer read the closest communities (both leaves), the Scrooge one first
    assert [c["id"] for c in result["communities"]] == ["2", "3"]
    assert result["primer"]["communityIds"] == ["2", "3"] and result["primer"]["confidence"] > 0
    steps = result["followUps"]
    assert 1 < len(steps) <= 4  # fixed cost: depth x follow-ups per step
    assert steps[0]["question"] == QUESTION and steps[0]["depth"] == 1
    assert {s["depth"] for s in steps} == {1, 2}
    assert len({s["question"].lower() for s in steps}) == len(steps)  # never asked twice
    assert all(s["sourceIds"] for s in steps)
    # the answer quotes sentences of the documents (never a community report), each citing its source
    answer = result["answer"]
    assert answer.startswith(OFFLINE_DRIFT_NOTICE)
    sources = result["sources"]
    quotes = re.findall(r'- "(.+?)" \[(\d+)\]', answer)
    assert quotes
    for sentence, n in quotes:  # the marker "[A]" reads as a footnote marker: quotes drop it
        assert sentence in sources[int(n) - 1]["text"] and "[A]" not in sentence
        assert sentence in CHUNK_TEXT[sources[int(n) - 1]["id"]]
    asked = {i for s in steps for i in s["sourceIds"]}
    assert {s["id"] for s in sources} <= asked


async def test_the_knobs_bound_the_local_searches(stack: Stack) -> None:
    one = await run_drift(stack, ORG, QUESTION, options=DriftOptions(primer_k=1, followups=1, depth=1))
    assert [c["id"] for c in one["communities"]] == ["2"]
    assert [s["question"] for s in one["followUps"]] == [QUESTION]
    three = await run_drift(stack, ORG, QUESTION, options=DriftOptions(primer_k=2, followups=3, depth=1))
    assert len(three["followUps"]) == 3 and {s["depth"] for s in three["followUps"]} == {1}


async def test_a_drift_stopped_before_it_starts_reads_nothing(stack: Stack) -> None:
    with pytest.raises(DriftCancelled) as raised:
        await run_drift(stack, ORG, QUESTION, should_stop=lambda: True)
    assert raised.value.code == "cancelled"


async def test_a_drift_cancelled_after_its_first_local_search_starts_no_other(stack: Stack) -> None:
    """The stop request arrives while the first follow-up's local search runs: that search finishes,
    nothing further (follow-up step, second local search, reduce) starts."""
    asked: list[str] = []
    stop = {"now": False}

    async def local(question: str) -> dict[str, Any]:
        asked.append(question)
        result = await run_local(stack, ORG, question)
        stop["now"] = True  # the caller cancels here
        return result

    class CountingEngine:
        def __init__(self) -> None:
            from librarian.graph.query.drift_offline import OfflineDrift

            self.inner = OfflineDrift(stack.dense.embed_query, stack.dense.embed_documents)
            self.calls: list[str] = []

        async def primer(self, question: str, reports: Any) -> Any:
            self.calls.append("primer")
            return await self.inner.primer(question, reports)

        async def follow_up(self, question: str, step: Any, local: Any) -> Any:
            self.calls.append("follow_up")
            return await self.inner.follow_up(question, step, local)

        async def reduce(self, *args: Any) -> str:
            self.calls.append("reduce")
            return await self.inner.reduce(*args)

    from librarian.graph.query.drift_inputs import primer_reports

    graph = stack.graph_store.scope(ORG)
    reports = await primer_reports(stack, ORG, graph, graph.published_version(), QUESTION, stack.dense, 2)
    engine = CountingEngine()
    with pytest.raises(DriftCancelled):
        await drift_search(QUESTION, reports, local, engine, DriftOptions(), should_stop=lambda: stop["now"])
    assert asked == [QUESTION]
    assert engine.calls == ["primer"]


# --- through a chat model on the wire ------------------------------------------------------------------


def drift_replies(body: dict[str, Any]) -> TextReply:
    """The wire model's DRIFT: a primer raising one follow-up, step answers citing [1], a reduce."""
    prompt = str(body["messages"][-1]["content"])
    if prompt.startswith(PRIMER_PROMPT.split("\n", 1)[0]):
        return TextReply(
            "```json\n"
            + json.dumps(
                {
                    "intermediate_answer": "Scrooge shapes the lives of Marley and the Cratchits "
                    "[Community ID: 2].",
                    "follow_up_queries": ["Who is Bob Cratchit to Scrooge?"],
                    "score": 70,
                }
            )
            + "\n```"
        )
    if prompt.startswith(FOLLOWUP_PROMPT.split("\n", 1)[0]):
        return TextReply(
            json.dumps({"answer": "Scrooge employs Bob Cratchit [1].", "follow_up_queries": [], "score": 80})
        )
    if prompt.startswith(REDUCE_PROMPT.split("\n", 1)[0]):
        return TextReply(json.dumps({"answer": "Scrooge employs Bob Cratchit as his clerk [1]."}))
    return TextReply("{}")  # query parse, community filter: unusable, so the rules stand


def wire_model(server: OpenAIWireServer) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-test", base_url=server.base_url, api_key=TEST_API_KEY, max_retries=0)


async def test_drift_with_a_chat_model_runs_primer_follow_ups_and_reduce(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    openai_server.default_reply = drift_replies  # default knobs: 5 reports, 3 follow-ups a step, 2 steps
    answered = await answer_with_mode(stack, ORG, QUESTION, "drift", model=wire_model(openai_server))
    assert answered["mode"] == "drift" and answered["chosenBy"] == "user"
    assert answered["status"] == "completed"
    prompts = [str(r["messages"][-1]["content"]) for r in openai_server.chat_requests]
    heads = [p.split("\n", 1)[0] for p in prompts]
    primer, followup, reduce = (p.split("\n", 1)[0] for p in (PRIMER_PROMPT, FOLLOWUP_PROMPT, REDUCE_PROMPT))
    assert heads.count(primer) == 1 and heads[-1] == reduce
    assert heads.count(followup) == 2  # the question itself, then the primer's follow-up
    details = answered["details"]
    assert [s["question"] for s in details["followUps"]] == [QUESTION, "Who is Bob Cratchit to Scrooge?"]
    assert details["primer"]["confidence"] == 70
    # the reduce read the follow-ups' findings, renumbered to its evidence list
    reduce_prompt = prompts[-1]
    assert "Scrooge employs Bob Cratchit [" in reduce_prompt and "[Community ID: 2]" in reduce_prompt
    # the answer cites the evidence; its citation was checked against the cited source
    assert answered["answer"].startswith("Scrooge employs Bob Cratchit as his clerk [1]")
    assert "Bob Cratchit" in answered["sources"][0]["text"]
    assert details["citations"] and details["citations"][0]["evidence"]


async def test_an_unreadable_final_answer_is_an_error_not_a_guess(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    from librarian.graph.query.drift_llm import DriftError

    def broken_reduce(body: dict[str, Any]) -> TextReply:
        prompt = str(body["messages"][-1]["content"])
        if prompt.startswith(REDUCE_PROMPT.split("\n", 1)[0]):
            return TextReply("I think the answer is about Scrooge.")
        return drift_replies(body)

    openai_server.default_reply = broken_reduce
    options = DriftOptions(primer_k=1, followups=1, depth=1)
    with pytest.raises(DriftError) as raised:
        await run_drift(stack, ORG, QUESTION, model=wire_model(openai_server), options=options)
    assert raised.value.code == "drift_search_failed"


# --- the tool, the CLI, the chooser ----------------------------------------------------------------------


async def test_the_drift_tool_answers_in_the_configured_organization(stack: Stack) -> None:
    tools = {t.name: t for t in make_graph_tools(lambda: stack)}
    result = await tools["graph_drift_search"].ainvoke(
        {"query": QUESTION, "organization_id": "other"}, config={"configurable": {"organization_id": ORG}}
    )
    assert result["status"] == "completed" and result["sources"]
    assert all(s["path"].startswith("docs/carol-") and "[A]" in s["text"] for s in result["sources"])


async def test_auto_mode_sends_a_reach_question_to_drift(stack: Stack) -> None:
    answered = await answer_with_mode(stack, ORG, QUESTION, "auto")
    assert answered["mode"] == "drift" and answered["chosenBy"] == "auto"
    assert answered["status"] == "completed"
    assert answered["details"]["citations"]  # checked like the other graph modes
    assert all(c["action"] == "kept" for c in answered["details"]["citations"])


def test_librarian_ask_mode_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import os

    from librarian.settings import get_settings
    from librarian_cli import main

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LIBRARIAN_GRAPH_DRIFT_DEPTH", "1")
    get_settings.cache_clear()
    try:
        current = Stack(get_settings())
        build_marked_graph(current, ORG, "[A]")
        for path, refs in CHUNKS.items():
            current.files.write(ORG, path, "\n".join(c.text for c in refs).encode())
        capsys.readouterr()
        assert main(["ask", QUESTION, "--org", ORG, "--mode", "drift", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
    finally:
        get_settings.cache_clear()
    assert shown["mode"] == "drift" and shown["modeChosenBy"] == "user" and shown["status"] == "completed"
    assert shown["citations"] and all("path" in c for c in shown["citations"])
    assert set(cited_numbers(shown["answer"])) <= set(range(1, len(shown["sources"]) + 1))


# --- the server route -------------------------------------------------------------------------------------


class User(dict):
    """The server's user: a dict that also answers `is_authenticated` (as in tests/unit/test_webapi.py)."""

    is_authenticated = True


def test_the_server_route_answers_a_drift_question(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    import librarian.stack
    import server

    monkeypatch.setattr(librarian.stack, "get_stack", lambda *a, **k: stack)
    member = User(identity="ann", orgs=[ORG], role="member", permissions=[])

    async def app(scope: dict, receive: Any, send: Any) -> None:
        await server.app({**scope, "user": member}, receive, send)

    client = TestClient(app, raise_server_exceptions=False)
    response = client.get(f"/orgs/{ORG}/graph/drift", params={"q": QUESTION})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "completed" and body["question"] == QUESTION
    assert body["followUps"][0]["question"] == QUESTION and body["sources"]
    assert set(cited_numbers(body["answer"])) <= set(range(1, len(body["sources"]) + 1))
    assert body["citations"]
    refused = client.get(f"/orgs/{ORG}/graph/drift", params={"q": " "})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_question"
    elsewhere = client.get("/orgs/globex/graph/drift", params={"q": QUESTION})
    assert elsewhere.status_code == 403
    member["orgs"] = [ORG, "empty"]
    empty = client.get("/orgs/empty/graph/drift", params={"q": QUESTION})
    assert empty.status_code == 404 and empty.json()["error"]["code"] == "no_graph"


async def test_the_offline_agent_routes_a_reach_question_to_drift(stack: Stack) -> None:
    from langchain_core.messages import HumanMessage

    from graphs.agent import build_agent

    agent = build_agent(lambda: stack)  # no chat model configured: the extractive agent
    state = await agent.ainvoke({"messages": [HumanMessage(QUESTION)]}, context={"organization_id": ORG})
    reply = str(state["messages"][-1].content)
    assert reply.startswith(OFFLINE_DRIFT_NOTICE) and "\n\nSources:\n[1] " in reply
    assert state["sources"] and all(s["path"].startswith("docs/carol-") for s in state["sources"])
