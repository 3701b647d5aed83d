"""Internal model calls: a chat model bound so that its calls never reach the run's stream.

Only the agent's own answer streams to the user. Every other model call made during a run (GraphRAG's
map and reduce, query parsing and the community filter, the LLM support judge, the LLM reranker,
extraction and summaries) is work, not an answer: its JSON or scores must not appear in the run's
`messages`, `messages-tuple` or `events` stream modes. `librarian.chat_model.internal_model` wraps a
model in `InternalModel`; the engines wrap whatever model they are given before calling it.

How (read from langchain_core and langgraph as installed): a model call inherits the calling run's
callback manager through `var_child_runnable_config`, and each stream mode is a handler on that manager:
`messages` (and the server's `messages-tuple`) is LangGraph's `StreamMessagesHandler`, `events` is
langchain_core's `astream_events` handler (the LangGraph server serves `events` with `astream_events`),
`tools` is LangGraph's `StreamToolCallHandler`. All of them are `_StreamingCallbackHandler`s, and a chat
model streams its reply only because one is attached (`BaseChatModel._should_stream`). Each call of an
`InternalModel` runs with a copy of the inherited manager without those handlers, so none of them sees
the call at all, and with LangGraph's `nostream` tag, which `StreamMessagesHandler` honours on its own.

Everything else is kept: a tracer (LangSmith's `LangChainTracer`) still records the call, nested under
the tool or node that made it and tagged `nostream`; LangGraph's idle-timeout progress handler still
sees it. With no streaming handler left, the model sends one plain (not streamed) request.

Only calls through the wrapper are hidden: `bind_tools` or `with_structured_output` on it return the
inner model's runnable, so wrap their result again if an engine ever needs one.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks.base import BaseCallbackManager
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig, ensure_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler, _V2StreamingCallbackHandler
from langgraph.constants import TAG_NOSTREAM


def streams(handler: Any) -> bool:
    """Whether a callback handler feeds a live stream (stream modes, `astream_events`, `astream_log`)."""
    return isinstance(handler, (_StreamingCallbackHandler, _V2StreamingCallbackHandler))


def without_stream_handlers(callbacks: Any) -> Any:
    """The callbacks of a config (None, a list of handlers or a manager) minus the streaming handlers.

    Never None: None would let the model fall back to the inherited manager, handlers and all."""
    if callbacks is None:
        return []
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        for handler in [*manager.handlers, *manager.inheritable_handlers]:
            if streams(handler):
                manager.remove_handler(handler)
        return manager
    return [handler for handler in callbacks if not streams(handler)]


class InternalModel(RunnableBinding):
    """`bound` (a chat model), each call kept out of the run's stream; see the module docstring."""

    def _merge_configs(self, *configs: RunnableConfig | None) -> RunnableConfig:
        # Every call (invoke, batch, stream, sync or async) builds its config here, in the caller's
        # context: the inherited config first (ensure_config), then what the caller passed.
        config = ensure_config(super()._merge_configs(*configs))
        config["tags"] = [*(t for t in config.get("tags") or [] if t != TAG_NOSTREAM), TAG_NOSTREAM]
        config["callbacks"] = without_stream_handlers(config.get("callbacks"))
        return config


def internal(model: Any) -> Any:
    """`model` as an `InternalModel`; None, an already internal model or a non-runnable (a test double
    with its own `invoke`) is returned as it is."""
    if model is None or isinstance(model, InternalModel) or not isinstance(model, Runnable):
        return model
    return InternalModel(bound=model)
