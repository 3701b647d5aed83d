"""The agent without a chat model: a one-node graph that drafts an extractive answer and streams it.

The answer itself is drafted by `librarian.answers.extractive` (search) or `librarian.answers.modes`
(a question the mode chooser sends to the knowledge graph: themes/overview to global, named entities
to local, when the organization has a published graph). This graph checks the draft's citations,
streams the reply a line at a time to the `messages` / `messages-tuple` stream modes so chat clients
show progress, and writes the same state as the chat-model agent: numbered `sources`, verified
`citations`.

The chunks go out through LangGraph's `push_message`, not through a chat model, so they reach exactly
those two stream modes: `astream_events` shows no `on_chat_model_*` event for the answer, and streams
that carry only chat models' content-block events (`stream_events(version="v3")`, the server's
protocol v2 routes) carry none of it; their clients read the answer from the state.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import push_message
from langgraph.runtime import get_runtime

from graphs.agent_state import LibrarianAgentState
from graphs.attachments import attachments_node
from graphs.context import LibrarianContext, organization_of, requested_mode
from librarian.answers.extractive import (
    NOT_ANSWERED,
    Draft,
    checked,
    last_question,
    search_draft,
)
from librarian.answers.modes import choose_mode, graph_draft
from librarian.answers.numbering import number_sources
from librarian.attachments import AttachmentLibrary
from librarian.graph.query.global_limits import run_overrides
from librarian.retrieval.path_filter import (
    SearchPathError,
    requested_paths,
    unknown_paths,
    unknown_paths_message,
)
from librarian.stack import Stack
from librarian.sync import run_sync


def searched_paths(
    current: Stack, organization_id: str, context: Any
) -> tuple[list[str] | None, Draft | None]:
    """(the run's `paths`, or a reply refusing them): a bad or unknown path is answered with a message
    naming it, not an exception, and never widened to the whole library."""
    try:
        paths = requested_paths(context)
    except SearchPathError as exc:
        return None, Draft(str(exc), [])
    unknown = unknown_paths(current.files, organization_id, paths) if paths else []
    return paths, Draft(unknown_paths_message(unknown), []) if unknown else None


def answered_by(draft: Draft, chosen_by: str, known: list[Any]) -> dict[str, Any]:
    """Which path answered, for the chat's label, and an abstention's closest sources by number, so
    the client shows them as buttons that open the viewer like any citation."""
    closest: list[int] = []
    if draft.text.startswith(NOT_ANSWERED):
        closest = [n for n, _ in number_sources(known, draft.sources)[:3]]
    return {"mode": draft.mode, "chosenBy": chosen_by, "closest": closest}


def chosen_path(mode: str, draft: Draft) -> str:
    """`auto`, `user`, or, when the user's graph path found nothing, that it fell back to search."""
    if mode == "auto":
        return "auto"
    return "user" if draft.mode == mode else f"user ({mode} found nothing; answered from search)"


def streamed_reply(text: str, draft: Draft, answered: dict[str, Any] | None = None) -> AIMessage:
    """The reply the node stores, after sending it to `messages` / `messages-tuple` as chunks.

    Chat clients join chunks by message id and show them as they arrive, as they do a chat model's
    tokens: so every chunk carries the stored reply's id, and only the last its `response_metadata`,
    which makes the merged chunks equal the reply. `state_key=None` because the node's own update
    stores the reply with its citations; LangGraph then does not stream it again, its id having been
    streamed. Without a `messages` stream (`invoke`, other modes) `push_message` sends nothing.
    """
    reply = AIMessage(
        content=text,
        id=str(uuid.uuid4()),
        response_metadata={
            "answer_mode": "extractive",
            "retrieval_mode": draft.mode,
            **({"chosen_by": answered["chosenBy"], "closest": answered["closest"]} if answered else {}),
        },
    )
    lines = text.split("\n")
    pieces = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        chunk = AIMessageChunk(
            content=piece,
            id=reply.id,
            response_metadata=dict(reply.response_metadata) if last else {},
            chunk_position="last" if last else None,
        )
        push_message(chunk, state_key=None)
    return reply


def final_update(
    draft: Draft, reply: AIMessage, records: list[Any], answered: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The node's state update: the reply, its citation records, the sources it retrieved."""
    if any(r["action"] != "kept" for r in records):  # offsets in `citations` refer to the draft
        reply = reply.model_copy(
            update={"additional_kwargs": {**reply.additional_kwargs, "unverified_content": draft.text}}
        )
    update: dict[str, Any] = {"messages": [reply], "citations": records}
    if answered is not None:
        update["answered_by"] = answered
    if draft.sources:
        update["sources"] = draft.sources
    return update


def build_extractive_agent(
    stack: Callable[[], Stack],
    checkpointer: Any = None,
    *,
    graph_routing: bool = True,
    attachments: AttachmentLibrary | None = None,
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
        mode = requested_mode(get_runtime(LibrarianContext).context)
        paths, draft = searched_paths(current, organization_id, get_runtime(LibrarianContext).context)
        chosen = mode if mode != "auto" else choose_mode(question)
        # no event loop for a plain lookup
        if draft is None and graph_routing and chosen != "search" and not paths:
            overrides = run_overrides(config, get_runtime(LibrarianContext).context)
            forced = None if mode == "auto" else mode
            draft = run_sync(graph_draft(current, organization_id, question, known, overrides, forced))
        draft = draft or search_draft(current, organization_id, question, known, paths)
        text, records = checked(current, draft, known)
        answered = answered_by(draft, chosen_path(mode, draft), known)
        return final_update(draft, streamed_reply(text, draft, answered), records, answered)

    async def aretrieve_and_quote(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        organization_id = organization_of(config, get_runtime(LibrarianContext))
        current = await asyncio.to_thread(stack)  # the first call opens stores: off the event loop
        messages = state.get("messages", [])
        question, known = last_question(messages), state.get("sources") or []
        mode = requested_mode(get_runtime(LibrarianContext).context)
        context = get_runtime(LibrarianContext).context
        paths, draft = await asyncio.to_thread(searched_paths, current, organization_id, context)
        if draft is None and graph_routing and mode != "search" and not paths:
            overrides = run_overrides(config, get_runtime(LibrarianContext).context)
            forced = None if mode == "auto" else mode
            draft = await graph_draft(current, organization_id, question, known, overrides, forced)
        if draft is None:
            draft = await asyncio.to_thread(search_draft, current, organization_id, question, known, paths)
        text, records = await asyncio.to_thread(checked, current, draft, known)
        answered = answered_by(draft, chosen_path(mode, draft), known)
        return final_update(draft, streamed_reply(text, draft, answered), records, answered)

    # One node with a sync and an async body (public API: RunnableLambda), so `invoke` works in a
    # notebook and `ainvoke` (the server) awaits the graph retrieval in the run's own task.
    node = RunnableLambda(retrieve_and_quote, aretrieve_and_quote, name="retrieve_and_quote")
    builder = StateGraph(LibrarianAgentState, context_schema=LibrarianContext)
    builder.add_node("retrieve_and_quote", node)
    # a turn that attached files ends with a reply that they are being indexed (graphs.attachments)
    receive = attachments_node(attachments)
    builder.add_node("receive_attachments", receive, destinations=("retrieve_and_quote", END))
    builder.add_edge(START, "receive_attachments")
    builder.add_edge("retrieve_and_quote", END)
    return builder.compile(checkpointer=checkpointer, name="agent")
