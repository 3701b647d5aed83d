"""One LangChain callback handler that records every chat model call into the current cost scope.

It is attached to each chat model `librarian.chat_model` builds, so the engines need no change: the
call's organization and phase come from the context (`librarian.costs.scope`). Tokens are the
provider's own figures (`usage_metadata` on the reply, else the OpenAI `token_usage` in `llm_output`);
the time is the call's wall time, from start to end (or error) callback.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from librarian.costs.scope import record_usage


def usage_of(response: LLMResult) -> tuple[int, int]:
    """(input, output) tokens of a chat result: `usage_metadata` of its messages, else `token_usage`."""
    found = False
    input_tokens = output_tokens = 0
    for generations in response.generations:
        for generation in generations:
            usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if usage:
                found = True
                input_tokens += int(usage.get("input_tokens") or 0)
                output_tokens += int(usage.get("output_tokens") or 0)
    if found:
        return input_tokens, output_tokens
    token_usage = (response.llm_output or {}).get("token_usage") or {}
    return int(token_usage.get("prompt_tokens") or 0), int(token_usage.get("completion_tokens") or 0)


class UsageRecorder(BaseCallbackHandler):
    """Calls, tokens and seconds of each model call, into the scope current where the call was made."""

    run_inline = True  # async callers: run in the caller's context, where the scope is set
    raise_error = False  # a ledger that cannot write must not fail the answer

    def __init__(self) -> None:
        self._started: dict[UUID, float] = {}
        self._lock = threading.Lock()

    def _start(self, run_id: UUID) -> None:
        with self._lock:
            self._started[run_id] = time.perf_counter()

    def _seconds(self, run_id: UUID) -> float:
        with self._lock:
            started = self._started.pop(run_id, None)
        return time.perf_counter() - started if started is not None else 0.0

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._start(run_id)

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._start(run_id)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        input_tokens, output_tokens = usage_of(response)
        record_usage(input_tokens, output_tokens, self._seconds(run_id))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed call still cost a round trip (and maybe tokens the provider will not report)."""
        record_usage(0, 0, self._seconds(run_id))


USAGE_RECORDER = UsageRecorder()
"""The one handler every chat model built by `librarian.chat_model` carries."""
