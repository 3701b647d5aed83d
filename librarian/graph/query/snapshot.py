"""What local search reads of one published graph version, loaded once per process and shared.

Why a snapshot: matching a question needs every entity's names and name vector, and bridge
expansion needs which chunks and documents mention each entity; reading those from the store per
question would cost more than the search itself. A snapshot is keyed by `version_key`, so a new
publication (or another store) never reads a stale one, and only the current version of an
organization stays in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from librarian.errors import ContractMismatchError
from librarian.graph.model import Community
from librarian.graph.query.match import EntityRef, name_lookup


@dataclass
class GraphSnapshot:
    """What every query of one (organization, version) reads: loaded once, then shared."""

    version: int
    entities: list[EntityRef]
    name_vectors: np.ndarray | None
    entity_types: dict[str, str]
    entity_paths: dict[str, list[str]]  # key -> document paths mentioning it
    chunk_entities: dict[str, list[str]]  # chunk id -> entity keys extracted from it
    communities: dict[int, Community]
    path_chunk: dict[str, str]  # document path -> one chunk id of it (its liveness probe)
    summary_vectors: dict[int | None, tuple[list[int], np.ndarray]] = field(default_factory=dict)  # by level

    @property
    def name_lookup(self) -> dict[str, EntityRef]:
        """Normalised name or alias -> entity, for intent entities (computed once per snapshot)."""
        cached = self.__dict__.get("_lookup")
        if cached is None:
            cached = self.__dict__["_lookup"] = name_lookup(self.entities)
        return cached

    @property
    def document_frequency(self) -> dict[str, int]:
        """Entity key -> number of documents mentioning it (computed once per snapshot)."""
        cached = self.__dict__.get("_frequency")
        if cached is None:
            cached = self.__dict__["_frequency"] = {k: len(v) for k, v in self.entity_paths.items()}
        return cached


_SNAPSHOTS: dict[tuple[Any, ...], GraphSnapshot] = {}


COMMUNITY_PROBES = 20
"""Documents probed per selected community: a community drawing on more is kept without probing
the rest (every one of them deleted since the build is unlikely, and the next build drops it)."""


def community_documents(snapshot: GraphSnapshot, community_id: int) -> tuple[list[str], bool]:
    """(up to COMMUNITY_PROBES documents its members come from, whether more were left unprobed)."""
    paths = sorted(
        {
            p
            for m in snapshot.communities[community_id].members
            for p in snapshot.entity_paths.get(m, [])
            if p in snapshot.path_chunk
        }
    )
    return paths[:COMMUNITY_PROBES], len(paths) > COMMUNITY_PROBES


def version_key(graph: Any, published: Any) -> tuple[Any, ...]:
    """Identifies one published version of one organization in one store, for in-process caches.

    The engine object tells stores apart, and the publication time tells a version from one that
    reused its number in another store whose engine got the same `id` after garbage collection.
    """
    engine = getattr(graph, "_engine", graph)
    return (id(engine), graph.org, published.version, published.published_at or published.created_at)


def load_snapshot(graph: Any, published: Any) -> GraphSnapshot:
    """The snapshot of `published`, read from `graph` on first use; older versions are let go."""
    key = version_key(graph, published)
    version = published.version
    cached = _SNAPSHOTS.get(key)
    if cached is not None:
        return cached
    entities = graph.entities(version=version)
    # The key is a spelling of the name too ("scrooge" for "Ebenezer Scrooge"): it joins the aliases.
    refs = [
        EntityRef(
            e.name, e.display_name or e.name, tuple(dict.fromkeys(a for a in [e.name, *e.aliases] if a))
        )
        for e in entities
    ]
    keys, matrix = graph.entity_name_embeddings(version=version)
    name_vectors = None
    if len(keys):
        row = {k: i for i, k in enumerate(keys)}
        dim = matrix.shape[1]
        name_vectors = np.zeros((len(refs), dim), dtype=np.float32)
        for i, ref in enumerate(refs):
            if ref.id in row:
                name_vectors[i] = matrix[row[ref.id]]
    chunk_entities: dict[str, list[str]] = {}
    entity_paths: dict[str, list[str]] = {}
    path_chunk: dict[str, str] = {}
    for e in entities:
        entity_paths[e.name] = sorted({s.path for s in e.sources})
        for source in e.sources:
            chunk_entities.setdefault(source.chunk_id, []).append(e.name)
            path_chunk.setdefault(source.path, source.chunk_id)
    communities = {c.id: c for c in graph.communities(version=version)}
    snapshot = GraphSnapshot(
        version,
        refs,
        name_vectors,
        {e.name: e.type for e in entities},
        entity_paths,
        chunk_entities,
        communities,
        path_chunk,
    )
    for old in [k for k in _SNAPSHOTS if k[:2] == key[:2]]:
        del _SNAPSHOTS[old]  # one version per organization in memory
    _SNAPSHOTS[key] = snapshot
    return snapshot


def check_dimension(matrix: np.ndarray | None, query_vector: np.ndarray, model: str) -> None:
    """Graph vectors and the query vector must come from one embedding model (invariant 1)."""
    if matrix is not None and matrix.size and matrix.shape[1] != query_vector.shape[0]:
        raise ContractMismatchError(
            f"the graph was embedded with {model or 'another model'} ({matrix.shape[1]}-d) but queries are "
            f"embedded {query_vector.shape[0]}-d: rebuild the graph with the configured dense model"
        )
