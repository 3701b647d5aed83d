"""Tenant isolation of the graph tools, called directly and by the agent (real `ChatOpenAI`).

Two organizations hold the same hand-made graph (an entity "Scrooge" in both), written through the
real SQLite store with real MiniLM embeddings; every text of organization X carries the marker "[X]",
so any leak shows up in what a tool returns or what the model is shown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from graphs.agent import build_agent
from librarian.errors import TenantError
from librarian.settings import Settings
from librarian.stack import Stack
from tests.graph_vectors import build_marked_graph
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply
from tools.graph_tools import make_graph_tools

pytest_plugins = ["tests.wire.fixtures"]
ORGS = {"org-a": "[A]", "org-b": "[B]"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    current = Stack(Settings(data_dir=Path(tmp_path_factory.mktemp("graph-tools")) / "data"))
    for org, marker in ORGS.items():
        build_marked_graph(current, org, marker)
    return current


def only(org: str, text: str) -> bool:
    other = next(m for o, m in ORGS.items() if o != org)
    return ORGS[org] in text and other not in text


@pytest.mark.parametrize("org", list(ORGS))
async def test_local_tool_reads_only_the_configured_organization(stack: Stack, org: str) -> None:
    local, *_ = make_graph_tools(lambda: stack)
    other = next(o for o in ORGS if o != org)
    # A model-invented organization argument is not part of the schema: dropped, never used.
    result = await local.ainvoke(
        {"query": "Who is Scrooge?", "organization_id": other},
        config={"configurable": {"organization_id": org}},
    )
    assert result["status"] == "completed"
    assert any(m["name"] == "scrooge" for m in result["matchedEntities"])
    assert result["communities"] and all(only(org, c["summary"]) for c in result["communities"])
    assert result["evidence"] and all(only(org, e["text"]) for e in result["evidence"])
    assert all(only(org, s["text"]) and s["path"].startswith("docs/carol-") for s in result["sources"])


@pytest.mark.parametrize("org", list(ORGS))
async def test_global_tool_reads_only_the_configured_organization(stack: Stack, org: str) -> None:
    _, global_tool, *_ = make_graph_tools(lambda: stack)
    result = await global_tool.ainvoke(
        {"query": "What is the story about Scrooge and the ghosts?"},
        config={"configurable": {"organization_id": org}},
    )
    assert result["status"] == "completed"
    assert only(org, result["answer"])
    assert result["sources"] and all(only(org, s["text"]) for s in result["sources"])
    budget = result["mapBudget"]
    assert all(b["tokens"] <= budget for b in result["batches"])


async def test_tools_refuse_a_run_without_an_organization(stack: Stack) -> None:
    for graph_tool in make_graph_tools(lambda: stack):
        with pytest.raises(TenantError):
            await graph_tool.ainvoke({"query": "Who is Scrooge?"}, config={"configurable": {}})


async def test_agent_graph_tools_stay_in_the_callers_organization(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    openai_server.chat_script += [
        ToolCallReply("graph_local_search", {"query": "Who is Scrooge?", "organization_id": "org-b"}),
        ToolCallReply("graph_global_search", {"query": "Main themes?", "namespace": "org-b"}),
        TextReply("Scrooge is a miser [1]."),
    ]
    model = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    agent = build_agent(lambda: stack, model=model)
    state = await agent.ainvoke(
        {"messages": [HumanMessage("Tell me about Scrooge.")]}, context={"organization_id": "org-a"}
    )
    shown = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in shown] == ["graph_local_search", "graph_global_search"]
    assert all("[B]" not in m.content for m in shown) and "[A]" in shown[0].content
    assert state["sources"] and all(only("org-a", s["text"]) for s in state["sources"])
    assert "[B]" not in json.dumps([r.body for r in openai_server.requests])


async def test_ask_modes_offline(stack: Stack) -> None:
    from services.ask import answer_with_mode

    overview = await answer_with_mode(stack, "org-a", "What are the main themes of the story?", "auto")
    assert overview["mode"] == "global" and overview["chosenBy"] == "auto"
    assert overview["status"] == "completed" and "[Community ID:" in overview["answer"]
    # every community citation is followed by the [n] of a real chunk of this organization
    assert "][1]" in overview["answer"] and all(only("org-a", s["text"]) for s in overview["sources"])
    local = await answer_with_mode(stack, "org-b", "Who employs Bob Cratchit?", "local")
    assert local["mode"] == "local" and local["chosenBy"] == "user" and local["status"] == "completed"
    assert local["sources"] and all(only("org-b", s["text"]) for s in local["sources"])
    assert "[1]" in local["answer"] or "closest sources" in local["answer"]


async def test_auto_falls_back_to_search_without_a_graph(stack: Stack) -> None:
    from services.ask import answer_with_mode

    result = await answer_with_mode(stack, "org-c", "Who employs Bob Cratchit?", "auto")
    assert result["mode"] == "search" and result["chosenBy"] == "auto (no knowledge graph yet)"
    forced = await answer_with_mode(stack, "org-c", "Who employs Bob Cratchit?", "local")
    assert forced["status"] == "no_graph" and "no knowledge graph" in forced["answer"]
