"""A local HTTP server speaking Reducto's wire format, so tests exercise the real `reductoai` SDK.

Implements `POST /upload` (multipart, returns a `reducto://` file id), `POST /parse` (returns a
`"response_type": "parse"` body with a `full` result, or a `url` result served by `GET /results/{id}`
from this same server), records every request for assertions, and can be told to fail the next
requests with a given status.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None
    files: dict[str, tuple[str, bytes, str]] = field(default_factory=dict)  # field -> (name, data, type)
    at: float = 0.0  # time.monotonic() when the request arrived


@dataclass
class WireJob:
    """One `/parse_async` job: its finished response, and how many polls it has answered."""

    response: dict[str, Any]
    polls: int = 0
    failure: dict[str, Any] | None = None  # Reducto's ErrorDetail when the job fails


def default_chunks(data: bytes, filename: str) -> list[dict[str, Any]]:
    """One Text chunk per blank-line paragraph of the uploaded text, on page 1."""
    text = data.decode("utf-8", "replace")
    chunks = []
    for index, paragraph in enumerate(p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        bbox = {"page": 1, "left": 0.1, "top": 0.1 + 0.05 * index, "width": 0.8, "height": 0.04}
        block = {"type": "Text", "bbox": bbox, "content": paragraph, "confidence": "high"}
        chunks.append({"content": paragraph, "embed": paragraph, "blocks": [block]})
    return chunks


def _multipart(headers: dict[str, str], body: bytes) -> dict[str, tuple[str, bytes, str]]:
    raw = f"Content-Type: {headers.get('content-type', '')}\r\n\r\n".encode() + body
    message = BytesParser(policy=HTTP).parsebytes(raw)
    files = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        files[str(name)] = (
            str(part.get_filename() or ""),
            part.get_payload(decode=True) or b"",
            part.get_content_type(),
        )
    return files


class ReductoWireServer:
    """Start with `start()` (port 0 picks a free port), stop with `stop()`; `base_url` for the SDK."""

    def __init__(self, api_key: str = "test-key", host: str = "127.0.0.1", port: int = 0) -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.uploads: dict[str, tuple[str, bytes, str]] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.result_type = "full"  # or "url"
        self.chunker: Callable[[bytes, str], list[dict[str, Any]]] = default_chunks
        # (path, status, body, headers), consumed in order; a path matches itself and what is below it
        self.failures: list[tuple[str, int, dict[str, Any], dict[str, str]]] = []
        self.num_pages = 1
        self.jobs: dict[str, WireJob] = {}
        self.pending_polls = 0  # polls a new job answers `Pending` before it completes
        self.hold_jobs = threading.Event()  # while set, every job stays `Pending`
        self.fail_jobs_with: dict[str, Any] | None = None  # ErrorDetail for jobs submitted from now on
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ReductoWireServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="reducto-wire", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def fail_next(
        self,
        path: str,
        status: int,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.failures.append((path, status, body or {"detail": f"forced {status}"}, headers or {}))

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def polls(self) -> list[RecordedRequest]:
        """Every `GET /job/{id}`, in order."""
        return [r for r in self.requests if r.method == "GET" and r.path.startswith("/job/")]

    @property
    def submissions(self) -> int:
        return len(self.requests_to("/parse_async"))

    # --- request handling

    def _take_failure(self, path: str) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        with self._lock:
            for index, (fail_path, status, body, headers) in enumerate(self.failures):
                if path == fail_path or path.startswith(fail_path.rstrip("/") + "/"):
                    del self.failures[index]
                    return status, body, headers
        return None

    def _upload(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        if "file" not in request.files:
            return 422, {"detail": "file is required"}
        file_id = f"reducto://{uuid.uuid4().hex}"
        self.uploads[file_id] = request.files["file"]
        return 200, {"file_id": file_id, "presigned_url": None}

    def _parse(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        body = request.json if isinstance(request.json, dict) else {}
        upload = self.uploads.get(str(body.get("input")))
        if upload is None:
            return 404, {"detail": "input file not found"}
        return 200, self._parse_response(upload, uuid.uuid4().hex)

    def _parse_async(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        body = request.json if isinstance(request.json, dict) else {}
        upload = self.uploads.get(str(body.get("input")))
        if upload is None:
            return 404, {"detail": "input file not found"}
        job_id = uuid.uuid4().hex
        with self._lock:
            self.jobs[job_id] = WireJob(self._parse_response(upload, job_id), failure=self.fail_jobs_with)
        return 200, {"job_id": job_id}

    def _job(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        with self._lock:
            job = self.jobs.get(request.path.rsplit("/", 1)[-1])
            if job is None:
                return 404, {"detail": "job not found"}
            job.polls += 1
            if self.hold_jobs.is_set() or job.polls <= self.pending_polls:
                return 200, {"status": "Pending", "progress": min(0.99, job.polls / (self.pending_polls + 1))}
        if job.failure is not None:
            return 200, {"status": "Failed", "reason": job.failure.get("message"), "error": job.failure}
        return 200, {"status": "Completed", "progress": 1.0, "result": job.response}

    def _parse_response(self, upload: tuple[str, bytes, str], job_id: str) -> dict[str, Any]:
        name, data, _ = upload
        full = {"type": "full", "chunks": self.chunker(data, name), "ocr": None, "custom": None}
        if self.result_type == "url":
            self.results[job_id] = full
            result: dict[str, Any] = {
                "type": "url",
                "url": f"{self.base_url}/results/{job_id}",
                "result_id": job_id,
            }
        else:
            result = full
        return {
            "response_type": "parse",
            "job_id": job_id,
            "duration": 0.01,
            "usage": {"num_pages": self.num_pages, "credits": float(self.num_pages)},
            "result": result,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                return

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self) -> RecordedRequest:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = RecordedRequest(
                    self.command, self.path.split("?")[0], headers, body, at=time.monotonic()
                )
                content_type = headers.get("content-type", "")
                if content_type.startswith("application/json") and body:
                    request.json = json.loads(body)
                elif content_type.startswith("multipart/form-data"):
                    request.files = _multipart(headers, body)
                with server._lock:
                    server.requests.append(request)
                return request

            def do_GET(self) -> None:
                request = self._record()
                if request.path.startswith("/job/"):
                    if request.headers.get("authorization") != f"Bearer {server.api_key}":
                        self._send(401, {"detail": "invalid api key"})
                        return
                    failure = server._take_failure(request.path)
                    self._send(*(failure or server._job(request)))
                    return
                if request.path.startswith("/results/"):
                    result = server.results.get(request.path.rsplit("/", 1)[-1])
                    self._send(200, result) if result else self._send(404, {"detail": "no such result"})
                    return
                self._send(404, {"detail": "not found"})

            def do_POST(self) -> None:
                request = self._record()
                if request.headers.get("authorization") != f"Bearer {server.api_key}":
                    self._send(401, {"detail": "invalid api key"})
                    return
                failure = server._take_failure(request.path)
                if failure is not None:
                    self._send(*failure)
                    return
                routes = {
                    "/upload": server._upload,
                    "/parse": server._parse,
                    "/parse_async": server._parse_async,
                }
                route = routes.get(request.path)
                self._send(*(route(request) if route else (404, {"detail": "not found"})))

        return Handler
