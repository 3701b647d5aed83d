"""The server's side of chat attachments: a run's files are stored before the run exists.

`auth.on_run_create` calls `receive_chat_attachments` with the run it is about to allow. That is the
one place that sees a run's input before the server writes it anywhere (the run record, the thread's
input checkpoint), so the files' bytes are replaced there, in place, by references to the stored
documents (`services.chat_attachments`); the run then starts with the references only.

The checks are an upload's, with a chat's answers: a reader (no `documents:write`) gets a 403 and
nothing is stored; data that is not base64, an empty file, or a file that contradicts its declared
type (a "PDF" that is not one) a 400; a file over `LIBRARIAN_MAX_UPLOAD_BYTES` a 413; a bad name
the upload route's 400. A run on a conversation that is not the caller's stores nothing: the server
refuses that run itself right after (404), as it does any other.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Mapping
from typing import Any

from langgraph_sdk import Auth, get_client
from langgraph_sdk.errors import NotFoundError

from librarian.attachments import AttachmentRefusedError, has_file_parts
from librarian.errors import FileTooLargeError, LibrarianError
from librarian.ownership import own_conversations_filter
from services.chat_attachments import LibraryAttachments, receive_run_attachments
from webapi.documents import _schedule_graph_after_change, documents

logger = logging.getLogger("librarian.server")


def _field(user: Any, name: str) -> Any:
    try:
        return user[name]
    except (KeyError, TypeError, AttributeError):
        return getattr(user, name, None)


def _carries_files(run_input: Any) -> bool:
    messages = run_input.get("messages") if isinstance(run_input, Mapping) else None
    messages = [messages] if isinstance(messages, Mapping) else messages
    if not isinstance(messages, list):
        return False
    return any(
        has_file_parts(m.get("content") if isinstance(m, Mapping) else m[1])
        for m in messages
        if isinstance(m, Mapping) or (isinstance(m, list | tuple) and len(m) == 2)
    )


async def _someone_elses_thread(thread_id: Any, org: str, owner: str) -> bool:
    """True when the run names an existing conversation the caller does not own (the server will
    refuse the run; its files must not be stored first). A thread that does not exist yet is one
    the run creates (`if_not_exists`) or one the server refuses: either way nothing of anyone's."""
    if not thread_id:
        return False
    try:
        thread = await get_client().threads.get(str(thread_id))  # in-process: no auth handler
    except NotFoundError:
        return False
    metadata = thread.get("metadata") or {}
    return any(metadata.get(key) != value for key, value in own_conversations_filter(org, owner).items())


def _refusal(exc: LibrarianError) -> Auth.exceptions.HTTPException:
    if isinstance(exc, AttachmentRefusedError):
        status = 403
    elif isinstance(exc, FileTooLargeError):
        status = 413
    else:  # AttachmentError, InvalidPathError: the request is wrong
        status = 400
    return Auth.exceptions.HTTPException(status_code=status, detail=str(exc))


async def receive_chat_attachments(user: Any, value: Mapping[str, Any]) -> None:
    """Store the files a new run's input messages carry and leave references in their place.

    `value` is the run-creation handler's value (`Auth.types.on.threads.create_run.value`); its
    `kwargs["input"]` is the dict the server goes on to use, so it is changed in place.
    """
    kwargs = value.get("kwargs")
    run_input = kwargs.get("input") if isinstance(kwargs, Mapping) else None
    if not _carries_files(run_input):
        return
    org, owner = str(_field(user, "organization_id")), str(_field(user, "identity"))
    may_write = "documents:write" in (_field(user, "permissions") or [])
    # In a fresh context: the server's in-process client acts as whoever the context says is calling,
    # and the document runs it starts must be the server's own, as the upload route's are.
    work = _store(run_input, value.get("thread_id"), org=org, owner=owner, may_write=may_write)
    try:
        stored = await asyncio.create_task(work, context=contextvars.Context())
    except LibrarianError as exc:  # AttachmentError, AttachmentRefusedError, too large, a bad name
        raise _refusal(exc) from None
    logger.info("stored %d chat attachment(s) for %s in %s", len(stored), owner, org)


async def _store(run_input: Any, thread_id: Any, *, org: str, owner: str, may_write: bool) -> list[Any]:
    if may_write and await _someone_elses_thread(thread_id, org, owner):
        return []
    library = LibraryAttachments(documents(), after_change=_schedule_graph_after_change)
    return await receive_run_attachments(
        run_input, org=org, owner=owner, may_write=may_write, library=library
    )
