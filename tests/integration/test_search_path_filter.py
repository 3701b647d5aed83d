"""`search_documents(paths=...)` and `librarian ask/search --in`: search only named documents.

On the real embedded stack (two organizations that both hold `docs/refunds.md`): the restriction is a
filter inside the index query, so a document the question barely matches is still found; a path of
another organization finds nothing of it; the organization always comes from the run, never the path.
"""

from __future__ import annotations

import json
import os

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from graphs.agent import build_agent
from librarian.retrieval.search import SearchOptions, search
from librarian.stack import Stack
from librarian_cli import main
from tests.integration.tenant_corpus import (
    ACME,
    GLOBEX,
    QUESTION,
    belongs_to,
    build_corpus,
    call_tool,
    clean_settings,
    leaks_into,
)
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply
from tools.search import make_search_tool


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        settings = clean_settings(tmp_path_factory.mktemp("path-filter") / "data", mp)
        yield build_corpus(Stack(settings))


@pytest.fixture(scope="module")
def tool(corpus: Stack):
    return make_search_tool(lambda: corpus)


def files_of(sources: list[dict]) -> set[str]:
    return {s["path"] for s in sources}


# ---------------------------------------------------------------------------- the retrieval core


def test_a_small_document_is_not_crowded_out_by_a_global_top_k(corpus):
    """One candidate only: a post-filter of the global top 1 (refunds.md) would find nothing."""
    options = SearchOptions.from_settings(corpus, top_k=1, candidates=1, paths=["docs/parking.txt"])
    result = search(corpus, ACME, QUESTION, options)
    assert files_of(result["sources"]) == {"docs/parking.txt"}
    unrestricted = search(corpus, ACME, QUESTION, SearchOptions.from_settings(corpus, top_k=1, candidates=1))
    assert files_of(unrestricted["sources"]) == {"docs/refunds.md"}


def test_both_channels_are_restricted(corpus):
    for alpha in (0.0, 1.0):  # sparse only, dense only
        paths = ["docs/onboarding.md", "docs/parking.txt"]
        options = SearchOptions.from_settings(corpus, top_k=8, alpha=alpha, paths=paths)
        result = search(corpus, ACME, QUESTION, options)
        assert result["sources"] and files_of(result["sources"]) <= set(paths), alpha


def test_a_path_of_another_organization_reaches_nothing_of_it(corpus):
    """`docs/holidays.md` is Globex's only: asked from Acme, the index returns nothing at all."""
    options = SearchOptions.from_settings(corpus, paths=["docs/holidays.md"])
    assert search(corpus, ACME, "paid holiday a year", options)["sources"] == []
    shared = search(corpus, ACME, QUESTION, SearchOptions.from_settings(corpus, paths=["docs/refunds.md"]))
    assert shared["sources"] and all(belongs_to(ACME, s["text"]) for s in shared["sources"])


# ---------------------------------------------------------------------------- the tool


def test_the_tool_searches_only_the_named_documents(tool):
    message, state = call_tool(
        tool,
        {"query": QUESTION, "paths": ["parking.txt", "docs/onboarding.md"]},
        context={"organization_id": ACME},
    )
    assert message.status == "success"
    assert state["sources"] and files_of(state["sources"]) <= {"docs/parking.txt", "docs/onboarding.md"}
    assert "14 days" not in message.content


def test_an_unknown_path_is_named_and_nothing_is_searched(tool):
    message, state = call_tool(
        tool,
        {"query": QUESTION, "paths": ["docs/parking.txt", "docs/holidays.md"]},
        context={"organization_id": ACME},
    )
    assert "docs/holidays.md" in message.content and "No document named" in message.content
    assert "docs/parking.txt" not in message.content.split("named", 1)[1].split("in this", 1)[0]
    assert not state.get("sources") and not leaks_into(ACME, message.content)
    assert "Traceback" not in message.content


@pytest.mark.parametrize(
    "bad", ["../globex/docs/refunds.md", "/etc/passwd", "", "docs/../x.md", "docs/", "a/b.md"]
)
def test_path_tricks_are_refused_clearly(tool, bad):
    message, state = call_tool(tool, {"query": QUESTION, "paths": [bad]}, context={"organization_id": ACME})
    assert message.content.startswith("Error:") and "document path" in message.content
    assert not state.get("sources") and "Traceback" not in message.content


def test_the_organization_still_comes_only_from_the_run(tool):
    _, state = call_tool(
        tool,
        {"query": QUESTION, "paths": ["docs/refunds.md"], "namespace": GLOBEX},
        context={"organization_id": ACME},
    )
    assert state["sources"] and all(belongs_to(ACME, s["text"]) for s in state["sources"])


def test_the_run_context_restricts_and_the_model_cannot_widen_it(tool):
    context = {"organization_id": ACME, "paths": ["docs/parking.txt"]}
    _, state = call_tool(tool, {"query": QUESTION}, context=context)
    assert files_of(state["sources"]) == {"docs/parking.txt"}
    message, state = call_tool(tool, {"query": QUESTION, "paths": ["docs/refunds.md"]}, context=context)
    assert "outside the documents" in message.content and not state.get("sources")


# ---------------------------------------------------------------------------- the agents


def test_the_chat_model_agent_passes_paths_through(corpus, openai_server: OpenAIWireServer):
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": QUESTION, "paths": ["docs/assistant-note.md"]}),
        TextReply("The note mentions refunds [1]."),
    ]
    model = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    agent = build_agent(lambda: corpus, model=model, graph_routing=False)
    state = agent.invoke({"messages": [HumanMessage(QUESTION)]}, context={"organization_id": ACME})
    assert files_of(state["sources"]) == {"docs/assistant-note.md"}
    shown = next(m["content"] for m in openai_server.chat_requests[1]["messages"] if m["role"] == "tool")
    assert "14 days" not in shown and not leaks_into(ACME, json.dumps(openai_server.chat_requests[1]))


def test_the_offline_agent_honours_the_context_paths(corpus):
    agent = build_agent(lambda: corpus)
    unrestricted = agent.invoke({"messages": [HumanMessage(QUESTION)]}, context={"organization_id": ACME})
    assert "docs/refunds.md" in files_of(unrestricted["sources"])
    context = {"organization_id": ACME, "paths": ["docs/assistant-note.md"]}
    state = agent.invoke({"messages": [HumanMessage(QUESTION)]}, context=context)
    assert files_of(state.get("sources") or []) <= {"docs/assistant-note.md"}
    assert "14 days" not in str(state["messages"][-1].content)


# ---------------------------------------------------------------------------- the CLI


@pytest.fixture
def cli(corpus, monkeypatch, capsys):
    from librarian.settings import get_settings

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(corpus.settings.data_dir))
    get_settings.cache_clear()

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield run
    get_settings.cache_clear()


def test_cli_search_in_restricts_to_the_named_documents(cli):
    code, out, _ = cli("search", QUESTION, "--org", ACME, "--in", "parking.txt", "--json")
    assert code == 0
    assert files_of(json.loads(out)["sources"]) == {"docs/parking.txt"}


def test_cli_ask_in_restricts_the_answer(cli):
    code, out, _ = cli("ask", QUESTION, "--org", ACME, "--in", "docs/assistant-note.md", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["mode"] == "search"
    assert files_of(result["sources"]) <= {"docs/assistant-note.md"} and "14 days" not in result["answer"]


@pytest.mark.parametrize("command", ["search", "ask"])
def test_cli_refuses_another_organizations_path_by_name(cli, command):
    code, out, err = cli(command, QUESTION, "--org", ACME, "--in", "docs/holidays.md")
    assert code != 0 and "docs/holidays.md" in err and "Traceback" not in err
    assert not leaks_into(ACME, out + err)


@pytest.mark.parametrize(
    ("paths", "said"),
    [(["docs/holidays.md"], "docs/holidays.md"), (["../globex/refunds.md"], "not a document path")],
)
def test_the_offline_agent_names_a_bad_or_unknown_context_path(corpus, paths, said):
    context = {"organization_id": ACME, "paths": paths}
    state = build_agent(lambda: corpus).invoke({"messages": [HumanMessage(QUESTION)]}, context=context)
    reply = str(state["messages"][-1].content)
    assert said in reply and not state.get("sources") and not leaks_into(ACME, reply)


def test_the_offline_agent_honours_the_context_paths_when_awaited(corpus):
    """The server awaits the agent (`ainvoke`): the async body reads the same context."""
    import asyncio

    context = {"organization_id": ACME, "paths": ["docs/assistant-note.md"]}
    agent = build_agent(lambda: corpus)
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage(QUESTION)]}, context=context))
    assert state.get("sources") and files_of(state["sources"]) == {"docs/assistant-note.md"}
