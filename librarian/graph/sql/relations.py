"""Reads of what links entities: edges, neighbourhoods within a few hops, and claims with live sources."""

from __future__ import annotations

from collections.abc import Iterable

from librarian.graph.model import Claim, Edge, Provenance
from librarian.graph.sql.base import SqlOrgGraphBase


class RelationReads(SqlOrgGraphBase):
    def edges(self, names: Iterable[str] | None = None, *, version: int | None = None) -> list[Edge]:
        v = self._version(version)
        if v is None:
            return []
        cols = "source, target, relation, weight, description"
        if names is None:
            rows = self._query(
                f"SELECT {cols} FROM graph_edges WHERE org = :org AND version = :version",
                {"version": v},
            )
        else:
            keys = list(names)
            rows = self._in_query(
                f"SELECT {cols} FROM graph_edges WHERE org = :org AND version = :version "
                "AND (source IN {IN} OR target IN {IN})",
                keys,
                {"version": v},
            )
        unique = sorted({(r[0], r[1]): r for r in rows}.values())
        sources = self._live_sources("r", [f"{r[0]}\x1f{r[1]}" for r in unique], v)
        return [
            Edge(
                source=r[0],
                target=r[1],
                relation=r[2],
                weight=float(r[3]),
                description=r[4],
                sources=sources.get(f"{r[0]}\x1f{r[1]}", []),
            )
            for r in unique
        ]

    def neighbours(self, names: Iterable[str], hops: int = 2, *, version: int | None = None) -> set[str]:
        v = self._version(version)
        if v is None:
            return set()
        seeds = list(dict.fromkeys(names))
        present = {
            r[0]
            for r in self._in_query(
                "SELECT name FROM graph_entities WHERE org = :org AND version = :version AND name IN {IN}",
                seeds,
                {"version": v},
            )
        }
        reached, frontier = set(present), set(present)
        for _ in range(max(0, hops)):
            if not frontier:
                break
            rows = self._in_query(
                "SELECT source, target FROM graph_edges WHERE org = :org AND version = :version "
                "AND (source IN {IN} OR target IN {IN})",
                sorted(frontier),
                {"version": v},
            )
            nxt = {n for r in rows for n in r} - reached
            reached |= nxt
            frontier = nxt
        return reached

    def claims_for(
        self, names: Iterable[str], *, limit: int | None = None, version: int | None = None
    ) -> list[Claim]:
        v = self._version(version)
        if v is None:
            return []
        keys = list(dict.fromkeys(names))
        rows = self._in_query(
            "SELECT id, subject, object, description, chunk_id, path FROM graph_claims "
            "WHERE org = :org AND version = :version AND (subject IN {IN} OR object IN {IN})",
            keys,
            {"version": v},
        )
        unique = {r[0]: r for r in rows}
        sources = self._live_sources("c", list(unique), v)
        subjects = {r[1] for r in unique.values()}
        degree = {
            r[0]: int(r[1])
            for r in self._in_query(
                "SELECT name, degree FROM graph_entities WHERE org = :org AND version = :version "
                "AND name IN {IN}",
                sorted(subjects),
                {"version": v},
            )
        }
        claims = []
        for cid, subject, obj, description, chunk_id, path in unique.values():
            live = sources.get(cid)
            if not live:
                continue
            first = Provenance(path, chunk_id) if Provenance(path, chunk_id) in live else live[0]
            claims.append(
                Claim(
                    id=cid,
                    subject=subject,
                    object=obj,
                    description=description,
                    chunk_id=first.chunk_id,
                    path=first.path,
                    sources=live,
                )
            )
        claims.sort(key=lambda c: (-degree.get(c.subject, 0), c.id))
        return claims[:limit] if limit is not None else claims
