"""Ranked matches in Mastra's vector query result shape: `{relevantContext, sources}` of `QueryResult`s.

The search path flattens matches into `Source`s (`librarian.retrieval.search.to_source`); callers
written against Mastra's `createVectorQueryTool` expect its `{id, score, metadata, vector?, document}`
instead, with the whole metadata and records without text kept. Both number their excerpts the same
way (`librarian.retrieval.excerpts`), so `[n]` cites `sources[n-1]` whichever tool found it.
"""

from __future__ import annotations

from typing import Any

from librarian.retrieval.excerpts import excerpt
from librarian.retrieval.reranker import Reranked


def query_result(item: Reranked, include_vector: bool) -> dict[str, Any]:
    """Mastra's QueryResult `{id, score, metadata, vector?, document}`, plus the score breakdown."""
    match = item.match
    result: dict[str, Any] = {
        "id": match.id,
        "score": float(item.score),
        "metadata": dict(match.metadata),
        "document": str(match.metadata.get("text", "")),
        "scores": {
            "dense": match.dense_score,
            "sparse": match.sparse_score,
            "fused": float(match.score),
            "rerank": item.details.get("rerank"),
        },
    }
    if include_vector:
        result["vector"] = list(match.values) if match.values is not None else None
    return result


def relevant_context(results: list[dict[str, Any]]) -> str:
    """Numbered excerpts so an answer can cite `[n]` for `sources[n-1]`.

    A result without text keeps its number but shows no excerpt: renumbering would make `[n]`
    point at the wrong source.
    """
    parts = []
    for n, result in enumerate(results, start=1):
        if not result["document"]:
            continue
        meta = result["metadata"]
        parts.append(excerpt(n, result["document"], meta.get("filename"), meta.get("page", "?")))
    return "\n\n".join(parts)


def query_tool_result(results: list[dict[str, Any]], include_sources: bool) -> dict[str, Any]:
    """`{relevantContext, sources}`; `sources` left out when the caller asked for the text alone."""
    out: dict[str, Any] = {"relevantContext": relevant_context(results)}
    if include_sources:
        out["sources"] = results
    return out
