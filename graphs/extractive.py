"""The agent without a chat model: retrieve, then quote the sentences that answer, with citations.

No model that ships offline answers well enough (DESIGN §6), so instead of a bad generated answer
the graph returns an extractive one, clearly marked as such. It reads like an answer, not a dump:
- it abstains when no sentence clears the answer floor, naming the closest sources instead;
- a sentence said by two sources (a PDF and its HTML twin) is quoted once, citing both;
- a table row is quoted with its header cells, never the header row alone (`tools.quotes`);
- quotes are cleaned of Markdown link targets and footnote markers; the span each came from is in
  the citation records (`citations`), so a UI can still highlight the raw source text;
- the cited sources form their own block, file and page, for clients that ignore `sources`;
- the reply streams as message chunks (`stream_mode="messages"`), so chat clients show progress;
- a question the mode chooser sends to the knowledge graph (themes/overview: global; named entities:
  local) is answered from the organization's published graph when it has one (`graph_modes`), with
  the same contract: numbered `sources`, verified `citations`, streamed reply, abstention.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import get_runtime
from pydantic import Field

from graphs.agent_state import LibrarianAgentState
from graphs.citations import support_scorer, verify_message
from graphs.context import LibrarianContext, organization_of
from librarian.stack import Stack
from tools.quotes import QuoteUnit, near_identical, quote_units
from tools.retrieval import SearchOptions, SearchResult, Source, search
from tools.search import merge_sources, number_sources

EXTRACTIVE_NOTICE = "Extractive answer (no chat model is configured): the most relevant sentences, quoted."
NOTHING_FOUND = "I found nothing relevant in this organization's documents."
NOT_ANSWERED = "This organization's documents do not answer this question. The closest sources:"
ANSWER_FLOOR = 0.35
"""MiniLM cosine between the question and the best quotable sentence below which the documents are
taken not to answer (`LIBRARIAN_ANSWER_FLOOR` overrides). Measured by `bench/support_scorer.py
--floor` on HotpotQA dev150: see README "Citations"."""
QUOTE_LIMIT = 3
SOURCES_QUOTED = 5  # quotes come from the top sources only: lower ones rarely hold the answer
T = TypeVar("T")


def last_question(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            content = message.content
            return (
                content
                if isinstance(content, str)
                else " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            )
    return ""


@dataclass
class Quote:
    text: str
    score: float
    markers: list[int]
    unit: QuoteUnit
    origin: int = 0  # order of the first source quoted, for reading order
    twins: list[int] = field(default_factory=list)


def scored_units(stack: Stack, question: str, numbered: list[tuple[int, Source]]) -> list[Quote]:
    """Every quotable unit of the top sources, scored by similarity to the question (bundled model)."""
    units = [(n, u) for n, source in numbered[:SOURCES_QUOTED] for u in quote_units(source["text"])]
    if not units:
        return []
    embedder = support_scorer(stack).embedder
    vectors = embedder.embed_array([question, *(u.text for _, u in units)])
    scores = vectors[1:] @ vectors[0]
    return [Quote(u.text, float(s), [n], u, origin=n) for (n, u), s in zip(units, scores, strict=True)]


def choose_quotes(candidates: list[Quote], floor: float, limit: int = QUOTE_LIMIT) -> list[Quote]:
    """The best `limit` distinct quotes above the floor; a near-identical quote from another source
    adds that source's marker instead of a second bullet. Returned in source order (reads better)."""
    chosen: list[Quote] = []
    for candidate in sorted(candidates, key=lambda q: -q.score):
        twin = next((q for q in chosen if near_identical(q.text, candidate.text)), None)
        if twin is not None:
            if candidate.markers[0] not in twin.markers:
                twin.markers.append(candidate.markers[0])
            continue
        if candidate.score >= floor and len(chosen) < limit:
            chosen.append(
                Quote(
                    candidate.text, candidate.score, list(candidate.markers), candidate.unit, candidate.origin
                )
            )
    return sorted(chosen, key=lambda q: (q.origin, q.unit.start))


def where(source: Source) -> str:
    page = source.get("page") or 0
    return f"{source['filename']}, page {page}" if page else source["filename"]


def sources_block(numbered: dict[int, Source], markers: list[int]) -> str:
    return "Sources:\n" + "\n".join(f"[{n}] {where(numbered[n])}" for n in sorted(set(markers)))


def compose(quotes: list[Quote], numbered: dict[int, Source]) -> str:
    bullets = "\n".join(f'- "{q.text}" ' + "".join(f"[{n}]" for n in q.markers) for q in quotes)
    cited = [n for q in quotes for n in q.markers]
    return f"{EXTRACTIVE_NOTICE}\n\n{bullets}\n\n{sources_block(numbered, cited)}"


def abstain(numbered: list[tuple[int, Source]]) -> str:
    closest = "\n".join(f"- {where(source)}" for _, source in numbered[:3])
    return f"{NOT_ANSWERED}\n{closest}"


class PreparedReply(BaseChatModel):
    """A chat model that says one prepared text, streamed a line at a time.

    Why a model: LangGraph streams message chunks (`stream_mode="messages"`) from chat-model runs inside
    nodes, so the extractive answer goes through the same callbacks as a real model's tokens and chat
    clients show it arriving, with no second streaming protocol to support.
    """

    reply: str
    metadata_out: dict[str, Any] = Field(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "librarian-extractive"

    def _pieces(self) -> list[str]:
        lines = self.reply.split("\n")
        return [line + "\n" for line in lines[:-1]] + [lines[-1]]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = AIMessage(content=self.reply, response_metadata=dict(self.metadata_out))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        pieces = self._pieces()
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(
                    content=piece,
                    response_metadata=dict(self.metadata_out) if last else {},
                    chunk_position="last" if last else None,
                )
            )
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


def retrieve(current: Stack, organization_id: str, question: str) -> SearchResult:
    from tools.rerankers import make_reranker

    options = SearchOptions.from_settings(current)
    return search(current, organization_id, question, options, make_reranker(current))


@dataclass
class Draft:
    """One turn's answer before it is checked and streamed: what every retrieval path hands over.

    `sources` are what this turn retrieved (merged into the state's `sources`); `text` cites them with
    the numbers `number_sources` gave against the sources of earlier turns. `check` is the span of
    `text` holding quoted claims (notice and `Sources:` block excluded); None when there is nothing to
    verify (nothing found, or an abstention).
    """

    text: str
    sources: list[Source]
    check: tuple[int, int] | None = None
    mode: str = "search"


def answer_floor(current: Stack) -> float:
    floor = current.settings.answer_floor
    return ANSWER_FLOOR if floor is None else floor


def quoted_draft(
    current: Stack, question: str, numbered: list[tuple[int, Source]], found: list[Source]
) -> Draft:
    """Quotes from the top numbered sources, or an abstention naming the closest (sync: MiniLM)."""
    quotes = choose_quotes(scored_units(current, question, numbered), answer_floor(current))
    if not quotes:
        return Draft(abstain(numbered), found)
    text = compose(quotes, dict(numbered))
    return Draft(text, found, (len(EXTRACTIVE_NOTICE), text.rindex("\n\nSources:")))


def search_draft(current: Stack, organization_id: str, question: str, known: list[Source]) -> Draft:
    """The search path: hybrid retrieval, then quotes (or an abstention, or nothing found)."""
    result = retrieve(current, organization_id, question)
    numbered = number_sources(known, result["sources"])
    if not numbered:
        return Draft(NOTHING_FOUND, [])
    return quoted_draft(current, question, numbered, result["sources"])


def checked(current: Stack, draft: Draft, known: list[Source]) -> tuple[str, list[Any]]:
    """(text to send, citation records): the draft's quotes verified against every cited source."""
    if draft.check is None:
        return draft.text, []
    revised, records = verify_message(
        AIMessage(content=draft.text),
        merge_sources(known, draft.sources),
        support_scorer(current),
        None,
        current.settings.unsupported_sentences,
        start=draft.check[0],
        end=draft.check[1],
    )
    return (str(revised.content) if revised is not None else draft.text), records


def final_update(draft: Draft, reply: BaseMessage, records: list[Any]) -> dict[str, Any]:
    """The node's state update: the reply, its citation records, the sources it retrieved."""
    if any(r["action"] != "kept" for r in records):  # offsets in `citations` refer to the draft
        reply = reply.model_copy(
            update={"additional_kwargs": {**reply.additional_kwargs, "unverified_content": draft.text}}
        )
    update: dict[str, Any] = {"messages": [reply], "citations": records}
    if draft.sources:
        update["sources"] = draft.sources
    return update


def prepared(text: str, draft: Draft) -> PreparedReply:
    return PreparedReply(reply=text, metadata_out={"answer_mode": "extractive", "retrieval_mode": draft.mode})


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to the end from sync code, in a thread of its own: the caller's thread may
    already run an event loop (a notebook cell calling `invoke`), where `asyncio.run` refuses."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="extractive-graph") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def build_extractive_agent(
    stack: Callable[[], Stack], checkpointer: Any = None, *, graph_routing: bool = True
):
    """The offline answerer. With `graph_routing`, a question the mode chooser sends to the graph
    (overview/theme/trend: global; named entities: local) is answered from the organization's
    published knowledge graph (`graphs.graph_modes.graph_draft`); without a graph, for a plain lookup,
    or when the graph finds nothing, from search as before. `invoke` and `ainvoke` both work; the async
    path awaits the graph retrieval in the run's own task, so cancelling the run stops it."""
    from graphs.graph_modes import choose_mode, graph_draft

    def retrieve_and_quote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        organization_id = organization_of(config, get_runtime(LibrarianContext))
        current = stack()
        messages = state.get("messages", [])
        question, known = last_question(messages), state.get("sources") or []
        draft = None
        if graph_routing and choose_mode(question) != "search":  # no event loop for a plain lookup
            draft = run_coroutine(graph_draft(current, organization_id, question, known))
        draft = draft or search_draft(current, organization_id, question, known)
        text, records = checked(current, draft, known)
        return final_update(draft, prepared(text, draft).invoke(messages, config), records)

    async def aretrieve_and_quote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        organization_id = organization_of(config, get_runtime(LibrarianContext))
        current = await asyncio.to_thread(stack)  # the first call opens stores: off the event loop
        messages = state.get("messages", [])
        question, known = last_question(messages), state.get("sources") or []
        draft = await graph_draft(current, organization_id, question, known) if graph_routing else None
        if draft is None:
            draft = await asyncio.to_thread(search_draft, current, organization_id, question, known)
        text, records = await asyncio.to_thread(checked, current, draft, known)
        reply = await prepared(text, draft).ainvoke(messages, config)
        return final_update(draft, reply, records)

    # One node with a sync and an async body (public API: RunnableLambda), so `invoke` works in a
    # notebook and `ainvoke` (the server) awaits the graph retrieval in the run's own task.
    node = RunnableLambda(retrieve_and_quote, aretrieve_and_quote, name="retrieve_and_quote")
    builder = StateGraph(LibrarianAgentState, context_schema=LibrarianContext)
    builder.add_node("retrieve_and_quote", node)
    builder.add_edge(START, "retrieve_and_quote")
    builder.add_edge("retrieve_and_quote", END)
    return builder.compile(checkpointer=checkpointer, name="agent")
