"""The post-condition of a delete: no retrieval channel still returns the document's text or cites it.

Each probe asks one real channel, in process, a question made of the document's own words (taken from
its indexed chunks before the delete): the agent's search tool, the vector query tool, graph local,
global and DRIFT search, and the page route's precondition (the stored file and its rendered images).
A probe finds the document when anything in the channel's answer names its path, one of its chunk ids,
or quotes a passage of its text. Conservative on purpose: another document quoting the same passage
also counts as found, so a receipt never says `verified` when the text is still retrievable.

A probe that fails (an error in the channel) is reported as found with the error as its detail: a
post-condition that could not be checked is not verified.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from librarian.graph.query.runs import run_drift, run_global, run_local
from librarian.index.base import record_id_prefix
from librarian.page_cache import page_cache
from librarian.receipts.model import Probe
from librarian.stack import Stack
from tools.search import make_search_tool
from tools.vector_query import create_vector_query_tool

logger = logging.getLogger(__name__)

QUESTION_WORDS = 24  # a question of the document's own words: distinctive, yet short enough to embed
PASSAGE_CHARS = 48  # a quoted passage this long is the document's text, not a coincidence


def _words(text: str) -> list[str]:
    return re.findall(r"\S+", text)


def question_of(texts: list[str]) -> str:
    """The first words of the document's longest chunk: what its own text would be found by."""
    longest = max(texts, key=len, default="")
    return " ".join(_words(longest)[:QUESTION_WORDS])


def passages_of(texts: list[str]) -> list[str]:
    """A passage from the middle of each chunk (whitespace-normalised), to spot quoted text."""
    found = []
    for text in texts:
        flat = " ".join(_words(text))
        if len(flat) >= PASSAGE_CHARS:
            middle = (len(flat) - PASSAGE_CHARS) // 2
            found.append(flat[middle : middle + PASSAGE_CHARS])
    return found


#: Keys under which a channel echoes what it was asked: made of the document's words, yet no evidence.
ECHOES = frozenset({"question", "query", "queries", "query_text"})


def _strings(value: Any) -> Iterator[str]:
    """Every string in a channel's answer (nested dicts, lists, typed dicts, messages), echoes left out."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ECHOES:
                yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif hasattr(value, "model_dump"):
        yield from _strings(value.model_dump())


def mentions(answer: Any, path: str, passages: list[str]) -> str:
    """Why `answer` still shows the document ('' when it does not): its path, a chunk id, a passage.

    The question itself, which channels echo back under `ECHOES` keys, is left out: it is made of the
    document's words, but repeating it shows nothing the channel still holds.
    """
    prefix = record_id_prefix(path)
    for text in _strings(answer):
        if text == path or text.startswith(prefix):
            return f"cites {text!r}"
        flat = " ".join(_words(text))
        for passage in passages:
            if passage in flat:
                return f"quotes {passage!r}"
    return ""


async def _search(stack: Stack, org: str, question: str) -> Any:
    tool = make_search_tool(stack=lambda: stack)
    return await asyncio.to_thread(
        tool.invoke, {"query": question}, {"configurable": {"organization_id": org}}
    )


async def _vector_query(stack: Stack, org: str, question: str) -> Any:
    tool = create_vector_query_tool(stack=lambda: stack)
    config = {"configurable": {"organization_id": org}}
    return await asyncio.to_thread(tool.invoke, {"query_text": question}, config)


async def _page_route(stack: Stack, org: str, path: str) -> Any:
    """The page route answers an image only for a stored file; its images are the cache's."""
    stored = await asyncio.to_thread(stack.files.stat, org, path)
    images = await asyncio.to_thread(page_cache(stack).images_of, org, path)
    return {"path": path if stored is not None or images else None, "images": images}


def channels(stack: Stack, org: str, path: str, question: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every channel a deleted document must have left, by the name a receipt shows."""
    return {
        "search": lambda: _search(stack, org, question),
        "vector_query_tool": lambda: _vector_query(stack, org, question),
        "graph_local": lambda: run_local(stack, org, question),
        "graph_global": lambda: run_global(stack, org, question),
        "graph_drift": lambda: run_drift(stack, org, question),
        "page_route": lambda: _page_route(stack, org, path),
    }


async def _probe(
    name: str, ask: Callable[[], Awaitable[Any]], path: str, question: str, passages: list[str]
) -> Probe:
    try:
        answer = await ask()
    except Exception as error:  # the channel could not be checked: not verified
        logger.exception("the %s probe of a deleted document failed", name)
        return Probe(name, True, question, f"probe failed: {type(error).__name__}")
    why = mentions(answer, path, passages)
    return Probe(name, bool(why), question, why)


async def probe_all(stack: Stack, org: str, path: str, texts: list[str]) -> list[Probe]:
    """Ask every channel the document's own words; one probe each, in channel order."""
    question = question_of(texts) or path
    passages = passages_of(texts)
    asked = channels(stack, org, path, question)
    return list(
        await asyncio.gather(*(_probe(name, ask, path, question, passages) for name, ask in asked.items()))
    )
