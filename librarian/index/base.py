"""The vector index interface, with Pinecone's semantics so Pinecone users recognise it.

Every call names its namespace (keyword-only, no default): the namespace is the organization, and
"no namespace" must never mean "the default namespace". Metadata is flat (str, int, float, bool or
list of str); filters use Pinecone's operators and are relevance within a tenant, never isolation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from librarian.embeddings.base import SparseVector

MetadataValue = str | int | float | bool | list[str]


class VectorRecord(TypedDict, total=False):
    id: str  # required
    values: list[float]  # required
    sparse_values: SparseVector
    metadata: dict[str, MetadataValue]


@dataclass(frozen=True)
class EmbeddingContract:
    """What an index was built with. Opening it with anything else is an error naming both."""

    dense_model: str
    dimension: int
    sparse_model: str
    metric: str = "dotproduct"

    def describe(self) -> str:
        return (
            f"dense={self.dense_model} ({self.dimension}-d), sparse={self.sparse_model}, metric={self.metric}"
        )


@dataclass
class QueryMatch:
    """One hit. `score` is the fused alpha-weighted score; channel scores are set when known."""

    id: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    values: list[float] | None = None
    dense_score: float | None = None
    sparse_score: float | None = None


@dataclass
class NamespaceStats:
    vector_count: int


@dataclass
class IndexStats:
    dimension: int
    namespaces: dict[str, NamespaceStats]
    total_vector_count: int


class VectorIndex(Protocol):
    """A hybrid (dense + sparse) dotproduct index partitioned by namespace."""

    contract: EmbeddingContract

    def upsert(self, records: list[VectorRecord], *, namespace: str) -> int:
        """Insert or replace records by id; returns how many were written."""
        ...

    def query(
        self,
        *,
        namespace: str,
        vector: list[float],
        sparse_vector: SparseVector | None = None,
        alpha: float = 0.75,
        top_k: int = 40,
        filter: dict[str, Any] | None = None,
        include_values: bool = False,
        include_metadata: bool = True,
    ) -> list[QueryMatch]:
        """Score = alpha * dense·q + (1 - alpha) * sparse·q, best first."""
        ...

    def delete(
        self,
        *,
        namespace: str,
        ids: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        delete_all: bool = False,
    ) -> None:
        """Delete by ids, by metadata filter, or everything in the namespace (exactly one of them)."""
        ...

    def fetch(self, ids: list[str], *, namespace: str) -> dict[str, VectorRecord]: ...

    def list_ids(self, *, namespace: str, prefix: str | None = None) -> list[str]: ...

    def describe_index_stats(self) -> IndexStats: ...


def record_id(path: str, chunk_index: int) -> str:
    """Record id `{path}:{chunkIndex}`, percent-encoding non-ASCII (Pinecone ids must be ASCII)."""
    return f"{record_id_prefix(path)}{chunk_index}"


def record_id_prefix(path: str) -> str:
    """Prefix shared by every record of one document (for `list_ids(prefix=...)`)."""
    from urllib.parse import quote

    return f"{quote(path, safe='/._-()[]~+,;=@!$')}:"
