"""A local OpenAI-compatible server for tests: embeddings and scripted chat completions.

OpenAI is unreachable here, so the embedder and (later) the agent are tested through the real
`openai` SDK and `langchain_openai.ChatOpenAI` against this server. Embeddings are deterministic
hash vectors in the encodings the SDK asks for (it asks for base64 by default). Chat replies come
from a script the test writes, so an agent test decides exactly when the "model" calls a tool:

    server.chat_script.append(ToolCallReply("search_documents", {"query": "refund policy"}))
    server.chat_script.append(TextReply("Refunds take 14 days [1]."))

When the script is empty, `default_reply` answers (a script entry may also be a callable that builds
the reply from the request body, for replies that depend on tool results).

A `stream: true` chat request gets a real stream, as OpenAI sends it: chunked transfer encoding, one
server-sent event per delta (the text word by word, tool-call arguments in parts), each written and
flushed on its own (`stream_delay_s` apart, if set), so a client sees several chunks per reply and a
streaming bug cannot hide behind a reply that arrives in one piece.

Every reply carries a `usage` counted from its words (`chat_usage`; embeddings: words of the inputs),
and `tokens_served` adds them up, so a cost ledger can be checked against what the server served.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.wire.loopback import LoopbackServer

MODEL_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
MAX_EMBEDDING_INPUTS = 2048
TEST_API_KEY = "sk-test"


@dataclass
class TextReply:
    """The assistant answers with text."""

    text: str


@dataclass
class ToolCallReply:
    """The assistant calls one tool; `args` is sent JSON-encoded, as OpenAI does."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None


ChatReply = TextReply | ToolCallReply | list[ToolCallReply]
ScriptEntry = ChatReply | Callable[[dict[str, Any]], ChatReply]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0


def expected_embedding(model: str, text: str, dimension: int) -> list[float]:
    """The unit vector the server returns for (model, text), so tests can compare exactly."""
    raw: list[float] = []
    for counter in itertools.count():
        if len(raw) >= dimension:
            break
        digest = hashlib.sha256(f"{model}\0{text}\0{counter}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in digest)
    raw = raw[:dimension]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    # Round-trip through float32, the precision the base64 encoding carries.
    return [struct.unpack("<f", struct.pack("<f", v / norm))[0] for v in raw]


class WireError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.type = status, message, type_


class OpenAIWireServer(LoopbackServer):
    """Speaks the OpenAI REST wire format under `/v1` on 127.0.0.1."""

    def __init__(self, api_key: str = TEST_API_KEY, default_dimension: int = 8) -> None:
        self.api_key = api_key
        self.default_dimension = default_dimension  # for models with no known width
        self.chat_script: list[ScriptEntry] = []
        self.default_reply: ScriptEntry = TextReply("(no scripted reply)")  # or a callable, as in the script
        self.stream_delay_s = 0.0  # pause between a streamed reply's events
        self.requests: list[RecordedRequest] = []
        # tokens in the `usage` of every answered request, so a test can compare a ledger with them
        self.tokens_served = {"prompt": 0, "completion": 0, "embedding": 0}
        self._failures: list[tuple[int, str | None]] = []
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    # ----- test controls
    def fail_next(self, count: int, status: int = 503, path: str | None = None) -> None:
        """Answer the next `count` requests (to paths ending in `path`, if given) with `status`."""
        with self._lock:
            self._failures.extend([(status, path)] * count)

    def requests_to(self, suffix: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith(suffix)]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat completion requests that were answered successfully."""
        return [r.body for r in self.requests_to("/chat/completions") if r.status == 200]

    # ----- dispatch
    def handle(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        """Returns (status, payload); payload is a dict (JSON), bytes (a ready SSE stream, sent in one
        write) or a list of bytes (SSE events, each sent as its own chunk)."""
        record = RecordedRequest(method, path.split("?")[0], headers, body)
        with self._lock:
            self.requests.append(record)
            try:
                record.status, payload = 200, self._route(record)
            except WireError as err:
                record.status = err.status
                payload = {"error": {"message": err.message, "type": err.type, "param": None, "code": None}}
            return record.status, payload

    def _route(self, req: RecordedRequest) -> Any:
        for i, (status, suffix) in enumerate(self._failures):
            if suffix is None or req.path.endswith(suffix):
                del self._failures[i]
                raise WireError(status, f"injected failure ({status})", "server_error")
        if req.headers.get("authorization") != f"Bearer {self.api_key}":
            raise WireError(401, "Incorrect API key provided.", "invalid_api_key")
        if req.method == "POST" and req.path == "/v1/embeddings":
            return self._embeddings(req.body)
        if req.method == "POST" and req.path == "/v1/chat/completions":
            return self._chat(req.body)
        raise WireError(404, f"Unknown route {req.method} {req.path}")

    # ----- embeddings
    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model", "")
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        if not texts or any(not isinstance(t, str) or not t for t in texts):
            raise WireError(400, "'input' must be a non-empty string or array of non-empty strings")
        if len(texts) > MAX_EMBEDDING_INPUTS:
            raise WireError(400, f"'input' must have at most {MAX_EMBEDDING_INPUTS} items")
        dimension = body.get("dimensions") or MODEL_DIMENSIONS.get(model, self.default_dimension)
        encoding = body.get("encoding_format", "float")
        data = []
        for i, text in enumerate(texts):
            vector = expected_embedding(model, text, int(dimension))
            embedding: Any = vector
            if encoding == "base64":
                embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        n_tokens = sum(len(t.split()) for t in texts)
        self.tokens_served["embedding"] += n_tokens
        return {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens},
        }

    # ----- chat
    def _next_reply(self, body: dict[str, Any]) -> ChatReply:
        entry: ScriptEntry = self.chat_script.pop(0) if self.chat_script else self.default_reply
        return entry(body) if callable(entry) else entry

    def _chat(self, body: dict[str, Any]) -> Any:
        reply = self._next_reply(body)
        completion_id = f"chatcmpl-{next(self._ids)}"
        calls = [reply] if isinstance(reply, ToolCallReply) else reply if isinstance(reply, list) else []
        tool_calls = [
            {
                "id": call.call_id or f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args)},
            }
            for call in calls
        ]
        text = reply.text if isinstance(reply, TextReply) else None
        finish = "tool_calls" if tool_calls else "stop"
        usage = chat_usage(body, text, tool_calls)
        self.tokens_served["prompt"] += usage["prompt_tokens"]
        self.tokens_served["completion"] += usage["completion_tokens"]
        base = {"id": completion_id, "created": int(time.time()), "model": body.get("model", "")}
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return _sse_events(base, text, tool_calls, finish, usage if include_usage else None)
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }


def chat_usage(body: dict[str, Any], text: str | None, tool_calls: list[dict[str, Any]]) -> dict[str, int]:
    """The `usage` of a chat reply: words of the request's messages (plus one per message for the role)
    and of the reply (at least 10 and 5, the fixed figures this server used to send)."""
    messages = body.get("messages") or []
    prompt = sum(len(str(m.get("content") or "").split()) + 1 for m in messages if isinstance(m, dict))
    reply = len((text or "").split()) + sum(len(c["function"]["arguments"].split()) for c in tool_calls)
    prompt, completion = max(prompt, 10), max(reply, 5)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _sse_events(
    base: dict[str, Any],
    text: str | None,
    tool_calls: list[dict[str, Any]],
    finish: str,
    usage: dict[str, int] | None,
) -> list[bytes]:
    """A chat-completion stream as server-sent events, one per delta, split the way OpenAI splits it."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return {**base, "object": "chat.completion.chunk", "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": "" if text is not None else None})]
    if text:
        pieces = text.split(" ")
        chunks += [chunk({"content": p if i == 0 else " " + p}) for i, p in enumerate(pieces)]
    for i, call in enumerate(tool_calls):
        head = {"index": i, "id": call["id"], "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**head, "function": {"name": call["function"]["name"], "arguments": ""}}]})
        )
        args = call["function"]["arguments"]
        half = len(args) // 2
        for part in (args[:half], args[half:]):
            chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, finish))
    if usage is not None:
        chunks.append({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return [event.encode() for event in events]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; don't stall on ACKs
    wire: OpenAIWireServer

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload = self.wire.handle(self.command, self.path, headers, body)
        if isinstance(payload, list):
            self._stream(status, payload)
            return
        is_stream = isinstance(payload, bytes)
        data = payload if is_stream else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if is_stream else "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status >= 500 or status == 429:
            self.send_header("retry-after-ms", "1")  # keep the SDK's own retries instant in tests
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, status: int, events: list[bytes]) -> None:
        """Server-sent events with chunked transfer encoding: each event its own write and flush."""
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for i, event in enumerate(events):
            if i and self.wire.stream_delay_s:
                time.sleep(self.wire.stream_delay_s)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; tests read `requests` instead."""


OpenAIWireServer.handler_class = _Handler
