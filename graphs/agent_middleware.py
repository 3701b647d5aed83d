"""The chat-model agent's middleware: final citation numbers before the model reads, checks after.

- `renumber_citations` (`before_model`): parallel tool calls each number their excerpts after the same
  earlier sources; once their sources are merged, the messages are re-rendered with final `[n]`.
- `VerifyCitations` (`after_agent`): citation records for the final answer
  (`librarian.answers.verify`); unsupported sentences marked or dropped.
- `ChooseMode` (`wrap_model_call`, `after_agent`): a run's chosen path (`LibrarianContext.mode`)
  leaves the model only that path's tool; the final answer is stamped with the path that answered.
- `ReceiveAttachments` (`before_agent`): files attached to the user's message become references to
  the library, and the turn ends with a reply saying they are being indexed (`graphs.attachments`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    before_model,
    hook_config,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from graphs.agent_state import LibrarianAgentState
from graphs.attachments import is_acknowledgement, receive_attachments
from graphs.context import LibrarianContext, organization_of, requested_mode
from librarian.answers.numbering import renumber_search_results
from librarian.answers.readable import with_readable_sources
from librarian.answers.verify import judge_for, support_scorer, verify_message
from librarian.attachments import AttachmentLibrary
from librarian.costs.question import question_scope
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
        if not isinstance(final, AIMessage) or final.tool_calls or is_acknowledgement(final):
            return {"citations": []}
        current = self._stack()
        with question_scope(current, organization_of(get_config(), runtime), "judge"):  # the cost ledger
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


class ReceiveAttachments(AgentMiddleware[LibrarianAgentState, LibrarianContext]):
    """`before_agent`: a turn that attached files stores them (or says why not) and ends with a reply
    that they are being indexed, before the model could answer as if it had read them."""

    state_schema = LibrarianAgentState

    def __init__(self, library: AttachmentLibrary | None = None) -> None:
        super().__init__()
        self._library = library

    @property
    def name(self) -> str:
        return "receive_attachments"

    @hook_config(can_jump_to=["end"])
    def before_agent(
        self, state: LibrarianAgentState, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        if not messages or not isinstance(messages[-1], HumanMessage):
            return None
        update = receive_attachments(messages, lambda: organization_of(get_config(), runtime), self._library)
        return None if update is None else {**update, "jump_to": "end"}

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(
        self, state: LibrarianAgentState, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any] | None:
        # Storing a file and decoding base64 block: off the event loop.
        return await asyncio.to_thread(self.before_agent, state, runtime)


#: The tool of each answer path, and back.
MODE_TOOLS = {
    "search": "search_documents",
    "local": "graph_local_search",
    "global": "graph_global_search",
    "drift": "graph_drift_search",
}
TOOL_MODES = {tool: mode for mode, tool in MODE_TOOLS.items()}


def path_that_answered(messages: list[Any]) -> str:
    """The path of the last tool the model used in this turn (`none`: it answered without searching)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage) and message.name in TOOL_MODES:
            return TOOL_MODES[message.name]
    return "none"


class ChooseMode(AgentMiddleware[LibrarianAgentState, LibrarianContext]):
    """A run's chosen path (`context.mode`, as `librarian ask --mode`): the model sees only that
    path's tool (auto: all of them). After the turn, `answered_by` and the answer's
    `response_metadata` name the path that answered, so the chat labels every answer, old ones too."""

    state_schema = LibrarianAgentState

    @property
    def name(self) -> str:
        return "choose_mode"

    def _narrowed(self, request: ModelRequest) -> ModelRequest:
        mode = requested_mode(request.runtime.context)
        if mode == "auto":
            return request
        tools = [t for t in request.tools if getattr(t, "name", None) == MODE_TOOLS[mode]]
        return request.override(tools=tools)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]):
        return handler(self._narrowed(request))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[..., Any]):
        return await handler(self._narrowed(request))

    def after_agent(
        self, state: LibrarianAgentState, runtime: Runtime[LibrarianContext]
    ) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        final = messages[-1] if messages else None
        mode = requested_mode(runtime.context)
        answered = {
            "mode": path_that_answered(messages),
            "chosenBy": "auto" if mode == "auto" else "user",
            "closest": [],
        }
        update: dict[str, Any] = {"answered_by": answered}
        if isinstance(final, AIMessage) and not final.tool_calls and final.id:
            metadata = {
                **final.response_metadata,
                "retrieval_mode": answered["mode"],
                "chosen_by": answered["chosenBy"],
            }
            update["messages"] = [final.model_copy(update={"response_metadata": metadata})]
        return update
