"""The read path's one core: embed the query, hybrid-query the organization's namespace, rerank, floor.

`search_documents`, the vector query tool, the extractive agent, the CLI and `librarian eval` all call
`retrieve` (ranked matches) or `search` (plus sources and context), so every caller retrieves the same
way. The organization is a parameter here; tools obtain it from trusted run configuration
(`librarian.tenancy.resolve_organization`), never from the model. Per-stack objects (the configured
reranker) are built once per stack (`librarian.retrieval.rerankers.make_reranker`), not per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic (Studio's schemas) needs it on Python < 3.12

from librarian.embeddings.base import DenseEmbedder, SparseEmbedder, SparseVector
from librarian.index.base import QueryMatch, VectorIndex
from librarian.retrieval.excerpts import numbered_excerpts
from librarian.retrieval.path_filter import restricted_filter
from librarian.retrieval.reranker import Reranked, Reranker
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id


class SourceScores(TypedDict):
    dense: float | None
    sparse: float | None
    fused: float
    rerank: float | None
    # Mastra's weighted rerank only (e.g. LIBRARIAN_RERANKER=cohere): the scorer's relevance in [0, 1]
    semantic: NotRequired[float]


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
    floor: float | None = None  # None: the reranker's own floor (none for plain hybrid)
    filter: dict[str, Any] | None = None
    min_score: float | None = None  # on the fused hybrid score, before rerank (Mastra's minScore)
    include_values: bool = False
    require_text: bool = True  # drop records without text (nothing to cite); Mastra's tool keeps them
    # canonical `docs/NAME` paths (`librarian.retrieval.path_filter`): only these documents are searched
    paths: list[str] | None = None

    @classmethod
    def from_settings(cls, stack: Stack, **overrides: Any) -> SearchOptions:
        s = stack.settings
        base = cls(top_k=s.top_k, alpha=s.alpha, candidates=s.candidates, floor=s.score_floor)
        for key, value in overrides.items():
            if value is not None:
                setattr(base, key, value)
        return base


@dataclass(frozen=True)
class QueryChannels:
    """What embeds the query and what is queried; defaults are the stack's own providers.

    The vector query tool swaps in a caller's dense model, store or fixed sparse vector (Mastra's
    options); everyone else uses the stack's. `sparse_vector` replaces the sparse embedding.
    """

    index: VectorIndex | None = None
    dense: DenseEmbedder | None = None
    sparse: SparseEmbedder | None = None
    sparse_vector: SparseVector | None = None
    use_sparse: bool = True


def _bbox(metadata: dict[str, Any]) -> dict[str, float] | None:
    keys = ("left", "top", "width", "height")
    if all(f"bbox_{k}" in metadata for k in keys):
        return {k: float(metadata[f"bbox_{k}"]) for k in keys}
    return None


def to_source(item: Reranked) -> Source:
    """Flatten a ranked match into what clients render: text, location on the page, scores."""
    m = item.match
    meta = m.metadata
    rerank = item.details.get("rerank")
    scores = SourceScores(
        dense=m.dense_score,
        sparse=m.sparse_score,
        fused=float(m.score),
        rerank=None if rerank is None else float(rerank),
    )
    if "semantic" in item.details:
        scores["semantic"] = float(item.details["semantic"])
    return Source(
        id=m.id,
        score=float(item.score),
        text=str(meta.get("text", "")),
        path=str(meta.get("path", "")),
        filename=str(meta.get("filename", "")),
        page=int(meta.get("page", 0) or 0),
        bbox=_bbox(meta),
        blockType=str(meta.get("blockType", "")),
        scores=scores,
    )


def format_context(sources: list[Source]) -> str:
    """Numbered excerpts; `[n]` in an answer cites `sources[n-1]`."""
    return numbered_excerpts(enumerate(sources, start=1))


def embed_query(
    stack: Stack,
    query: str,
    channels: QueryChannels = QueryChannels(),
    namespace: str | None = None,
) -> tuple[Any, Any]:
    """(dense, sparse or None) query vectors; the sparse one is skipped when it cannot count.

    With `LIBRARIAN_SPARSE_IDF=namespace` (the default) and an index that can count terms per
    namespace (the embedded one), the lexical query is weighted by the searched namespace's own IDF.
    """
    dense = (channels.dense or stack.dense).embed_query(query)
    sparse = channels.sparse_vector
    if sparse is None and channels.use_sparse:
        encoder = channels.sparse or stack.sparse
        index = channels.index or stack.index
        with_counts = getattr(encoder, "embed_query_with_counts", None)
        counts = getattr(index, "sparse_term_counts", None)
        if stack.settings.sparse_idf == "namespace" and namespace and with_counts and counts:
            sparse = with_counts(query, lambda ids: counts(ids, namespace=namespace))
        else:
            sparse = encoder.embed_query(query)
    return dense, sparse if sparse and sparse.get("indices") else None


def candidates_for(
    stack: Stack,
    organization_id: str,
    query: str,
    options: SearchOptions,
    channels: QueryChannels = QueryChannels(),
    depth: int | None = None,
) -> list[QueryMatch]:
    """Hybrid candidates from the organization's namespace (`depth`, default `options.candidates`)."""
    namespace = validate_organization_id(organization_id)
    if not query.strip():
        return []
    # Opening the stack's index checks the embedding contract: fail before paying for embeddings.
    index = channels.index or stack.index
    dense, sparse = embed_query(stack, query, channels, namespace)
    matches = index.query(
        namespace=namespace,
        vector=dense,
        sparse_vector=sparse,
        alpha=options.alpha,
        top_k=depth or options.candidates,
        filter=restricted_filter(options.filter, options.paths),
        include_values=options.include_values,
        include_metadata=True,
    )
    if options.require_text:
        matches = [m for m in matches if m.metadata.get("text")]
    if options.min_score is not None:
        matches = [m for m in matches if m.score >= options.min_score]
    return matches


def rank(
    query: str, matches: list[QueryMatch], reranker: Reranker | None, top_k: int, floor: float | None = None
) -> list[Reranked]:
    """Rerank (or keep the fused order), then keep top_k at or above the floor.

    `floor` None means the reranker's own floor; plain hybrid has none (fused scores have no fixed
    scale: they depend on alpha and on the models), unless LIBRARIAN_SCORE_FLOOR sets one.
    """
    if reranker is None:
        ranked = [Reranked(match=m, score=m.score, details={"fused": m.score}) for m in matches[:top_k]]
    else:
        ranked = reranker.rerank(query, matches, top_k)
        floor = getattr(reranker, "floor", None) if floor is None else floor
    return [r for r in ranked if floor is None or r.score >= floor][:top_k]


def retrieve(
    stack: Stack,
    organization_id: str,
    query: str,
    options: SearchOptions | None = None,
    reranker: Reranker | None = None,
    channels: QueryChannels = QueryChannels(),
    rerank_top_k: int | None = None,
) -> list[Reranked]:
    """The pipeline: query embedding → hybrid query → rerank → floor. Best first.

    A reranker gets `max(top_k, candidates)` candidates to reorder; so does plain hybrid when
    records without text are dropped (so that top_k remain). Scores are exact, so reading only
    top_k otherwise gives the same first top_k.
    """
    options = options or SearchOptions.from_settings(stack)
    deep = reranker is not None or options.require_text
    depth = max(options.top_k, options.candidates) if deep else options.top_k
    matches = candidates_for(stack, organization_id, query, options, channels, depth)
    if not matches:
        return []
    return rank(query, matches, reranker, rerank_top_k or options.top_k, options.floor)


def search(
    stack: Stack,
    organization_id: str,
    query: str,
    options: SearchOptions | None = None,
    reranker: Reranker | None = None,
) -> SearchResult:
    """`retrieve`, flattened into {relevantContext, sources} as the agent and the CLI show it."""
    sources = [to_source(r) for r in retrieve(stack, organization_id, query, options, reranker)]
    return SearchResult(relevantContext=format_context(sources), sources=sources)
