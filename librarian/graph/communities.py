"""Hierarchical Leiden communities (graspologic-native) with the reference's levels and fingerprints.

Leiden runs on the whole undirected entity graph (edge weight = multiplicity), then again on the induced
subgraph of every community larger than `max_cluster_size`, recursively. Level 0 is therefore the root
(coarsest) partition and deeper levels are finer, as in the reference. A split is kept only when it is
a complete partition of its parent into at least two parts; otherwise the parent is a leaf. Entities
without any edge belong to no community (they have nothing to summarise together).

**Stable across rebuilds.** Leiden from scratch re-draws the whole partition after any change (new
nodes shift its random visiting order), so changing one document used to rewrite ~20 % of all
community summaries, most of them far from the change. Here every level starts from the previous
published partition (`previous`: each node in its old community, new nodes alone) and the result is
iterated to a fixed point: run again from its own output until nothing moves (at most `MAX_PASSES`).
A fixed point is a partition Leiden keeps, so the next build, started from it, moves only what the
change disturbed; unchanged communities keep their members and so their fingerprints and summaries.
A first build iterates from scratch the same way. On the 14 `shared/data/docs` documents, changing one
rewrote 3-5 of ~400 summaries instead of 78-95 (README "GraphRAG index: build"), with equal or higher
modularity.

Deterministic: the same graph and the same previous partition always yield the same communities (edges
are passed sorted, with a fixed seed), and ids are assigned by (level, smallest member).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence

from librarian.graph.model import Claim, Community, Edge, Entity

DEFAULT_SEED = 42
DEFAULT_MAX_CLUSTER_SIZE = 10
MAX_PASSES = 10  # fixed-point passes; a first build needs ~4, a rebuild 2 (one that moves, one that confirms)

Weighted = list[tuple[str, str, float]]
_Tree = list[tuple[frozenset[str], int, int | None]]  # (members, level, parent index in the tree)


def _starting_partition(nodes: set[str], previous: dict[str, int]) -> dict[str, int] | None:
    """Leiden's start: each node in its previous community (numbered densely), new nodes alone."""
    if not previous:
        return None
    numbers: dict[object, int] = {}
    start = {}
    for node in sorted(nodes):
        key: object = previous.get(node, ("new", node))
        start[node] = numbers.setdefault(key, len(numbers))
    return start


def _partition(weighted: Weighted, previous: dict[int, dict[str, int]], seed: int, max_size: int) -> _Tree:
    """One pass of hierarchical Leiden, each level started from `previous[level]` (node → community)."""
    from graspologic_native import leiden

    tree: _Tree = []

    def split(edges: Weighted, level: int, parent: int | None) -> None:
        nodes = {a for a, _, _ in edges} | {b for _, b, _ in edges}
        start = _starting_partition(nodes, previous.get(level, {}))
        _quality, assignment = leiden(edges, starting_communities=start, seed=seed, iterations=1)
        groups: dict[int, set[str]] = defaultdict(set)
        for node, cluster in assignment.items():
            groups[cluster].add(node)
        parts = sorted((frozenset(g) for g in groups.values()), key=min)
        if parent is not None and (len(parts) < 2 or set().union(*parts) != tree[parent][0]):
            return  # not a complete partition into >= 2 parts: the parent stays a leaf
        for members in parts:
            tree.append((members, level, parent))
            index = len(tree) - 1
            if len(members) > max_size:
                split([e for e in edges if e[0] in members and e[1] in members], level + 1, index)

    split(weighted, 0, None)
    return tree


def _by_level(communities: Sequence[Community] | _Tree) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = defaultdict(dict)
    for number, item in enumerate(communities):
        members, level = (item.members, item.level) if isinstance(item, Community) else item[:2]
        for member in members:
            out[level][member] = number
    return out


def _shape(tree: _Tree) -> set[tuple[int, frozenset[str]]]:
    return {(level, members) for members, level, _ in tree}


def detect_communities(
    edges: Sequence[Edge],
    *,
    seed: int = DEFAULT_SEED,
    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
    previous: Sequence[Community] = (),
) -> list[Community]:
    """Communities (without summaries) of the entity graph; empty for a graph without edges.

    `previous`: the published version's communities, the starting partition (see the module docstring).
    """
    weighted = sorted((e.source, e.target, float(e.weight)) for e in edges if e.source != e.target)
    if not weighted:
        return []
    start = _by_level(previous)
    tree = _partition(weighted, start, seed, max_cluster_size)
    for _ in range(MAX_PASSES - 1):
        again = _partition(weighted, _by_level(tree), seed, max_cluster_size)
        if _shape(again) == _shape(tree):
            break
        tree = again
    order = sorted(range(len(tree)), key=lambda i: (tree[i][1], min(tree[i][0]), len(tree[i][0])))
    new_id = {index: number + 1 for number, index in enumerate(order)}
    children: dict[int, list[int]] = defaultdict(list)
    for index, (_members, _level, parent) in enumerate(tree):
        if parent is not None:
            children[parent].append(new_id[index])
    return [
        Community(
            id=new_id[index],
            level=tree[index][1],
            parent=new_id[tree[index][2]] if tree[index][2] is not None else None,
            members=sorted(tree[index][0]),
            children=sorted(children[index]),
            is_leaf=not children[index],
        )
        for index in order
    ]


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
