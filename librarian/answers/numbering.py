"""Citation numbers across a conversation: every source an agent's tools return gets one `[n]`.

An answer's `[n]` cites `state["sources"][n-1]`. Each tool call numbers its excerpts after the sources
the conversation already has (`number_sources`); the agent state's reducer appends new sources in
call order (`merge_sources`); and when the model called several tools at once, their messages are
re-rendered with the final numbers before the model reads them (`renumber_search_results`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import ToolMessage

from librarian.retrieval.excerpts import numbered_excerpts
from librarian.retrieval.search import Source


def merge_sources(existing: list[Source] | None, new: list[Source] | None) -> list[Source]:
    """Reducer for the agent's `sources`: append unseen ids, keep first-seen numbering."""
    merged = list(existing or [])
    seen = {s["id"] for s in merged}
    for source in new or []:
        if source["id"] not in seen:
            merged.append(source)
            seen.add(source["id"])
    return merged


def number_sources(known: list[Source], found: list[Source]) -> list[tuple[int, Source]]:
    """Citation numbers for `found`, reusing the number of a source already cited earlier."""
    numbers = {s["id"]: i for i, s in enumerate(known, start=1)}
    next_number = len(known) + 1
    numbered = []
    for source in found:
        if source["id"] not in numbers:
            numbers[source["id"]] = next_number
            next_number += 1
        numbered.append((numbers[source["id"]], source))
    return numbered


def render(numbered: list[tuple[int, Source]]) -> str:
    """What the model reads of a `search_documents` result."""
    if not numbered:
        return "No relevant excerpts were found in this organization's documents."
    return numbered_excerpts(numbered)


# Renders a tool's message from its artifact (a dict with `sources`) and the numbered sources.
Renderer = Callable[[dict[str, Any], list[tuple[int, Source]]], str]


def renumber_search_results(
    messages: list[Any], sources: list[Source], renderers: Mapping[str, Renderer] | None = None
) -> list[ToolMessage]:
    """The trailing search results re-rendered with their numbers in `sources`, where they differ.

    Each call numbers its excerpts from the state it was given, so calls the model makes in
    parallel all start after the same number and would give different excerpts the same `[n]`.
    Once their sources are merged (in call order), the final numbering is known; the agent runs
    this before the model reads the results (`graphs.agent`). `renderers` adds other citing tools
    by name (the graph tools: `tools.graph_tools.RENDERERS`); `search_documents` is always one.
    """
    by_name: dict[str, Renderer] = {"search_documents": lambda _artifact, numbered: render(numbered)}
    by_name.update(renderers or {})
    numbers = {s["id"]: n for n, s in enumerate(sources, start=1)}
    fixed: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        artifact = message.artifact
        renderer = by_name.get(message.name or "")
        if renderer is None or not isinstance(artifact, dict):
            continue
        found = artifact.get("sources") or []
        if not all(s["id"] in numbers for s in found):
            continue  # not merged yet: nothing reliable to renumber against
        content = renderer(artifact, [(numbers[s["id"]], s) for s in found])
        if content != message.content:
            fixed.append(message.model_copy(update={"content": content}))
    return fixed[::-1]
