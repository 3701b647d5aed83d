"""Reducto Parse through the official `reductoai` SDK: the production parser (DESIGN §3, seed 001 §5).

Reducto chunks the document itself (variable chunks of about `chunk_size` characters, embedding-
optimised table text, headers/footers/page numbers filtered), so its chunks are mapped as they are and
never re-chunked. SDK errors are translated: what retrying can fix becomes TransientProviderError (the
ingest graph retries those), what is wrong with the document becomes a DocumentError.
"""

from __future__ import annotations

from typing import Any

import httpx
import reducto
from pydantic import ValidationError
from reducto.types.shared.parse_response import ResultFullResult

from librarian.errors import (
    ConfigError,
    CorruptFileError,
    EmptyDocumentError,
    LibrarianError,
    TransientProviderError,
    UnsupportedFileError,
)
from librarian.parsing.types import BBox, Block, Chunk, ParseResult

VERSION = 1
FILTERED_BLOCKS = ["Header", "Footer", "Page Number"]
_UNSUPPORTED_HINTS = ("unsupported", "not supported", "file type", "extension", "format")


class ReductoParser:
    """`Parser` backed by Reducto; `base_url` points the SDK at another deployment or a test server."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        chunk_size: int = 1000,
        *,
        timeout: float = 300.0,
        max_retries: int = 2,
    ) -> None:
        if not api_key:
            raise ConfigError("REDUCTO_API_KEY is not set, but the Reducto parser was chosen")
        self.chunk_size = chunk_size
        self._timeout = timeout
        self._client = reducto.Reducto(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    @property
    def cache_key(self) -> str:
        filtered = ",".join(FILTERED_BLOCKS)
        return f"reducto/{VERSION}:chunk={self.chunk_size}:variable:embedding_optimized:filter={filtered}"

    def retrieval_options(self) -> dict[str, Any]:
        return {
            "chunking": {"chunk_mode": "variable", "chunk_size": self.chunk_size},
            "embedding_optimized": True,
            "filter_blocks": list(FILTERED_BLOCKS),
        }

    def parse(self, data: bytes, filename: str, media_type: str) -> ParseResult:
        if not data:
            raise EmptyDocumentError(f"{filename} is empty (0 bytes)")
        try:
            upload = self._client.upload(file=(filename, data, media_type or "application/octet-stream"))
            response = self._client.parse.run(input=upload.file_id, retrieval=self.retrieval_options())
        except reducto.APIError as exc:
            raise _translate(exc, filename) from exc
        result = getattr(response, "result", None)
        if result is None:
            raise LibrarianError(
                "Reducto answered with an asynchronous job where a parse result was expected"
            )
        if result.type == "url":
            result = self._fetch(result.url)
        chunks = [_chunk(chunk) for chunk in result.chunks]
        chunks = [chunk for chunk in chunks if chunk["content"].strip() or chunk["embed"].strip()]
        if not chunks:
            raise EmptyDocumentError(f"{filename} contains no text")
        notes = [f"parsed by Reducto (job {response.job_id})"]
        return ParseResult(chunks=chunks, parser=self.cache_key, pages=response.usage.num_pages, notes=notes)

    def _fetch(self, url: str) -> ResultFullResult:
        """Download a large result, as `reducto.lib.helpers.handle_url_response` does, plus status checks.

        The helper decodes whatever the URL returns, so an expired link or a storage outage would surface
        as a validation error; here those are transient and a bad body is the provider's fault.
        """
        try:
            response = httpx.get(url, timeout=self._timeout, follow_redirects=True)
            response.raise_for_status()
        except httpx.HTTPStatusError as exc:
            raise TransientProviderError(
                f"Reducto result download failed ({exc.response.status_code})"
            ) from exc
        except httpx.HTTPError as exc:
            raise TransientProviderError(f"Reducto result download failed ({type(exc).__name__})") from exc
        try:
            return ResultFullResult.model_validate_json(response.content)
        except ValidationError as exc:
            raise LibrarianError("Reducto's result file was not a parse result") from exc


def _bbox(raw: Any) -> BBox:
    return BBox(page=int(raw.page), left=raw.left, top=raw.top, width=raw.width, height=raw.height)


def _chunk(raw: Any) -> Chunk:
    blocks = [Block(type=b.type, bbox=_bbox(b.bbox), content=b.content) for b in raw.blocks]
    return Chunk(content=raw.content, embed=raw.embed or raw.content, blocks=blocks)


def _message(exc: reducto.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or body.get("error")
        if detail:
            return str(detail)[:300]
    return f"HTTP {exc.status_code}"


def _translate(exc: reducto.APIError, filename: str) -> LibrarianError:
    """The error the ingest graph acts on: retry, configuration, or a document status."""
    if isinstance(exc, reducto.APIConnectionError):  # includes APITimeoutError
        return TransientProviderError(f"Reducto is unreachable ({type(exc).__name__})")
    if not isinstance(exc, reducto.APIStatusError):
        return TransientProviderError("Reducto sent a response that could not be read")
    status = exc.status_code
    if status in (408, 409, 429) or status >= 500:
        return TransientProviderError(f"Reducto is unavailable right now (HTTP {status}); try again later")
    if status in (401, 403):
        return ConfigError(f"Reducto rejected the API key (HTTP {status}); check REDUCTO_API_KEY")
    message = _message(exc)
    if status == 415 or any(hint in message.lower() for hint in _UNSUPPORTED_HINTS):
        return UnsupportedFileError(f"Reducto cannot parse {filename}: {message}")
    return CorruptFileError(f"Reducto could not read {filename}: {message}")
