"""Ask the agent as the caller: the one core the MCP and OpenAI-compatible routes share.

The routes answer protocol clients (`webapi.mcp`, `webapi.openai_compat`); both need the same thing:
run the `agent` graph for the authenticated caller, get the answer, the sources it cites and the
thread it ran on, and make the citations readable in the text for clients that only show text.

**As the caller.** The run goes through the server's in-process client (`langgraph_sdk.get_client()`),
with the caller's auth context set, so `auth.py`'s handlers apply to every call exactly as if the
caller had made it over HTTP: the thread is stamped with their organization and owner, the run
searches the organization of their token, and a thread they cannot see does not exist. That is how
langgraph-api's own MCP and A2A routes run assistants; they are `ApiRoute`s, which set the context
themselves, where our routes only get `scope["user"]` from the auth middleware, so `as_caller`
sets it. The organization is never taken from a request body.

**Readable citations.** An answer cites `[n]`, meaning `sources[n-1]`. The agent already ends its
answers with a `Sources:` block (`[n] file, page p`); `with_sources_block` is idempotent, so an answer
from a run that predates it gets one here and any other comes back unchanged.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from librarian.answers.readable import with_sources_block
from librarian.ownership import can_write

logger = logging.getLogger("librarian.server")

AGENT = "agent"
#: The longest question either protocol passes on (the agent searches with it).
MAX_QUESTION_CHARS = 8000
_MARKER = re.compile(r"\[(\d{1,4})\]")
T = TypeVar("T")


class ConversationNotFound(Exception):
    """The thread does not exist for this caller (absent, another user's or another organization's)."""


class AgentFailed(Exception):
    """The run did not produce an answer; the message is one line, safe to show a client.

    `status` is the HTTP status that fits: the platform's refusal (4xx), or 500.
    """

    def __init__(self, message: str, status: int = 500) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Caller:
    """The authenticated caller of a route, as the server's auth middleware left it in the scope."""

    user: Any
    credentials: Any
    identity: str
    organization: str | None


@dataclass(frozen=True)
class AgentAnswer:
    """One answered question: `text` with readable citations, the cited sources, and the thread."""

    text: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    thread_id: str | None = None


def _field(user: Any, name: str) -> Any:
    try:
        return user[name]
    except (KeyError, TypeError, AttributeError):
        return getattr(user, name, None)


def caller_of(scope: Mapping[str, Any]) -> Caller | None:
    """The authenticated caller, or None when the request carries no valid token."""
    user = scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    identity = _field(user, "identity")
    if not identity:
        return None
    org = _field(user, "organization_id")
    return Caller(user, scope.get("auth"), str(identity), str(org) if org else None)


async def as_caller(caller: Caller, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work` with the caller's auth context, in its own task so the context ends with it.

    In-process calls made inside it reach the platform's routes as the caller: `auth.py`'s handlers
    filter and stamp them, and runs they start carry the caller as their user.
    """
    from langgraph_api.utils import with_user  # the server's own context manager (`ApiRoute` uses it)

    async def scoped() -> T:
        async with with_user(caller.user, caller.credentials):
            return await work()

    return await asyncio.create_task(scoped())


@functools.cache
def _platform() -> Any:
    """The server's in-process client; calls made under `as_caller` carry the caller's auth context."""
    from langgraph_sdk import get_client

    return get_client()


# --- citations -------------------------------------------------------------------------------------


def cited_sources(text: str, sources: Sequence[Mapping[str, Any]]) -> list[tuple[int, Mapping[str, Any]]]:
    """The sources the text cites as `[n]`, in order of first citation (numbers past the end ignored)."""
    seen: dict[int, Mapping[str, Any]] = {}
    for match in _MARKER.finditer(text):
        n = int(match.group(1))
        if 1 <= n <= len(sources) and n not in seen:
            seen[n] = sources[n - 1]
    return list(seen.items())


def source_record(n: int, source: Mapping[str, Any]) -> dict[str, Any]:
    """What a client gets of a cited source: its number, file, page and the excerpt's text."""
    page = source.get("page")
    return {
        "n": n,
        "path": str(source.get("path") or ""),
        "filename": str(source.get("filename") or source.get("path") or ""),
        "page": page if isinstance(page, int) and page > 0 else None,
        "text": str(source.get("text") or ""),
    }


# --- running the agent -----------------------------------------------------------------------------


def message_text(content: Any) -> str:
    """A message's text, whether its content is a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else b.get("text", "") for b in content if isinstance(b, str | dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def answer_of(state: Any, thread_id: str | None) -> AgentAnswer:
    """The final state of an agent run as an answer, or `AgentFailed` for a failed run."""
    if not isinstance(state, dict):
        raise AgentFailed("the agent returned no answer")
    if "__error__" in state:
        error = state["__error__"] if isinstance(state["__error__"], dict) else {}
        logger.warning("agent run failed: %s: %s", error.get("error"), error.get("message"))
        raise AgentFailed("the agent could not answer this question; try again or rephrase it")
    messages = state.get("messages") or []
    last = messages[-1] if messages else {}
    if not isinstance(last, dict) or last.get("type") not in ("ai", "AIMessageChunk"):
        raise AgentFailed("the agent returned no answer")
    raw = message_text(last.get("content")).strip()
    sources = [s for s in state.get("sources") or [] if isinstance(s, dict)]
    cited = [source_record(n, s) for n, s in cited_sources(raw, sources)]
    return AgentAnswer(with_sources_block(raw, sources), cited, thread_id)


def _refusal_message(exc: httpx.HTTPStatusError) -> str:
    """One line from a refused platform call (the auth handlers' messages are written for clients)."""
    try:
        body = exc.response.json()
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str) and detail and "\n" not in detail:
        return detail[:300]
    return f"the request was refused ({exc.response.status_code})"


async def _own_conversation(client: Any, caller: Caller, thread_id: str) -> None:
    """Refuse a thread that is not the caller's own chat (the same answer whether or not it exists)."""
    try:
        uuid.UUID(thread_id)
        thread = await client.threads.get(thread_id)
    except (ValueError, httpx.HTTPStatusError):
        raise ConversationNotFound(thread_id) from None
    if not can_write(thread.get("metadata") or {}, str(caller.organization), caller.identity):
        raise ConversationNotFound(thread_id)


def input_messages(question: str, history: Iterable[Mapping[str, str]] = ()) -> list[dict[str, str]]:
    """The run's input: earlier turns (role `user` or `assistant`, text) and then the question."""
    turns = [{"role": m["role"], "content": m["content"]} for m in history]
    return [*turns, {"role": "user", "content": question}]


async def ask_agent(
    caller: Caller,
    question: str,
    *,
    thread_id: str | None = None,
    history: Iterable[Mapping[str, str]] = (),
    keep: bool = True,
) -> AgentAnswer:
    """Run the agent for the caller and return its answer with readable citations.

    `thread_id` continues one of the caller's own conversations (`ConversationNotFound` otherwise).
    Without it, `keep` starts a new conversation thread owned by the caller and returns its id; with
    `keep=False` the run is stateless (the server deletes its thread) and `history` carries the
    earlier turns instead. Failures are `AgentFailed` with a one-line message.
    """
    messages = input_messages(question, history)

    async def run() -> AgentAnswer:
        client = _platform()
        target = thread_id
        if target is not None:
            await _own_conversation(client, caller, target)
        elif keep:
            target = str((await client.threads.create())["thread_id"])
        state = await client.runs.wait(target, AGENT, input={"messages": messages}, raise_error=False)
        return answer_of(state, target)

    try:
        return await as_caller(caller, run)
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404 and thread_id is not None:
            raise ConversationNotFound(thread_id) from None
        if exc.response.status_code >= 500:
            logger.error("agent call failed", exc_info=exc)
            raise AgentFailed("the server could not run the agent; try again") from None
        raise AgentFailed(_refusal_message(exc), exc.response.status_code) from None
    except httpx.HTTPError as exc:  # the in-process call timed out or broke off
        logger.error("agent call failed", exc_info=exc)
        raise AgentFailed("the agent did not answer in time; try again") from None


# --- request bodies --------------------------------------------------------------------------------

#: The protocol routes take small JSON bodies; a larger one is refused unread.
MAX_BODY_BYTES = 1024 * 1024


async def read_body(receive_stream: Any, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The whole body from `request.stream()`, or None once it passes `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in receive_stream:
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
