"""Files attached to a chat message: found, checked and replaced by a reference to the library.

A chat client (Agent Chat UI, the LangGraph SDKs, an OpenAI-style client) sends an attached file as a
content block holding its bytes in base64. Left alone, those bytes would reach the model as a block
it may not read and stay in the thread's checkpoints forever. Librarian instead stores the file in
the organization's library through the same upload path as `POST /orgs/{org}/documents`, and the
message keeps only a reference: a text block naming the stored path and the status it had, plus a
structured record under `additional_kwargs["attachments"]` (which the agent reads to answer that
the file is being indexed).

This module is the pure part, shared by the server (which rewrites a run's input before the run is
created, so the bytes never reach a checkpoint) and the agent graph (which rewrites what is left, for
plain-Python callers). It knows the block shapes and the checks, not where files go: a caller passes
the function that stores one attachment.

Block shapes recognised (each with base64 bytes; blocks that only point at a URL or a provider
file id carry no bytes and are left alone):

- LangChain standard (v1): `{"type": "file"|"image"|..., "base64": ..., "mime_type": ...}`;
- LangChain v0 / Agent Chat UI: `{"type": ..., "source_type": "base64", "data": ..., "mime_type": ...}`
  and `{"type": ..., "data": ..., "mimeType": ..., "metadata": {"filename"|"name": ...}}`;
- OpenAI chat: `{"type": "file", "file": {"file_data": "data:<mime>;base64,...", "filename": ...}}`
  and `{"type": "image_url", "image_url": {"url": "data:<mime>;base64,..."}}`;
- OpenAI responses: `{"type": "input_file", "file_data": ..., "filename": ...}`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from librarian.errors import FileTooLargeError, LibrarianError
from librarian.parsing import media

#: Where a message keeps the structured references to its attachments.
ATTACHMENTS_KEY = "attachments"
#: Block types that may carry a file's bytes.
_MEDIA_BLOCK_TYPES = frozenset({"file", "image", "audio", "video", "input_file", "image_url"})
_DATA_URL = re.compile(r"data:(?P<mime>[^;,]*)(?:;[^;,]*)*?;base64,(?P<data>.*)", re.DOTALL)
_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/=_-]")


class AttachmentError(LibrarianError, ValueError):
    """An attached file cannot be taken: its data is not base64, it is empty, or it contradicts its
    declared type. Nothing of the message is stored."""

    code = "invalid_attachment"


class AttachmentRefusedError(LibrarianError, PermissionError):
    """The caller may not add documents to the library (a reader), so may not attach files."""

    code = "forbidden"


@dataclass(frozen=True)
class Attachment:
    """One attached file, decoded. `position` is its index in the message's content list."""

    position: int
    filename: str
    mime_type: str | None
    data: bytes


@dataclass(frozen=True)
class StoredAttachment:
    """What the message keeps instead of the bytes: where the file went and what became of it.

    `status` is the document's status when it was attached (`queued` once its ingest is enqueued), or
    `not_stored` with `detail` saying why, when no library could take it.
    """

    filename: str
    path: str | None
    status: str
    size_bytes: int
    mime_type: str | None = None
    detail: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


# --- finding the bytes -----------------------------------------------------------------------------


def _first_text(*candidates: Any) -> str | None:
    return next((c.strip() for c in candidates if isinstance(c, str) and c.strip()), None)


def _named(block: Mapping[str, Any], nested: Mapping[str, Any] | None = None) -> str | None:
    extras = [block.get(key) for key in ("metadata", "extras")] + [nested]
    names = [block.get("filename"), block.get("name")]
    for extra in extras:
        if isinstance(extra, Mapping):
            names += [extra.get("filename"), extra.get("name")]
    return _first_text(*names)


def _from_data_url(url: Any) -> tuple[str | None, str] | None:
    """(mime type, base64 payload) of a `data:...;base64,` URL, or None for any other URL."""
    match = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        return None
    return (match["mime"] or None), match["data"]


def _payload(block: Mapping[str, Any]) -> tuple[str, str | None, str | None] | None:
    """(base64 text, mime type, file name) if the block carries a file's bytes, else None."""
    kind = block.get("type")
    if not isinstance(kind, str) or kind not in _MEDIA_BLOCK_TYPES:
        return None
    mime = _first_text(block.get("mime_type"), block.get("mimeType"), block.get("media_type"))
    if isinstance(block.get("base64"), str):
        return block["base64"], mime, _named(block)
    if isinstance(block.get("data"), str) and (block.get("source_type") == "base64" or mime):
        return block["data"], mime, _named(block)
    nested = block.get("file") if kind == "file" else block.get("image_url") if kind == "image_url" else None
    if kind == "input_file":
        nested = block
    url = nested.get("file_data") or nested.get("url") if isinstance(nested, Mapping) else nested
    found = _from_data_url(url)
    if found is None and kind == "input_file" and isinstance(block.get("file_data"), str):
        found = (None, block["file_data"])  # Responses API: raw base64 is allowed here
    if found is None:
        return None
    return found[1], mime or found[0], _named(block, nested if isinstance(nested, Mapping) else None)


def is_file_part(block: Any) -> bool:
    """True for a content block that carries a file's bytes (any recognised shape)."""
    return isinstance(block, Mapping) and _payload(block) is not None


def has_file_parts(content: Any) -> bool:
    return isinstance(content, Sequence) and not isinstance(content, str) and any(map(is_file_part, content))


# --- decoding and checking -------------------------------------------------------------------------


def _default_name(mime: str | None, data: bytes) -> str:
    extension = (mimetypes.guess_extension(mime or "", strict=False) or "") if mime else ""
    digest = hashlib.sha256(data).hexdigest()[:10]
    return f"attachment-{digest}{extension or '.bin'}"


def _decode(text: str, shown: str, max_bytes: int) -> bytes:
    compact = re.sub(r"\s+", "", text)
    if len(compact) // 4 * 3 > max_bytes + 3:
        raise FileTooLargeError(
            f"attached file {shown} is larger than the upload limit of {max_bytes} bytes; nothing was stored"
        )
    raw = compact.encode("ascii", "replace")
    if _NOT_BASE64.search(raw):
        raise AttachmentError(f"attached file {shown} is not valid base64 data; nothing was stored")
    try:
        urlsafe = b"-" in raw or b"_" in raw
        data = base64.b64decode(
            raw + b"=" * (-len(raw) % 4), altchars=b"-_" if urlsafe else None, validate=True
        )
    except (binascii.Error, ValueError):
        raise AttachmentError(f"attached file {shown} is not valid base64 data; nothing was stored") from None
    if not data:
        raise AttachmentError(f"attached file {shown} is empty; nothing was stored")
    if len(data) > max_bytes:
        raise FileTooLargeError(
            f"attached file {shown} is {len(data)} bytes; the upload limit is {max_bytes} bytes; "
            "nothing was stored"
        )
    return data


def _check_declared_type(filename: str, mime: str | None, data: bytes) -> None:
    """A file that claims a binary container (PDF, Office) must be one: otherwise it is corrupt, and
    saying so now beats a document that fails to index later."""
    claimed = media.type_from_extension(filename) or mime
    if claimed in media.CONTAINER_TYPES:
        actual = media.guess_media_type(filename, data)
        if actual != claimed:
            raise AttachmentError(
                f"attached file {filename!r} is declared as {media.label(claimed)} but its content is "
                f"{media.label(actual)}; nothing was stored"
            )


def decode_attachments(content: Any, *, max_bytes: int) -> list[Attachment]:
    """Every file part of a message's content, decoded and checked; raises before anything is stored.

    All parts are checked first, so a bad second file never leaves the first one stored.
    """
    if not isinstance(content, Sequence) or isinstance(content, str):
        return []
    found: list[Attachment] = []
    for position, block in enumerate(content):
        payload = _payload(block) if isinstance(block, Mapping) else None
        if payload is None:
            continue
        text, mime, name = payload
        shown = repr(name) if name else f"#{len(found) + 1}"
        data = _decode(text, shown, max_bytes)
        filename = name or _default_name(mime, data)
        _check_declared_type(filename, mime, data)
        found.append(Attachment(position=position, filename=filename, mime_type=mime, data=data))
    return found


def placeholders(content: Any) -> list[Attachment]:
    """Each file part as a named placeholder without its bytes: for references to files that could
    not be taken (bad data, too large), which must still leave the message."""
    if not isinstance(content, Sequence) or isinstance(content, str):
        return []
    found = []
    for position, block in enumerate(content):
        payload = _payload(block) if isinstance(block, Mapping) else None
        if payload is not None:
            name = payload[2] or f"attachment #{len(found) + 1}"
            found.append(Attachment(position=position, filename=name, mime_type=payload[1], data=b""))
    return found


# --- the reference that replaces the bytes ----------------------------------------------------------


def reference_text(stored: StoredAttachment) -> str:
    """The text block a model (and a person reading the thread) sees where the file was."""
    if stored.path is None:
        return f"[Attached file {stored.filename!r} was not added to the library: {stored.detail}]"
    return (
        f"[Attached file {stored.filename!r} was added to the library as {stored.path} "
        f"(status when attached: {stored.status}). Its text is searchable with search_documents "
        "once indexing has finished.]"
    )


def replace_file_parts(
    content: Sequence[Any], stored: Sequence[tuple[Attachment, StoredAttachment]]
) -> list[Any]:
    """The content with each file part replaced by its reference text block, other blocks unchanged."""
    by_position = {attachment.position: record for attachment, record in stored}
    return [
        {"type": "text", "text": reference_text(by_position[i])} if i in by_position else block
        for i, block in enumerate(content)
    ]


def attachment_records(message_kwargs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The attachment references a message carries (empty for a message without attachments)."""
    records = (message_kwargs or {}).get(ATTACHMENTS_KEY)
    return [r for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []


def acknowledgement(records: Sequence[Mapping[str, Any]]) -> str:
    """The reply to a turn that attached files: what was stored, and that it is not read yet.

    Deterministic rather than the model's words: the file's text is not in the library yet, so any
    answer about its content would be invented.
    """
    added = [r for r in records if r.get("path")]
    refused = [r for r in records if not r.get("path")]
    lines = []
    if added:
        names = ", ".join(f"{r.get('filename')} ({r.get('path')})" for r in added)
        lines.append(
            f"I added {names} to the library. It is being indexed, so I have not read it yet: ask "
            "your question again in a moment and I will search it."
        )
    for r in refused:
        lines.append(f"I could not add {r.get('filename')} to the library: {r.get('detail')}")
    return "\n\n".join(lines)


class AttachmentLibrary(Protocol):
    """Where the agent graph stores attachments a run's input still carries (plain Python).

    `services.chat_attachments.LocalAttachments` is the implementation; the graph layer cannot import
    services, so it sees only this shape.
    """

    @property
    def max_bytes(self) -> int: ...

    def store_all(self, organization_id: str, attachments: Sequence[Attachment]) -> list[StoredAttachment]:
        """Check every attachment, then store each and enqueue its ingest; raise before any is stored."""
        ...


#: Stores one decoded attachment and says where it went.
StoreAttachment = Callable[[Attachment], StoredAttachment]


def rewrite_content(
    content: Any, store: StoreAttachment, *, max_bytes: int
) -> tuple[list[Any], list[StoredAttachment]] | None:
    """(new content, references) with every file part stored through `store`; None if none had bytes.

    Raises `AttachmentError` / `FileTooLargeError` before `store` is called for any of them.
    """
    attachments = decode_attachments(content, max_bytes=max_bytes)
    if not attachments:
        return None
    stored = [(attachment, store(attachment)) for attachment in attachments]
    return replace_file_parts(content, stored), [record for _, record in stored]
