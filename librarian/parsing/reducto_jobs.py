"""Reducto's asynchronous job API through the official SDK: `parse.run_job` (`POST /parse_async`) to
submit, `job.get` (`GET /job/{job_id}`) to poll. Seed 001: a slow or rate-limited parse must not hold
a worker, so the ingest graph submits, checkpoints the job id and polls (`librarian.parsing.job_wait`).

The SDK's own retries are off here (`max_retries=0`): a 429 becomes `RateLimitedError` carrying the
provider's Retry-After, and the wait loop retries it with a cancellation check, a bounded number of
attempts and a clear status when they run out. Other SDK errors are translated as for `/parse`.
The request body, the result mapping and the cache key are the synchronous parser's, so a document
parsed either way lands in the same parse cache entry.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import time
from functools import cached_property
from typing import Any

import httpx
import reducto

from librarian.errors import (
    CorruptFileError,
    DocumentError,
    EmptyDocumentError,
    LibrarianError,
    UnsupportedFileError,
)
from librarian.parsing.jobs import JobDone, JobPending, JobPoll, ParseJobFailedError, RateLimitedError
from librarian.parsing.reducto_results import (
    decode_result_file,
    download_error,
    parse_result,
    translate_error,
)

PENDING = {"Pending", "Idle"}
# Reducto's error names (`ErrorDetail.name`) that are about the document, as our document statuses.
DOCUMENT_ERRORS: dict[str, type[DocumentError]] = {
    "DOCUMENT_CORRUPT": CorruptFileError,
    "DOCUMENT_PASSWORD_PROTECTED": CorruptFileError,
    "DOCUMENT_EMPTY": EmptyDocumentError,
    "DOCUMENT_UNSUPPORTED": UnsupportedFileError,
}


def _seconds(value: str, scale: float = 1.0) -> float | None:
    try:
        seconds = float(value) / scale
    except ValueError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_after_seconds(headers: httpx.Headers | None) -> float | None:
    """The wait a 429 asks for: `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date.

    None when absent or unreadable (the wait loop then backs off on its own); never negative or
    infinite, whatever the header holds.
    """
    if headers is None:
        return None
    if "retry-after-ms" in headers:
        seconds = _seconds(headers["retry-after-ms"], 1000.0)
        if seconds is not None:
            return seconds
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    except (ValueError, OverflowError):
        return None


def _api_error(exc: reducto.APIError, filename: str, job_id: str | None = None) -> LibrarianError:
    if isinstance(exc, reducto.RateLimitError):
        return RateLimitedError(
            "Reducto is rate limiting requests (HTTP 429)", retry_after_seconds(exc.response.headers)
        )
    if job_id and isinstance(exc, reducto.NotFoundError):
        return ParseJobFailedError(
            f"Reducto no longer knows the parse job {job_id} of {filename}; upload the document again"
        )
    return translate_error(exc, filename)


def _failed(job: Any, job_id: str, filename: str) -> DocumentError:
    error = getattr(job, "error", None)
    name = getattr(error, "name", None) or ""
    reason = getattr(job, "reason", None) or getattr(error, "message", None) or "no reason given"
    kind = DOCUMENT_ERRORS.get(name)
    if kind is not None:
        return kind(f"Reducto could not parse {filename}: {reason}")
    suffix = f" ({name})" if name else ""
    return ParseJobFailedError(f"Reducto's parse job {job_id} for {filename} failed: {reason}{suffix}")


class ReductoJobClient:
    """`ParseJobClient` for Reducto; built by `ReductoParser.jobs()` with the parser's own options, so
    both send the same request and fill the same parse cache entry."""

    def __init__(
        self, *, retrieval: dict[str, Any], cache_key: str, api_key: str, base_url: str | None, timeout: float
    ) -> None:
        self._retrieval = retrieval
        self._cache_key = cache_key
        self._options: dict[str, Any] = {
            "api_key": api_key,
            "base_url": base_url,
            "timeout": timeout,
            "max_retries": 0,
        }
        self._timeout = timeout

    @cached_property
    def _client(self) -> reducto.Reducto:
        """The blocking client, built on first use: async callers never need it."""
        return reducto.Reducto(**self._options)

    # --- blocking (plain Python) -------------------------------------------------------------------
    def submit(self, data: bytes, filename: str, media_type: str) -> str:
        try:
            upload = self._client.upload(file=(filename, data, media_type or "application/octet-stream"))
            job = self._client.parse.run_job(input=upload.file_id, retrieval=self._retrieval)
        except reducto.APIError as exc:
            raise _api_error(exc, filename) from exc
        return job.job_id

    def poll(self, job_id: str, filename: str) -> JobPoll:
        try:
            job = self._client.job.get(job_id)
        except reducto.APIError as exc:
            raise _api_error(exc, filename, job_id) from exc
        if job.status in PENDING:
            return JobPending(job.progress)
        if job.status != "Completed":
            raise _failed(job, job_id, filename)
        response = self._parse_response(job, job_id)
        full = response.result
        if full.type == "url":
            try:
                download = httpx.get(full.url, timeout=self._timeout, follow_redirects=True)
                download.raise_for_status()
            except httpx.HTTPError as exc:
                raise download_error(exc) from exc
            full = decode_result_file(download.content)
        return JobDone(parse_result(response, full, filename, self._cache_key))

    # --- awaitable (the server) --------------------------------------------------------------------
    async def asubmit(self, data: bytes, filename: str, media_type: str) -> str:
        async with await self._async_client() as client:
            try:
                upload = await client.upload(file=(filename, data, media_type or "application/octet-stream"))
                job = await client.parse.run_job(input=upload.file_id, retrieval=self._retrieval)
            except reducto.APIError as exc:
                raise _api_error(exc, filename) from exc
        return job.job_id

    async def apoll(self, job_id: str, filename: str) -> JobPoll:
        async with await self._async_client() as client:
            try:
                job = await client.job.get(job_id)
            except reducto.APIError as exc:
                raise _api_error(exc, filename, job_id) from exc
        if job.status in PENDING:
            return JobPending(job.progress)
        if job.status != "Completed":
            raise _failed(job, job_id, filename)
        response = self._parse_response(job, job_id)
        full = response.result
        if full.type == "url":
            http = await asyncio.to_thread(httpx.AsyncClient, timeout=self._timeout, follow_redirects=True)
            async with http:
                try:
                    download = await http.get(full.url)
                    download.raise_for_status()
                except httpx.HTTPError as exc:
                    raise download_error(exc) from exc
            full = decode_result_file(download.content)
        return JobDone(parse_result(response, full, filename, self._cache_key))

    async def _async_client(self) -> reducto.AsyncReducto:
        # Building an HTTP client loads the TLS certificates from disk: a blocking call, so it runs in
        # a thread, never on the server's event loop. One client per call keeps it on the caller's loop.
        return await asyncio.to_thread(reducto.AsyncReducto, **self._options)

    @staticmethod
    def _parse_response(job: Any, job_id: str) -> Any:
        response = job.result
        if response is None or getattr(response, "response_type", None) != "parse":
            raise LibrarianError(f"Reducto's job {job_id} completed without a parse result")
        return response
