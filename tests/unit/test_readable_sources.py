"""Answers name file and page of every cited number in their own text (issue 23 §6.6)."""

from __future__ import annotations

import re

from langchain_core.messages import AIMessage

from librarian.answers.extractive import sources_block
from librarian.answers.readable import with_readable_sources, with_sources_block, without_source_list

SOURCES = [
    {"id": "a", "filename": "handbook.pdf", "path": "docs/handbook.pdf", "page": 3, "text": "..."},
    {"id": "b", "filename": "faq.md", "path": "docs/faq.md", "page": 0, "text": "..."},
    {"id": "c", "filename": "policy.pdf", "path": "docs/policy.pdf", "page": 12, "text": "..."},
]


def test_the_block_lists_each_cited_number_with_file_and_page():
    text = "Refunds take 14 days [3]. Cards are refunded [1, 3]; see also [2]."
    assert with_sources_block(text, SOURCES) == (
        f"{text}\n\nSources:\n[1] handbook.pdf, page 3\n[2] faq.md\n[3] policy.pdf, page 12"
    )


def test_the_block_is_the_extractive_answers_block():
    text = "A [2]. B [1]."
    assert with_sources_block(text, SOURCES).endswith(sources_block(dict(enumerate(SOURCES, 1)), [1, 2]))


def test_nothing_cited_nothing_added():
    for text in ("No citations here.", "Out of range [9].", "Marked [unsupported]"):
        assert with_sources_block(text, SOURCES) == text


def test_a_list_the_model_wrote_is_replaced_and_the_block_is_idempotent():
    text = "Refunds take 14 days [1].\n\n**Sources:**\n[1] the handbook\n[2] something uncited\n"
    once = with_sources_block(text, SOURCES)
    assert once == "Refunds take 14 days [1].\n\nSources:\n[1] handbook.pdf, page 3"
    assert with_sources_block(once, SOURCES) == once
    assert (
        without_source_list("Intro [1].\n[1] is a claim, not a list")
        == "Intro [1].\n[1] is a claim, not a list"
    )


def test_messages_keep_their_id_and_unchanged_ones_are_returned_as_is():
    message = AIMessage("Policy [3].", id="answer-1", additional_kwargs={"unverified_content": "x"})
    readable = with_readable_sources(message, SOURCES)
    assert readable.id == "answer-1" and readable.additional_kwargs == message.additional_kwargs
    assert re.search(r"\n\nSources:\n\[3\] policy\.pdf, page 12$", readable.content)
    plain = AIMessage("Nothing cited.", id="answer-2")
    assert with_readable_sources(plain, SOURCES) is plain


def test_content_blocks_get_a_text_block_appended():
    message = AIMessage([{"type": "text", "text": "Policy [3]."}], id="answer-3")
    blocks = with_readable_sources(message, SOURCES).content
    assert blocks[0] == {"type": "text", "text": "Policy [3]."}
    assert blocks[1] == {"type": "text", "text": "\n\nSources:\n[3] policy.pdf, page 12"}
