"""A local HTTP server speaking LangSmith's run-ingest wire format, so tests exercise the real SDK.

The `langsmith` client (what LangChain's tracer sends through) asks `GET /info` once, then sends runs
in batches: `POST /runs/multipart` (multipart/form-data, one `post.{id}` / `patch.{id}` part per run
plus `post.{id}.inputs`, `.outputs`, `.extra`, ... parts, zstd-compressed when `/info` says the server
takes it), or `POST /runs/batch` (`{"post": [...], "patch": [...]}`) when multipart is off, or single
`POST /runs` and `PATCH /runs/{id}`. This server speaks all of them, records every run (a patch merged
into its post, as LangSmith shows it) and answers what the SDK expects. `zstd=False` makes `/info`
announce no compression, so the SDK sends plain multipart.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.wire.loopback import LoopbackServer

TEST_API_KEY = "lsv2-test-key"
JSON_FIELDS = ("inputs", "outputs", "events", "extra", "error", "serialized")


def _decompress(body: bytes, encoding: str) -> bytes:
    if encoding != "zstd":
        return body
    import zstandard

    # The SDK streams frames without a content size: read to the end instead of `decompress`.
    with zstandard.ZstdDecompressor().stream_reader(body) as reader:
        return reader.read()


def multipart_parts(content_type: str, body: bytes) -> list[tuple[str, bytes]]:
    """(field name, payload) of each part of a multipart/form-data body."""
    raw = f"Content-Type: {content_type}\r\n\r\n".encode() + body
    message = BytesParser(policy=HTTP).parsebytes(raw)
    return [
        (str(part.get_param("name", header="content-disposition")), part.get_payload(decode=True) or b"")
        for part in message.iter_parts()
    ]


def runs_of_multipart(parts: list[tuple[str, bytes]]) -> list[tuple[str, dict[str, Any]]]:
    """(operation, run) for each `post.{id}` / `patch.{id}` in the parts, its field parts merged in."""
    ops: dict[tuple[str, str], dict[str, Any]] = {}
    for name, payload in parts:
        pieces = name.split(".")
        if pieces[0] not in ("post", "patch") or len(pieces) not in (2, 3):
            continue  # attachments and unknown parts are not runs
        run = ops.setdefault((pieces[0], pieces[1]), {"id": pieces[1]})
        value = json.loads(payload) if payload else None
        if len(pieces) == 2:
            run.update(value or {})
        elif pieces[2] in JSON_FIELDS:
            run[pieces[2]] = value
    return [(op, run) for (op, _), run in ops.items()]


class _Handler(BaseHTTPRequestHandler):
    wire: LangSmithWireServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *_: Any) -> None:  # quiet test output
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        return _decompress(body, (self.headers.get("content-encoding") or "").lower())

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        if self.headers.get("x-api-key") == self.wire.api_key:
            return True
        self._reply(401, {"detail": "missing or wrong x-api-key"})
        return False

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/") == "/info":
            self._reply(200, self.wire.info())
            return
        self._reply(404, {"detail": f"no route {self.path}"})

    def do_POST(self) -> None:
        body = self._body()
        if not self._authorized():
            return
        route = self.path.split("?")[0].rstrip("/")
        if route == "/runs/multipart":
            how = "multipart+zstd" if self.headers.get("content-encoding") == "zstd" else "multipart"
            self.wire.record(how, runs_of_multipart(multipart_parts(self.headers["content-type"], body)))
        elif route == "/runs/batch":
            batch = json.loads(body or b"{}")
            ops = [("post", r) for r in batch.get("post") or []] + [
                ("patch", r) for r in batch.get("patch") or []
            ]
            self.wire.record("batch", ops)
        elif route == "/runs":
            self.wire.record("single", [("post", json.loads(body))])
        else:
            self._reply(404, {"detail": f"no route {self.path}"})
            return
        self._reply(202, {})

    def do_PATCH(self) -> None:
        body = self._body()
        if not self._authorized():
            return
        route = self.path.split("?")[0].rstrip("/")
        if route.startswith("/runs/"):
            self.wire.record("single", [("patch", {**json.loads(body), "id": route.rsplit("/", 1)[1]})])
            self._reply(202, {})
            return
        self._reply(404, {"detail": f"no route {self.path}"})


class LangSmithWireServer(LoopbackServer):
    """Records traced runs by id; `url` is what `LANGSMITH_ENDPOINT` points at."""

    handler_class = _Handler

    def __init__(self, api_key: str = TEST_API_KEY, *, zstd: bool = True, multipart: bool = True) -> None:
        super().__init__()
        self.api_key = api_key
        self.zstd = zstd
        self.multipart = multipart
        self.runs: dict[str, dict[str, Any]] = {}
        self.requests: list[str] = []  # how each batch arrived: multipart(+zstd) | batch | single
        self._lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        return {
            "version": "0.12.0",
            "batch_ingest_config": {
                "use_multipart_endpoint": self.multipart,
                "scale_up_qsize_trigger": 1000,
                "scale_up_nthreads_limit": 4,
                "scale_down_nempty_trigger": 4,
                "size_limit": 100,
                "size_limit_bytes": 20_971_520,
            },
            "instance_flags": {"zstd_compression_enabled": self.zstd},
        }

    def record(self, how: str, ops: list[tuple[str, dict[str, Any]]]) -> None:
        with self._lock:
            self.requests.append(how)
            for op, run in ops:
                run_id = str(run["id"])
                merged = self.runs.setdefault(run_id, {})
                if op == "patch":
                    extra = {**(merged.get("extra") or {}), **(run.get("extra") or {})}
                    merged.update({k: v for k, v in run.items() if v is not None}, extra=extra)
                else:
                    merged.update(run)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(run) for run in self.runs.values()]

    def wait_for(
        self, predicate: Callable[[list[dict[str, Any]]], bool], deadline_s: float = 30.0
    ) -> list[dict[str, Any]]:
        """Poll the recorded runs until `predicate` holds (TimeoutError naming what arrived)."""
        import time

        deadline = time.monotonic() + deadline_s
        while True:
            runs = self.snapshot()
            if predicate(runs):
                return runs
            if time.monotonic() > deadline:
                names = sorted({str(r.get("name")) for r in runs})
                raise TimeoutError(f"trace not complete within {deadline_s}s; {len(runs)} runs: {names}")
            time.sleep(0.05)


def metadata_of(run: dict[str, Any]) -> dict[str, Any]:
    return dict((run.get("extra") or {}).get("metadata") or {})


def children_of(runs: list[dict[str, Any]], parent_id: str) -> list[dict[str, Any]]:
    return [r for r in runs if str(r.get("parent_run_id")) == parent_id]


def ancestors(runs: list[dict[str, Any]], run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's parents, nearest first."""
    by_id = {str(r["id"]): r for r in runs}
    chain, current = [], run
    while current.get("parent_run_id") and str(current["parent_run_id"]) in by_id:
        current = by_id[str(current["parent_run_id"])]
        chain.append(current)
    return chain
