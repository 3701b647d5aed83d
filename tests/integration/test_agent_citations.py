"""Verified citations and readable offline answers, end to end on the real embedded stack.

The chat-model case uses the real `ChatOpenAI` against the local OpenAI wire server, whose script
plays the model (as in `test_agent.py`); everything else is the production path: retrieval, the
`after_agent` citation check, the extractive answerer and its streaming. The reranker is set
explicitly (`none`), so these tests do not depend on the retrieval default.
"""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage
from langchain_openai import ChatOpenAI

from graphs.agent import build_agent
from librarian.answers.citations import UNSUPPORTED_MARK
from librarian.answers.extractive import EXTRACTIVE_NOTICE, NOT_ANSWERED
from librarian.stack import Stack
from services.documents import DocumentService
from tests.integration.tenant_corpus import clean_settings
from tests.wire.openai_server import TEST_API_KEY, TextReply, ToolCallReply

ORG = "citeco"
GARAGE = "Visitors park in the north garage, whose gate code changes every Monday morning."
DOCS = {
    "refunds.md": "# Refund policy\n\nCiteco pays every refund within 14 days of the request, back to the "
    "original card. Refund requests go to the Citeco billing desk.",
    "columns.md": "# Function usage view\n\nThe view lists which user profiles may use a function.\n\n"
    "| Column name | Data type | Description |\n| --- | --- | --- |\n"
    "| USER_NAME | VARCHAR(10) | Name of the user profile that has a usage setting |\n"
    "| USAGE | VARCHAR(7) | Usage setting: ALLOWED or DENIED |\n"
    "| FUNCTION_ID | VARCHAR(30) | Identifier of the function |\n",
    "garage.md": f"# Parking\n\n{GARAGE}",
    "garage.html": "<html><body><h1>Parking</h1><p>Visitors park in the "
    '<a href="https://maps.example/north">north garage</a>, whose gate code changes every Monday '
    "morning.</p></body></html>",
    "mallards.md": "# Mallards\n\nMallards feed on aquatic plants, seeds and insects[[45]](#cite_note-45), "
    "as the [Cornell Lab](https://www.allaboutbirds.org/guide/Mallard) describes.",
}
QUOTE = re.compile(r'^- "(?P<text>.+)" (?P<markers>(?:\[\d+\])+)$', re.MULTILINE)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    from langgraph.checkpoint.memory import InMemorySaver

    with pytest.MonkeyPatch.context() as mp:
        settings = clean_settings(tmp_path_factory.mktemp("citations") / "data", mp, reranker="none")
        stack = Stack(settings)
        service = DocumentService(stack, InMemorySaver())
        for name, text in DOCS.items():
            assert service.ingest(ORG, service.upload(ORG, name, text.encode())).status == "indexed"
        yield stack


def ask(agent, question: str):
    return agent.invoke({"messages": [HumanMessage(question)]}, context={"organization_id": ORG})


def quotes_of(text: str) -> list[tuple[str, list[int]]]:
    return [(m["text"], [int(n) for n in re.findall(r"\d+", m["markers"])]) for m in QUOTE.finditer(text)]


# ---------------------------------------------------------------------------- citation records


def test_extractive_answer_carries_verified_citation_records(corpus):
    state = ask(build_agent(lambda: corpus), "How many days does a refund take?")
    sources, citations = state["sources"], state["citations"]
    quotes = quotes_of(state["messages"][-1].content)
    assert quotes and len(citations) == len(quotes)
    for (text, markers), record in zip(quotes, citations, strict=True):
        assert record["markers"] == markers
        assert record["source_ids"] == [sources[n - 1]["id"] for n in markers]
        assert record["supported"] and record["action"] == "kept"
        span = record["span"]
        highlighted = sources[span["marker"] - 1]["text"][span["start"] : span["end"]]
        assert span["source_id"] == sources[span["marker"] - 1]["id"]
        assert text.rstrip(".") in highlighted  # the highlight is where the quote came from
    assert any("14 days" in record["sentence"] for record in citations)


def chat_agent(corpus: Stack, server):
    model = ChatOpenAI(base_url=server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    return build_agent(lambda: corpus, model=model)


SUPPORTED = "Citeco pays every refund within 14 days of the request [1]."
UNSUPPORTED = "The cafeteria serves free vegan lunches every Thursday [1]."


def test_chat_answer_sentences_are_checked_and_an_unsupported_one_is_marked(corpus, openai_server):
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": "refund days", "top_k": 1}),
        TextReply(f"{SUPPORTED} {UNSUPPORTED}"),
    ]
    state = ask(chat_agent(corpus, openai_server), "How long do refunds take?")
    answer = state["messages"][-1]
    first, second = state["citations"]
    refund = state["sources"][0]
    assert refund["filename"] == "refunds.md"
    assert first["sentence"] == SUPPORTED and first["supported"] and first["action"] == "kept"
    assert first["source_ids"] == [refund["id"]]
    assert "within 14 days" in refund["text"][first["span"]["start"] : first["span"]["end"]]
    assert second["sentence"] == UNSUPPORTED and not second["supported"] and second["action"] == "marked"
    assert second["score"] < first["score"]
    # Marked, not silently changed: the text says so and the model's words are kept.
    footer = "\n\nSources:\n[1] refunds.md, page 1"  # readable citations for text-only clients
    assert answer.content == f"{SUPPORTED} {UNSUPPORTED}{UNSUPPORTED_MARK}{footer}"
    assert answer.additional_kwargs["unverified_content"] == f"{SUPPORTED} {UNSUPPORTED}"
    assert sum(m.type == "ai" and not m.tool_calls for m in state["messages"]) == 1  # replaced, not added


async def test_the_check_runs_on_the_async_path_the_server_uses(corpus, openai_server):
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": "refund days", "top_k": 1}),
        TextReply(f"{SUPPORTED} {UNSUPPORTED}"),
    ]
    state = await chat_agent(corpus, openai_server).ainvoke(
        {"messages": [HumanMessage("How long do refunds take?")]}, context={"organization_id": ORG}
    )
    assert [c["action"] for c in state["citations"]] == ["kept", "marked"]
    assert state["messages"][-1].content.endswith(f"{UNSUPPORTED_MARK}\n\nSources:\n[1] refunds.md, page 1")


def test_drop_setting_removes_the_unsupported_sentence(corpus, openai_server):
    dropping = Stack(corpus.settings.model_copy(update={"unsupported_sentences": "drop"}))
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": "refund days", "top_k": 1}),
        TextReply(f"{SUPPORTED} {UNSUPPORTED}"),
    ]
    state = ask(chat_agent(dropping, openai_server), "How long do refunds take?")
    assert state["messages"][-1].content == f"{SUPPORTED}\n\nSources:\n[1] refunds.md, page 1"
    assert [c["action"] for c in state["citations"]] == ["kept", "dropped"]


def test_llm_judge_setting_asks_the_chat_model_about_each_cited_sentence(corpus, openai_server):
    judged = Stack(corpus.settings.model_copy(update={"support_judge": "llm"}))

    def verdict(body):  # the "model" judges: it backs the refund sentence only
        statement = body["messages"][-1]["content"]
        return TextReply("Support: 0.9" if "14 days" in statement.split("Passage:")[0] else "0.1")

    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": "refund days", "top_k": 1}),
        TextReply(f"{SUPPORTED} {UNSUPPORTED}"),
        verdict,
        verdict,
    ]
    state = ask(chat_agent(judged, openai_server), "How long do refunds take?")
    first, second = state["citations"]
    assert first["judge"] == second["judge"] == "llm"
    assert (first["score"], first["supported"]) == (0.9, True)
    assert (second["score"], second["supported"], second["action"]) == (0.1, False, "marked")
    judge_requests = openai_server.chat_requests[2:]
    assert len(judge_requests) == 2 and all(
        "Passage:" in r["messages"][-1]["content"] for r in judge_requests
    )
    assert all("[1]" not in r["messages"][-1]["content"].split("Passage:")[0] for r in judge_requests)


# ---------------------------------------------------------------------------- readable offline answers


def test_extractive_answer_streams_as_message_chunks(corpus):
    agent = build_agent(lambda: corpus)
    parts = list(
        agent.stream(
            {"messages": [HumanMessage("How many days does a refund take?")]},
            context={"organization_id": ORG},
            stream_mode=["messages", "values"],
        )
    )
    pieces = [p[0] for mode, p in parts if mode == "messages" and isinstance(p[0], AIMessageChunk)]
    assert len(pieces) >= 4
    text = "".join(p.content for p in pieces)
    assert text.startswith(EXTRACTIVE_NOTICE) and "14 days" in text and "\nSources:\n" in text
    # One message, as a chat model's tokens: the chunks add up to the very message the state stores.
    stored = next(p for mode, p in reversed(parts) if mode == "values")["messages"][-1]
    assembled = sum(pieces[1:], pieces[0])
    assert {p.id for p in pieces} == {stored.id}
    assert (assembled.content, assembled.response_metadata) == (stored.content, stored.response_metadata)
    assert stored.response_metadata == {
        "answer_mode": "extractive",
        "retrieval_mode": "search",
        "chosen_by": "auto",
        "closest": [],
    }


def test_abstains_when_no_source_answers_and_names_the_closest(corpus):
    state = ask(build_agent(lambda: corpus), "What is the capital city of Peru?")
    text = state["messages"][-1].content
    assert text.startswith(NOT_ANSWERED)
    listed = text.splitlines()[1:]
    assert listed and all(line.startswith("- ") and line[2:].split(",")[0] in DOCS for line in listed)
    assert state["citations"] == [] and not quotes_of(text)


def test_table_question_quotes_the_matching_row_with_its_header_cells(corpus):
    state = ask(build_agent(lambda: corpus), "What is the data type of the USER_NAME column?")
    texts = [text for text, _ in quotes_of(state["messages"][-1].content)]
    assert any(t.startswith("Column name: USER_NAME; Data type: VARCHAR(10)") for t in texts), texts
    assert not any("Column name" in t and "USER_NAME" not in t and "USAGE" not in t and "FUNCTION" not in t
                   for t in texts)  # fmt: skip


def test_twin_documents_give_one_quote_citing_both(corpus):
    state = ask(build_agent(lambda: corpus), "Where do visitors park?")
    text = state["messages"][-1].content
    garage = [(t, markers) for t, markers in quotes_of(text) if "north garage" in t]
    assert len(garage) == 1, text
    cited = {state["sources"][n - 1]["filename"] for n in garage[0][1]}
    assert cited == {"garage.md", "garage.html"}
    body, block = text.rsplit("\n\n", 1)
    assert block.startswith("Sources:\n") and not body.endswith("Sources:")
    listed = re.findall(r"^\[(\d+)\] (\S+)", block, re.MULTILINE)
    cited_numbers = {n for _, markers in quotes_of(text) for n in markers}
    assert {int(n) for n, _ in listed} == cited_numbers  # only cited sources, each with its file
    assert all(state["sources"][int(n) - 1]["filename"] == name.rstrip(",") for n, name in listed)


def test_quotes_carry_no_link_targets_or_footnote_markers(corpus):
    state = ask(build_agent(lambda: corpus), "What do mallards feed on?")
    texts = [text for text, _ in quotes_of(state["messages"][-1].content)]
    mallard = next(t for t in texts if "aquatic plants" in t)
    assert mallard == "Mallards feed on aquatic plants, seeds and insects, as the Cornell Lab describes."
    record = next(c for c in state["citations"] if "aquatic plants" in c["sentence"])
    source = state["sources"][record["span"]["marker"] - 1]
    assert "[[45]](#cite_note-45)" in source["text"][record["span"]["start"] : record["span"]["end"]]


def test_the_answer_and_the_judge_are_charged_to_the_organization(corpus, openai_server):
    """The cost ledger: the agent's own calls are `answer`, the support judge's are `judge`."""
    from librarian.costs.handler import USAGE_RECORDER
    from librarian.costs.ledger import ledger_of
    from librarian.costs.question import flush_question_costs

    judged = Stack(corpus.settings.model_copy(update={"support_judge": "llm"}))
    model = ChatOpenAI(
        base_url=openai_server.base_url,
        api_key=TEST_API_KEY,
        model="gpt-test",
        max_retries=0,
        callbacks=[USAGE_RECORDER],  # as `chat_model_from_settings` builds it
    )

    def phases() -> dict[str, tuple[int, int, int]]:
        flush_question_costs()  # the ledger is written off the event loop
        return {p.phase: (p.calls, p.inputTokens, p.outputTokens) for p in ledger_of(judged).phases(ORG)}

    before = phases()
    openai_server.chat_script += [
        ToolCallReply("search_documents", {"query": "refund days", "top_k": 1}),
        TextReply(SUPPORTED),
        TextReply("Support: 0.9"),
    ]
    ask(build_agent(lambda: judged, model=model), "How long do refunds take?")
    after = phases()
    spent = {p: tuple(a - b for a, b in zip(after[p], before[p], strict=True)) for p in after}
    assert spent["answer"][0] == 2 and spent["judge"][0] == 1  # the tool call and the answer; one verdict
    assert spent["answer"][1] + spent["judge"][1] == openai_server.tokens_served["prompt"]
    assert spent["answer"][2] + spent["judge"][2] == openai_server.tokens_served["completion"]
