"""Entity reads: entities with aliases and live sources, name resolution, and name embeddings."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from librarian.graph.model import Entity
from librarian.graph.sql.base import SqlOrgGraphBase
from librarian.graph.sql.codec import from_blob, stack


class EntityReads(SqlOrgGraphBase):
    def entities(self, names: Iterable[str] | None = None, *, version: int | None = None) -> list[Entity]:
        v = self._version(version)
        if v is None:
            return []
        cols = "name, display_name, type, description, mentions, degree"
        if names is None:
            rows = self._query(
                f"SELECT {cols} FROM graph_entities WHERE org = :org AND version = :version ORDER BY name",
                {"version": v},
            )
            alias_rows = self._query(
                "SELECT name, alias FROM graph_aliases WHERE org = :org AND version = :version",
                {"version": v},
            )
        else:
            keys = list(names)
            rows = self._in_query(
                f"SELECT {cols} FROM graph_entities WHERE org = :org AND version = :version "
                "AND name IN {IN}",
                keys,
                {"version": v},
            )
            alias_rows = self._in_query(
                "SELECT name, alias FROM graph_aliases WHERE org = :org AND version = :version "
                "AND name IN {IN}",
                keys,
                {"version": v},
            )
        aliases: dict[str, list[str]] = defaultdict(list)
        for name, alias in alias_rows:
            aliases[name].append(alias)
        found = sorted(rows, key=lambda r: r[0])
        sources = self._live_sources("e", [r[0] for r in found], v)
        return [
            Entity(
                name=r[0],
                display_name=r[1],
                type=r[2],
                description=r[3],
                mentions=int(r[4]),
                degree=int(r[5]),
                aliases=sorted(aliases.get(r[0], [])),
                sources=sources.get(r[0], []),
            )
            for r in found
        ]

    def resolve_names(self, keys: Iterable[str], *, version: int | None = None) -> dict[str, str]:
        v = self._version(version)
        wanted = [k for k in dict.fromkeys(keys) if k]
        if v is None or not wanted:
            return {}
        out: dict[str, str] = {}
        for alias, name in self._in_query(
            "SELECT alias, name FROM graph_aliases WHERE org = :org AND version = :version AND alias IN {IN}",
            wanted,
            {"version": v},
        ):
            out[alias] = name
        for (name,) in self._in_query(
            "SELECT name FROM graph_entities WHERE org = :org AND version = :version AND name IN {IN}",
            wanted,
            {"version": v},
        ):
            out[name] = name
        return out

    def entity_name_embeddings(self, *, version: int | None = None) -> tuple[list[str], np.ndarray]:
        v = self._version(version)
        if v is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        rows = self._query(
            "SELECT name, embedding FROM graph_entities WHERE org = :org AND version = :version "
            "AND embedding IS NOT NULL ORDER BY name",
            {"version": v},
        )
        return [r[0] for r in rows], stack([from_blob(r[1]) for r in rows])  # type: ignore[misc]

    def reusable_entity_embeddings(self, names: Iterable[str], embedding_model: str) -> dict[str, np.ndarray]:
        published = self.published_version()
        if published is None or published.embedding_model != embedding_model:
            return {}
        rows = self._in_query(
            "SELECT name, embedding FROM graph_entities WHERE org = :org AND version = :version "
            "AND embedding IS NOT NULL AND name IN {IN}",
            list(names),
            {"version": published.version},
        )
        return {r[0]: from_blob(r[1]) for r in rows}  # type: ignore[misc]
