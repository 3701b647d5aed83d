"""Embedding interfaces. Write and read must use the same models: that is the embedding contract."""

from __future__ import annotations

from typing import Protocol, TypedDict


class SparseVector(TypedDict):
    indices: list[int]
    values: list[float]


class DenseEmbedder(Protocol):
    """Dense text embeddings; `model_id` and `dimension` go into the index's contract."""

    model_id: str
    dimension: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


class SparseEmbedder(Protocol):
    """Sparse lexical embeddings (term id -> weight); `model_id` goes into the contract."""

    model_id: str

    def embed_documents(self, texts: list[str]) -> list[SparseVector]: ...

    def embed_query(self, text: str) -> SparseVector: ...
