"""`librarian graph build --dry-run`: what a build would extract and what it would cost, no call made.

The pricing lives in `librarian.costs.estimate`; the choice of stale documents and their chunks is
the build's own (`graph_index_stages`), so the estimate and the build can never disagree.
"""

from __future__ import annotations

from typing import Any

from graphs.graph_index_stages import document_chunks, indexed_documents, stale_paths
from librarian.costs.estimate import estimate_stale


def estimate_extraction(stack: Any, org: str, *, force: bool = False) -> dict[str, Any]:
    """Documents and chunks a build would (re)extract and the tokens that would cost."""
    documents, _skipped = indexed_documents(stack, org)
    stale = stale_paths(stack, org, documents, force=force)
    return estimate_stale(stack, org, documents, stale, document_chunks)
