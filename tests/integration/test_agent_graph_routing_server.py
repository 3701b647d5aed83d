"""The offline agent's graph routing through a real `langgraph dev` server (no chat model).

What a chat client or Studio gets: an overview question answered from global search and an entity
question from local search, each with sources and citation records, for the caller's organization
only. The server also refuses blocking calls on its event loop, which plain-Python tests cannot show.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from librarian.graph.query.global_offline import OFFLINE_NOTICE
from librarian.stack import Stack
from tests.graph_vectors import build_marked_graph
from tests.integration.server_fixtures import DevServer, ask, running_server, token
from tests.integration.tenant_corpus import clean_settings
from tests.integration.test_agent_graph_routing import LOCAL, ORGS, OVERVIEW

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("routingserver")
    with pytest.MonkeyPatch.context() as mp:
        stack = Stack(clean_settings(tmp / "data", mp))
        for org, marker in ORGS.items():
            build_marked_graph(stack, org, marker)
        stack.graph_store.close()
    with running_server(tmp) as srv:
        yield srv


def final_answer(state: dict) -> dict:
    messages = state.get("messages") or []
    assert messages, state
    return messages[-1]


@pytest.mark.parametrize("org", list(ORGS))
def test_server_agent_answers_overview_and_entity_questions_from_the_graph(
    server: DevServer, org: str
) -> None:
    other = next(m for o, m in ORGS.items() if o != org)
    tok = token("ada", org)
    overview = ask(server.url, tok, OVERVIEW)
    answer = final_answer(overview)
    assert answer["response_metadata"]["retrieval_mode"] == "global", answer
    assert answer["content"].startswith(OFFLINE_NOTICE) and "[Community ID: " in answer["content"]
    assert overview["sources"] and overview["citations"]
    local = ask(server.url, tok, LOCAL)
    answer = final_answer(local)
    assert answer["response_metadata"]["retrieval_mode"] == "local", answer
    assert any("Scrooge employs Bob Cratchit" in c["sentence"] for c in local["citations"])
    for state in (overview, local):
        assert all(ORGS[org] in s["text"] and other not in s["text"] for s in state["sources"])
        assert other not in final_answer(state)["content"]
