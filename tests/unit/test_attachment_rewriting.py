"""Rewriting a chat message's file parts into library references (`librarian.attachments`,
`graphs.attachments`): every shape clients send, with hypothesis-generated content lists."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from graphs.attachments import ANSWER_MODE, NO_LIBRARY, is_acknowledgement, receive_attachments
from librarian.attachments import (
    Attachment,
    AttachmentError,
    StoredAttachment,
    acknowledgement,
    decode_attachments,
    has_file_parts,
    is_file_part,
    rewrite_content,
)
from librarian.errors import FileTooLargeError, LibrarianError

MAX = 4096
PDF_HEAD = b"%PDF-1.4\n"


def encoded(data: bytes) -> str:
    return base64.b64encode(data).decode()


# Each shape a client sends a file in (LangChain v1, v0 / Agent Chat UI, OpenAI chat and responses).
SHAPES = {
    "v1": lambda data, name, mime: {
        "type": "file",
        "base64": encoded(data),
        "mime_type": mime,
        "filename": name,
    },
    "v0": lambda data, name, mime: {
        "type": "file",
        "source_type": "base64",
        "data": encoded(data),
        "mime_type": mime,
        "metadata": {"filename": name},
    },
    "chat_ui_js": lambda data, name, mime: {
        "type": "image" if mime.startswith("image/") else "file",
        "data": encoded(data),
        "mimeType": mime,
        "metadata": {"name": name},
    },
    "openai_file": lambda data, name, mime: {
        "type": "file",
        "file": {"filename": name, "file_data": f"data:{mime};base64,{encoded(data)}"},
    },
    "openai_image": lambda data, name, mime: {
        "type": "image_url",
        "image_url": {"url": f"data:{mime};base64,{encoded(data)}"},
    },
    "responses": lambda data, name, mime: {
        "type": "input_file",
        "filename": name,
        "file_data": encoded(data),
    },
}

names = st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N"]), min_size=1, max_size=20)
texts = st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=40))
links = st.builds(
    lambda kind: {"type": kind, "url": "https://example.com/a.pdf", "mime_type": "application/pdf"},
    st.sampled_from(["file", "image"]),
)
json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
junk = st.dictionaries(
    st.sampled_from(["type", "data", "base64", "file", "image_url", "mime_type", "url", "metadata", "x"]),
    st.recursive(
        json_leaf,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=6,
    ),
    max_size=5,
)


@st.composite
def file_parts(draw) -> tuple[dict[str, Any], bytes, str]:
    shape = draw(st.sampled_from(sorted(SHAPES)))
    data = PDF_HEAD + draw(st.binary(min_size=0, max_size=200))
    name = draw(names) + ".pdf"
    mime = "image/png" if shape == "openai_image" else "application/pdf"
    if shape == "openai_image":
        data = b"\x89PNG\r\n\x1a\n" + data
    return SHAPES[shape](data, name, mime), data, name


class Library:
    """Records what it was given; stands in for the document service at this unit's seam."""

    def __init__(self) -> None:
        self.stored: list[Attachment] = []

    def store(self, attachment: Attachment) -> StoredAttachment:
        self.stored.append(attachment)
        return StoredAttachment(
            filename=attachment.filename,
            path=f"docs/{attachment.filename}",
            status="queued",
            size_bytes=len(attachment.data),
        )


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.one_of(texts, links, file_parts()), max_size=6))
def test_every_file_part_is_stored_and_replaced_by_a_reference(content):
    blocks = [c[0] if isinstance(c, tuple) else c for c in content]
    files = [c for c in content if isinstance(c, tuple)]
    library = Library()
    result = rewrite_content(blocks, library.store, max_bytes=MAX)
    if not files:
        assert result is None and not library.stored
        return
    rewritten, references = result
    assert len(rewritten) == len(blocks)
    assert not has_file_parts(rewritten)
    assert [a.data for a in library.stored] == [data for _, data, _ in files]  # exact bytes, in order
    for i, block in enumerate(blocks):
        if is_file_part(block):
            assert rewritten[i]["type"] == "text"
            assert "was added to the library as docs/" in rewritten[i]["text"]
        else:
            assert rewritten[i] == block  # text and link blocks are left alone
    assert [r.path for r in references] == [f"docs/{a.filename}" for a in library.stored]
    dumped = json.dumps(rewritten)
    for _, data, _ in files:
        assert encoded(data) not in dumped


@settings(max_examples=300, deadline=None)
@given(st.lists(junk | texts, max_size=5))
def test_unknown_shapes_are_left_alone_or_refused_with_a_message(content):
    """Whatever a client puts in content: untouched, or a clear refusal before anything is stored."""
    library = Library()
    try:
        result = rewrite_content(content, library.store, max_bytes=MAX)
    except (AttachmentError, FileTooLargeError) as exc:
        assert "nothing was stored" in str(exc)
        assert not library.stored
        return
    if result is None:
        assert not library.stored
    else:
        assert not has_file_parts(result[0])


@pytest.mark.parametrize(
    ("block", "error", "says"),
    [
        (
            {**SHAPES["v0"](b"x", "a.pdf", "application/pdf"), "data": "not base64 at all!"},
            AttachmentError,
            "'a.pdf' is not valid base64",
        ),
        (
            {**SHAPES["v1"](b"x", "a.pdf", "application/pdf"), "base64": ""},
            AttachmentError,
            "'a.pdf' is empty",
        ),
        (
            SHAPES["v1"](b"plain words", "a.pdf", "application/pdf"),
            AttachmentError,
            "declared as a PDF but its content is plain text",
        ),
        (SHAPES["v1"](PDF_HEAD + b"0" * MAX, "a.pdf", "application/pdf"), FileTooLargeError, "upload limit"),
    ],
)
def test_bad_files_are_refused_before_anything_is_stored(block, error, says):
    good = SHAPES["v1"](PDF_HEAD + b"fine", "good.pdf", "application/pdf")
    library = Library()
    with pytest.raises(error, match=says):
        rewrite_content([good, block], library.store, max_bytes=MAX)  # the good one first
    assert library.stored == []


def test_a_nameless_file_gets_a_name_from_its_type():
    [attachment] = decode_attachments(
        [{"type": "file", "base64": encoded(PDF_HEAD + b"x"), "mime_type": "application/pdf"}], max_bytes=MAX
    )
    assert attachment.filename.startswith("attachment-") and attachment.filename.endswith(".pdf")


def test_url_only_blocks_and_text_are_not_file_parts():
    assert not is_file_part({"type": "image_url", "image_url": {"url": "https://example.com/x.png"}})
    assert not is_file_part({"type": "file", "file_id": "file-abc"})
    assert not has_file_parts("a plain string message")


# --- the agent's turn ------------------------------------------------------------------------------


def test_without_a_library_the_file_is_not_stored_and_the_reply_says_so():
    data = PDF_HEAD + b"secret bytes"
    message = HumanMessage(
        [{"type": "text", "text": "read this"}, SHAPES["v0"](data, "plan.pdf", "application/pdf")], id="m1"
    )
    update = receive_attachments([message], lambda: "acme", None)
    stored, reply = update["messages"]
    assert stored.id == "m1"  # replaces the message in the state, no copy with the bytes
    assert encoded(data) not in json.dumps(stored.content)
    assert stored.additional_kwargs["attachments"][0]["status"] == "not_stored"
    assert is_acknowledgement(reply) and reply.response_metadata["answer_mode"] == ANSWER_MODE
    assert "could not add plan.pdf" in reply.content and NO_LIBRARY in reply.content


def test_a_bad_file_in_the_graph_becomes_a_reference_with_its_reason():
    message = HumanMessage([{**SHAPES["v0"](b"x", "b.pdf", "application/pdf"), "data": "%%%"}], id="m2")

    class Refuses:
        max_bytes = MAX

        def store_all(self, organization_id, attachments):
            raise AssertionError("nothing may be stored")

    update = receive_attachments([message], lambda: "acme", Refuses())
    stored, reply = update["messages"]
    assert "%%%" not in json.dumps(stored.content)
    assert "not valid base64" in reply.content


def test_a_turn_without_attachments_needs_no_organization():
    def no_org() -> str:
        raise LibrarianError("no organization")

    assert receive_attachments([HumanMessage("hello")], no_org, None) is None
    assert receive_attachments([AIMessage("hi")], no_org, None) is None


def test_a_message_the_server_already_rewrote_gets_the_reply_only():
    record = {"filename": "x.pdf", "path": "docs/x.pdf", "status": "queued", "size_bytes": 3}
    message = HumanMessage("[Attached file ...]", additional_kwargs={"attachments": [record]}, id="m3")
    update = receive_attachments([message], lambda: "acme", None)
    [reply] = update["messages"]
    assert reply.content == acknowledgement([record])
    assert "x.pdf (docs/x.pdf)" in reply.content and "being indexed" in reply.content


# --- the server's run input ------------------------------------------------------------------------

messages = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, st.lists(st.one_of(texts, links), max_size=3)),
    st.builds(lambda c: {"type": "human", "content": c}, st.text(max_size=20)),
    st.builds(lambda c: ["user", c], st.text(max_size=20)),
    json_leaf,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, max_size=4), st.lists(file_parts(), max_size=2), st.booleans())
def test_a_reader_is_refused_before_anything_changes(messages_in, files, single):
    """Any run input: without files nothing happens; with files a reader is refused, input untouched."""
    import asyncio

    from librarian.attachments import AttachmentRefusedError
    from services.chat_attachments import receive_run_attachments

    if files:
        messages_in = [*messages_in, {"role": "user", "content": [f[0] for f in files]}]
    run_input: dict[str, Any] = {"messages": messages_in[-1] if single and messages_in else messages_in}
    before = json.dumps(run_input)
    call = receive_run_attachments(run_input, org="acme", owner="rita", may_write=False, library=None)  # type: ignore[arg-type]
    if files:
        with pytest.raises(AttachmentRefusedError, match="cannot add documents"):
            asyncio.run(call)
    else:
        assert asyncio.run(call) == []
    assert json.dumps(run_input) == before
