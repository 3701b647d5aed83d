"""Read-only views of an organization's published GraphRAG graph, for the web app's Graph page.

    GET /orgs/{org}/graph/communities             communities per level with titles and summaries
    GET /orgs/{org}/graph/neighbourhood?entity=X  one entity, its nearest neighbours and their edges

`server.py` checks membership first; the store is scoped to that organization (`store.scope(org)`),
and every read pins the published version so a publish in the middle cannot mix two builds. Sizes
are capped: these feed a page, not an export.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from librarian.graph.model import normalize_name
from librarian.stack import get_stack
from webapi.errors import ApiError

MAX_MEMBERS_SHOWN = 30
MAX_NEIGHBOURS = 16
MAX_ENTITY_CHARS = 200


def _no_graph() -> ApiError:
    return ApiError(404, "no_graph", "this organization has no published knowledge graph yet")


def communities(org: str) -> dict[str, Any]:
    graph = get_stack().graph_store.scope(org)
    published = graph.published_version()
    if published is None:
        raise _no_graph()
    found = graph.communities(version=published.version)
    names = {e.name: e.display_name for e in graph.entities(version=published.version)}
    return {
        "organization_id": org,
        "version": published.version,
        "communities": [
            {
                "id": c.id,
                "level": c.level,
                "parent": c.parent,
                "title": c.title,
                "summary": c.summary,
                "size": len(c.members),
                "members": [names.get(m, m) for m in c.members[:MAX_MEMBERS_SHOWN]],
                "rank": c.rank,
            }
            for c in sorted(found, key=lambda c: (c.level, -c.rank, c.id))
        ],
    }


def neighbourhood(org: str, query: Mapping[str, str]) -> dict[str, Any]:
    entity = (query.get("entity") or "").strip()
    if not entity or len(entity) > MAX_ENTITY_CHARS:
        raise ApiError(400, "bad_entity", f"give an entity name of 1 to {MAX_ENTITY_CHARS} characters")
    graph = get_stack().graph_store.scope(org)
    published = graph.published_version()
    if published is None:
        raise _no_graph()
    version = published.version
    key = normalize_name(entity)
    key = graph.resolve_names([key], version=version).get(key, key)
    found = graph.entities([key], version=version)
    if not found:
        raise ApiError(404, "unknown_entity", f"no entity {entity!r} in this organization's graph")
    edges = sorted(graph.edges([key], version=version), key=lambda e: -e.weight)[:MAX_NEIGHBOURS]
    others = {e.target if e.source == key else e.source for e in edges}
    nodes = {e.name: e for e in [*found, *graph.entities(sorted(others), version=version)]}
    return {
        "organization_id": org,
        "version": version,
        "center": key,
        "nodes": [
            {"name": e.name, "label": e.display_name, "type": e.type, "degree": e.degree}
            for e in nodes.values()
        ],
        "edges": [
            {"source": e.source, "target": e.target, "relation": e.relation, "weight": e.weight}
            for e in edges
            if e.source in nodes and e.target in nodes
        ],
    }


async def communities_view(org: str) -> dict[str, Any]:
    return await asyncio.to_thread(communities, org)


async def neighbourhood_view(org: str, query: Mapping[str, str]) -> dict[str, Any]:
    return await asyncio.to_thread(neighbourhood, org, dict(query))
