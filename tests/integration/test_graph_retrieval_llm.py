"""Graph retrieval's model paths through the real `ChatOpenAI` against the local OpenAI wire server.

The wire server's chat script plays the model, so each test decides what the model answers and
reads back exactly which requests were made: map prompts with labelled parts, a retry after an
invalid reply, the community filter, and cancellation (no model call after the cancel).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from librarian.graph.query.global_search import NO_RESULTS_ANSWER, GlobalOptions, GlobalSearchError
from librarian.graph.query.local_search import local_search
from librarian.graph.query.runs import run_global
from librarian.stack import Stack
from tests.graph_fixtures import axis
from tests.graph_vectors import two_org_fixture_stack
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply

pytest_plugins = ["tests.wire.fixtures"]


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    return two_org_fixture_stack(tmp_path / "data")


def model(server: OpenAIWireServer) -> ChatOpenAI:
    return ChatOpenAI(base_url=server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)


def prompt_of(body: dict[str, Any]) -> str:
    return body["messages"][-1]["content"]


def map_reply(usefulness: int, answer: str) -> TextReply:
    return TextReply("```json\n" + json.dumps({"answer": answer, "usefulness": usefulness}) + "\n```")


async def test_global_map_reduce_with_a_model(stack: Stack, openai_server: OpenAIWireServer) -> None:
    openai_server.chat_script += [
        map_reply(70, "Scrooge is haunted and changes."),
        TextReply('Here: {"answer": "Scrooge changes after the spirits visit [Community ID: 2]."}'),
    ]
    result = await run_global(stack, "org-a", "How does Scrooge change?", model=model(openai_server))
    assert result["status"] == "completed"
    assert result["answer"] == "Scrooge changes after the spirits visit [Community ID: 2]."
    map_prompt, reduce_prompt = (prompt_of(b) for b in openai_server.chat_requests)
    # both leaf communities (2, 3) fit one batch, each labelled as part 1; org-b's summaries never appear
    assert (
        "[Community ID: 2 | summary part 1]" in map_prompt
        and "[Community ID: 3 | summary part 1]" in map_prompt
    )
    assert "A: Scrooge is visited" in map_prompt and "B: " not in map_prompt
    assert "[Usefulness: 70; Community IDs:" in reduce_prompt
    # the cited community resolves to real chunks with path, page and bbox
    assert result["sources"] and all(
        s["path"].startswith("docs/carol-") and s["bbox"] for s in result["sources"]
    )


async def test_invalid_map_reply_is_retried_once(stack: Stack, openai_server: OpenAIWireServer) -> None:
    openai_server.chat_script += [
        TextReply("I think it is useful."),  # no JSON: attempt 1 fails
        map_reply(40, "The Cratchits are poor."),  # attempt 2
        TextReply('{"answer": "They are poor."}'),
    ]
    result = await run_global(stack, "org-a", "What about the family?", model=model(openai_server))
    assert result["status"] == "completed" and len(openai_server.chat_requests) == 3


async def test_all_batches_failing_is_an_error_and_useless_ones_give_no_results(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    openai_server.chat_script += [TextReply("nope"), TextReply('{"usefulness": 500}')]
    with pytest.raises(GlobalSearchError):
        await run_global(stack, "org-a", "Themes?", model=model(openai_server))
    openai_server.chat_script += [map_reply(0, "")]
    result = await run_global(stack, "org-a", "Themes?", model=model(openai_server))
    assert result["status"] == "no_results" and result["answer"] == NO_RESULTS_ANSWER
    assert len(openai_server.chat_requests) == 3  # 2 failed attempts, then one map; no reduce call


async def test_local_search_uses_the_model_to_parse_and_filter(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    openai_server.chat_script += [
        TextReply('{"entities": ["Tiny Tim"], "keywords": ["ill"], "themes": []}'),
        TextReply('Sure: {"selectedCommunityIds": [3, 99]}'),
    ]
    result = await local_search(
        stack,
        "org-a",
        "Who is the ill boy?",
        model=model(openai_server),
        embed_query=lambda q: axis(5).tolist(),
    )
    assert result["parsed"]["parser"] == "llm"
    assert [m["name"] for m in result["matchedEntities"]] == ["tiny tim"]  # intent entity merged
    assert [c["id"] for c in result["communities"]] == [3]  # 99 was never offered: dropped
    parse_prompt, filter_prompt = (prompt_of(b) for b in openai_server.chat_requests)
    assert "Who is the ill boy?" in parse_prompt and "id 3: The Cratchit family" in filter_prompt


async def test_cancelled_global_run_makes_no_model_call_after_the_cancel(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_map(body: dict[str, Any]) -> TextReply:
        entered.set()
        release.wait(10)
        return map_reply(50, "late")

    openai_server.chat_script.append(slow_map)
    openai_server.default_reply = map_reply(50, "more")  # what further calls would get
    options = GlobalOptions(map_budget=200, map_reserve=10, concurrency=1)  # one community per batch
    task = asyncio.create_task(
        run_global(stack, "org-a", "Themes?", model=model(openai_server), options=options)
    )
    deadline = time.monotonic() + 10
    while not entered.is_set():
        assert time.monotonic() < deadline, "the first map call never reached the server"
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    calls_at_cancel = len(openai_server.requests_to("/chat/completions"))
    # Without the cancel there would be a second map call and a reduce call; poll briefly for any.
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        assert len(openai_server.requests_to("/chat/completions")) == calls_at_cancel == 1
        await asyncio.sleep(0.05)
