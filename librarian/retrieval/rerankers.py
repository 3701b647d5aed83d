"""Rerankers for the read path, and the one place that maps `settings.reranker` to one of them.

Every reranker keeps the `Reranker` contract (librarian/retrieval/reranker.py): best first, at most top_k, the
floor applied by the caller. Scores are comparable only within one reranker, so each declares the
floor that fits its own scale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from librarian.chat_model import require_chat_model
from librarian.errors import ConfigError
from librarian.index.base import QueryMatch
from librarian.retrieval.rerank import rerank, resolve_weights
from librarian.retrieval.reranker import RelevanceScorer, Reranked, Reranker

if TYPE_CHECKING:
    from librarian.stack import Stack


class NoReranker:
    """The hybrid index's fused order as is; no floor, because fused scores have no fixed scale."""

    name = "none"
    floor: float | None = None

    def rerank(self, query: str, matches: list[QueryMatch], top_k: int) -> list[Reranked]:
        return [Reranked(match=m, score=m.score, details={"fused": m.score}) for m in matches[:top_k]]


class ScorerReranker:
    """Order by a text relevance scorer alone; the scorer's scale, hence its floor, carries over.

    Candidates without text score 0 without being sent: there is nothing to judge.
    """

    def __init__(self, scorer: RelevanceScorer) -> None:
        self.scorer = scorer
        self.name = scorer.name
        self.floor = scorer.floor

    def rerank(self, query: str, matches: list[QueryMatch], top_k: int) -> list[Reranked]:
        with_text = [i for i, m in enumerate(matches) if m.metadata.get("text")]
        texts = [str(matches[i].metadata["text"]) for i in with_text]
        scores = dict(zip(with_text, self.scorer.score(query, texts) if texts else [], strict=True))
        ranked = [
            Reranked(
                match=m, score=scores.get(i, 0.0), details={"rerank": scores.get(i, 0.0), "fused": m.score}
            )
            for i, m in enumerate(matches)
        ]
        ranked.sort(key=lambda r: -r.score)  # stable: ties keep the hybrid order
        return ranked[:top_k]


class WeightedReranker:
    """Mastra's fusion (`librarian.retrieval.rerank.rerank`): semantic, vector and position scores by weight.

    The fused score mixes a [0, 1] relevance with the index's unbounded hybrid score, so no floor
    follows from the scorer's; pass one if you have measured one for your data.
    """

    def __init__(
        self,
        scorer: RelevanceScorer,
        weights: Mapping[str, float] | None = None,
        *,
        floor: float | None = None,
    ) -> None:
        self.scorer = scorer
        self.weights = resolve_weights(weights)  # fail at construction, not on the first query
        self.name = f"weighted-{scorer.name}"
        self.floor = floor

    def rerank(self, query: str, matches: list[QueryMatch], top_k: int) -> list[Reranked]:
        results = rerank(matches, query, self.scorer, weights=self.weights, top_k=top_k)
        return [
            Reranked(
                match=r["result"],
                score=r["score"],
                details={
                    "rerank": r["score"],
                    "semantic": r["details"]["semantic"],
                    "vector": r["details"]["vector"],
                    "position": r["details"]["position"],
                },
            )
            for r in results
        ]


def make_reranker(stack: Stack) -> Reranker:
    """The reranker chosen by `settings.reranker`, built once per stack and shared by every search.

    Rerankers hold models and caches (the local one keeps sentence and token vectors per chunk), so
    building one per call threw the caches away and reloaded the scorer on every question.
    """
    return stack.memo("reranker", lambda: build_reranker(stack))


def build_reranker(stack: Stack) -> Reranker:
    """A new reranker for `settings.reranker`; cloud SDKs are imported only when chosen."""
    s = stack.settings
    choice = s.reranker
    if choice == "none":
        return NoReranker()  # type: ignore[return-value]  # floor None: the caller skips the floor
    if choice == "local":
        from librarian.retrieval.local_rerank import LocalReranker, sentence_embedder

        return LocalReranker(sentence_embedder(stack.dense))
    if choice == "pinecone":
        from librarian.retrieval.scorers import PineconeRerankScorer

        if not s.pinecone_api_key:
            raise ConfigError("PINECONE_API_KEY is not set, but LIBRARIAN_RERANKER=pinecone needs it")
        return ScorerReranker(PineconeRerankScorer(api_key=s.pinecone_api_key, host=s.pinecone_host))
    if choice == "llm":
        from librarian.retrieval.scorers import LLMRelevanceScorer

        return ScorerReranker(
            LLMRelevanceScorer(require_chat_model(stack.settings, "LIBRARIAN_RERANKER=llm"))
        )
    if choice == "cohere":
        from librarian.retrieval.cohere_scorer import CohereRerankScorer

        if not s.cohere_api_key:
            raise ConfigError(
                "COHERE_API_KEY (or CO_API_KEY) is not set, but LIBRARIAN_RERANKER=cohere needs it"
            )
        scorer = CohereRerankScorer(
            api_key=s.cohere_api_key,
            base_url=s.cohere_base_url,
            model=s.cohere_rerank_model,
            timeout_s=s.cohere_timeout_s,
        )
        # Seed 002: Cohere is the semantic part of Mastra's rerank, fused with the vector score and
        # the position by the default weights; see WeightedReranker for why the fusion has no floor.
        return WeightedReranker(scorer)
    if choice == "cross-encoder":
        from librarian.retrieval.scorers import CrossEncoderScorer

        if s.rerank_model_path is None:
            raise ConfigError(
                "LIBRARIAN_RERANK_MODEL_PATH is not set, but LIBRARIAN_RERANKER=cross-encoder needs it"
            )
        return ScorerReranker(CrossEncoderScorer(s.rerank_model_path))
    raise ConfigError(f"unknown reranker {choice!r}")
