"""A run's chosen answer path (`context.mode`, the chat's mode select) and the path that answered.

The extractive agent (no chat model) and the chat-model agent (`ChatOpenAI` against the local OpenAI
wire server) on the real embedded stack: the chosen path narrows what runs, `answered_by` and the
answer's `response_metadata` name the path that answered, an abstention names its closest sources by
number, and an unknown mode is a clear error.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from graphs.agent import build_agent
from graphs.context import ANSWER_MODES, requested_mode
from librarian.answers.extractive import NOT_ANSWERED
from librarian.stack import Stack
from tests.integration.tenant_corpus import ACME, QUESTION, build_corpus, clean_settings
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        yield build_corpus(Stack(clean_settings(tmp_path_factory.mktemp("mode") / "data", mp)))


def ask(agent, question: str, mode: str | None = None):
    context = {"organization_id": ACME, **({"mode": mode} if mode else {})}
    return agent.invoke({"messages": [HumanMessage(question)]}, context=context)


def test_the_extractive_answer_names_its_path_in_state_and_in_the_message(corpus):
    state = ask(build_agent(lambda: corpus), QUESTION, "search")
    assert state["answered_by"]["mode"] == "search"
    assert state["answered_by"]["chosenBy"] == "user"
    meta = state["messages"][-1].response_metadata
    assert meta["retrieval_mode"] == "search" and meta["chosen_by"] == "user"


def test_a_chosen_graph_path_without_a_graph_falls_back_to_search_and_says_so(corpus):
    state = ask(build_agent(lambda: corpus), QUESTION, "global")
    assert state["answered_by"]["mode"] == "search"
    assert state["answered_by"]["chosenBy"].startswith("user (global found nothing")


def test_an_abstention_lists_its_closest_sources_by_number(corpus):
    state = ask(build_agent(lambda: corpus), "What colour is the moon's umbrella on Tuesdays?", "search")
    answer = state["messages"][-1].content
    if not answer.startswith(NOT_ANSWERED):
        pytest.skip("the corpus answered this question; no abstention to check")
    closest = state["answered_by"]["closest"]
    assert closest and all(1 <= n <= len(state["sources"]) for n in closest)
    assert state["messages"][-1].response_metadata["closest"] == closest


def test_an_unknown_mode_fails_the_run_with_a_message_naming_the_modes(corpus):
    with pytest.raises(ValueError, match="mode must be one of auto, search, local, global, drift"):
        ask(build_agent(lambda: corpus), QUESTION, "graph")


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=12), st.sampled_from(ANSWER_MODES)))
def test_requested_mode_accepts_exactly_the_known_modes(mode):
    if mode in (None, "") or mode in ANSWER_MODES:
        assert requested_mode({"mode": mode}) == (mode or "auto")
    else:
        with pytest.raises(ValueError, match="mode must be one of"):
            requested_mode({"mode": mode})


def test_the_chat_model_sees_only_the_chosen_paths_tool_and_the_answer_names_it(corpus):
    with OpenAIWireServer() as wire:
        wire.chat_script += [
            ToolCallReply("search_documents", {"query": QUESTION}),
            TextReply("Refunds are paid quickly [1]."),
        ]
        model = ChatOpenAI(base_url=wire.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
        state = ask(build_agent(lambda: corpus, model=model), QUESTION, "search")
        offered = [[t["function"]["name"] for t in body.get("tools", [])] for body in wire.chat_requests]
    assert offered[0] == ["search_documents"]  # not the graph tools
    assert state["answered_by"] == {"mode": "search", "chosenBy": "user", "closest": []}
    assert state["messages"][-1].response_metadata["retrieval_mode"] == "search"


def test_auto_offers_every_tool_and_an_answer_without_search_is_labelled_none(corpus):
    with OpenAIWireServer() as wire:
        wire.chat_script += [TextReply("Hello! Ask me about your documents.")]
        model = ChatOpenAI(base_url=wire.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
        state = ask(build_agent(lambda: corpus, model=model), "hello")
        offered = [t["function"]["name"] for t in wire.chat_requests[0]["tools"]]
    assert len(offered) == 4 and "graph_global_search" in offered
    assert state["answered_by"]["mode"] == "none" and state["answered_by"]["chosenBy"] == "auto"
