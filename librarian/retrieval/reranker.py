"""Interfaces of query-time reranking (rerank never runs on the upload path).

A `RelevanceScorer` scores (query, text) pairs in [0, 1]: an LLM judge, Pinecone's bge-reranker, a
local cross-encoder. A `Reranker` reorders hybrid-search candidates and may use more than text (the
embedded default also uses the dense and sparse channel scores and the original position). Each
declares its own `floor`: scores are comparable only within one reranker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from librarian.index.base import QueryMatch


class RelevanceScorer(Protocol):
    name: str
    floor: float

    def score(self, query: str, texts: list[str]) -> list[float]:
        """One relevance score in [0, 1] per text, same order."""
        ...


@dataclass
class Reranked:
    match: QueryMatch
    score: float  # the reranker's score (what the floor applies to)
    details: dict[str, float] = field(default_factory=dict)  # per-signal breakdown


class Reranker(Protocol):
    name: str
    floor: float

    def rerank(self, query: str, matches: list[QueryMatch], top_k: int) -> list[Reranked]:
        """Best first, at most top_k, before the floor is applied (the caller applies it)."""
        ...
