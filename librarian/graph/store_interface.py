"""The graph store interface: one schema, two engines (SQLite default, PostgreSQL), scoped per organization.

Tenancy is enforced in one place: `GraphStore.scope(org)` validates the organization (a missing or
malformed one raises `TenantError`; there is no default namespace) and returns an `OrgGraph` bound to
it. Every read and write is a method of that handle, and the handle's single statement runner adds the
organization to every statement (`WHERE org = :org` / `INSERT ... (org, ...)`), so no query can be
issued without it (see `librarian.graph.sql.runner.Scoped`).

Versions: a build writes a complete new version next to the published one and `publish()` switches
the organization's published-version pointer in one transaction; readers keep seeing the previous
version until then. Superseded versions are pruned right after the switch.

This module imports no engine, so the SQL and both engines can implement it without a circle;
the factory that picks an engine is `librarian.graph.store.open_graph_store`.

The API is synchronous (SQLite and psycopg calls are short); async callers use `asyncio.to_thread`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from librarian.graph.model import (
    ChunkRef,
    Claim,
    Community,
    DocumentRef,
    Edge,
    Entity,
    GraphVersion,
    KeywordHit,
)


class OrgGraph(ABC):
    """One organization's view of the store. Reads default to the published version."""

    org: str

    # --- versions -------------------------------------------------------------------------------
    @abstractmethod
    def published_version(self) -> GraphVersion | None:
        """The published version with its counts, or None before the first build."""

    @abstractmethod
    def versions(self) -> list[GraphVersion]:
        """Every retained version (published and in-progress), newest first."""

    # --- reads (all of the published version unless `version` is given) ---------------------------
    @abstractmethod
    def documents(self, *, version: int | None = None) -> list[DocumentRef]:
        """Documents (path, content hash, extractor key) the version was built from."""

    @abstractmethod
    def entities(self, names: Iterable[str] | None = None, *, version: int | None = None) -> list[Entity]:
        """Entities with aliases, sources and degree; all of them, or those keyed by `names`."""

    @abstractmethod
    def resolve_names(self, keys: Iterable[str], *, version: int | None = None) -> dict[str, str]:
        """Map normalised names or aliases to entity keys (alias → canonical; unknown keys omitted)."""

    @abstractmethod
    def entity_name_embeddings(self, *, version: int | None = None) -> tuple[list[str], np.ndarray]:
        """(entity keys, float32 matrix of L2-normalised name embeddings), rows aligned with keys."""

    @abstractmethod
    def edges(self, names: Iterable[str] | None = None, *, version: int | None = None) -> list[Edge]:
        """Edges touching any of `names` (either end), or every edge."""

    @abstractmethod
    def neighbours(self, names: Iterable[str], hops: int = 2, *, version: int | None = None) -> set[str]:
        """Entity keys reachable within `hops` undirected edges of `names` (the seeds included)."""

    @abstractmethod
    def communities(
        self,
        *,
        level: int | None = None,
        ids: Iterable[int] | None = None,
        leaves_only: bool = False,
        with_embeddings: bool = False,
        version: int | None = None,
    ) -> list[Community]:
        """Communities (members, parent, children, summary), filtered by level / ids / leaves."""

    @abstractmethod
    def communities_of(self, names: Iterable[str], *, version: int | None = None) -> dict[str, list[int]]:
        """For each entity key, the ids of every community (all levels) that has it as a member."""

    @abstractmethod
    def summary_embeddings(
        self, *, level: int | None = None, version: int | None = None
    ) -> tuple[list[int], np.ndarray]:
        """(community ids, float32 matrix of L2-normalised summary embeddings) of summarised communities."""

    @abstractmethod
    def claims_for(
        self, names: Iterable[str], *, limit: int | None = None, version: int | None = None
    ) -> list[Claim]:
        """Claims whose subject or object is in `names`, each with its live sources only.

        A source whose document is no longer part of the version (deleted since the build) is dropped;
        a claim left without a source is not returned.
        """

    @abstractmethod
    def chunks(self, chunk_ids: Iterable[str], *, version: int | None = None) -> list[ChunkRef]:
        """Chunks by id (the vector record id), in the order asked; unknown ids are omitted."""

    @abstractmethod
    def keyword_search(
        self, terms: Sequence[str], *, limit: int = 24, version: int | None = None
    ) -> list[KeywordHit]:
        """Chunks containing any term (case-insensitive substring, like ILIKE), at most 16 terms used.

        Sorted by number of matched terms, then by chunk length (longer first), then chunk id.
        """

    # --- extraction cache (not versioned: keyed by content hash + extractor key) ------------------
    @abstractmethod
    def get_extraction(self, path: str, content_hash: str, extractor: str) -> dict[str, Any] | None:
        """A cached extraction payload for this exact document content and extractor settings."""

    @abstractmethod
    def put_extraction(self, path: str, content_hash: str, extractor: str, payload: dict[str, Any]) -> None:
        """Cache an extraction payload (replaces any entry of the same path)."""

    @abstractmethod
    def cached_extractions(self) -> dict[str, tuple[str, str]]:
        """path → (content hash, extractor key) of every cached extraction."""

    @abstractmethod
    def prune_extractions(self, indexed: Mapping[str, str]) -> int:
        """Drop cached extractions of document versions that are no longer indexed; returns how many.

        `indexed` maps each indexed path to its content hash. A document extraction whose (path, content
        hash) is not in it goes (a deleted document, or an older version of a changed one); per-chunk
        observations go only with their path (a changed document reuses its unchanged chunks').
        """

    @abstractmethod
    def get_chunk_extractions(self, path: str, extractor: str) -> dict[str, dict[str, Any]]:
        """Per-chunk observations of the document's last extraction, by chunk text hash."""

    @abstractmethod
    def put_chunk_extractions(
        self, path: str, extractor: str, observations: dict[str, dict[str, Any]]
    ) -> None:
        """Replace the document's per-chunk observations (the old ones of other texts are dropped)."""

    # --- chunks (not versioned: keyed by path + content hash; read through a version's documents) --
    @abstractmethod
    def put_chunks(self, path: str, content_hash: str, chunks: Sequence[ChunkRef]) -> None:
        """Store a document version's chunks (idempotent)."""

    @abstractmethod
    def has_chunks(self, path: str, content_hash: str) -> bool: ...

    # --- build and publish --------------------------------------------------------------------------
    @abstractmethod
    def begin_version(self, *, extractor: str, summarizer: str, embedding_model: str) -> int:
        """Start a new version (status building); returns its number."""

    @abstractmethod
    def write_version(
        self,
        version: int,
        *,
        documents: Sequence[DocumentRef],
        entities: Sequence[Entity],
        edges: Sequence[Edge],
        claims: Sequence[Claim],
        entity_embeddings: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Write a building version's documents, entities (aliases, sources), edges and claims."""

    @abstractmethod
    def write_communities(self, version: int, communities: Sequence[Community]) -> None:
        """Write a building version's communities with members, summaries and embeddings."""

    @abstractmethod
    def update_summaries(self, version: int, communities: Sequence[Community]) -> None:
        """Set title, summary, summarizer and summary embedding of a building version's communities."""

    @abstractmethod
    def reusable_summaries(self, fingerprints: Iterable[str], summarizer: str) -> dict[str, Community]:
        """Summaries of the published version by fingerprint (same summarizer key only), for reuse."""

    @abstractmethod
    def reusable_entity_embeddings(self, names: Iterable[str], embedding_model: str) -> dict[str, np.ndarray]:
        """Entity-name embeddings of the published version (same model only), for reuse."""

    @abstractmethod
    def publish(self, version: int, stats: dict[str, Any] | None = None) -> GraphVersion:
        """Switch the published pointer to `version` in one transaction, then prune older versions."""

    @abstractmethod
    def abort(self, version: int) -> None:
        """Drop a building version (a failed build leaves the published one untouched)."""

    @abstractmethod
    def retract_document(self, path: str) -> None:
        """Remove a deleted document from every retained version at once (before the next build).

        Its claims' sources stop being returned immediately; the graph itself is rebuilt later.
        """

    @abstractmethod
    def drop_all(self) -> None:
        """Delete everything of this organization (tests, organization removal)."""


class GraphStore(ABC):
    """The store of every organization's graph. `scope` is the only way in."""

    @abstractmethod
    def scope(self, org: str | None) -> OrgGraph:
        """The organization's view; raises TenantError for a missing or malformed organization."""

    @abstractmethod
    def close(self) -> None: ...
