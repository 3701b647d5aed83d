"""Read-only views of an organization's published GraphRAG graph, for the web app's Graph page.

    GET /orgs/{org}/graph/communities             communities per level with titles and summaries
    GET /orgs/{org}/graph/neighbourhood?entity=X  one entity, its nearest neighbours and their edges
    GET /orgs/{org}/graph/local?q=QUESTION        a local GraphRAG retrieval: matched entities, the
                                                  evidence with its sources, and their neighbourhood

The routes (`webapi.graph`) check membership and the query first; the store is scoped to that
organization (`store.scope(org)`), and every read pins the published version so a publish in the
middle cannot mix two builds. Sizes are capped: these feed a page, not an export.
"""

from __future__ import annotations

import asyncio
from typing import Any

from librarian.graph.model import normalize_name
from librarian.stack import get_stack
from webapi.errors import ApiError

MAX_MEMBERS_SHOWN = 30
MAX_NEIGHBOURS = 16
MAX_MATCHED_SHOWN = 4  # centres of the local answer's picture; more would not read on a phone


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
                "memberKeys": c.members[:MAX_MEMBERS_SHOWN],  # what a page looks a member up by
                "rank": c.rank,
            }
            for c in sorted(found, key=lambda c: (c.level, -c.rank, c.id))
        ],
    }


def neighbourhood(org: str, entity: str) -> dict[str, Any]:
    """`entity` is checked and stripped (`webapi.params.EntityName`).

    It may be a key (what `communities` lists in `memberKeys`), a display name or an alias: the key is
    tried as given first, so a key never depends on normalising a label the same way twice.
    """
    graph = get_stack().graph_store.scope(org)
    published = graph.published_version()
    if published is None:
        raise _no_graph()
    version = published.version
    key = _entity_key(graph, version, entity)
    if key is None:
        raise ApiError(404, "unknown_entity", f"no entity {entity!r} in this organization's graph")
    return {"organization_id": org, "version": version, "center": key, **_picture(graph, version, [key])}


def _entity_key(graph: Any, version: int, entity: str) -> str | None:
    """The key of the entity named `entity` (a key, a display name or an alias), or None."""
    candidates = list(dict.fromkeys([entity, normalize_name(entity)]))
    resolved = graph.resolve_names(candidates, version=version)  # keys and aliases, known ones only
    return next((resolved[c] for c in candidates if c in resolved), None)


def _picture(graph: Any, version: int, keys: list[str]) -> dict[str, Any]:
    """Nodes and edges around `keys`: their strongest edges (capped), the entities at both ends."""
    found = graph.entities(keys, version=version)
    edges = sorted(graph.edges(keys, version=version), key=lambda e: -e.weight)[:MAX_NEIGHBOURS]
    wanted = set(keys)
    others = {end for e in edges for end in (e.source, e.target) if end not in wanted}
    nodes = {e.name: e for e in [*found, *graph.entities(sorted(others), version=version)]}
    return {
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


async def local_answer(org: str, question: str) -> dict[str, Any]:
    """`run_local` for the caller's organization, shaped for the page: every evidence item carries
    the 1-based number of its source, so the page links it to the same viewer as a chat citation,
    and the matched entities come with their neighbourhood so the page can draw them."""
    from librarian.answers.local_brief import page_brief
    from librarian.graph.query.runs import chat_model, run_local  # lazy: the agent's tools load models

    stack = await asyncio.to_thread(get_stack)  # first use opens stores: off the event loop
    model = await asyncio.to_thread(chat_model, stack)
    result = await run_local(stack, org, question, model=model)
    if result["status"] == "no_graph" or result["version"] is None:
        raise _no_graph()
    version = int(result["version"])
    sources = result["sources"]
    number = {s["id"]: n for n, s in enumerate(sources, start=1)}
    matched = [m["name"] for m in result["matchedEntities"]][:MAX_MATCHED_SHOWN]
    graph = await asyncio.to_thread(lambda: stack.graph_store.scope(org))
    picture = await asyncio.to_thread(_picture, graph, version, matched) if matched else None
    return {
        "organization_id": org,
        "version": version,
        "status": result["status"],
        "question": question,
        "matchedEntities": [
            {"name": m["name"], "label": m["displayName"], "matchType": m["matchType"]}
            for m in result["matchedEntities"]
        ],
        "communities": [
            {"id": c["id"], "level": c["level"], "title": c["title"], "summary": c["summary"]}
            for c in result["communities"]
        ],
        "evidence": [
            {
                "kind": e["kind"],
                "text": e["text"],
                "source": number[e["sourceId"]],
                "subject": e["subject"],
                "object": e["object"],
            }
            for e in result["evidence"]
            if e["sourceId"] in number
        ],
        "relevantContext": result["relevantContext"],
        "sources": [
            {k: s[k] for k in ("id", "path", "filename", "page", "bbox", "text", "score")} for s in sources
        ],
        "neighbourhood": {"matched": matched, **picture} if picture else None,
        # the few sentences that answer, most relevant first; the page shows the rest on request
        "brief": await asyncio.to_thread(page_brief, stack, question, sources),
    }


async def communities_view(org: str) -> dict[str, Any]:
    return await asyncio.to_thread(communities, org)


async def neighbourhood_view(org: str, entity: str) -> dict[str, Any]:
    return await asyncio.to_thread(neighbourhood, org, entity)
