"""Mastra's `rerank()` in Python: semantic relevance, vector score and position, fused by weights.

Kept faithful to `@mastra/rag` (packages/rag/src/rerank/index.ts) so people who know Mastra get the same
numbers: default weights 0.4/0.4/0.2 merged with the caller's, position score `1 - i/N`, a result
without `metadata.text` gets semantic 0 without asking the scorer, the optional query embedding
multiplies every score by 1.1 when its norm exceeds 10 and by 1.05 when it exceeds 5, and
`queryAnalysis` is reported only when a query embedding was given. Two deliberate departures:
weights are compared to 1 with a 1e-6 tolerance (Mastra uses exact decimals; binary floats cannot
represent 0.1 exactly) and negative weights are rejected (they would reward irrelevance).

The scorer is called once with all texts, not once per result, so batching scorers (Pinecone,
cross-encoders, an LLM's `.batch`) make one round trip.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from librarian.index.base import QueryMatch
from librarian.retrieval.reranker import RelevanceScorer

DEFAULT_WEIGHTS: dict[str, float] = {"semantic": 0.4, "vector": 0.4, "position": 0.2}
WEIGHT_TOLERANCE = 1e-6
DOMINANT_FEATURES = 5


class QueryAnalysis(TypedDict):
    magnitude: float
    dominantFeatures: list[int]


class ScoringDetails(TypedDict):
    semantic: float
    vector: float
    position: float
    queryAnalysis: NotRequired[QueryAnalysis]


class RerankResult(TypedDict):
    result: Any  # the caller's object, untouched: a QueryMatch or a Mastra-style dict
    score: float
    details: ScoringDetails


def resolve_weights(weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Defaults overlaid with the caller's weights (Mastra merges, it does not replace), validated."""
    merged = dict(DEFAULT_WEIGHTS)
    for key, value in (weights or {}).items():
        if key not in DEFAULT_WEIGHTS:
            raise ValueError(f"unknown rerank weight {key!r}; expected semantic, vector and position")
        merged[key] = float(value)
    negative = {k: v for k, v in merged.items() if v < 0 or math.isnan(v)}
    if negative:
        raise ValueError(f"rerank weights must not be negative, got {negative}")
    total = sum(merged.values())
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise ValueError(
            f"rerank weights must add up to 1, got {total:g} from {merged} "
            "(weights you omit keep their defaults 0.4/0.4/0.2)"
        )
    return merged


def position_score(position: int, total: int) -> float:
    """1 for the first result, falling linearly; the last of N scores 1/N, never 0."""
    return 1.0 - position / total


def analyze_query_embedding(embedding: Sequence[float]) -> QueryAnalysis:
    """Norm of the query embedding and the indices of its five largest absolute components."""
    magnitude = math.sqrt(sum(float(v) * float(v) for v in embedding))
    order = sorted(range(len(embedding)), key=lambda i: (-abs(float(embedding[i])), i))
    return QueryAnalysis(magnitude=magnitude, dominantFeatures=order[:DOMINANT_FEATURES])


def adjust_score(score: float, analysis: QueryAnalysis) -> float:
    """Mastra's magnitude boost. Unit-normalised embeddings (ours, OpenAI's) never trigger it."""
    magnitude = analysis["magnitude"]
    return score * (1.1 if magnitude > 10 else 1.0) * (1.05 if magnitude > 5 else 1.0)


def _text_and_score(result: Any) -> tuple[str | None, float]:
    if isinstance(result, QueryMatch):
        metadata, score = result.metadata, result.score
    elif isinstance(result, Mapping):
        metadata, score = result.get("metadata") or {}, result.get("score", 0.0)
    else:
        raise TypeError(f"cannot rerank a {type(result).__name__}; pass QueryMatch objects or dicts")
    text = metadata.get("text") if isinstance(metadata, Mapping) else None
    return (str(text) if text else None), float(score or 0.0)


def _fuse(
    results: Sequence[Any],
    semantic: dict[int, float],
    weights: dict[str, float],
    top_k: int,
    query_embedding: Sequence[float] | None,
) -> list[RerankResult]:
    analysis = analyze_query_embedding(query_embedding) if query_embedding is not None else None
    scored: list[RerankResult] = []
    for i, result in enumerate(results):
        _, vector = _text_and_score(result)
        details = ScoringDetails(
            semantic=semantic.get(i, 0.0), vector=vector, position=position_score(i, len(results))
        )
        score = (
            weights["semantic"] * details["semantic"]
            + weights["vector"] * details["vector"]
            + weights["position"] * details["position"]
        )
        if analysis is not None:
            score = adjust_score(score, analysis)
            details["queryAnalysis"] = analysis
        scored.append(RerankResult(result=result, score=score, details=details))
    scored.sort(key=lambda r: -r["score"])  # stable: ties keep the original order, as in JavaScript
    return scored[:top_k]


def _prepare(
    results: Sequence[Any], weights: Mapping[str, float] | None, top_k: int
) -> tuple[dict[str, float], list[int], list[str]]:
    if top_k < 0:
        raise ValueError(f"top_k must not be negative, got {top_k}")
    resolved = resolve_weights(weights)
    with_text = [(i, text) for i, r in enumerate(results) if (text := _text_and_score(r)[0])]
    return resolved, [i for i, _ in with_text], [t for _, t in with_text]


def _semantic(positions: list[int], scores: Sequence[float]) -> dict[int, float]:
    if len(scores) != len(positions):
        raise ValueError(f"the scorer returned {len(scores)} scores for {len(positions)} texts")
    return {i: float(s) for i, s in zip(positions, scores, strict=True)}


def rerank(
    results: Sequence[Any],
    query: str,
    scorer: RelevanceScorer,
    *,
    weights: Mapping[str, float] | None = None,
    top_k: int = 3,
    query_embedding: Sequence[float] | None = None,
) -> list[RerankResult]:
    """Rerank vector-search results best first, at most `top_k` (Mastra's default is 3)."""
    resolved, positions, texts = _prepare(results, weights, top_k)
    scores = scorer.score(query, texts) if texts else []
    return _fuse(results, _semantic(positions, scores), resolved, top_k, query_embedding)


async def arerank(
    results: Sequence[Any],
    query: str,
    scorer: RelevanceScorer,
    *,
    weights: Mapping[str, float] | None = None,
    top_k: int = 3,
    query_embedding: Sequence[float] | None = None,
) -> list[RerankResult]:
    """`rerank` for async callers: uses the scorer's `ascore` if it has one, else a worker thread."""
    resolved, positions, texts = _prepare(results, weights, top_k)
    scores: Sequence[float] = []
    if texts:
        ascore = getattr(scorer, "ascore", None)
        if ascore is not None:
            scores = await ascore(query, texts)
        else:
            scores = await asyncio.to_thread(scorer.score, query, texts)
    return _fuse(results, _semantic(positions, scores), resolved, top_k, query_embedding)
