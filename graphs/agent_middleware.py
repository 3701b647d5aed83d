"""The chat-model agent's middleware: final citation numbers before the model reads, checks after.

- `renumber_citations` (`before_model`): parallel tool calls each number their excerpts after the same
  earlier sources; once their sources are merged, the messages are re-rendered with final `[n]`.
- `VerifyCitations` (`after_agent`): citation records for the final answer
  (`librarian.answers.verify`); unsupported sentences marked or dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, before_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from graphs.agent_state import LibrarianAgentState
from graphs.context import LibrarianContext
from librarian.answers.numbering import renumber_search_results
from librarian.answers.readable import with_readable_sources
from librarian.answers.verify import judge_for, support_scorer, verify_message
from librarian.stack import Stack
from tools.graph_tools import RENDERERS as GRAPH_RENDERERS


@before_model(state_schema=LibrarianAgentState, name="renumber_citations")
def renumber_citations(
    state: LibrarianAgentState, runtime: Runtime[LibrarianContext]
) -> dict[str, Any] | None:
    """Give parallel searches' excerpts their final `[n]` before the model cites them."""
    fixed = renumber_search_results(state.get("messages", []), state.get("sources") or [], GRAPH_RENDERERS)
    return {"messages": fixed} if fixed else None


class VerifyCitations(AgentMiddleware[LibrarianAgentState, LibrarianContext]):
    """`after_agent`: citation records for the final answer; unsupported sentences marked or dropped."""

    state_schema = LibrarianAgentState

    def __init__(self, stack: Callable[[], Stack], model: BaseChatModel | None = None) -> None:
        super().__init__()
        self._stack = stack
        self._model = model

    @property
    def name(self) -> str:
        return "verify_citations"

    def after_agent(
        self, state: LibrarianAgentState, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        final = messages[-1] if messages else None
        if not isinstance(final, AIMessage) or final.tool_calls:
            return {"citations": []}
        current = self._stack()
        replacement, records = verify_message(
            final,
            state.get("sources") or [],
            support_scorer(current),
            judge_for(current.settings, self._model),
            current.settings.unsupported_sentences,
        )
        update: dict[str, Any] = {"citations": records}
        # Clients that show only the text (Agent Chat UI, MCP, /v1) get file and page in it too.
        readable = with_readable_sources(replacement or final, state.get("sources") or [])
        if readable is not final:
            update["messages"] = [readable]
        return update

    async def aafter_agent(
        self, state: LibrarianAgentState, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any] | None:
        # The scorer runs MiniLM (and the judge a sync model call): off the event loop.
        return await asyncio.to_thread(self.after_agent, state, runtime)
