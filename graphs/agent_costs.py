"""The agent's model calls in the cost ledger: the answer's calls, its tools' and the judge's.

`RecordAnswerCosts` opens the organization's `answer` scope around each model call and each tool
call (a graph tool's map/reduce switch to their own phase inside it, `librarian.costs.question`);
`VerifyCitations` opens the `judge` scope itself. Offline, no model is called and nothing is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain.agents.middleware.types import ToolCallRequest
from langgraph.config import get_config

from graphs.agent_state import LibrarianAgentState
from graphs.context import LibrarianContext, organization_of
from librarian.costs.question import question_scope
from librarian.stack import Stack


class RecordAnswerCosts(AgentMiddleware[LibrarianAgentState, LibrarianContext]):
    """Charge the agent's model and tool calls to the run's organization, phase `answer`."""

    state_schema = LibrarianAgentState

    def __init__(self, stack: Callable[[], Stack]) -> None:
        super().__init__()
        self._stack = stack

    @property
    def name(self) -> str:
        return "record_answer_costs"

    def _org(self, runtime: Any) -> str:
        return organization_of(get_config(), runtime)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        with question_scope(self._stack(), self._org(request.runtime)):
            return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[Any]]
    ) -> Any:
        with question_scope(self._stack(), self._org(request.runtime)):
            return await handler(request)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        with question_scope(self._stack(), self._org(request.runtime)):
            return handler(request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        with question_scope(self._stack(), self._org(request.runtime)):
            return await handler(request)
