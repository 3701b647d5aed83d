"""The tools Librarian's MCP endpoint offers (`webapi.mcp`): what every member, and every reader, can run.

- `ask_library`: the agent answers from the caller's organization's documents, with citations. A
  new question starts a conversation owned by the caller; its `thread_id` continues it. The result's
  text carries readable citations (`[n] file, page p`); `structuredContent` has the answer, the
  cited sources and the thread id, as `outputSchema` declares.
- `search_documents`: the excerpts a search finds, each with its file and page, for clients whose own
  model writes the answer.

Ingest, reindex and the graph build are not tools: they only run through the document routes.
Both tools act for the caller only: the agent runs as the caller (`webapi.agent_client`), and the
search reads the organization of the caller's token. Bad arguments raise `InvalidArguments` (a
JSON-RPC -32602); a failure while running is a result with `isError` and one line of text.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from librarian.answers.numbering import render
from librarian.errors import LibrarianError
from librarian.retrieval.search import SearchOptions, search
from librarian.stack import get_stack
from librarian.tenancy import organization_from_user
from webapi.agent_client import (
    MAX_QUESTION_CHARS,
    AgentFailed,
    Caller,
    ConversationNotFound,
    ask_agent,
    source_record,
)

logger = logging.getLogger("librarian.server")

MAX_QUERY_CHARS = 1000
MAX_TOP_K = 20


class InvalidArguments(ValueError):
    """The tool's arguments do not fit its input schema (answered as JSON-RPC -32602)."""


@dataclass(frozen=True)
class McpTool:
    """A tool as `tools/list` shows it, and how `tools/call` runs it."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Caller, dict[str, Any]], Awaitable[dict[str, Any]]]

    def listing(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": True,  # reads the library; never changes a document
                "destructiveHint": False,
                "idempotentHint": False,
                "openWorldHint": False,
            },
        }


def text_result(
    text: str, structured: dict[str, Any] | None = None, *, extra: str | None = None
) -> dict[str, Any]:
    content = [{"type": "text", "text": text}] + ([{"type": "text", "text": extra}] if extra else [])
    result: dict[str, Any] = {"content": content, "isError": False}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def error_result(message: str) -> dict[str, Any]:
    """A tool-level failure: the client's model reads the one line and can act on it."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


# --- argument checks -------------------------------------------------------------------------------


def _only(arguments: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise InvalidArguments(f"unknown argument {unknown[0]!r}; expected {', '.join(sorted(allowed))}")


def _text(arguments: Mapping[str, Any], name: str, limit: int) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InvalidArguments(f"{name} must be a non-empty string")
    if len(value) > limit:
        raise InvalidArguments(f"{name} must be at most {limit} characters")
    return value.strip()


def _thread_id(arguments: Mapping[str, Any]) -> str | None:
    value = arguments.get("thread_id")
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return str(uuid.UUID(value))
    except ValueError:
        pass
    raise InvalidArguments("thread_id must be the thread_id of an earlier ask_library result")


def _top_k(arguments: Mapping[str, Any]) -> int | None:
    value = arguments.get("top_k")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP_K:
        raise InvalidArguments(f"top_k must be an integer from 1 to {MAX_TOP_K}")
    return value


# --- ask_library -----------------------------------------------------------------------------------

SOURCE_SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "description": "The number the answer cites it by: [n]."},
        "path": {"type": "string", "description": "The document's path in the library, e.g. docs/a.pdf."},
        "filename": {"type": "string"},
        "page": {"type": ["integer", "null"], "description": "1-based page; null when not paged."},
        "text": {"type": "string", "description": "The excerpt the citation rests on."},
    },
    "required": ["n", "path", "filename", "page", "text"],
}

ASK_INPUT = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUESTION_CHARS,
            "description": "The question, in natural language.",
        },
        "thread_id": {
            "type": "string",
            "format": "uuid",
            "description": "To ask a follow-up: the thread_id of an earlier answer (your own only).",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}

ASK_OUTPUT = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "The answer; [n] cites sources[n]."},
        "sources": {"type": "array", "items": SOURCE_SCHEMA},
        "thread_id": {"type": "string", "description": "Pass it back as thread_id to follow up."},
    },
    "required": ["answer", "sources", "thread_id"],
}


async def ask_library(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    _only(arguments, {"question", "thread_id"})
    question = _text(arguments, "question", MAX_QUESTION_CHARS)
    thread_id = _thread_id(arguments)
    try:
        answer = await ask_agent(caller, question, thread_id=thread_id)
    except ConversationNotFound:
        return error_result("no conversation of yours has this thread_id; omit it to start a new one")
    except AgentFailed as exc:
        return error_result(str(exc))
    structured = {"answer": answer.text, "sources": answer.sources, "thread_id": answer.thread_id}
    follow_up = f"thread_id: {answer.thread_id} (pass it to ask_library to ask a follow-up)"
    return text_result(answer.text, structured, extra=follow_up)


# --- search_documents ------------------------------------------------------------------------------

SEARCH_INPUT = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY_CHARS,
            "description": "What to look for, in natural language or exact terms.",
        },
        "top_k": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOP_K,
            "description": "How many excerpts (default: the server's setting).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "items": {
                **SOURCE_SCHEMA,
                "properties": {**SOURCE_SCHEMA["properties"], "score": {"type": "number"}},
            },
        }
    },
    "required": ["results"],
}


def _search(organization: str, query: str, top_k: int | None) -> list[dict[str, Any]]:
    from librarian.retrieval.rerankers import make_reranker  # loads its models only when used

    stack = get_stack()
    options = SearchOptions.from_settings(stack, top_k=top_k)
    return list(search(stack, organization, query, options, make_reranker(stack))["sources"])


async def search_documents(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
    _only(arguments, {"query", "top_k"})
    query = _text(arguments, "query", MAX_QUERY_CHARS)
    top_k = _top_k(arguments)
    try:
        organization = organization_from_user(caller.user)  # the token's organization, nothing else
        found = await asyncio.to_thread(_search, organization, query, top_k)
    except LibrarianError as exc:
        logger.warning("mcp search failed: %s", exc)
        return error_result("the search could not be run; try again")
    numbered = list(enumerate(found, start=1))
    results = [source_record(n, s) | {"score": float(s.get("score") or 0.0)} for n, s in numbered]
    return text_result(render(numbered), {"results": results})


TOOLS: dict[str, McpTool] = {
    tool.name: tool
    for tool in (
        McpTool(
            "ask_library",
            "Ask the library",
            "Answer a question from your organization's documents, citing the file and page of every "
            "claim as [n]. Returns the answer, its sources and a thread_id for follow-up questions.",
            ASK_INPUT,
            ASK_OUTPUT,
            ask_library,
        ),
        McpTool(
            "search_documents",
            "Search the documents",
            "Find excerpts of your organization's documents relevant to a query, each with its file "
            "and page, numbered [n]. Use it to read the sources yourself; ask_library answers instead.",
            SEARCH_INPUT,
            SEARCH_OUTPUT,
            search_documents,
        ),
    )
}


def tools_for(caller: Caller) -> list[McpTool]:
    """The tools this caller can run: every authenticated caller (readers too) may ask and search."""
    return list(TOOLS.values()) if caller.organization else []
