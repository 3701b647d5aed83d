"""Writing a building version: its graph (documents, entities, aliases, edges, claims, sources) in one
transaction, then its communities, then their summaries as they are produced."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from librarian.graph.model import Claim, Community, DocumentRef, Edge, Entity
from librarian.graph.sql import rows
from librarian.graph.sql.base import SqlOrgGraphBase

_INSERT_DOCUMENTS = (
    "INSERT INTO graph_documents (org, version, path, content_hash, extractor, chunk_count) "
    "VALUES (:org, :version, :path, :hash, :extractor, :count)"
)
_INSERT_ENTITIES = (
    "INSERT INTO graph_entities (org, version, name, display_name, type, description, mentions, "
    "degree, embedding) VALUES (:org, :version, :name, :display, :type, :description, "
    ":mentions, :degree, :embedding)"
)
_INSERT_ALIASES = (
    "INSERT INTO graph_aliases (org, version, alias, name) VALUES (:org, :version, :alias, :name)"
)
_INSERT_EDGES = (
    "INSERT INTO graph_edges (org, version, source, target, relation, weight, description) "
    "VALUES (:org, :version, :source, :target, :relation, :weight, :description)"
)
_INSERT_CLAIMS = (
    "INSERT INTO graph_claims (org, version, id, subject, object, description, chunk_id, path) "
    "VALUES (:org, :version, :id, :subject, :object, :description, :chunk, :path)"
)
_INSERT_SOURCES = (
    "INSERT INTO graph_sources (org, version, kind, item, path, chunk_id) "
    "VALUES (:org, :version, :kind, :item, :path, :chunk)"
)
_INSERT_COMMUNITIES = (
    "INSERT INTO graph_communities (org, version, id, level, parent, children, is_leaf, "
    "fingerprint, "
    "title, summary, embedding, summarizer, rank) VALUES (:org, :version, :id, :level, :parent, "
    ":children, :leaf, :fp, :title, :summary, :embedding, :summarizer, :rank)"
)
_INSERT_MEMBERS = (
    "INSERT INTO graph_community_members (org, version, community, name) "
    "VALUES (:org, :version, :community, :name)"
)
_UPDATE_SUMMARIES = (
    "UPDATE graph_communities SET title = :title, summary = :summary, summarizer = :summarizer, "
    "embedding = :embedding WHERE org = :org AND version = :version AND id = :id"
)


class GraphWrites(SqlOrgGraphBase):
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
        embeddings = entity_embeddings or {}
        degree = rows.degrees(edges)
        v = {"version": int(version)}
        with self._tx() as tx:
            tx.many(_INSERT_DOCUMENTS, rows.document_rows(v, documents))
            tx.many(_INSERT_ENTITIES, rows.entity_rows(v, entities, degree, embeddings))
            tx.many(_INSERT_ALIASES, rows.alias_rows(v, entities))
            tx.many(_INSERT_EDGES, rows.edge_rows(v, edges))
            tx.many(_INSERT_CLAIMS, rows.claim_rows(v, claims))
            tx.many(_INSERT_SOURCES, rows.source_rows(v, entities, edges, claims))

    def write_communities(self, version: int, communities: Sequence[Community]) -> None:
        v = {"version": int(version)}
        with self._tx() as tx:
            tx.many(_INSERT_COMMUNITIES, rows.community_rows(v, communities))
            tx.many(_INSERT_MEMBERS, rows.member_rows(v, communities))

    def update_summaries(self, version: int, communities: Sequence[Community]) -> None:
        with self._tx() as tx:
            tx.many(_UPDATE_SUMMARIES, rows.summary_rows(version, communities))
