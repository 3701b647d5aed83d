"""A version's lifecycle: begin, publish (one transaction switches the pointer), abort, prune.

Readers follow the published pointer, so a build in progress or a failed one is never seen; pruning
right after each switch keeps only the published version and builds still running.
"""

from __future__ import annotations

import json
from typing import Any

from librarian.graph.model import GraphVersion
from librarian.graph.schema import VERSIONED_TABLES
from librarian.graph.sql.base import SqlOrgGraphBase
from librarian.graph.sql.codec import now
from librarian.graph.sql.runner import Scoped


class VersionLifecycle(SqlOrgGraphBase):
    _VERSION_COLS = (
        "version, status, created_at, published_at, extractor, summarizer, embedding_model, counts, stats"
    )

    def _version_from_row(self, row: tuple[Any, ...]) -> GraphVersion:
        version, status, created, published, extractor, summarizer, model, counts, stats = row
        counts_d = json.loads(counts or "{}")
        return GraphVersion(
            org=self.org,
            version=int(version),
            status=status,
            created_at=created,
            published_at=published,
            documents=int(counts_d.get("documents", 0)),
            entities=int(counts_d.get("entities", 0)),
            edges=int(counts_d.get("edges", 0)),
            claims=int(counts_d.get("claims", 0)),
            communities_per_level={int(k): int(v) for k, v in counts_d.get("communities", {}).items()},
            extractor=extractor,
            summarizer=summarizer,
            embedding_model=model,
            stats=json.loads(stats or "{}"),
        )

    def published_version(self) -> GraphVersion | None:
        rows = self._query(
            f"SELECT {self._VERSION_COLS} FROM graph_versions WHERE org = :org AND version = "
            "(SELECT version FROM graph_published WHERE org = :org)"
        )
        return self._version_from_row(rows[0]) if rows else None

    def versions(self) -> list[GraphVersion]:
        rows = self._query(
            f"SELECT {self._VERSION_COLS} FROM graph_versions WHERE org = :org ORDER BY version DESC"
        )
        return [self._version_from_row(r) for r in rows]

    def begin_version(self, *, extractor: str, summarizer: str, embedding_model: str) -> int:
        with self._tx() as tx:
            rows = tx.run("SELECT COALESCE(MAX(version), 0) FROM graph_versions WHERE org = :org")
            version = int(rows[0][0]) + 1
            tx.run(
                "INSERT INTO graph_versions (org, version, status, created_at, extractor, summarizer, "
                "embedding_model, counts, stats) VALUES (:org, :version, 'building', :created, :extractor, "
                ":summarizer, :model, '{}', '{}')",
                {
                    "version": version,
                    "created": now(),
                    "extractor": extractor,
                    "summarizer": summarizer,
                    "model": embedding_model,
                },
            )
        return version

    def _counts(self, tx: Scoped, version: int) -> dict[str, Any]:
        p = {"version": version}

        def count(table: str) -> int:
            return int(
                tx.run(f"SELECT COUNT(*) FROM {table} WHERE org = :org AND version = :version", p)[0][0]
            )

        levels = tx.run(
            "SELECT level, COUNT(*) FROM graph_communities WHERE org = :org AND version = :version "
            "GROUP BY level",
            p,
        )
        return {
            "documents": count("graph_documents"),
            "entities": count("graph_entities"),
            "edges": count("graph_edges"),
            "claims": count("graph_claims"),
            "communities": {str(int(level)): int(n) for level, n in levels},
        }

    def publish(self, version: int, stats: dict[str, Any] | None = None) -> GraphVersion:
        version = int(version)
        with self._tx() as tx:
            rows = tx.run(
                "SELECT status FROM graph_versions WHERE org = :org AND version = :version",
                {"version": version},
            )
            if not rows or rows[0][0] != "building":
                raise ValueError(f"graph version {version} is not a build in progress")
            counts = self._counts(tx, version)
            tx.run(
                "UPDATE graph_versions SET status = 'superseded' WHERE org = :org AND status = 'published'"
            )
            tx.run(
                "UPDATE graph_versions SET status = 'published', published_at = :at, counts = :counts, "
                "stats = :stats WHERE org = :org AND version = :version",
                {
                    "version": version,
                    "at": now(),
                    "counts": json.dumps(counts),
                    "stats": json.dumps(stats or {}, default=str),
                },
            )
            tx.run(
                "INSERT INTO graph_published (org, version) VALUES (:org, :version) "
                "ON CONFLICT (org) DO UPDATE SET version = excluded.version",
                {"version": version},
            )
        self._prune()
        published = self.published_version()
        assert published is not None
        return published

    def _prune(self) -> None:
        """Drop superseded and failed versions, then chunks no retained version refers to."""
        with self._tx() as tx:
            for table in VERSIONED_TABLES:
                tx.run(
                    f"DELETE FROM {table} WHERE org = :org AND version IN "
                    "(SELECT version FROM graph_versions "
                    "WHERE org = :org AND status IN ('superseded', 'failed'))"
                )
            tx.run("DELETE FROM graph_versions WHERE org = :org AND status IN ('superseded', 'failed')")
            tx.run(
                "DELETE FROM graph_chunks WHERE org = :org AND NOT EXISTS (SELECT 1 FROM graph_documents d "
                "WHERE d.org = :org AND d.path = graph_chunks.path "
                "AND d.content_hash = graph_chunks.content_hash)"
            )

    def abort(self, version: int) -> None:
        with self._tx() as tx:
            tx.run(
                "UPDATE graph_versions SET status = 'failed' WHERE org = :org AND version = :version "
                "AND status = 'building'",
                {"version": int(version)},
            )
        self._prune()
