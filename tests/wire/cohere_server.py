"""A local Cohere v2 Rerank endpoint for tests: `POST /v2/rerank`, as the official `cohere` SDK calls it.

Cohere is unreachable here, so `CohereRerankScorer` is tested through the real SDK against this
server: the SDK serialises the request (bearer token, JSON body) and decodes this server's reply
into its response models. The server is strict where Cohere is (bearer key, required fields,
document count) and scores deterministically, so tests can assert an order: a document's
relevance is the share of the query's distinct terms it contains, after truncating it to
`max_tokens_per_doc` whitespace tokens (a stand-in for Cohere's tokenizer).

Wire format (docs.cohere.com/reference/rerank):
  request  {"model", "query", "documents": [str], "top_n"?, "max_tokens_per_doc"?, ...}
  reply    {"id", "results": [{"index", "relevance_score"}] best first, "meta": {...}}
  errors   {"id", "message"} with the HTTP status (401 bad key, 400 bad request, 429 rate limit)
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.wire.loopback import LoopbackServer

TEST_API_KEY = "co-test-key"
MAX_DOCUMENTS = 10_000  # Cohere's documented per-request maximum
_TERM = re.compile(r"\w+")


def terms(text: str) -> list[str]:
    return _TERM.findall(text.lower())


def overlap_score(query: str, document: str, max_tokens: int | None = None) -> float:
    """Share of the query's distinct terms found in the (truncated) document, in [0, 1]."""
    wanted = set(terms(query))
    if not wanted:
        return 0.0
    words = document.split()
    if max_tokens is not None:
        words = words[:max_tokens]
    return len(wanted & set(terms(" ".join(words)))) / len(wanted)


class WireError(Exception):
    """An HTTP error answered in Cohere's error envelope `{"id", "message"}`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0


class CohereWireServer(LoopbackServer):
    """Speaks Cohere's v2 rerank wire format on 127.0.0.1; start with `start()` or as a context manager."""

    def __init__(self, api_key: str = TEST_API_KEY, max_documents: int = MAX_DOCUMENTS) -> None:
        self.api_key = api_key
        self.max_documents = max_documents
        self.requests: list[RecordedRequest] = []
        self._failures: list[int] = []
        self._stalls: list[float] = []
        self._released = threading.Event()  # set on stop, so a stalled handler never outlives the test
        self._lock = threading.Lock()
        super().__init__()

    # ----- test controls
    def fail_next(self, count: int, status: int = 429) -> None:
        """Answer the next `count` requests with `status` (a 429 or 5xx carries `retry-after-ms: 1`)."""
        with self._lock:
            self._failures.extend([status] * count)

    def stall_next(self, count: int, seconds: float) -> None:
        """Hold the next `count` replies for up to `seconds` (a slow provider, for client timeouts)."""
        with self._lock:
            self._stalls.extend([seconds] * count)

    def stop(self) -> None:
        self._released.set()
        super().stop()

    def rerank_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == "/v2/rerank"]

    # ----- dispatch (called from handler threads)
    def handle(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        record = RecordedRequest(method, path, headers, body)
        with self._lock:
            self.requests.append(record)
            failure = self._failures.pop(0) if self._failures else None
            stall = self._stalls.pop(0) if self._stalls else None
        if stall is not None:
            self._released.wait(stall)
        try:
            if failure is not None:
                raise WireError(failure, f"injected failure ({failure})")
            if headers.get("authorization") != f"Bearer {self.api_key}":
                raise WireError(401, "invalid api token")
            if (method, path) != ("POST", "/v2/rerank"):
                raise WireError(404, f"{method} {path} not found")
            status, payload = 200, self._rerank(body)
        except WireError as err:
            status, payload = err.status, {"id": str(uuid.uuid4()), "message": err.message}
        record.status = status
        return status, payload

    def _rerank(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise WireError(400, "invalid request: body must be a JSON object")
        model, query, documents = body.get("model"), body.get("query"), body.get("documents")
        if not isinstance(model, str) or not model:
            raise WireError(400, "invalid request: model is required")
        if not isinstance(query, str) or not query.strip():
            raise WireError(400, "invalid request: query must be a non-empty string")
        if not isinstance(documents, list) or not documents:
            raise WireError(400, "invalid request: documents must be a non-empty list")
        if len(documents) > self.max_documents:
            raise WireError(
                400, f"invalid request: too many documents, got {len(documents)}, max {self.max_documents}"
            )
        if not all(isinstance(d, str) for d in documents):
            raise WireError(400, "invalid request: documents must be strings")
        top_n = body.get("top_n")
        max_tokens = body.get("max_tokens_per_doc")
        for name, value in (("top_n", top_n), ("max_tokens_per_doc", max_tokens)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise WireError(400, f"invalid request: {name} must be a positive integer")
        scored = sorted(
            ((overlap_score(query, d, max_tokens), i) for i, d in enumerate(documents)),
            key=lambda pair: (-pair[0], pair[1]),
        )
        results = [{"index": i, "relevance_score": s} for s, i in scored[: top_n or len(scored)]]
        return {
            "id": str(uuid.uuid4()),
            "results": results,
            "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
        }


class _Handler(BaseHTTPRequestHandler):
    """Thin HTTP shell: parse, hand to the server object, write JSON back."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    wire: CohereWireServer

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload = self.wire.handle(self.command, self.path, headers, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429 or status >= 500:
            # The SDK waits what `retry-after-ms` says (it ignores a zero `Retry-After`): 1 ms here.
            self.send_header("retry-after-ms", "1")
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; tests read `requests` instead."""


CohereWireServer.handler_class = _Handler
