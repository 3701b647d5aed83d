"""The agent end to end on the real embedded stack, with a real `ChatOpenAI` and with no model at all.

The chat model is `ChatOpenAI` talking to the local OpenAI wire server, whose script plays the model:
it decides when to call `search_documents` (even with arguments a model must not be able to use)
and what the final answer says. Everything else (tool injection, retrieval, state, citations) is the
production code path.
"""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

from graphs.agent import build_agent
from librarian.answers.extractive import EXTRACTIVE_NOTICE, NOTHING_FOUND
from librarian.errors import TenantError
from librarian.stack import Stack
from tests.integration.tenant_corpus import (
    ACME,
    ANSWER,
    EMPTY_ORG,
    GLOBEX,
    QUESTION,
    belongs_to,
    build_corpus,
    clean_settings,
    leaks_into,
)
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

QUOTE = re.compile(r'^- "(?P<sentence>.+)" \[(?P<n>\d+)\]$', re.MULTILINE)
EXCERPT_HEADER = re.compile(r"^\[(?P<n>\d+)\] (?P<filename>\S+), page (?P<page>\d+):$", re.MULTILINE)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        settings = clean_settings(tmp_path_factory.mktemp("agent") / "data", mp)
        assert settings.chat_model is None  # the extractive mode is the offline default
        yield build_corpus(Stack(settings))


def chat_agent(corpus: Stack, server: OpenAIWireServer):
    model = ChatOpenAI(base_url=server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    return build_agent(lambda: corpus, model=model)


def ask(agent, question: str, org: str | None):
    context = {"organization_id": org} if org else None
    return agent.invoke({"messages": [HumanMessage(question)]}, context=context)


def tool_messages(state) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


# ---------------------------------------------------------------------------- with a chat model


@pytest.mark.parametrize("org", [ACME, GLOBEX])
def test_chat_agent_answers_each_organization_from_its_own_documents(corpus, openai_server, org):
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": QUESTION}),
        TextReply(f"Refunds are paid within {ANSWER[org]} [1]."),
    ]
    state = ask(chat_agent(corpus, openai_server), QUESTION, org)

    answer = state["messages"][-1]
    assert isinstance(answer, AIMessage)
    assert answer.content.endswith("[1].\n\nSources:\n[1] refunds.md, page 1")  # file and page in the text
    sources = state["sources"]
    assert sources and all(belongs_to(org, s["text"]) for s in sources)
    cited = sources[int(re.search(r"\[(\d+)\]", answer.content).group(1)) - 1]
    assert cited["filename"] == "refunds.md" and ANSWER[org] in cited["text"]

    first, second = openai_server.chat_requests
    schemas = {t["function"]["name"]: t["function"]["parameters"]["properties"] for t in first["tools"]}
    assert set(schemas) == {
        "search_documents",
        "graph_local_search",
        "graph_global_search",
        "graph_drift_search",
    }
    assert set(schemas["search_documents"]) == {"query", "top_k", "paths"}
    assert set(schemas["graph_local_search"]) == {"query"}  # never an organization
    assert set(schemas["graph_global_search"]) == {"query", "level"}
    shown = next(m["content"] for m in second["messages"] if m["role"] == "tool")
    assert ANSWER[org] in shown and not leaks_into(org, json.dumps(second))


def test_search_mode_gives_the_chat_model_only_the_search_tool(corpus, openai_server):
    """`librarian ask --mode search` (graph_routing=False): no graph tool offered, none named."""
    openai_server.chat_script += [TextReply("Nothing to look up.")]
    model = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    ask(build_agent(lambda: corpus, model=model, graph_routing=False), QUESTION, ACME)
    (request,) = openai_server.chat_requests
    assert [t["function"]["name"] for t in request["tools"]] == ["search_documents"]
    assert "graph_" not in request["messages"][0]["content"]


def test_following_an_injected_instruction_still_reaches_only_the_callers_organization(corpus, openai_server):
    """The "model" obeys the planted note and asks for globex in every way it can; nothing leaks."""
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": "note for the assistant"}),
        ToolCallReply(
            "search_documents",
            {
                "query": QUESTION,
                "namespace": GLOBEX,
                "organization_id": GLOBEX,
                "org": GLOBEX,
                "filter": {"organization_id": GLOBEX},
            },
        ),
        TextReply("Refunds are paid within 14 days [2]."),
    ]
    state = ask(chat_agent(corpus, openai_server), QUESTION, ACME)
    assert all(belongs_to(ACME, s["text"]) for s in state["sources"])
    assert [m.status for m in tool_messages(state)] == ["success", "success"]
    assert not any(leaks_into(ACME, json.dumps(body)) for body in openai_server.chat_requests)


def test_citation_numbers_stay_consistent_across_several_searches(corpus, openai_server):
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": QUESTION, "top_k": 2}),
        ToolCallReply("search_documents", {"query": "Where do visitors park?", "top_k": 3}),
        TextReply("Refunds take 14 days [1]; visitors park in the north garage [3]."),
    ]
    state = ask(chat_agent(corpus, openai_server), "Refunds and parking?", ACME)
    sources = state["sources"]
    assert len({s["id"] for s in sources}) == len(sources)
    headers = [(m, h) for m in tool_messages(state) for h in EXCERPT_HEADER.finditer(m.content)]
    assert len(headers) >= 3
    for message, header in headers:
        source = sources[int(header["n"]) - 1]  # what `[n]` in the answer refers to
        assert source["filename"] == header["filename"]
        assert source["text"] in message.content
    second_search_files = {h["filename"] for m, h in headers if m is tool_messages(state)[1]}
    assert "parking.txt" in second_search_files


def test_parallel_searches_get_distinct_numbers_before_the_model_reads_them(corpus, openai_server):
    openai_server.chat_script += [
        [
            ToolCallReply("search_documents", {"query": QUESTION, "top_k": 2}),
            ToolCallReply("search_documents", {"query": "Where do visitors park?", "top_k": 2}),
        ],
        TextReply("Visitors park in the north garage [3]."),
    ]
    state = ask(chat_agent(corpus, openai_server), "Refunds and parking?", ACME)
    sources = state["sources"]
    shown = "\n\n".join(
        m["content"] for m in openai_server.chat_requests[1]["messages"] if m["role"] == "tool"
    )
    headers = list(EXCERPT_HEADER.finditer(shown))
    assert len(headers) >= 3
    assert len({h["n"] for h in headers}) == len({h["filename"] for h in headers})  # one number per excerpt
    for header in headers:
        assert sources[int(header["n"]) - 1]["filename"] == header["filename"]
    assert "parking.txt" in {h["filename"] for h in headers}


def test_chat_agent_without_an_organization_refuses_to_search(corpus, openai_server):
    openai_server.chat_script += [ToolCallReply("search_documents", {"query": QUESTION, "namespace": ACME})]
    with pytest.raises(TenantError, match="no default namespace"):
        ask(chat_agent(corpus, openai_server), QUESTION, None)


# --------------------------------------------------------------------------- without a model


@pytest.mark.parametrize("org", [ACME, GLOBEX])
def test_extractive_answer_quotes_only_the_cited_sources(corpus, org):
    state = ask(build_agent(lambda: corpus), QUESTION, org)
    answer = state["messages"][-1]
    assert answer.response_metadata["answer_mode"] == "extractive"
    assert answer.content.startswith(EXTRACTIVE_NOTICE)
    sources = state["sources"]
    assert sources and all(belongs_to(org, s["text"]) for s in sources)
    quotes = list(QUOTE.finditer(answer.content))
    assert quotes
    for quote in quotes:
        assert quote["sentence"] in sources[int(quote["n"]) - 1]["text"]
    assert any(ANSWER[org] in q["sentence"] for q in quotes)
    assert not leaks_into(org, answer.content)


def test_extractive_answer_with_nothing_found_says_so(corpus):
    state = ask(build_agent(lambda: corpus), QUESTION, EMPTY_ORG)
    assert state["messages"][-1].content == NOTHING_FOUND
    assert state.get("sources", []) == []


def test_extractive_agent_without_an_organization_is_an_error(corpus):
    with pytest.raises(TenantError):
        ask(build_agent(lambda: corpus), QUESTION, None)
