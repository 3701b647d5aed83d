"""A run sets global search's budgets and map concurrency, within the server's limits.

A graph of 12 one-entity communities (real SQLite store, chunks indexed with MiniLM) gives enough map
batches to see the budgets at work: a smaller map budget means more, smaller batches; the
concurrency is measured as the most map calls a counting fake model had in flight at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from graphs.agent import build_agent
from librarian.graph.model import ChunkRef, Claim, Community, Entity, Provenance, claim_id
from librarian.graph.tokens import count_tokens
from librarian.settings import Settings
from librarian.stack import Stack
from services.ask import answer_with_mode
from tests.graph_chat_fakes import ScriptedGraphModel, map_json
from tests.graph_fixtures import publish_graph
from tests.graph_vectors import index_graph_chunks, unit
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply
from tools.graph_tools import make_graph_tools

pytest_plugins = ["tests.wire.fixtures"]
ORG = "acme"
TOPICS = [
    "lighthouses",
    "tides",
    "harbours",
    "shipwrecks",
    "navigation",
    "fisheries",
    "storms",
    "ferries",
    "canals",
    "bridges",
    "ports",
    "sailing",
]
QUESTION = "What are the main themes across the documents?"
SMALL = {"mapBudget": 600, "mapReserve": 150}  # 450 tokens a map prompt: a few communities a batch
ROOM = 450


def build_topic_graph(stack: Stack, org: str) -> None:
    chunks: dict[str, list[ChunkRef]] = {}
    entities, claims, communities = [], [], []
    for i, topic in enumerate(TOPICS):
        path = f"docs/{topic}.txt"
        # a sentence of the documents close enough to QUESTION to be quoted (offline answers quote
        # the documents' sentences, never the summaries)
        text = f"One of the main themes across the documents is how {topic} shaped the coastal towns."
        chunk = ChunkRef(f"{path}:0", path, 0, 1, None, text, f"hash-{path}")
        chunks[path] = [chunk]
        source = Provenance(path, chunk.chunk_id)
        entities.append(Entity(topic, topic.title(), "CONCEPT", "", [], [source], mentions=1))
        claims.append(Claim(claim_id(topic, text), topic, None, text, chunk.chunk_id, path, [source]))
        summary = (
            f"This community gathers what the documents say about {topic}: their history, the people "
            f"who depended on {topic}, and how the coastal towns changed because of them. The records "
            f"follow {topic} from the first settlements through the industrial century to the present, "
            f"naming the families, the trades and the public works that grew around {topic}, and the "
            f"disputes, accidents and reforms that the town councils recorded about {topic}."
        )
        vector = unit(stack.dense.embed_query(summary))
        communities.append(
            Community(
                i + 1, 0, None, [topic], [], True, f"fp-{topic}", topic.title(), summary, vector, "t", 1.0
            )
        )
    names = stack.dense.embed_documents([e.display_name for e in entities])
    embeddings = {e.name: unit(v) for e, v in zip(entities, names, strict=True)}
    publish_graph(
        stack.graph_store.scope(org),
        chunks,
        entities,
        [],
        claims,
        communities,
        embeddings,
        embedding_model=stack.dense.model_id,
    )
    index_graph_chunks(stack, org, chunks)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    current = Stack(Settings(data_dir=Path(tmp_path_factory.mktemp("graph-options")) / "data"))
    build_topic_graph(current, ORG)
    return current


def _counting_model() -> ScriptedGraphModel:
    return ScriptedGraphModel(
        map_reply=map_json("The documents describe coastal towns.", 50),
        reduce_answer="The documents describe how coastal towns changed [Community ID: 1].",
    )


async def test_configurable_budgets_change_the_batches(stack: Stack) -> None:
    _, global_tool, *_ = make_graph_tools(lambda: stack)
    default = await global_tool.ainvoke(
        {"query": QUESTION}, config={"configurable": {"organization_id": ORG}}
    )
    small = await global_tool.ainvoke(
        {"query": QUESTION},
        config={
            "configurable": {
                "organization_id": ORG,
                "graph_global": SMALL,
            }
        },
    )
    assert len(default["batches"]) == 1  # 12 short communities fit one 8000-token prompt
    assert small["mapBudget"] == ROOM
    assert len(small["batches"]) > 2
    assert all(0 < b["tokens"] <= ROOM for b in small["batches"])
    read = sorted(c for b in small["batches"] for c in b["communityIds"])
    assert read == sorted(str(i + 1) for i in range(len(TOPICS)))  # every community still read once


async def test_context_budgets_reach_the_tool_inside_the_agent(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    openai_server.chat_script += [
        ToolCallReply("graph_global_search", {"query": QUESTION}),
        TextReply("Coastal towns changed."),
    ]
    model = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    agent = build_agent(lambda: stack, model=model)
    state = await agent.ainvoke(
        {"messages": [HumanMessage(QUESTION)]},
        context={"organization_id": ORG, "graph_global": SMALL},
    )
    shown = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in shown] == ["graph_global_search"]
    batches = shown[0].artifact["batches"]
    assert len(batches) > 2 and all(b["tokens"] <= ROOM for b in batches)


@pytest.mark.parametrize("concurrency", [1, 2, 3])
async def test_map_concurrency_from_the_run(stack: Stack, concurrency: int) -> None:
    model = _counting_model()
    result = await answer_with_mode(
        stack,
        ORG,
        QUESTION,
        "global",
        model=model,
        global_overrides={**SMALL, "concurrency": concurrency},
    )
    batches = result["details"]["batches"]
    assert len(batches) > concurrency
    assert len(model.map_prompts) == len(batches)  # one map call per batch
    assert all(count_tokens(p) <= ROOM for p in model.map_prompts)
    assert model.max_in_flight == concurrency


async def test_default_concurrency_is_the_reference_four(stack: Stack) -> None:
    model = _counting_model()
    await answer_with_mode(stack, ORG, QUESTION, "global", model=model, global_overrides=SMALL)
    assert len(model.map_prompts) > 4 and model.max_in_flight == 4


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"mapBudget": 10**6}, ["mapBudget", "32000", "LIBRARIAN_GRAPH_GLOBAL_MAX_MAP_BUDGET"]),
        ({"concurrency": 64}, ["concurrency", "8", "LIBRARIAN_GRAPH_GLOBAL_MAX_CONCURRENCY"]),
        ({"reduceBudget": 50_000}, ["reduceBudget", "32000"]),
        ({"mapBudget": 1000, "mapReserve": 1000}, ["mapReserve", "below mapBudget"]),
        ({"namespace": "other-org"}, ["unknown option", "namespace"]),
        ({"concurrency": "4"}, ["concurrency", "whole number"]),
    ],
)
async def test_over_the_limit_or_malformed_is_refused_before_any_work(
    stack: Stack, overrides: dict[str, object], words: list[str]
) -> None:
    from librarian.graph.query.global_limits import GlobalOptionError

    model = _counting_model()
    with pytest.raises(GlobalOptionError) as raised:
        await answer_with_mode(stack, ORG, QUESTION, "global", model=model, global_overrides=overrides)
    assert all(word in str(raised.value) for word in words), str(raised.value)
    assert model.map_prompts == []  # nothing ran
    _, global_tool, *_ = make_graph_tools(lambda: stack)
    with pytest.raises(GlobalOptionError):
        await global_tool.ainvoke(
            {"query": QUESTION}, config={"configurable": {"organization_id": ORG, "graph_global": overrides}}
        )


async def test_a_server_may_raise_its_limits(stack: Stack) -> None:
    roomy = Stack(stack.settings.model_copy(update={"graph_global_max_concurrency": 16}))
    model = _counting_model()
    result = await answer_with_mode(
        roomy,
        ORG,
        QUESTION,
        "global",
        model=model,
        global_overrides={**SMALL, "concurrency": 12},
    )
    assert model.max_in_flight == min(12, len(result["details"]["batches"]))


def test_cli_ask_takes_global_options_within_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import os

    from librarian.settings import get_settings
    from librarian_cli.commands import main

    data = tmp_path / "data"
    current = Stack(Settings(data_dir=data))
    build_topic_graph(current, ORG)
    current.files.write(ORG, "docs/tides.txt", b"The report on tides.")
    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(data))
    get_settings.cache_clear()
    try:
        base = ["ask", QUESTION, "--org", ORG, "--mode", "global"]
        assert main([*base, "--map-concurrency", "64"]) != 0
        assert "concurrency 64 is over this server's limit of 8" in capsys.readouterr().err
        assert main([*base, "--map-budget", "600", "--map-reserve", "150", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["mode"] == "global" and shown["status"] == "completed"
        assert shown["verification"] and all(r["supported"] for r in shown["verification"])
        assert all(s["score"] > 0 and "graph" in s["scores"] for s in shown["sources"])
    finally:
        get_settings.cache_clear()


async def test_the_offline_agents_graph_route_takes_the_runs_options(stack: Stack) -> None:
    from librarian.graph.query.global_limits import GlobalOptionError

    agent = build_agent(lambda: stack)  # no chat model: the extractive agent, routing to the graph
    state = await agent.ainvoke(
        {"messages": [HumanMessage(QUESTION)]}, context={"organization_id": ORG, "graph_global": SMALL}
    )
    assert state["messages"][-1].response_metadata["retrieval_mode"] == "global"
    with pytest.raises(GlobalOptionError, match="LIBRARIAN_GRAPH_GLOBAL_MAX_MAP_BUDGET"):
        await agent.ainvoke(
            {"messages": [HumanMessage(QUESTION)]},
            context={"organization_id": ORG, "graph_global": {"mapBudget": 10**6}},
        )
