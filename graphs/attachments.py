"""The agent's turn when the user attached files: references in the thread, an honest reply.

On the LangGraph server the run's input arrives with its files already stored and replaced by
references (`services.chat_attachments`, called before the run is created). In plain Python, or for a
run that reached the graph without that step, the graph replaces what file parts are left itself:
through the `AttachmentLibrary` given to `build_agent(attachments=...)`, or, with none, by a reference
saying that the file was not stored and how to add it. The message keeps its id, so the
`add_messages` reducer replaces it in the state rather than adding a copy.

A turn whose last message attached files ends with a fixed reply naming what was added: the file
is being indexed, so neither the model nor the extractive answerer has read it, and any answer
about its content would be invented. Later turns search it like any other document.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END
from langgraph.runtime import get_runtime
from langgraph.types import Command

from graphs.context import LibrarianContext, organization_of
from librarian.attachments import (
    ATTACHMENTS_KEY,
    AttachmentError,
    AttachmentLibrary,
    StoredAttachment,
    acknowledgement,
    attachment_records,
    decode_attachments,
    has_file_parts,
    placeholders,
    replace_file_parts,
)
from librarian.errors import LibrarianError

#: `response_metadata["answer_mode"]` of the reply to a turn that attached files.
ANSWER_MODE = "attachments"
NO_LIBRARY = (
    "this agent has no document library connected, so the file was not stored. Upload it to the "
    "library (POST /orgs/{org}/documents, `librarian upload`, or DocumentService.upload), or build the "
    "agent with build_agent(attachments=LocalAttachments(service)), and ask again"
)


def _not_stored(filenames: list[str], detail: str) -> list[StoredAttachment]:
    return [
        StoredAttachment(filename=name, path=None, status="not_stored", size_bytes=0, detail=detail)
        for name in filenames
    ]


def _store(message: HumanMessage, organization_id: str, library: AttachmentLibrary | None) -> HumanMessage:
    """The message with its file parts stored (or refused) and replaced by references."""
    content: list[Any] = list(message.content)  # has_file_parts: a list
    try:
        if library is None:
            raise AttachmentError(NO_LIBRARY)
        found = decode_attachments(content, max_bytes=library.max_bytes)
        pairs = list(zip(found, library.store_all(organization_id, found), strict=True))
    except LibrarianError as exc:  # no library, bad data, too large, a bad name: nothing stored
        stand_ins = placeholders(content)
        pairs = list(zip(stand_ins, _not_stored([s.filename for s in stand_ins], str(exc)), strict=True))
    extra = dict(message.additional_kwargs)
    extra[ATTACHMENTS_KEY] = [*attachment_records(extra), *(record.as_dict() for _, record in pairs)]
    return message.model_copy(
        update={"content": replace_file_parts(content, pairs), "additional_kwargs": extra}
    )


def receive_attachments(
    messages: list[AnyMessage], organization: Callable[[], str], library: AttachmentLibrary | None
) -> dict[str, Any] | None:
    """The state update for a turn whose last message attached files, or None for any other turn.

    The update replaces that message (same id) by its stored form and adds the reply. `organization`
    is asked only when there is a file to store (a turn without one needs none).
    """
    last = messages[-1] if messages else None
    if not isinstance(last, HumanMessage):
        return None
    received = _store(last, organization(), library) if has_file_parts(last.content) else last
    records = attachment_records(received.additional_kwargs)
    if not records:
        return None
    reply = AIMessage(
        content=acknowledgement(records),
        id=str(uuid.uuid4()),
        response_metadata={"answer_mode": ANSWER_MODE},
    )
    updates: list[AnyMessage] = [received, reply] if received is not last else [reply]
    return {"messages": updates, "citations": []}


def is_acknowledgement(message: Any) -> bool:
    """True for the fixed reply to a turn that attached files (no claims, nothing to verify)."""
    return isinstance(message, AIMessage) and message.response_metadata.get("answer_mode") == ANSWER_MODE


def attachments_node(library: AttachmentLibrary | None) -> RunnableLambda:
    """The extractive agent's first node: `receive_attachments`, then the answer or the end."""

    def receive(state: dict[str, Any], config: RunnableConfig) -> Command:
        messages = state.get("messages") or []
        runtime = get_runtime(LibrarianContext)
        update = receive_attachments(messages, lambda: organization_of(config, runtime), library)
        return Command(goto="retrieve_and_quote") if update is None else Command(update=update, goto=END)

    async def areceive(state: dict[str, Any], config: RunnableConfig) -> Command:
        return await asyncio.to_thread(receive, state, config)

    return RunnableLambda(receive, areceive, name="receive_attachments")
