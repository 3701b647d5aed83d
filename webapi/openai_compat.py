"""`/v1/chat/completions` and `/v1/models`: Librarian behind the OpenAI chat API, for clients that speak it.

Open WebUI, the `openai` SDKs and most chat front ends can talk to any server with this API: point
their base URL at `{server}/v1` and give a Librarian token as the API key (they send it as
`Authorization: Bearer`, which is how the server authenticates everyone). The token is the identity
and its organization the library searched; nothing in the request body can name another.

- One model, `librarian`: the `agent` graph. Any other name is a 404 `model_not_found`.
- The last `user` message is the question; earlier `user` and `assistant` turns go to the agent as
  the conversation so far (system and tool messages are dropped: the agent has its own rules). Each
  request is a stateless run as the caller: the server keeps no thread, so nothing persists.
- The answer carries readable citations (`[n] file, page p`, `webapi.agent_client`).
- `stream: true` answers with `chat.completion.chunk` events and `data: [DONE]`. The role arrives at
  once and keep-alive comments while the agent works; the answer is sent when it is final, because
  the agent renumbers and checks its citations after writing, so earlier tokens could differ from it.
- Errors are OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with the fitting
  status: 401 for a missing or bad key (the server's auth middleware refuses it; `OpenAIRoute`
  rewrites its body), 400 for a bad body, 404 for an unknown model, never a traceback.

These routes follow OpenAI's published API, so they are not in `/openapi-librarian.json`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from webapi.agent_client import (
    MAX_QUESTION_CHARS,
    AgentAnswer,
    AgentFailed,
    Caller,
    ask_agent,
    caller_of,
    message_text,
    read_body,
)
from webapi.routing import LibrarianRoute

logger = logging.getLogger("librarian.server")

MODEL = "librarian"
MODEL_CREATED = 1767225600  # 2026-01-01: fixed, so the listing does not change between calls
MAX_HISTORY_MESSAGES = 20
KEEPALIVE_S = 10.0

#: HTTP status → OpenAI's error `type` and default `code`.
_ERROR_KINDS = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


class OpenAIError(Exception):
    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param


def error_body(
    status: int, message: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    kind, default_code = _ERROR_KINDS.get(status, ("server_error", "internal_error"))
    return {"error": {"message": message, "type": kind, "param": param, "code": code or default_code}}


def error_response(exc: OpenAIError) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="librarian"'} if exc.status == 401 else None
    body = error_body(exc.status, exc.message, exc.code, exc.param)
    return JSONResponse(body, status_code=exc.status, headers=headers)


def _in_openai_shape(start: Message, body: bytes) -> tuple[Message, bytes]:
    """An error response (its start message and body) in OpenAI's shape; unchanged when it already is.

    The auth middleware answers `{"detail": ...}`, Starlette plain text; their message is kept.
    """
    try:
        payload = json.loads(body) if body else {}
    except ValueError:
        payload = {"detail": body.decode("utf-8", "replace")[:200]}
    payload = payload if isinstance(payload, dict) else {}
    error = payload.get("error") if isinstance(payload.get("error"), dict) else {}
    if "type" in error:
        return start, body
    message = error.get("message") or payload.get("detail") or "request refused"
    message = message if isinstance(message, str) else json.dumps(message)[:300]
    new = json.dumps(error_body(int(start["status"]), message)).encode()
    kept = [
        (k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"content-type")
    ]
    headers = [*kept, (b"content-type", b"application/json"), (b"content-length", str(len(new)).encode())]
    return {**start, "headers": headers}, new


class OpenAIRoute(LibrarianRoute):
    """A route whose every refusal, the auth middleware's 401 included, is in OpenAI's error shape."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """Any method on the path is ours to answer (405), not the Platform API's catch-all 404."""
        match, child_scope = super().matches(scope)
        return (Match.FULL if match is Match.PARTIAL else match), child_scope

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message | None = None
        chunks: list[bytes] = []

        async def reshape(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start = message
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            shaped_start, body = _in_openai_shape(start, b"".join(chunks))
            await send(shaped_start)
            await send({"type": "http.response.body", "body": body, "more_body": False})

        if self.methods and scope.get("method") not in self.methods and not self._answers_head(scope):
            # Starlette raises a 405 to the app's handlers, past `reshape`: answer it here instead.
            allow = ", ".join(sorted(self.methods))
            refusal = error_response(OpenAIError(405, f"this endpoint takes {allow}"))
            refusal.headers["Allow"] = allow
            await refusal(scope, receive, send)
            return
        await super().handle(scope, receive, reshape)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super(LibrarianRoute, self).get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except OpenAIError as exc:
                return error_response(exc)
            except Exception:
                logger.exception("unexpected error in %s %s", request.method, request.url.path)
                return error_response(OpenAIError(500, "the server could not complete the request"))

        return answer


router = APIRouter(route_class=OpenAIRoute)


def _caller(request: Request) -> Caller:
    caller = caller_of(request.scope)
    if caller is None:  # the server's auth middleware refuses first; this is the net
        raise OpenAIError(401, "a valid API key (a Librarian token) is required")
    return caller


def _model_card() -> dict[str, Any]:
    return {"id": MODEL, "object": "model", "created": MODEL_CREATED, "owned_by": "librarian"}


@router.get("/v1/models", include_in_schema=False)
async def list_models(request: Request) -> JSONResponse:
    _caller(request)
    return JSONResponse({"object": "list", "data": [_model_card()]})


@router.get("/v1/models/{model}", include_in_schema=False)
async def get_model(request: Request, model: str) -> JSONResponse:
    _caller(request)
    if model != MODEL:
        raise _no_such_model(model)
    return JSONResponse(_model_card())


def _no_such_model(model: Any) -> OpenAIError:
    text = f"The model {str(model)[:100]!r} does not exist; this server offers {MODEL!r}"
    return OpenAIError(404, text, code="model_not_found", param="model")


# --- the request -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatRequest:
    question: str
    history: list[dict[str, str]]
    stream: bool
    include_usage: bool


def _messages(raw: Any) -> list[tuple[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise OpenAIError(400, "messages must be a non-empty array", param="messages")
    turns = []
    for i, message in enumerate(raw):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise OpenAIError(400, f"messages[{i}] must be an object with a role", param=f"messages[{i}]")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise OpenAIError(
                400, f"messages[{i}].content must be a string or an array", param=f"messages[{i}]"
            )
        turns.append((message["role"], message_text(content).strip()))
    return turns


def parse_chat(payload: Any) -> ChatRequest:
    """The question, the earlier turns and the streaming options, or a 400/404 in OpenAI's shape."""
    if not isinstance(payload, dict):
        raise OpenAIError(400, "the body must be a JSON object")
    if not isinstance(payload.get("model"), str):
        raise OpenAIError(400, "model is required", param="model")
    if payload["model"] != MODEL:
        raise _no_such_model(payload["model"])
    turns = _messages(payload.get("messages"))
    stream = payload.get("stream", False)
    if not isinstance(stream, bool | None):
        raise OpenAIError(400, "stream must be a boolean", param="stream")
    last_user = max((i for i, (role, text) in enumerate(turns) if role == "user" and text), default=None)
    if last_user is None:
        raise OpenAIError(400, "messages must include a user message with text", param="messages")
    question = turns[last_user][1]
    if len(question) > MAX_QUESTION_CHARS:
        text = f"the question is longer than {MAX_QUESTION_CHARS} characters"
        raise OpenAIError(400, text, code="context_length_exceeded", param="messages")
    earlier = [(r, t) for r, t in turns[:last_user] if r in ("user", "assistant") and t]
    history = [{"role": r, "content": t} for r, t in earlier[-MAX_HISTORY_MESSAGES:]]
    options = payload.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return ChatRequest(question, history, bool(stream), include_usage)


async def _chat_request(request: Request) -> ChatRequest:
    body = await read_body(request.stream())
    if body is None:
        raise OpenAIError(413, "the request body is too large")
    try:
        payload = json.loads(body)
    except ValueError:
        raise OpenAIError(400, "the body is not valid JSON") from None
    return parse_chat(payload)


# --- the answer ------------------------------------------------------------------------------------

USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def completion(answer: AgentAnswer, id_: str, created: int) -> dict[str, Any]:
    return {
        "id": id_,
        "object": "chat.completion",
        "created": created,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer.text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": USAGE,
    }


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"


async def chunks(caller: Caller, chat: ChatRequest, id_: str, created: int) -> AsyncIterator[str]:
    """The streamed answer: the role now, keep-alives while the agent works, then the final text."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        head = {"id": id_, "object": "chat.completion.chunk", "created": created, "model": MODEL}
        return _event({**head, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    task = asyncio.create_task(ask_agent(caller, chat.question, history=chat.history, keep=False))
    try:
        while not (await asyncio.wait({task}, timeout=KEEPALIVE_S))[0]:
            yield ": keep-alive\n\n"  # an SSE comment: clients skip it, proxies see the line alive
        answer = task.result()
    except AgentFailed as exc:
        yield _event(error_body(exc.status, str(exc)))
        return
    except Exception:
        logger.exception("chat completion stream failed")
        yield _event(error_body(500, "the server could not complete the request"))
        return
    finally:
        task.cancel()  # a no-op once done; stops the run's wait when the client went away
    for line in answer.text.splitlines(keepends=True):
        yield chunk({"content": line})
    yield chunk({}, "stop")
    if chat.include_usage:
        usage = {"id": id_, "object": "chat.completion.chunk", "created": created, "model": MODEL}
        yield _event({**usage, "choices": [], "usage": USAGE})
    yield "data: [DONE]\n\n"


@router.post("/v1/chat/completions", include_in_schema=False)
async def chat_completions(request: Request) -> Response:
    caller = _caller(request)
    chat = await _chat_request(request)
    id_, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    if chat.stream:
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(
            chunks(caller, chat, id_, created), media_type="text/event-stream", headers=headers
        )
    try:
        answer = await ask_agent(caller, chat.question, history=chat.history, keep=False)
    except AgentFailed as exc:
        raise OpenAIError(exc.status, str(exc)) from None
    return JSONResponse(completion(answer, id_, created))
