"""The read path's core: embed the query, hybrid-query the organization's namespace, rerank, floor.

Shared by the `search_documents` tool, the vector query tool, the CLI and the benchmarks, so every
caller retrieves the same way. The organization is a parameter here; tools obtain it from trusted
run configuration (`librarian.tenancy.resolve_organization`), never from the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from librarian.index.base import QueryMatch
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id
from tools.rerank_base import Reranked, Reranker


class SourceScores(TypedDict):
    dense: float | None
    sparse: float | None
    fused: float
    rerank: float | None


class Source(TypedDict):
    id: str
    score: float
    text: str
    path: str
    filename: str
    page: int
    bbox: dict[str, float] | None
    blockType: str
    scores: SourceScores


class SearchResult(TypedDict):
    relevantContext: str
    sources: list[Source]


@dataclass
class SearchOptions:
    """Server-side knobs; none of them is ever a model-visible argument."""

    top_k: int = 8
    alpha: float = 0.75
    candidates: int = 40
    floor: float | None = None  # None: the reranker's own floor
    filter: dict[str, Any] | None = None

    @classmethod
    def from_settings(cls, stack: Stack, **overrides: Any) -> SearchOptions:
        s = stack.settings
        base = cls(top_k=s.top_k, alpha=s.alpha, candidates=s.candidates, floor=s.score_floor)
        for key, value in overrides.items():
            if value is not None:
                setattr(base, key, value)
        return base


def _bbox(metadata: dict[str, Any]) -> dict[str, float] | None:
    keys = ("left", "top", "width", "height")
    if all(f"bbox_{k}" in metadata for k in keys):
        return {k: float(metadata[f"bbox_{k}"]) for k in keys}
    return None


def to_source(item: Reranked, reranked: bool) -> Source:
    """Flatten a ranked match into what clients render: text, location on the page, scores."""
    m = item.match
    meta = m.metadata
    return Source(
        id=m.id,
        score=float(item.score),
        text=str(meta.get("text", "")),
        path=str(meta.get("path", "")),
        filename=str(meta.get("filename", "")),
        page=int(meta.get("page", 0) or 0),
        bbox=_bbox(meta),
        blockType=str(meta.get("blockType", "")),
        scores=SourceScores(
            dense=m.dense_score,
            sparse=m.sparse_score,
            fused=float(m.score),
            rerank=float(item.score) if reranked else None,
        ),
    )


def format_context(sources: list[Source]) -> str:
    """Numbered excerpts; `[n]` in an answer cites `sources[n-1]`."""
    return "\n\n".join(
        f"[{i}] {s['filename']}, page {s['page']}:\n{s['text']}" for i, s in enumerate(sources, start=1)
    )


def candidates_for(
    stack: Stack, organization_id: str, query: str, options: SearchOptions
) -> list[QueryMatch]:
    """Hybrid candidates from the organization's namespace, text-bearing only."""
    namespace = validate_organization_id(organization_id)
    if not query.strip():
        return []
    index = stack.index  # opening it checks the embedding contract: fail before paying for embeddings
    dense = stack.dense.embed_query(query)
    sparse = stack.sparse.embed_query(query)
    matches = index.query(
        namespace=namespace,
        vector=dense,
        sparse_vector=sparse if sparse.get("indices") else None,
        alpha=options.alpha,
        top_k=options.candidates,
        filter=options.filter,
        include_metadata=True,
    )
    return [m for m in matches if m.metadata.get("text")]


def search(
    stack: Stack,
    organization_id: str,
    query: str,
    options: SearchOptions | None = None,
    reranker: Reranker | None = None,
) -> SearchResult:
    """Candidates → rerank → top_k above the floor → {relevantContext, sources}."""
    options = options or SearchOptions.from_settings(stack)
    matches = candidates_for(stack, organization_id, query, options)
    if not matches:
        return SearchResult(relevantContext="", sources=[])
    if reranker is None:
        ranked = [Reranked(match=m, score=m.score, details={}) for m in matches[: options.top_k]]
        floor = options.floor
    else:
        ranked = reranker.rerank(query, matches, options.top_k)
        floor = reranker.floor if options.floor is None else options.floor
    kept = [r for r in ranked if floor is None or r.score >= floor][: options.top_k]
    sources = [to_source(r, reranker is not None) for r in kept]
    return SearchResult(relevantContext=format_context(sources), sources=sources)
