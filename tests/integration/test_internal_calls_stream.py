"""Only the agent's answer streams: the model calls inside tools and nodes never reach the user.

The agent runs with a chat model (the real `ChatOpenAI` against the local OpenAI wire server, which
streams each reply as chunked server-sent events, word by word). The "model" answers the question with
three tool calls at once: `graph_global_search` (a map call per batch, then a reduce), `graph_local_search`
(query parsing and the community filter) and `search_documents`; the LLM reranker scores their
passages and the LLM support judge checks the cited answer. Every internal reply carries a marker
outside its JSON or number, so the marker can only reach a client if the raw reply itself leaks: no
`messages`, `messages-tuple` or `events` item may carry one, and every streamed model chunk must come
from the agent's `model` node, while the final answer does stream, chunk by chunk.

In process (`astream`, `astream_events`) and through a real `langgraph dev` server (the Platform
API's `runs.stream`, the three stream modes a chat client or Studio uses).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage

from graphs.agent import build_agent
from librarian.answers.support_llm import JUDGE_INSTRUCTIONS
from librarian.graph.query.global_search import MAP_PROMPT, REDUCE_PROMPT
from librarian.graph.query.local_search import FILTER_PROMPT
from librarian.graph.query.parse import PARSE_PROMPT
from librarian.retrieval.scorers import LLM_INSTRUCTIONS
from librarian.stack import Stack
from tests.graph_vectors import build_marked_graph
from tests.integration.server_fixtures import DevServer, bearer, running_server, token
from tests.integration.tenant_corpus import clean_settings
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

ORG = "org-a"
QUESTION = "What are the main themes of the story, and who employs Bob Cratchit?"
ANSWER = "The main theme is money, and Scrooge employs Bob Cratchit [1]."
# A marker per internal call, outside the JSON or number the caller reads; no digits (the judge and
# the reranker read the first number of a reply).
REPLIES = {
    "map": 'MAPRAWMARK {"answer": "Scrooge counts coins.", "usefulness": 60}',
    "reduce": 'REDUCERAWMARK {"answer": "Money rules Scrooge [Community ID: 2]."}',
    "parse": 'PARSERAWMARK {"entities": ["Bob Cratchit"], "keywords": ["employs"], "themes": []}',
    "filter": 'FILTERRAWMARK {"selectedCommunityIds": [2, 3]}',
    "rerank": "RERANKRAWMARK 0.8",
    "judge": "JUDGERAWMARK 0.9",
}
MARKERS = [reply.split(" ", 1)[0] for reply in REPLIES.values()]
INTERNAL = set(REPLIES)


def kind_of(body: dict[str, Any]) -> str:
    """Which call a chat request is: the agent's model turn or one of the internal ones."""
    if body.get("tools"):
        return "agent"
    messages = body.get("messages") or [{}]
    first, last = str(messages[0].get("content") or ""), str(messages[-1].get("content") or "")
    heads = {
        "map": MAP_PROMPT,
        "reduce": REDUCE_PROMPT,
        "parse": PARSE_PROMPT,
        "filter": FILTER_PROMPT,
    }
    for kind, prompt in heads.items():
        if last.startswith(prompt.split("\n", 1)[0]):
            return kind
    if first == JUDGE_INSTRUCTIONS:
        return "judge"
    if first == LLM_INSTRUCTIONS:
        return "rerank"
    return "unknown"


def scripted(body: dict[str, Any]) -> TextReply | list[ToolCallReply]:
    """The model, from the request alone (no script order: map calls run concurrently)."""
    kind = kind_of(body)
    if kind == "agent":
        if body["messages"][-1].get("role") == "tool":
            return TextReply(ANSWER)
        return [
            ToolCallReply("graph_global_search", {"query": "main themes of the story"}),
            ToolCallReply("graph_local_search", {"query": "Who employs Bob Cratchit?"}),
            ToolCallReply("search_documents", {"query": "Bob Cratchit employer"}),
        ]
    return TextReply(REPLIES.get(kind, "(unexpected request)"))


def kinds(wire: OpenAIWireServer, since: int = 0) -> Counter[str]:
    return Counter(kind_of(body) for body in wire.chat_requests[since:])


def assert_every_internal_call_was_made(wire: OpenAIWireServer, since: int) -> None:
    """So the run exercised each of them (and the agent took its two turns)."""
    made = kinds(wire, since)
    assert set(made) >= INTERNAL and made["agent"] == 2 and "unknown" not in made, made


def assert_internal_calls_were_plain(wire: OpenAIWireServer, since: int) -> None:
    """No streaming handler reached an internal call, so the model did not stream it; the agent's own
    turns were streamed."""
    for body in wire.chat_requests[since:]:
        assert bool(body.get("stream")) == (kind_of(body) == "agent"), (kind_of(body), body.get("stream"))


def assert_no_marker(item: Any) -> None:
    text = item if isinstance(item, str) else json.dumps(item, default=str)
    leaked = [m for m in MARKERS if m in text]
    assert not leaked, f"internal model output in the stream ({leaked}): {text[:600]}"


# ------------------------------------------------------------------------------------ in process


@pytest.fixture(scope="module")
def wire() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        server.default_reply = scripted
        yield server


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, wire: OpenAIWireServer) -> Iterator[Stack]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", TEST_API_KEY)
        settings = clean_settings(
            tmp_path_factory.mktemp("internalcalls") / "data",
            mp,
            chat_model="openai:gpt-test",
            chat_base_url=wire.base_url,
            reranker="llm",
            support_judge="llm",
        )
        current = Stack(settings)
        build_marked_graph(current, ORG, "[A]")
        yield current


def question() -> dict[str, Any]:
    return {"messages": [HumanMessage(QUESTION)]}


@pytest.mark.asyncio(loop_scope="module")  # ChatOpenAI's pooled client is bound to a loop
async def test_messages_mode_streams_the_answer_and_nothing_internal(stack, wire):
    since = len(wire.chat_requests)
    agent = build_agent(lambda: stack)
    items = [
        item
        async for item in agent.astream(question(), context={"organization_id": ORG}, stream_mode="messages")
    ]
    assert_every_internal_call_was_made(wire, since)
    for message, meta in items:
        assert_no_marker(message.model_dump())
        assert_no_marker(meta)
    chunks = [(m, meta) for m, meta in items if isinstance(m, AIMessageChunk)]
    assert {meta["langgraph_node"] for _, meta in chunks} == {"model"}, "a model chunk from inside a tool"
    final_id = chunks[-1][0].id
    pieces = [m for m, _ in chunks if m.id == final_id]
    assert len(pieces) > 5 and "".join(str(p.content) for p in pieces) == ANSWER  # streamed, word by word
    assert_internal_calls_were_plain(wire, since)


@pytest.mark.asyncio(loop_scope="module")  # ChatOpenAI's pooled client is bound to a loop
async def test_events_carry_the_answer_and_nothing_internal(stack, wire):
    since = len(wire.chat_requests)
    agent = build_agent(lambda: stack)
    events = [
        event
        async for event in agent.astream_events(question(), context={"organization_id": ORG}, version="v2")
    ]
    assert_every_internal_call_was_made(wire, since)
    for event in events:
        assert_no_marker(event)
    model_events = [e for e in events if e["event"].startswith("on_chat_model")]
    assert {e["metadata"]["langgraph_node"] for e in model_events} == {"model"}
    streamed = "".join(
        str(e["data"]["chunk"].content) for e in events if e["event"] == "on_chat_model_stream"
    )
    assert ANSWER in streamed
    final = next(e for e in reversed(events) if e["event"] == "on_chain_end" and e["name"] == "agent")
    citations = final["data"]["output"]["citations"]
    assert citations and all(c["judge"] == "llm" for c in citations)  # the judge's verdicts were used
    assert_internal_calls_were_plain(wire, since)


# ---------------------------------------------------------------------------- a langgraph dev server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, wire: OpenAIWireServer) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("internalserver")
    with pytest.MonkeyPatch.context() as mp:
        built = Stack(clean_settings(tmp / "data", mp))
        build_marked_graph(built, ORG, "[A]")
        built.graph_store.close()
    env = {
        "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
        "LIBRARIAN_CHAT_BASE_URL": wire.base_url,
        "LIBRARIAN_RERANKER": "llm",
        "LIBRARIAN_SUPPORT_JUDGE": "llm",
        "OPENAI_API_KEY": TEST_API_KEY,
    }
    with running_server(tmp, env) as server:
        yield server


def stream_run(server: DevServer, mode: str) -> list[tuple[str, Any]]:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url, headers=bearer(token("ada", ORG)), timeout=120)
    thread = client.threads.create()
    return [
        (part.event, part.data)
        for part in client.runs.stream(
            thread["thread_id"],
            "agent",
            input={"messages": [{"role": "user", "content": QUESTION}]},
            stream_mode=mode,
        )
    ]


def streamed_answers(parts: list[tuple[str, Any]], mode: str) -> dict[str, tuple[str, int]]:
    """Per AI message id streamed as chunks: (its node, how many chunks); checks each chunk's text
    adds up to what the mode says the message is."""
    seen: dict[str, tuple[str, int]] = {}
    if mode == "messages-tuple":
        for message, meta in (d for e, d in parts if e == "messages"):
            if message["type"] == "AIMessageChunk":
                node, count = seen.get(message["id"], (meta["langgraph_node"], 0))
                seen[message["id"]] = (node, count + 1)
    elif mode == "messages":
        nodes = {}
        for event, data in parts:
            if event == "messages/metadata":
                nodes.update({mid: value["metadata"]["langgraph_node"] for mid, value in data.items()})
            elif event == "messages/partial":
                for message in data:  # the message so far, as an `ai` message
                    if message["type"] in ("ai", "AIMessageChunk"):
                        node, count = seen.get(message["id"], (nodes[message["id"]], 0))
                        seen[message["id"]] = (node, count + 1)
    else:
        for _, event in parts:
            if event.get("event") == "on_chat_model_stream":
                chunk = event["data"]["chunk"]
                node, count = seen.get(chunk["id"], (event["metadata"]["langgraph_node"], 0))
                seen[chunk["id"]] = (node, count + 1)
    return seen


def answer_text(parts: list[tuple[str, Any]], mode: str) -> str:
    if mode == "messages-tuple":
        chunks = [d[0] for e, d in parts if e == "messages" and d[0]["type"] == "AIMessageChunk"]
        last = chunks[-1]["id"]
        return "".join(str(m["content"]) for m in chunks if m["id"] == last)
    if mode == "messages":
        partials = [
            m for e, d in parts if e == "messages/partial" for m in d if m["type"] in ("ai", "AIMessageChunk")
        ]
        return str(partials[-1]["content"])  # the server sends the message so far
    chunks = [e["data"]["chunk"] for _, e in parts if e.get("event") == "on_chat_model_stream"]
    last = chunks[-1]["id"]
    return "".join(str(c["content"]) for c in chunks if c["id"] == last)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", ["messages-tuple", "messages", "events"])
def test_server_streams_only_the_agent_answer(served: DevServer, wire: OpenAIWireServer, mode: str):
    since = len(wire.chat_requests)
    parts = stream_run(served, mode)
    assert not [d for e, d in parts if e == "error"], served.log_tail(80)
    assert_every_internal_call_was_made(wire, since)
    for event, data in parts:
        assert_no_marker([event, data])
    streamed = streamed_answers(parts, mode)
    assert streamed and {node for node, _ in streamed.values()} == {"model"}, streamed
    assert max(count for _, count in streamed.values()) > 5  # the answer came chunk by chunk
    assert answer_text(parts, mode) == ANSWER
    assert_internal_calls_were_plain(wire, since)
