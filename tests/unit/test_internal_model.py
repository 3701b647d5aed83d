"""`internal_model`: a model call made inside a node or tool never reaches the run's stream.

A two-node graph on langchain_core's fake streaming chat model: `work` calls an internal model (as
global search's map step does), `answer` calls a plain one (as the agent's model node does). Only the
plain call may show up in `messages` and `events`; a tracer still records the internal call, nested
under its node and tagged `nostream`. The wire-level version, through the agent and a real server,
is `tests/integration/test_internal_calls_stream.py`.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph.graph import END, START, StateGraph

from librarian.chat_model import internal_model
from librarian.internal_model import InternalModel

SECRET = "INTERNALMARK"
INTERNAL_REPLY = f'{SECRET} {{"answer": "ok", "usefulness": 50}}'
ANSWER = "The answer streams word by word."


class State(TypedDict, total=False):
    work: str
    answer: str


class Recorder(BaseCallbackHandler):
    """Stands in for a tracer (LangSmith's `LangChainTracer`): not a streaming handler."""

    def __init__(self) -> None:
        self.chains: dict[UUID, str] = {}
        self.models: list[dict[str, Any]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.chains[run_id] = kwargs.get("name") or ""

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.models.append({"parent": kwargs.get("parent_run_id"), "tags": kwargs.get("tags") or []})


def build(*, sync_batch: bool = False, wrap: bool = True):
    internal = GenericFakeChatModel(messages=iter([AIMessage(INTERNAL_REPLY)] * 3))
    internal = internal_model(internal) if wrap else internal
    public = GenericFakeChatModel(messages=iter([AIMessage(ANSWER)]))

    async def work(state: State) -> State:
        if sync_batch:  # the support judge's way: a sync batch in a worker thread
            replies = await asyncio.to_thread(internal.batch, ["a", "b"], {"tags": ["support_judge"]})
        else:
            replies = [await internal.ainvoke("map this batch")]
        return {"work": f"{len(replies[0].content)} characters"}  # the reply itself stays in the node

    async def answer(state: State) -> State:
        return {"answer": (await public.ainvoke("answer")).content}

    builder = StateGraph(State)
    builder.add_node("work", work)
    builder.add_node("answer", answer)
    builder.add_edge(START, "work")
    builder.add_edge("work", "answer")
    builder.add_edge("answer", END)
    return builder.compile()


def test_wrapping_is_idempotent_and_keeps_the_model_reachable():
    model = GenericFakeChatModel(messages=iter([]))
    wrapped = internal_model(model)
    assert isinstance(wrapped, InternalModel) and internal_model(wrapped) is wrapped
    assert wrapped.bound is model and internal_model(None) is None


async def test_messages_mode_streams_only_the_plain_model():
    for sync_batch in (False, True):
        chunks = [
            (message, meta)
            async for message, meta in build(sync_batch=sync_batch).astream({}, stream_mode="messages")
        ]
        assert chunks and all(meta["langgraph_node"] == "answer" for _, meta in chunks)
        assert all(SECRET not in str(message.content) for message, _ in chunks)
        pieces = [m for m, _ in chunks if isinstance(m, AIMessageChunk)]
        assert len(pieces) > 3 and "".join(str(p.content) for p in pieces) == ANSWER  # token by token


async def test_without_the_wrapper_the_internal_reply_would_stream():
    """The control: the fake model does stream inside a node, so the tests above can fail."""
    leaked = [
        meta["langgraph_node"]
        async for message, meta in build(wrap=False).astream({}, stream_mode="messages")
        if SECRET in str(message.content)
    ]
    assert leaked and set(leaked) == {"work"}


async def test_events_show_no_internal_call_and_a_tracer_still_sees_it():
    recorder = Recorder()
    events = [event async for event in build().astream_events({}, {"callbacks": [recorder]}, version="v2")]
    model_events = [e for e in events if e["event"].startswith("on_chat_model")]
    assert model_events and all(e["metadata"]["langgraph_node"] == "answer" for e in model_events)
    assert any(e["event"] == "on_chat_model_stream" for e in model_events)
    assert not [e for e in events if SECRET in str(e)]
    internal_calls = [m for m in recorder.models if "nostream" in m["tags"]]
    assert len(internal_calls) == 1 and recorder.chains[internal_calls[0]["parent"]] == "work"
