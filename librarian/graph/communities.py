"""Hierarchical Leiden communities (graspologic-native) with the reference's levels and fingerprints.

`hierarchical_leiden` runs Leiden on the whole undirected entity graph (edge weight = multiplicity), then
again on the induced subgraph of every community larger than `max_cluster_size`, recursively. Level 0 is
therefore the root (coarsest) partition and deeper levels are finer, as in the reference. A split is
kept only when it is a complete partition of its parent into at least two parts; otherwise the parent
is a leaf. Entities without any edge belong to no community (they have nothing to summarise together).

Deterministic: edges are passed in sorted order with a fixed seed, and community ids are assigned by
(level, smallest member), so the same graph always yields the same ids.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence

from librarian.graph.model import Claim, Community, Edge, Entity

DEFAULT_SEED = 42
DEFAULT_MAX_CLUSTER_SIZE = 10


def detect_communities(
    edges: Sequence[Edge], *, seed: int = DEFAULT_SEED, max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE
) -> list[Community]:
    """Communities (without summaries) of the entity graph; empty for a graph without edges."""
    if not edges:
        return []
    from graspologic_native import hierarchical_leiden

    weighted = sorted((e.source, e.target, float(e.weight)) for e in edges if e.source != e.target)
    if not weighted:
        return []
    clusters = hierarchical_leiden(weighted, max_cluster_size=max_cluster_size, seed=seed, iterations=1)
    members: dict[int, set[str]] = defaultdict(set)
    level_of: dict[int, int] = {}
    parent_of: dict[int, int | None] = {}
    for entry in clusters:
        members[entry.cluster].add(entry.node)
        level_of[entry.cluster] = entry.level
        parent_of[entry.cluster] = entry.parent_cluster
    children: dict[int, list[int]] = defaultdict(list)
    for cluster, parent in parent_of.items():
        if parent is not None:
            children[parent].append(cluster)
    # keep a split only if it is a complete partition into >= 2 parts
    dropped: set[int] = set()

    def drop_subtree(cluster: int) -> None:
        for child in children.get(cluster, []):
            dropped.add(child)
            drop_subtree(child)

    for cluster in sorted(members, key=lambda c: level_of[c]):
        kids = children.get(cluster, [])
        if not kids or cluster in dropped:
            continue
        covered = set().union(*(members[k] for k in kids))
        disjoint = sum(len(members[k]) for k in kids) == len(covered)
        if len(kids) < 2 or covered != members[cluster] or not disjoint:
            drop_subtree(cluster)
    kept = [c for c in members if c not in dropped]
    order = sorted(kept, key=lambda c: (level_of[c], min(members[c]), len(members[c])))
    new_id = {cluster: index + 1 for index, cluster in enumerate(order)}
    communities = []
    for cluster in order:
        parent = parent_of.get(cluster)
        kids = [new_id[k] for k in children.get(cluster, []) if k in new_id]
        communities.append(
            Community(
                id=new_id[cluster],
                level=level_of[cluster],
                parent=new_id.get(parent) if parent is not None else None,
                members=sorted(members[cluster]),
                children=sorted(kids),
                is_leaf=not kids,
            )
        )
    return communities


def fingerprint(
    community: Community,
    entities: dict[str, Entity],
    edges_by_node: dict[str, list[Edge]],
    claims_by_subject: dict[str, list[Claim]],
) -> str:
    """sha256 of what a summary is written from: members with descriptions, inner edges, member claims."""
    members = set(community.members)
    inner = sorted(
        {
            (e.source, e.target, e.relation, round(e.weight, 6))
            for m in community.members
            for e in edges_by_node.get(m, [])
            if e.source in members and e.target in members
        }
    )
    claims = sorted(
        {c.description.strip().lower() for c in member_claims(community.members, claims_by_subject)}
    )
    payload = {
        "members": [[m, entities[m].description if m in entities else ""] for m in community.members],
        "edges": inner,
        "claims": claims,
    }
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


def index_edges(edges: Sequence[Edge]) -> dict[str, list[Edge]]:
    by_node: dict[str, list[Edge]] = defaultdict(list)
    for edge in edges:
        by_node[edge.source].append(edge)
        by_node[edge.target].append(edge)
    return by_node


def index_claims(claims: Sequence[Claim]) -> dict[str, list[Claim]]:
    """Claims by the entities they name (subject and object)."""
    by_entity: dict[str, list[Claim]] = defaultdict(list)
    for claim in claims:
        by_entity[claim.subject].append(claim)
        if claim.object and claim.object != claim.subject:
            by_entity[claim.object].append(claim)
    return by_entity


def member_claims(members: Sequence[str], by_entity: dict[str, list[Claim]]) -> list[Claim]:
    """Claims naming any member (subject or object), each once, in id order."""
    found = {c.id: c for m in members for c in by_entity.get(m, [])}
    return [found[k] for k in sorted(found)]


def annotate(
    communities: Sequence[Community],
    entities: Sequence[Entity],
    edges: Sequence[Edge],
    claims: Sequence[Claim],
) -> None:
    """Set each community's fingerprint and rank (sum of member degrees) in place."""
    by_name = {e.name: e for e in entities}
    by_node = index_edges(edges)
    by_subject = index_claims(claims)
    for community in communities:
        community.fingerprint = fingerprint(community, by_name, by_node, by_subject)
        community.rank = float(sum(len(by_node.get(m, [])) for m in community.members))
