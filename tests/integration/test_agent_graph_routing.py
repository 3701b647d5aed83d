"""The offline agent routes graph questions to the organization's knowledge graph.

No chat model: the extractive agent asks the mode chooser. An overview question goes to global
search, a question naming entities to local search, a plain lookup to `search_documents`' retrieval;
a graph path only answers when the organization has a published graph and the path finds something.
Either way the final state keeps the agent's contract (streamed reply, `sources` numbered across
turns, verified `citations`, abstention). The graphs are the hand-made fixture graph written through
the real store with real MiniLM embeddings, its chunks indexed as an ingest would; every text of
organization X carries "[X]", so a leak between organizations shows up in the answer or the sources.
"""

from __future__ import annotations

import asyncio
import re
import uuid

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs.agent import build_agent
from librarian.answers.extractive import EXTRACTIVE_NOTICE, NOT_ANSWERED
from librarian.errors import TenantError
from librarian.graph.query.global_offline import OFFLINE_NOTICE
from librarian.stack import Stack
from services.ask import answer_with_mode
from services.documents import DocumentService
from tests.graph_vectors import build_marked_graph
from tests.integration.tenant_corpus import clean_settings

ORGS = {"org-a": "[A]", "org-b": "[B]"}
PLAIN = "plainco"  # documents, no graph
OVERVIEW = "What are the main themes of the story?"
GENERIC = "What are the main themes across these documents?"  # nothing in the fixture is that close
LOCAL = "Who employs Bob Cratchit?"
LOOKUP = "How many shillings a week?"
PLAIN_DOC = (
    "# Handbook\n\nThe main themes of the staff handbook are safety on the shop floor and punctuality."
)
QUOTE = re.compile(
    r'^- "(?P<text>.+)" (?:\[Community ID: [^\]]+\])?(?P<markers>(?:\[\d+\])+)(?P<mark> \[unsupported\])?$',
    re.MULTILINE,
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        settings = clean_settings(tmp_path_factory.mktemp("routing") / "data", mp, reranker="none")
        assert settings.chat_model is None  # the extractive agent is the offline default
        current = Stack(settings)
        for org, marker in ORGS.items():
            build_marked_graph(current, org, marker)
        service = DocumentService(current, InMemorySaver())
        assert (
            service.ingest(PLAIN, service.upload(PLAIN, "handbook.md", PLAIN_DOC.encode())).status
            == "indexed"
        )
        yield current


def ask(agent, question: str, org: str, thread: str | None = None):
    config = {"configurable": {"thread_id": thread}} if thread else None
    return agent.invoke({"messages": [HumanMessage(question)]}, config, context={"organization_id": org})


def quotes_of(text: str) -> list[tuple[str, list[int]]]:
    return [(m["text"], [int(n) for n in re.findall(r"\d+", m["markers"])]) for m in QUOTE.finditer(text)]


def only(org: str, text: str) -> bool:
    other = next(m for o, m in ORGS.items() if o != org)
    return ORGS[org] in text and other not in text


def assert_quotes_cite_their_sources(state, *, all_verbatim: bool = True) -> list[tuple[str, list[int]]]:
    """Quotes cite sources of the state; the citation records match them one to one; a quote the
    check did not find in its sources is marked in the text. With `all_verbatim` every quote must be in
    each source it cites (search and local quote their sources; a global quote of a community summary
    cites the community's chunks, which need not say it)."""
    answer, sources = state["messages"][-1], state["sources"]
    matches = list(QUOTE.finditer(answer.content))
    assert matches, answer.content
    quotes = [(m["text"], [int(n) for n in re.findall(r"\d+", m["markers"])]) for m in matches]
    records = state["citations"]
    assert [r["markers"] for r in records] == [markers for _, markers in quotes]
    assert all(r["source_ids"] == [sources[n - 1]["id"] for n in r["markers"]] for r in records)
    verbatim = [all(text in sources[n - 1]["text"] for n in markers) for text, markers in quotes]
    assert all(verbatim) if all_verbatim else any(verbatim)
    for match, record, exact in zip(matches, records, verbatim, strict=True):
        assert (record["action"] == "kept") == record["supported"] == (match["mark"] is None)
        if exact:
            assert record["supported"], record
    if any(not r["supported"] for r in records):
        assert "[unsupported]" not in answer.additional_kwargs["unverified_content"]
    listed = answer.content.split("\n\nSources:\n", 1)[1].splitlines()
    cited = sorted({n for _, markers in quotes for n in markers})
    assert [int(line[1 : line.index("]")]) for line in listed] == cited
    return quotes


@pytest.mark.parametrize("org", list(ORGS))
def test_an_overview_question_is_answered_from_the_global_graph(stack: Stack, org: str) -> None:
    state = ask(build_agent(lambda: stack), OVERVIEW, org)
    answer = state["messages"][-1]
    assert answer.response_metadata == {
        "answer_mode": "extractive",
        "retrieval_mode": "global",
        "chosen_by": "auto",
        "closest": [],
    }
    assert answer.content.startswith(OFFLINE_NOTICE) and "[Community ID: " in answer.content
    assert_quotes_cite_their_sources(state, all_verbatim=False)
    assert all(s["path"].startswith("docs/carol-") and s["bbox"] for s in state["sources"])
    assert only(org, answer.content) and all(only(org, s["text"]) for s in state["sources"])


def test_numbers_continue_across_turns_and_paths(stack: Stack) -> None:
    agent, thread = build_agent(lambda: stack, checkpointer=InMemorySaver()), str(uuid.uuid4())
    first = ask(agent, OVERVIEW, "org-a", thread)
    known = list(first["sources"])
    second = ask(agent, LOCAL, "org-a", thread)
    assert second["messages"][-1].response_metadata["retrieval_mode"] == "local"
    assert second["messages"][-1].content.startswith(EXTRACTIVE_NOTICE)
    sources = second["sources"]
    assert sources[: len(known)] == known  # earlier numbers stand; new sources are appended
    assert len({s["id"] for s in sources}) == len(sources)
    quotes = assert_quotes_cite_their_sources(second)
    employs = [markers for text, markers in quotes if "Scrooge employs Bob Cratchit" in text]
    assert employs and all(n > len(known) for n in employs[0])  # a source new in this turn
    # a plain lookup still goes to search, over the same chunks: a chunk cited before keeps its number
    third = ask(agent, LOOKUP, "org-a", thread)
    assert third["messages"][-1].response_metadata["retrieval_mode"] == "search"
    assert third["sources"][: len(sources)] == sources
    looked_up = assert_quotes_cite_their_sources(third)
    assert [markers for text, markers in looked_up if "fifteen shillings" in text] == employs


def test_without_a_graph_the_agent_answers_from_search_as_before(stack: Stack) -> None:
    state = ask(build_agent(lambda: stack), GENERIC, PLAIN)
    answer = state["messages"][-1]
    assert answer.response_metadata["retrieval_mode"] == "search"
    assert answer.content.startswith(EXTRACTIVE_NOTICE)
    assert [s["filename"] for s in state["sources"]] == ["handbook.md"]
    assert_quotes_cite_their_sources(state)


def test_when_the_graph_finds_nothing_the_agent_answers_from_search(stack: Stack) -> None:
    # the chooser says global, but no community sentence is relevant enough (no_results)
    assert asyncio.run(answer_with_mode(stack, "org-a", GENERIC, "global"))["status"] == "no_results"
    state = ask(build_agent(lambda: stack), GENERIC, "org-a")
    answer = state["messages"][-1]
    assert answer.response_metadata["retrieval_mode"] == "search"
    assert answer.content.startswith((EXTRACTIVE_NOTICE, NOT_ANSWERED)), answer.content
    assert state["sources"] and all(only("org-a", s["text"]) for s in state["sources"])


async def test_forced_search_mode_does_not_route_to_the_graph(stack: Stack) -> None:
    result = await answer_with_mode(stack, "org-a", OVERVIEW, "search")
    assert result["mode"] == "search" and result["answer"].startswith((EXTRACTIVE_NOTICE, NOT_ANSWERED))
    assert "[Community ID: " not in result["answer"]
    chosen = await answer_with_mode(stack, "org-a", OVERVIEW, "auto")
    assert chosen["mode"] == "global" and "[Community ID: " in chosen["answer"]


def test_a_graph_answer_below_the_floor_abstains_naming_the_closest_sources(stack: Stack) -> None:
    strict = Stack(stack.settings.model_copy(update={"answer_floor": 0.99}))
    state = ask(build_agent(lambda: strict), LOCAL, "org-b")
    answer = state["messages"][-1]
    assert answer.response_metadata["retrieval_mode"] == "local"
    assert answer.content.startswith(NOT_ANSWERED) and state["citations"] == []
    listed = answer.content.splitlines()[1:]
    assert listed and all(line.startswith("- carol-") for line in listed)
    assert state["sources"] and all(only("org-b", s["text"]) for s in state["sources"])


async def test_async_path_streams_the_graph_answer_as_message_chunks(stack: Stack) -> None:
    agent = build_agent(lambda: stack)
    pieces = [
        chunk
        async for chunk, _ in agent.astream(
            {"messages": [HumanMessage(OVERVIEW)]},
            context={"organization_id": "org-a"},
            stream_mode="messages",
        )
        if isinstance(chunk, AIMessageChunk)
    ]
    assert len(pieces) >= 3
    text = "".join(p.content for p in pieces)
    assert text.startswith(OFFLINE_NOTICE) and "\n\nSources:\n" in text and only("org-a", text)


async def test_sync_invoke_works_inside_a_running_event_loop(stack: Stack) -> None:
    """A notebook cell calls `invoke` while its loop runs: the graph route must not need that loop."""
    state = ask(build_agent(lambda: stack), OVERVIEW, "org-b")
    assert state["messages"][-1].response_metadata["retrieval_mode"] == "global"


def test_the_organization_comes_only_from_trusted_configuration(stack: Stack) -> None:
    agent = build_agent(lambda: stack)
    with pytest.raises(TenantError):
        agent.invoke({"messages": [HumanMessage(OVERVIEW)]})
    with pytest.raises(TenantError):  # context and configurable disagree: refused, not picked
        agent.invoke(
            {"messages": [HumanMessage(OVERVIEW)]},
            {"configurable": {"organization_id": "org-b"}},
            context={"organization_id": "org-a"},
        )
