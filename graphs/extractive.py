"""The agent without a chat model: a one-node graph that drafts an extractive answer and streams it.

The answer itself is drafted by `librarian.answers.extractive` (search) or `librarian.answers.modes`
(a question the mode chooser sends to the knowledge graph: themes/overview to global, named entities
to local, when the organization has a published graph). This graph checks the draft's citations,
streams the reply as message chunks (`stream_mode="messages"`) so chat clients show progress, and
writes the same state as the chat-model agent: numbered `sources`, verified `citations`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import get_runtime
from pydantic import Field

from graphs.agent_state import LibrarianAgentState
from graphs.context import LibrarianContext, organization_of
from librarian.answers.extractive import Draft, checked, last_question, search_draft
from librarian.answers.modes import choose_mode, graph_draft
from librarian.stack import Stack
from librarian.sync import run_sync


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


def build_extractive_agent(
    stack: Callable[[], Stack], checkpointer: Any = None, *, graph_routing: bool = True
):
    """The offline answerer. With `graph_routing`, a question the mode chooser sends to the graph
    (overview/theme/trend: global; named entities: local) is answered from the organization's
    published knowledge graph (`librarian.answers.modes.graph_draft`); without a graph, for a plain lookup,
    or when the graph finds nothing, from search as before. `invoke` and `ainvoke` both work; the async
    path awaits the graph retrieval in the run's own task, so cancelling the run stops it."""
    def retrieve_and_quote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        organization_id = organization_of(config, get_runtime(LibrarianContext))
        current = stack()
        messages = state.get("messages", [])
        question, known = last_question(messages), state.get("sources") or []
        draft = None
        if graph_routing and choose_mode(question) != "search":  # no event loop for a plain lookup
            draft = run_sync(graph_draft(current, organization_id, question, known))
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
