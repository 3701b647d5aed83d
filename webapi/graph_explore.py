"""The Graph page's explorer: entity search, communities by size with paging, one community's members
and relations, and one entity's evidence with its citations (issue 29).

    GET /orgs/{org}/graph/entities?q=&limit=                  entities whose name matches, best first
    GET /orgs/{org}/graph/communities?offset=&limit=&q=       communities, largest first, one page
    GET /orgs/{org}/graph/communities/{id}                    one community: members and relations
    GET /orgs/{org}/graph/evidence?entity=KEY                 claims and relations with their sources

Why a module of its own: `webapi.graph_view` draws pictures and answers questions; this one lists
and pages. The routes (`webapi.graph`) check membership and parameters first; every read here is of
the organization's published version (`store.scope(org)`, version pinned once per request).

Liveness: a published version keeps a deleted document's entities until the next build. The index
decides what is still live (`librarian.graph.query.liveness`): an entity is listed only while one of
the documents it came from is, a community shows only its live members, and evidence cites only live
chunks. Members are always named by their entity key (`name`) next to the label, so a page looks an
entity up by key and never re-normalises a display name.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from dataclasses import dataclass
from threading import Lock
from typing import Any
from weakref import WeakKeyDictionary

from librarian.graph.model import Entity, normalize_name
from librarian.graph.query.liveness import Liveness
from librarian.stack import get_stack
from librarian.text.debris import clean_lines
from webapi.errors import ApiError

MAX_MEMBERS_LISTED = 200  # a community's members page; the largest has hundreds, a page reads 200
MAX_RELATIONS_LISTED = 60
TOP_MEMBERS_IN_CARD = 8  # a community card names its best-connected members
MAX_CLAIMS = 30
MAX_RELATIONS = 16
MAX_SOURCES_PER_ITEM = 3
MAX_SOURCES = 24
CATALOGUE_CACHE = 8  # (store, org, version) catalogues kept: a published version never changes


def _no_graph() -> ApiError:
    return ApiError(404, "no_graph", "this organization has no published knowledge graph yet")


@dataclass(frozen=True)
class Catalogue:
    """What listing needs of a published version's entities: labels, degrees, the documents behind each."""

    version: int
    entities: dict[str, Entity]
    paths: dict[str, frozenset[str]]  # entity key -> paths of the documents it came from
    representatives: dict[str, str]  # document path -> one chunk id of it (liveness asks one per path)


# store -> (org, version) -> catalogue; weak, so a closed store's catalogues go with it
_catalogues: WeakKeyDictionary[Any, OrderedDict[tuple[str, int], Catalogue]] = WeakKeyDictionary()
_catalogue_lock = Lock()


def _catalogue(store: Any, graph: Any, version: int) -> Catalogue:
    """The version's entities, read once per (store, org, version): search runs on every keystroke."""
    key = (graph.org, version)
    with _catalogue_lock:
        cached = _catalogues.setdefault(store, OrderedDict())
        found = cached.get(key)
        if found is not None:
            cached.move_to_end(key)
            return found
    entities = {e.name: e for e in graph.entities(version=version)}
    representatives: dict[str, str] = {}
    for entity in entities.values():
        for source in entity.sources:
            representatives.setdefault(source.path, source.chunk_id)
    built = Catalogue(
        version,
        entities,
        {k: frozenset(s.path for s in e.sources) for k, e in entities.items()},
        representatives,
    )
    with _catalogue_lock:
        cached[key] = built
        while len(cached) > CATALOGUE_CACHE:
            cached.popitem(last=False)
    return built


@dataclass(frozen=True)
class _Read:
    """One request's view: the scoped graph, its published version, the catalogue and live documents."""

    graph: Any
    version: int
    catalogue: Catalogue
    live_paths: frozenset[str]
    liveness: Liveness

    def live(self, key: str) -> bool:
        """An entity with no recorded source is kept (a hand-made graph may have none)."""
        paths = self.catalogue.paths.get(key)
        if paths is None:
            return False
        return not paths or bool(paths & self.live_paths)

    def node(self, key: str) -> dict[str, Any]:
        e = self.catalogue.entities[key]
        return {"name": e.name, "label": e.display_name, "type": e.type, "degree": e.degree}


def _read(org: str) -> _Read:
    stack = get_stack()
    graph = stack.graph_store.scope(org)
    published = graph.published_version()
    if published is None:
        raise _no_graph()
    catalogue = _catalogue(stack.graph_store, graph, published.version)
    liveness = Liveness.of(stack, org, graph, published.version)
    live_paths = frozenset(liveness.paths(catalogue.representatives))
    return _Read(graph, published.version, catalogue, live_paths, liveness)


# --- entity search ---------------------------------------------------------------------------------


def match_rank(query: str, entity: Entity) -> int | None:
    """How well `entity` matches a typed name (lower is better), None when it does not.

    0: the key or an alias is the query; 1: the label or key starts with it; 2: a word of the label
    starts with it; 3: it occurs anywhere in the label, key or an alias.
    """
    label = entity.display_name.lower()
    if entity.name == query or query in entity.aliases:
        return 0
    if label.startswith(query) or entity.name.startswith(query):
        return 1
    if any(word.startswith(query) for word in label.replace("/", " ").split()):
        return 2
    if query in label or query in entity.name or any(query in a for a in entity.aliases):
        return 3
    return None


def search_entities(org: str, query: str, limit: int) -> dict[str, Any]:
    """Entities matching `query` (all when empty), best match first, then the best connected."""
    read = _read(org)
    wanted = normalize_name(query) or query.strip().lower()
    ranked: list[tuple[int, int, str, str]] = []
    for key, entity in read.catalogue.entities.items():
        rank = match_rank(wanted, entity) if wanted else 0
        if rank is not None and read.live(key):
            ranked.append((rank, -entity.degree, entity.display_name.lower(), key))
    ranked.sort()
    return {
        "organization_id": org,
        "version": read.version,
        "query": query,
        "total": len(ranked),
        "entities": [read.node(key) for *_, key in ranked[:limit]],
    }


# --- communities -----------------------------------------------------------------------------------


def readable_summary(summary: str) -> str:
    """A summary as a card shows it: layout debris lines (TOC leaders, table rows) left out."""
    return clean_lines(summary or "").strip()


def _members_by_degree(read: _Read, members: list[str]) -> list[str]:
    live = [m for m in members if m in read.catalogue.entities and read.live(m)]
    return sorted(live, key=lambda m: (-read.catalogue.entities[m].degree, m))


def _community_matches(query: str, community: Any, members: list[str], read: _Read) -> bool:
    if query in (community.title or "").lower():
        return True
    return any(match_rank(query, read.catalogue.entities[m]) is not None for m in members)


def community_page(org: str, offset: int, limit: int, query: str) -> dict[str, Any]:
    """Communities with a live member, largest first (then by rank, then id); `offset`/`limit` page them.

    `query` keeps the communities whose title or one of whose members matches it.
    """
    read = _read(org)
    wanted = normalize_name(query) or query.strip().lower()
    cards = []
    for community in read.graph.communities(version=read.version):
        members = _members_by_degree(read, community.members)
        if not members or (wanted and not _community_matches(wanted, community, members, read)):
            continue
        cards.append((community, members))
    cards.sort(key=lambda cm: (-len(cm[1]), -cm[0].rank, cm[0].id))
    return {
        "organization_id": org,
        "version": read.version,
        "query": query,
        "offset": offset,
        "limit": limit,
        "total": len(cards),
        "communities": [
            {
                "id": c.id,
                "level": c.level,
                "parent": c.parent,
                "title": c.title,
                "summary": readable_summary(c.summary),
                "size": len(members),
                "members": [read.catalogue.entities[m].display_name for m in members[:TOP_MEMBERS_IN_CARD]],
                "memberKeys": members[:TOP_MEMBERS_IN_CARD],
                "rank": c.rank,
            }
            for c, members in cards[offset : offset + limit]
        ],
    }


def community_detail(org: str, community_id: int) -> dict[str, Any]:
    """One community: its live members (best connected first) and the strongest relations among them."""
    read = _read(org)
    found = read.graph.communities(ids=[community_id], version=read.version)
    members = _members_by_degree(read, found[0].members) if found else []
    if not members:
        raise ApiError(404, "unknown_community", f"no community {community_id} in this organization's graph")
    community = found[0]
    inside = set(members)
    relations = sorted(
        (
            e
            for e in read.graph.edges(members, version=read.version)
            if e.source in inside and e.target in inside
        ),
        key=lambda e: (-e.weight, e.source, e.target),
    )
    return {
        "organization_id": org,
        "version": read.version,
        "id": community.id,
        "level": community.level,
        "parent": community.parent,
        "children": list(community.children),
        "title": community.title,
        "summary": readable_summary(community.summary),
        "size": len(members),
        "members": [read.node(m) for m in members[:MAX_MEMBERS_LISTED]],
        "relations": [
            {"source": e.source, "target": e.target, "relation": e.relation, "weight": e.weight}
            for e in relations[:MAX_RELATIONS_LISTED]
        ],
        "relationCount": len(relations),
    }


# --- an entity's evidence --------------------------------------------------------------------------


def _entity_key(read: _Read, entity: str) -> str | None:
    """The key asked for as given first (what the page sends), then a typed name or an alias."""
    if entity in read.catalogue.entities:
        return entity
    candidates = list(dict.fromkeys([entity, normalize_name(entity)]))
    resolved = read.graph.resolve_names(candidates, version=read.version)
    return next((resolved[c] for c in candidates if c in resolved), None)


def entity_evidence(org: str, entity: str) -> dict[str, Any]:
    """The claims about an entity and its strongest relations, each citing the live chunks it came from.

    Sources are numbered from 1 in order of first citation and carry what the viewer opens (`id`,
    `path`, `filename`, `page`, `bbox`, `text`); a claim or relation with no live source is left out.
    """
    read = _read(org)
    key = _entity_key(read, entity)
    if key is None or not read.live(key):
        raise ApiError(404, "unknown_entity", f"no entity {entity!r} in this organization's graph")
    label = {k: e.display_name for k, e in read.catalogue.entities.items()}.get
    claims = read.graph.claims_for([key], limit=MAX_CLAIMS, version=read.version)
    edges = sorted(
        read.graph.edges([key], version=read.version), key=lambda e: (-e.weight, e.source, e.target)
    )
    items: list[tuple[dict[str, Any], list[str]]] = []
    for claim in claims:
        chunk_ids = list(dict.fromkeys([claim.chunk_id, *(s.chunk_id for s in claim.sources)]))
        item = {"kind": "claim", "text": claim.description, "subject": claim.subject, "object": claim.object}
        items.append((item, chunk_ids))
    for edge in edges[:MAX_RELATIONS]:
        ends = (label(edge.source) or edge.source, label(edge.target) or edge.target)
        text = edge.description or f"{ends[0]} — {edge.relation.replace('_', ' ')} — {ends[1]}"
        item = {
            "kind": "relation",
            "text": text,
            "subject": edge.source,
            "object": edge.target,
            "relation": edge.relation,
        }
        items.append((item, list(dict.fromkeys(s.chunk_id for s in edge.sources))))
    live = read.liveness.chunks(c for _, ids in items for c in ids)
    chunks = {c.chunk_id: c for c in read.graph.chunks(sorted(live), version=read.version)}
    number: dict[str, int] = {}
    evidence = []
    for item, ids in items:
        cited = [c for c in ids if c in chunks][:MAX_SOURCES_PER_ITEM]
        for c in cited:
            if c not in number and len(number) < MAX_SOURCES:
                number[c] = len(number) + 1
        refs = [number[c] for c in cited if c in number]
        if refs:
            evidence.append({**item, "sources": refs})
    return {
        "organization_id": org,
        "version": read.version,
        "entity": {**read.node(key), "description": read.catalogue.entities[key].description},
        "evidence": evidence,
        "sources": [
            {
                "id": c,
                "path": chunks[c].path,
                "filename": os.path.basename(chunks[c].path),
                "page": int(chunks[c].page or 0),
                "bbox": chunks[c].bbox,
                "text": chunks[c].text,
                "score": 1.0,
            }
            for c in number
        ],
    }


async def search_entities_view(org: str, query: str, limit: int) -> dict[str, Any]:
    return await asyncio.to_thread(search_entities, org, query, limit)


async def community_page_view(org: str, offset: int, limit: int, query: str) -> dict[str, Any]:
    return await asyncio.to_thread(community_page, org, offset, limit, query)


async def community_detail_view(org: str, community_id: int) -> dict[str, Any]:
    return await asyncio.to_thread(community_detail, org, community_id)


async def entity_evidence_view(org: str, entity: str) -> dict[str, Any]:
    return await asyncio.to_thread(entity_evidence, org, entity)
