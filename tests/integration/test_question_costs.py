"""Question-time costs: global search's map and reduce, and DRIFT's steps, are charged to the asking
organization in the cost ledger, with the tokens the OpenAI wire server says it served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from librarian.costs.handler import USAGE_RECORDER
from librarian.costs.ledger import ledger_of
from librarian.costs.question import flush_question_costs
from librarian.costs.scope import current_scope
from librarian.graph.query.runs import run_global
from librarian.stack import Stack
from tests.graph_vectors import two_org_fixture_stack
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply

pytest_plugins = ["tests.wire.fixtures"]


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    return two_org_fixture_stack(tmp_path / "data")


def recorded_model(server: OpenAIWireServer) -> ChatOpenAI:
    """What `chat_model_from_settings` builds: a chat model carrying the ledger's handler."""
    return ChatOpenAI(
        base_url=server.base_url,
        api_key=TEST_API_KEY,
        model="gpt-test",
        max_retries=0,
        callbacks=[USAGE_RECORDER],
    )


async def test_a_global_answer_records_map_and_reduce_for_the_asking_organization(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    openai_server.chat_script += [
        TextReply("```json\n" + json.dumps({"answer": "Scrooge changes.", "usefulness": 70}) + "\n```"),
        TextReply('{"answer": "Scrooge changes after the spirits visit [Community ID: 2]."}'),
    ]
    result = await run_global(stack, "org-a", "How does Scrooge change?", model=recorded_model(openai_server))
    assert result["status"] == "completed"
    assert current_scope() is None  # the run's scope is closed again
    flush_question_costs()  # written by the ledger's thread, off the event loop
    phases = {p.phase: p for p in ledger_of(stack).phases("org-a")}
    assert phases["map"].calls == 1 and phases["reduce"].calls == 1
    assert phases["answer"].calls == 0  # every call of a global answer is a map or the reduce
    served = openai_server.tokens_served
    assert phases["map"].inputTokens + phases["reduce"].inputTokens == served["prompt"]
    assert phases["map"].outputTokens + phases["reduce"].outputTokens == served["completion"]
    assert all(p.calls == 0 for p in ledger_of(stack).phases("org-b"))  # nothing charged to another org


async def test_an_offline_global_answer_records_nothing(stack: Stack) -> None:
    result = await run_global(stack, "org-a", "How does Scrooge change?")
    assert result["status"] == "completed"
    flush_question_costs()
    assert all(p.calls == 0 and p.inputTokens == 0 for p in ledger_of(stack).phases("org-a"))
