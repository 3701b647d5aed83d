"""Community reads: the hierarchy with members, membership by entity, summary embeddings, and summaries
of the published version that a new build may reuse (same fingerprint, same summarizer)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from librarian.graph.model import Community
from librarian.graph.sql.base import SqlOrgGraphBase
from librarian.graph.sql.codec import from_blob, stack


class CommunityReads(SqlOrgGraphBase):
    def communities(
        self,
        *,
        level: int | None = None,
        ids: Iterable[int] | None = None,
        leaves_only: bool = False,
        with_embeddings: bool = False,
        version: int | None = None,
    ) -> list[Community]:
        v = self._version(version)
        if v is None:
            return []
        cols = "id, level, parent, children, is_leaf, fingerprint, title, summary, summarizer, rank"
        if with_embeddings:
            cols += ", embedding"
        where = "org = :org AND version = :version"
        params: dict[str, Any] = {"version": v}
        if level is not None:
            where += " AND level = :level"
            params["level"] = int(level)
        if leaves_only:
            where += " AND is_leaf = 1"
        sql = f"SELECT {cols} FROM graph_communities WHERE {where}"
        if ids is not None:
            rows = self._in_query(sql + " AND id IN {IN}", [int(i) for i in ids], params)
        else:
            rows = self._query(sql, params)
        rows = sorted(rows, key=lambda r: (int(r[1]), int(r[0])))
        members = self._members([int(r[0]) for r in rows], v)
        return [_community(r, members.get(int(r[0]), []), with_embeddings) for r in rows]

    def _members(self, ids: list[int], v: int) -> dict[int, list[str]]:
        members: dict[int, list[str]] = defaultdict(list)
        for community, name in self._in_query(
            "SELECT community, name FROM graph_community_members WHERE org = :org AND version = :version "
            "AND community IN {IN}",
            ids,
            {"version": v},
        ):
            members[int(community)].append(name)
        return members

    def communities_of(self, names: Iterable[str], *, version: int | None = None) -> dict[str, list[int]]:
        v = self._version(version)
        if v is None:
            return {}
        out: dict[str, list[int]] = defaultdict(list)
        for community, name in self._in_query(
            "SELECT community, name FROM graph_community_members WHERE org = :org AND version = :version "
            "AND name IN {IN}",
            list(names),
            {"version": v},
        ):
            out[name].append(int(community))
        return {name: sorted(ids) for name, ids in out.items()}

    def summary_embeddings(
        self, *, level: int | None = None, version: int | None = None
    ) -> tuple[list[int], np.ndarray]:
        v = self._version(version)
        if v is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        sql = (
            "SELECT id, embedding FROM graph_communities WHERE org = :org AND version = :version "
            "AND embedding IS NOT NULL"
        )
        params: dict[str, Any] = {"version": v}
        if level is not None:
            sql += " AND level = :level"
            params["level"] = int(level)
        rows = sorted(self._query(sql, params), key=lambda r: int(r[0]))
        return [int(r[0]) for r in rows], stack([from_blob(r[1]) for r in rows])  # type: ignore[misc]

    def reusable_summaries(self, fingerprints: Iterable[str], summarizer: str) -> dict[str, Community]:
        v = self._version(None)
        if v is None:
            return {}
        rows = self._in_query(
            "SELECT fingerprint, title, summary, embedding FROM graph_communities WHERE org = :org "
            "AND version = :version AND summarizer = :summarizer AND summary <> '' AND fingerprint IN {IN}",
            list(fingerprints),
            {"version": v, "summarizer": summarizer},
        )
        out: dict[str, Community] = {}
        for fp, title, summary, embedding in rows:
            out[fp] = Community(
                id=-1,
                level=-1,
                parent=None,
                members=[],
                fingerprint=fp,
                title=title,
                summary=summary,
                summary_embedding=from_blob(embedding),
                summarizer=summarizer,
            )
        return out


def _community(r: tuple[Any, ...], members: list[str], with_embeddings: bool) -> Community:
    return Community(
        id=int(r[0]),
        level=int(r[1]),
        parent=None if r[2] is None else int(r[2]),
        children=[int(c) for c in json.loads(r[3] or "[]")],
        is_leaf=bool(r[4]),
        fingerprint=r[5],
        title=r[6],
        summary=r[7],
        summarizer=r[8],
        rank=float(r[9]),
        members=sorted(members),
        summary_embedding=from_blob(r[10]) if with_embeddings else None,
    )
