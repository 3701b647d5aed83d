"""Read one file out of a streamed `multipart/form-data` body, refusing it the moment it is too big.

Starlette's `request.form()` spools every part to disk before the handler sees a byte, so a size
limit checked afterwards has already let the bytes be written somewhere. This reader counts bytes
as they arrive and stops at the limit, so an oversized upload costs at most `limit` bytes of memory
and nothing on disk. It knows nothing about HTTP frameworks: it takes the content type and an async
iterator of body chunks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from librarian.errors import FileTooLargeError, LibrarianError

#: Room for boundaries, part headers and small fields around the file in a well-formed body.
ENVELOPE_BYTES = 64 * 1024
MAX_PARTS = 8


class MalformedUploadError(LibrarianError, ValueError):
    """The body is not a multipart form with exactly one file field (HTTP 400)."""

    code = "malformed_upload"


@dataclass
class UploadedFile:
    filename: str
    content_type: str
    data: bytes


@dataclass
class _Part:
    name: str | None = None
    filename: str | None = None
    content_type: str = "application/octet-stream"
    size: int = 0


def boundary_of(content_type: str | None) -> bytes:
    """The multipart boundary of a Content-Type header, or MalformedUploadError."""
    kind, options = parse_options_header(content_type or "")
    if kind != b"multipart/form-data":
        raise MalformedUploadError("the body must be multipart/form-data with a 'file' field")
    boundary = options.get(b"boundary", b"")
    if not boundary or len(boundary) > 200:
        raise MalformedUploadError("the multipart body has no usable boundary")
    return boundary


class _FileCollector:
    """Parser callbacks: keep the bytes of the field `field`, count everything else."""

    def __init__(self, field: str, limit: int) -> None:
        self.field, self.limit = field, limit
        self.parts: list[_Part] = []
        self.chunks: list[bytes] = []
        self.found: _Part | None = None
        self.finished = False
        self._header_field = b""
        self._header_value = b""

    # header callbacks -------------------------------------------------------------------------
    def on_part_begin(self) -> None:
        if len(self.parts) >= MAX_PARTS:
            raise MalformedUploadError(f"the form has more than {MAX_PARTS} parts")
        self.parts.append(_Part())

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        name = self._header_field.strip().lower()
        value = self._header_value.strip()
        self._header_field = self._header_value = b""
        part = self.parts[-1]
        if name == b"content-disposition":
            kind, options = parse_options_header(value)
            if kind != b"form-data":
                raise MalformedUploadError("a part is not form-data")
            part.name = _text(options.get(b"name"))
            raw_filename = options.get(b"filename")
            part.filename = _text(raw_filename) if raw_filename is not None else None
        elif name == b"content-type":
            part.content_type = _text(value) or part.content_type

    def on_headers_finished(self) -> None:
        part = self.parts[-1]
        if part.name == self.field:
            if self.found is not None:
                raise MalformedUploadError(f"the form has more than one '{self.field}' field")
            if part.filename is None:
                raise MalformedUploadError(f"the '{self.field}' field must be a file (it has no file name)")
            self.found = part

    # data callbacks ---------------------------------------------------------------------------
    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self.parts[-1]
        part.size += end - start
        if part is self.found:
            if part.size > self.limit:
                raise FileTooLargeError(f"the file is larger than the limit of {self.limit} bytes")
            self.chunks.append(data[start:end])
        elif part.size > ENVELOPE_BYTES:
            raise MalformedUploadError("a form field other than the file is too large")

    def on_end(self) -> None:
        self.finished = True


def _text(value: bytes | None) -> str | None:
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedUploadError("a part header is not valid UTF-8") from None


async def read_file_field(
    content_type: str | None, body: AsyncIterator[bytes], *, limit: int, field: str = "file"
) -> UploadedFile:
    """Stream the body through the parser and return the one file in `field`.

    Raises FileTooLargeError as soon as the file (or the whole body) passes its limit, and
    MalformedUploadError for anything that is not a well-formed form with that one file.
    """
    collector = _FileCollector(field, limit)
    callbacks = {
        name: getattr(collector, name)
        for name in (
            "on_part_begin",
            "on_header_field",
            "on_header_value",
            "on_header_end",
            "on_headers_finished",
            "on_part_data",
            "on_end",
        )
    }
    parser = MultipartParser(boundary_of(content_type), callbacks)  # type: ignore[arg-type]
    received = 0
    try:
        async for chunk in body:
            received += len(chunk)
            if received > limit + ENVELOPE_BYTES:
                raise FileTooLargeError(f"the upload is larger than the limit of {limit} bytes")
            parser.write(chunk)
            if collector.finished:
                break
        parser.finalize()
    except MultipartParseError:
        raise MalformedUploadError("the multipart body is malformed") from None
    if not collector.finished:
        raise MalformedUploadError("the multipart body ended early (no closing boundary)")
    if collector.found is None:
        raise MalformedUploadError(f"the form has no '{field}' file field")
    found = collector.found
    return UploadedFile(
        filename=found.filename or "", content_type=found.content_type, data=b"".join(collector.chunks)
    )
