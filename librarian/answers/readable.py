"""Readable citations in the answer's own text: a trailing `Sources:` block naming file and page.

An answer's `[n]` cites `state["sources"][n-1]`. Clients that show only the message (Agent Chat UI,
MCP and OpenAI-compatible clients) would show bare numbers, so every final answer ends with the block
the extractive answers already carry (`librarian.answers.extractive.sources_block`), one line per
cited number, whichever model wrote the answer:

    Sources:
    [1] handbook.pdf, page 3
    [2] faq.md

The block is built from the citations in the text, after they are checked (a dropped sentence's
number is gone); a block the model wrote itself at the end is replaced by this one. The web app
renders `sources` itself and, seeing the block, lists nothing a second time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage

from librarian.answers.citations import markers_of
from librarian.answers.extractive import sources_block
from librarian.retrieval.search import Source

SOURCES_HEADER = "Sources:"
# A source list's heading as models write it ("Sources:", "**Sources**", "### References") and its
# entries ("[2] handbook.pdf, page 4").
_HEADING = re.compile(r"[#*_\s]*(?:sources|references)[:*_\s]*", re.IGNORECASE)
_ENTRY = re.compile(r"\s*\[\d+\]\s+\S")


def cited(text: str, sources: Sequence[Source]) -> list[int]:
    """The numbers `text` cites that name a source, in order of first citation."""
    numbers = dict.fromkeys(markers_of(text))
    return [n for n in numbers if 1 <= n <= len(sources)]


def without_source_list(text: str) -> str:
    """`text` without a source list at its end (a heading, then only `[n] ...` entries)."""
    lines = text.rstrip().split("\n")
    end = len(lines)
    while end > 0 and (_ENTRY.match(lines[end - 1]) or not lines[end - 1].strip()):
        end -= 1
    if 0 < end < len(lines) and _HEADING.fullmatch(lines[end - 1]):
        return "\n".join(lines[: end - 1]).rstrip()
    return text


def with_sources_block(text: str, sources: Sequence[Source]) -> str:
    """`text` ending with the `Sources:` block of the sources it cites (replacing a source list it
    ends with); unchanged when it cites none."""
    body = without_source_list(text)
    numbers = cited(body, sources)
    if not numbers:
        return text
    block = sources_block({n: sources[n - 1] for n in numbers}, numbers)
    return f"{body.rstrip()}\n\n{block}"


def with_readable_sources(message: AIMessage, sources: Sequence[Source]) -> AIMessage:
    """The answer with its `Sources:` block (same id, so it replaces the answer in the state); the
    message itself when there is nothing to add."""
    content: Any = message.content
    if isinstance(content, str):
        readable = with_sources_block(content, sources)
        return message if readable == content else message.model_copy(update={"content": readable})
    text = "".join(
        p if isinstance(p, str) else str(p.get("text", "")) for p in content if isinstance(p, str | dict)
    )
    numbers = cited(text, sources)
    if not numbers or without_source_list(text) != text:  # content blocks: a list already there stays
        return message
    block = sources_block({n: sources[n - 1] for n in numbers}, numbers)
    return message.model_copy(update={"content": [*content, {"type": "text", "text": f"\n\n{block}"}]})
