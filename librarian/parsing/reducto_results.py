"""Reading Reducto's answers, shared by the blocking parser (`reducto.py`) and the job client
(`reducto_jobs.py`): parse responses as our `ParseResult`, and SDK errors as the errors the ingest
graph acts on (retry, configuration, or a document status).
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

_UNSUPPORTED_HINTS = ("unsupported", "not supported", "file type", "extension", "format")


def parse_result(response: Any, full: ResultFullResult, filename: str, parser_key: str) -> ParseResult:
    """A Reducto parse response (its full result already fetched) as our `ParseResult`."""
    chunks = [_chunk(chunk) for chunk in full.chunks]
    chunks = [chunk for chunk in chunks if chunk["content"].strip() or chunk["embed"].strip()]
    if not chunks:
        raise EmptyDocumentError(f"{filename} contains no text")
    notes = [f"parsed by Reducto (job {response.job_id})"]
    return ParseResult(chunks=chunks, parser=parser_key, pages=response.usage.num_pages, notes=notes)


def download_error(exc: httpx.HTTPError) -> LibrarianError:
    """A failed result download is transient: an expired link or a storage outage, not the document."""
    if isinstance(exc, httpx.HTTPStatusError):
        return TransientProviderError(f"Reducto result download failed ({exc.response.status_code})")
    return TransientProviderError(f"Reducto result download failed ({type(exc).__name__})")


def decode_result_file(content: bytes) -> ResultFullResult:
    try:
        return ResultFullResult.model_validate_json(content)
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


def translate_error(exc: reducto.APIError, filename: str) -> LibrarianError:
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
