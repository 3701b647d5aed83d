"""Restrict a search to named documents of the organization ("in this document").

Paths come from a model, a CLI flag or a client's run context, so they are untrusted: each one is
validated with the document-path validator (`librarian.files.paths`) and names a document *inside*
the searched organization only; the organization itself always comes from the server. The
restriction is a `path` `$in` filter applied inside the index query, on the dense and sparse channels
alike, so a small document is never crowded out of a global top-k before filtering.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from librarian.errors import LibrarianError
from librarian.files.paths import DOCS_PREFIX, InvalidPathError, document_path, validate_document_path

MAX_SEARCH_PATHS = 20  # one question mentions a handful of documents, not a library


class SearchPathError(LibrarianError, ValueError):
    """A search path is not a document path; the message says which and why."""

    code = "invalid_search_path"


def normalise_search_path(raw: Any) -> str:
    """`docs/NAME` or a bare `NAME` → the canonical `docs/NAME`; anything else is refused.

    Unlike `librarian documents` (where a local file counts by its name), a search path never has
    its directories stripped: `../x`, `/etc/x` and `a/b` are refused, not silently shortened.
    """
    if not isinstance(raw, str):
        raise SearchPathError(f"a document path must be a string, not {type(raw).__name__}")
    if not raw.strip():
        raise SearchPathError("a document path is empty")
    try:
        if raw.startswith(DOCS_PREFIX):
            return validate_document_path(raw)
        return document_path(raw)
    except InvalidPathError as exc:
        raise SearchPathError(f"{raw[:80]!r} is not a document path: {exc}") from None


def normalise_search_paths(raws: Iterable[Any] | None) -> list[str] | None:
    """Canonical, de-duplicated paths in the order given; None (or empty) means no restriction."""
    if raws is None:
        return None
    if isinstance(raws, str | bytes) or not isinstance(raws, Iterable):
        raise SearchPathError("paths must be a list of document paths")
    paths = list(dict.fromkeys(normalise_search_path(raw) for raw in raws))
    if len(paths) > MAX_SEARCH_PATHS:
        raise SearchPathError(f"at most {MAX_SEARCH_PATHS} document paths; got {len(paths)}")
    return paths or None


def restricted_filter(base: Mapping[str, Any] | None, paths: list[str] | None) -> dict[str, Any] | None:
    """`base` AND `path $in paths` (Pinecone's filter language, which every index evaluates)."""
    if not paths:
        return dict(base) if base else None
    only = {"path": {"$in": list(paths)}}
    return {"$and": [dict(base), only]} if base else only


def unknown_paths(files: Any, organization_id: str, paths: list[str]) -> list[str]:
    """The paths that name no document of this organization (another organization's count as unknown)."""
    return [path for path in paths if not files.exists(organization_id, path)]


def unknown_paths_message(unknown: list[str]) -> str:
    """What the model or the user reads: which documents are not in this library."""
    return (
        f"No document named {', '.join(unknown)} in this organization's library; nothing was searched. "
        "Use paths of uploaded documents, like 'docs/handbook.pdf'."
    )


def requested_paths(context: Any) -> list[str] | None:
    """The run's document restriction (`LibrarianContext.paths`), validated and canonical (`docs/NAME`).

    A bad path raises `SearchPathError` naming it, never a silent widening to the whole library.
    """
    paths = context.get("paths") if isinstance(context, dict) else getattr(context, "paths", None)
    return normalise_search_paths(paths)
