"""Files attached in the chat go to the library, through the same operations as an upload.

Two front doors share this module:

- the LangGraph server: `receive_run_attachments` rewrites a run's input in place before the run
  is created (called from the run-creation auth handler, see `webapi.chat_attachments`), so the
  file's bytes never reach a checkpoint. Each file is stored and its ingest enqueued by
  `DocumentOps.upload_and_ingest`, as `POST /orgs/{org}/documents` does: same name check, size
  limit, per-path turn, run admission (the organization's ingest share) and graph rebuild.
- plain Python: `LocalAttachments` is the library a notebook passes to `build_agent(attachments=...)`.
  It stores through `DocumentService` and runs the ingest in a background thread, so the turn
  answers at once and a later turn finds the document indexed.

Either way every file of a message is decoded and checked (base64, size, name, declared type) before
the first one is stored: a bad second file never leaves the first one half-added.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from librarian.attachments import (
    ATTACHMENTS_KEY,
    Attachment,
    AttachmentRefusedError,
    StoredAttachment,
    decode_attachments,
    has_file_parts,
    replace_file_parts,
)
from librarian.files.paths import document_path

if TYPE_CHECKING:
    from services.documents import DocumentOps, DocumentService

logger = logging.getLogger(__name__)

READER_REFUSAL = (
    "your role cannot add documents to this organization's library, so files cannot be attached "
    "in the chat; nothing was stored. Ask a member with write access to upload it."
)

#: Called after a file is stored and its ingest enqueued (the server schedules the graph rebuild).
AfterChange = Callable[[str, str], Awaitable[None]]


def _message_content(message: Any) -> Any:
    if isinstance(message, Mapping):
        return message.get("content")
    if isinstance(message, list | tuple) and len(message) == 2:
        return message[1]  # ("user", [...]) shorthand
    return None


def _input_messages(run_input: Any) -> list[Any]:
    """The messages of a run's input, in the shapes LangGraph accepts (a list or a single message)."""
    messages = run_input.get("messages") if isinstance(run_input, Mapping) else None
    if isinstance(messages, Mapping):
        return [messages]
    return list(messages) if isinstance(messages, list) else []


def _with_references(
    message: Any, content: Sequence[Any], stored: list[tuple[Attachment, StoredAttachment]]
) -> dict[str, Any]:
    """The message as a dict whose file parts are references, with the structured records kept."""
    as_dict = dict(message) if isinstance(message, Mapping) else {"role": message[0]}
    extra = dict(as_dict.get("additional_kwargs") or {})
    extra[ATTACHMENTS_KEY] = [record.as_dict() for _, record in stored]
    as_dict.update(content=replace_file_parts(content, stored), additional_kwargs=extra)
    return as_dict


def check_names(attachments: Sequence[Attachment], max_filename_length: int) -> None:
    """The upload route's name check, for every file before any is stored (`InvalidPathError`)."""
    for attachment in attachments:
        document_path(attachment.filename, max_length=max_filename_length)


class LibraryAttachments:
    """Stores attachments with `DocumentOps` (the server's upload operations, over `ServerRuns`)."""

    def __init__(self, ops: DocumentOps, after_change: AfterChange | None = None) -> None:
        self.ops = ops
        self.after_change = after_change

    async def astore(self, org: str, attachment: Attachment, owner: str) -> StoredAttachment:
        path, _run = await self.ops.upload_and_ingest(org, attachment.filename, attachment.data, owner=owner)
        if self.after_change is not None:
            await self.after_change(org, owner)
        return StoredAttachment(
            filename=attachment.filename,
            path=path,
            status="queued",
            size_bytes=len(attachment.data),
            mime_type=attachment.mime_type,
        )


async def receive_run_attachments(
    run_input: Any, *, org: str, owner: str, may_write: bool, library: LibraryAttachments
) -> list[StoredAttachment]:
    """Store every file part of the run's input messages and replace it by a reference, in place.

    Raises `AttachmentRefusedError` for a caller who may not write documents, and `AttachmentError`,
    `FileTooLargeError` or `InvalidPathError` for a file that cannot be taken: in each case before
    anything is stored. Returns the references, in message order.
    """
    messages = _input_messages(run_input)
    if not any(has_file_parts(_message_content(m)) for m in messages):
        return []
    if not may_write:
        raise AttachmentRefusedError(READER_REFUSAL)
    settings = library.ops.stack.settings
    decoded = [decode_attachments(_message_content(m), max_bytes=settings.max_upload_bytes) for m in messages]
    check_names([a for found in decoded for a in found], settings.max_filename_length)
    rewritten: list[Any] = []
    references: list[StoredAttachment] = []
    for message, found in zip(messages, decoded, strict=True):
        if not found:
            rewritten.append(message)
            continue
        stored = [(a, await library.astore(org, a, owner)) for a in found]
        references += [record for _, record in stored]
        rewritten.append(_with_references(message, _message_content(message), stored))
    _put_messages(run_input, rewritten)
    return references


def _put_messages(run_input: MutableMapping[str, Any], rewritten: list[Any]) -> None:
    """Write the messages back into the same input dict (the server keeps a reference to it)."""
    if isinstance(run_input.get("messages"), Mapping):
        run_input["messages"] = rewritten[0]
    else:
        run_input["messages"][:] = rewritten


class LocalAttachments:
    """The plain-Python library for `build_agent(attachments=...)`: `DocumentService` underneath.

    The file is stored before the turn answers; its ingest runs on a background thread (one at a
    time), so the turn answers at once. `wait()` blocks until every ingest started so far has ended
    (tests, scripts that ask about the file next).
    """

    def __init__(self, service: DocumentService) -> None:
        self.service = service
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="librarian-attachment-ingest")
        self._pending: list[Future[Any]] = []

    @property
    def max_bytes(self) -> int:
        return self.service.stack.settings.max_upload_bytes

    def store_all(self, org: str, attachments: Sequence[Attachment]) -> list[StoredAttachment]:
        """Check every name, then store each file and enqueue its ingest."""
        check_names(attachments, self.service.stack.settings.max_filename_length)
        return [self._store(org, attachment) for attachment in attachments]

    def _store(self, org: str, attachment: Attachment) -> StoredAttachment:
        path = self.service.upload(org, attachment.filename, attachment.data)
        self._pending.append(self._pool.submit(self._ingest, org, path))
        return StoredAttachment(
            filename=attachment.filename,
            path=path,
            status="queued",
            size_bytes=len(attachment.data),
            mime_type=attachment.mime_type,
        )

    def _ingest(self, org: str, path: str) -> None:
        try:
            self.service.ingest(org, path)
        except Exception:  # its status (failed) is what `DocumentService.status` reports
            logger.exception("ingest of attached file %s in %s failed", path, org)

    def wait(self, timeout_s: float | None = None) -> None:
        pending, self._pending = self._pending, []
        wait(pending, timeout=timeout_s)
