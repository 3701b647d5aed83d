"""The one graph schema, rendered for SQLite and PostgreSQL (only two column types differ).

Every table's primary key starts with `org`, so every lookup the store makes is an index prefix scan
within one organization. Versioned tables also carry `version`; chunks and the extraction cache are
keyed by content hash instead (they are facts about a document version, shared by graph versions).
Embeddings are float32 bytes (L2-normalised), so both engines store them the same way.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS graph_versions (
  org TEXT NOT NULL, version INTEGER NOT NULL, status TEXT NOT NULL,
  created_at TEXT NOT NULL, published_at TEXT,
  extractor TEXT NOT NULL, summarizer TEXT NOT NULL, embedding_model TEXT NOT NULL,
  counts TEXT NOT NULL DEFAULT '{}', stats TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (org, version));
CREATE TABLE IF NOT EXISTS graph_published (
  org TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS graph_documents (
  org TEXT NOT NULL, version INTEGER NOT NULL, path TEXT NOT NULL, content_hash TEXT NOT NULL,
  extractor TEXT NOT NULL, chunk_count INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (org, version, path));
CREATE TABLE IF NOT EXISTS graph_entities (
  org TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL, display_name TEXT NOT NULL,
  type TEXT NOT NULL, description TEXT NOT NULL, mentions INTEGER NOT NULL, degree INTEGER NOT NULL,
  embedding {BLOB},
  PRIMARY KEY (org, version, name));
CREATE TABLE IF NOT EXISTS graph_aliases (
  org TEXT NOT NULL, version INTEGER NOT NULL, alias TEXT NOT NULL, name TEXT NOT NULL,
  PRIMARY KEY (org, version, alias));
CREATE INDEX IF NOT EXISTS graph_aliases_name ON graph_aliases (org, version, name);
CREATE TABLE IF NOT EXISTS graph_edges (
  org TEXT NOT NULL, version INTEGER NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,
  relation TEXT NOT NULL, weight {REAL} NOT NULL, description TEXT NOT NULL,
  PRIMARY KEY (org, version, source, target));
CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges (org, version, target);
CREATE TABLE IF NOT EXISTS graph_claims (
  org TEXT NOT NULL, version INTEGER NOT NULL, id TEXT NOT NULL, subject TEXT NOT NULL, object TEXT,
  description TEXT NOT NULL, chunk_id TEXT NOT NULL, path TEXT NOT NULL,
  PRIMARY KEY (org, version, id));
CREATE INDEX IF NOT EXISTS graph_claims_subject ON graph_claims (org, version, subject);
CREATE INDEX IF NOT EXISTS graph_claims_object ON graph_claims (org, version, object);
CREATE TABLE IF NOT EXISTS graph_sources (
  org TEXT NOT NULL, version INTEGER NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL,
  path TEXT NOT NULL, chunk_id TEXT NOT NULL,
  PRIMARY KEY (org, version, kind, item, path, chunk_id));
CREATE INDEX IF NOT EXISTS graph_sources_path ON graph_sources (org, path);
CREATE TABLE IF NOT EXISTS graph_communities (
  org TEXT NOT NULL, version INTEGER NOT NULL, id INTEGER NOT NULL, level INTEGER NOT NULL,
  parent INTEGER, children TEXT NOT NULL, is_leaf INTEGER NOT NULL, fingerprint TEXT NOT NULL,
  title TEXT NOT NULL, summary TEXT NOT NULL, embedding {BLOB}, summarizer TEXT NOT NULL,
  rank {REAL} NOT NULL,
  PRIMARY KEY (org, version, id));
CREATE INDEX IF NOT EXISTS graph_communities_level ON graph_communities (org, version, level);
CREATE INDEX IF NOT EXISTS graph_communities_fp ON graph_communities (org, version, fingerprint);
CREATE TABLE IF NOT EXISTS graph_community_members (
  org TEXT NOT NULL, version INTEGER NOT NULL, community INTEGER NOT NULL, name TEXT NOT NULL,
  PRIMARY KEY (org, version, community, name));
CREATE INDEX IF NOT EXISTS graph_community_members_name ON graph_community_members (org, version, name);
CREATE TABLE IF NOT EXISTS graph_chunks (
  org TEXT NOT NULL, path TEXT NOT NULL, content_hash TEXT NOT NULL, chunk_index INTEGER NOT NULL,
  chunk_id TEXT NOT NULL, page INTEGER NOT NULL, bbox TEXT, text TEXT NOT NULL,
  PRIMARY KEY (org, path, content_hash, chunk_index));
CREATE INDEX IF NOT EXISTS graph_chunks_id ON graph_chunks (org, chunk_id);
CREATE TABLE IF NOT EXISTS graph_extractions (
  org TEXT NOT NULL, path TEXT NOT NULL, content_hash TEXT NOT NULL, extractor TEXT NOT NULL,
  payload TEXT NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY (org, path));
CREATE TABLE IF NOT EXISTS graph_chunk_extractions (
  org TEXT NOT NULL, path TEXT NOT NULL, extractor TEXT NOT NULL, text_hash TEXT NOT NULL,
  payload TEXT NOT NULL,
  PRIMARY KEY (org, path, extractor, text_hash));
"""

VERSIONED_TABLES = (
    "graph_documents",
    "graph_entities",
    "graph_aliases",
    "graph_edges",
    "graph_claims",
    "graph_sources",
    "graph_communities",
    "graph_community_members",
)
ALL_TABLES = (
    *VERSIONED_TABLES,
    "graph_versions",
    "graph_published",
    "graph_chunks",
    "graph_extractions",
    "graph_chunk_extractions",
)


def statements(dialect: str) -> list[str]:
    """The DDL statements for `sqlite` or `postgres`."""
    types = {
        "sqlite": {"BLOB": "BLOB", "REAL": "REAL"},
        "postgres": {"BLOB": "BYTEA", "REAL": "DOUBLE PRECISION"},
    }
    ddl = _TABLES
    for name, value in types[dialect].items():
        ddl = ddl.replace("{" + name + "}", value)
    return [s.strip() for s in ddl.split(";") if s.strip()]
