"""A scripted chat model for graph answer tests: replies chosen by which prompt it is given, and a count
of how many calls are in flight at once.

Built on langchain_core's `FakeListChatModel` (a real `BaseChatModel`: `ainvoke`, callbacks and
`with_config` behave as with any provider). Global search's map, reduce, local search's query parse,
community filter and answer prompts each start with their own words, so one model serves a whole
`answer_with_mode` run. The map reply may be a function of the prompt (to answer per batch).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

MAP_START = "You are analysing parts of a knowledge graph's community reports"
REDUCE_START = "You combine partial answers"
LOCAL_START = "Answer the question from the graph context"
YIELDS_PER_CALL = 5  # scheduler turns a call stays in flight, so parallel map workers overlap


class ScriptedGraphModel(FakeListChatModel):
    """Map, reduce and local answers scripted by prompt; any other prompt (parse, filter) gets "{}",
    which the callers treat as unusable and fall back on their rules."""

    responses: list[str] = Field(default_factory=lambda: ["{}"])
    map_reply: Any = None  # str or Callable[[str], str]
    reduce_answer: str = ""
    local_answer: str = ""
    in_flight: int = 0
    max_in_flight: int = 0
    map_prompts: list[str] = Field(default_factory=list)

    def _reply(self, prompt: str) -> str:
        if prompt.startswith(MAP_START):
            self.map_prompts.append(prompt)
            reply = self.map_reply
            return reply(prompt) if callable(reply) else str(reply)
        if prompt.startswith(REDUCE_START):
            return json.dumps({"answer": self.reduce_answer})
        if prompt.startswith(LOCAL_START):
            return self.local_answer
        return "{}"

    @staticmethod
    def _prompt(messages: list[BaseMessage]) -> str:
        content = messages[-1].content
        return content if isinstance(content, str) else json.dumps(content)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self._reply(self._prompt(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            for _ in range(YIELDS_PER_CALL):
                await asyncio.sleep(0)  # a scheduling point, not a wait: lets other workers start
            return self._generate(messages, stop)
        finally:
            self.in_flight -= 1


def map_json(answer: str, usefulness: int) -> str:
    return json.dumps({"answer": answer, "usefulness": usefulness})


MapReply = str | Callable[[str], str]
