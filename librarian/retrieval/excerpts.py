"""The numbered excerpt: how every retrieval path shows a source to a model.

One format everywhere (search, the vector query tool, graph local and global), so a model that reads
`[n] file, page p:` from one tool reads it the same way from another, and an answer's `[n]` cites
`sources[n-1]` whichever tool found it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def excerpt(number: int, text: str, filename: str | None = None, page: Any = None) -> str:
    """`[n] file, page p:` then the text; `[n]` alone when the source has no file name."""
    where = f" {filename}, page {page}:" if filename else ""
    return f"[{number}]{where}\n{text}"


def numbered_excerpts(numbered: Iterable[tuple[int, Mapping[str, Any]]]) -> str:
    """Excerpts of sources that already carry their citation numbers, one blank line apart."""
    return "\n\n".join(excerpt(n, s["text"], s["filename"], s["page"]) for n, s in numbered)
