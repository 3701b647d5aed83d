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

**A build its input cannot take down.** graspologic-native sizes its per-cluster arrays by the node count
of the network it is given and assumes every starting community holds together; a warm start whose
community falls apart in *this* (sub)graph (its old members now in different parents, or the edges that
joined them gone) made it index past those arrays and panic ("index out of bounds: the len is 13 but the
index is 13"). A random search over small graphs and warm starts hit that in 29 % of 20,000 cases; so
each previous community is split into its connected pieces within the graph Leiden is given (0 panics in
79,000 cases). A
pyo3 `PanicException` is a `BaseException`, so `_leiden` catches it explicitly: any failure of the
native library is retried from scratch, and only if that fails too does `CommunityDetectionError` (a
clear, ordinary error) end the stage. Edge weights that are not positive finite numbers are dropped,
and extreme ones rescaled, since NaN or a total weight that over- or underflows panic inside Leiden too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections import defaultdict
from collections.abc import Sequence

from librarian.errors import LibrarianError
from librarian.graph.model import Claim, Community, Edge, Entity

log = logging.getLogger(__name__)

DEFAULT_SEED = 42
DEFAULT_MAX_CLUSTER_SIZE = 10
MAX_PASSES = 10  # fixed-point passes; a first build needs ~4, a rebuild 2 (one that moves, one that confirms)
MAX_EDGE_WEIGHT = 1e12  # weights outside [MIN, MAX] are rescaled: a total that over- or underflows panics
MIN_EDGE_WEIGHT = 1e-6
MIN_RELATIVE_WEIGHT = 1e-12  # after rescaling, lighter edges are dropped as negligible

Weighted = list[tuple[str, str, float]]
_Tree = list[tuple[frozenset[str], int, int | None]]  # (members, level, parent index in the tree)


class CommunityDetectionError(LibrarianError):
    """Leiden failed on this graph even from scratch; the build stops with this message, not a panic."""

    code = "community_detection_failed"


def _starting_partition(edges: Weighted, nodes: set[str], previous: dict[str, int]) -> dict[str, int] | None:
    """Leiden's start: each node with the members of its previous community it is still connected to
    (within `edges`, through members of that community), numbered densely; new nodes alone.

    Why the split: graspologic-native assumes a starting community holds together. Given one that does
    not (members that were joined in the previous graph, or in the previous parent, but are not in this
    subgraph), its refinement and aggregation index past arrays sized by the node count and panic.
    """
    if not previous:
        return None
    label: dict[str, str] = {}  # node -> a representative of its piece (absent: itself)
    pieces: dict[str, list[str]] = {}  # representative -> members (absent: the node alone)
    get = previous.get
    for a, b, _ in edges:
        if get(a, a) != get(b, b):  # different communities, or a new node (its name never equals an int)
            continue
        keep, other = label.get(a, a), label.get(b, b)
        if keep == other:
            continue
        kept, moved = pieces.pop(keep, None) or [keep], pieces.pop(other, None) or [other]
        if len(kept) < len(moved):  # relabel the smaller piece: each node moves O(log n) times
            keep, kept, moved = other, moved, kept
        for node in moved:
            label[node] = keep
        kept.extend(moved)
        pieces[keep] = kept
    numbers: dict[str, int] = {}
    return {node: numbers.setdefault(label.get(node, node), len(numbers)) for node in sorted(nodes)}


def _is_native_failure(exc: BaseException) -> bool:
    """An ordinary error or a Rust panic (pyo3 `PanicException`, a `BaseException`); not Ctrl-C/exit."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def _leiden(edges: Weighted, start: dict[str, int] | None, seed: int) -> dict[str, int]:
    """graspologic-native's Leiden (node → cluster); from scratch if the warm start fails, and a
    `CommunityDetectionError` if that fails too, never a panic that takes the build down."""
    from graspologic_native import leiden

    attempts = [start, None] if start is not None else [None]
    failure: BaseException | None = None
    for attempt in attempts:
        try:
            _quality, assignment = leiden(edges, starting_communities=attempt, seed=seed, iterations=1)
            return assignment
        except BaseException as exc:
            if not _is_native_failure(exc):
                raise
            failure = exc
            log.warning(
                "Leiden failed on %d edges (%s): %s: %s",
                len(edges),
                "warm start, retrying from scratch" if attempt is not None else "from scratch",
                type(exc).__name__,
                exc,
            )
    raise CommunityDetectionError(
        f"Community detection failed on a graph of {len(edges)} edges inside graspologic-native "
        f"({type(failure).__name__}: {failure}). The graph was not published; the previous version stays "
        "in use. Please report this with the build's document set."
    ) from failure


def _partition(weighted: Weighted, previous: dict[int, dict[str, int]], seed: int, max_size: int) -> _Tree:
    """One pass of hierarchical Leiden, each level started from `previous[level]` (node → community)."""
    tree: _Tree = []

    def split(edges: Weighted, level: int, parent: int | None) -> None:
        nodes = {a for a, _, _ in edges} | {b for _, b, _ in edges}
        assignment = _leiden(edges, _starting_partition(edges, nodes, previous.get(level, {})), seed)
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


def _weighted(edges: Sequence[Edge]) -> Weighted:
    """Sorted (source, target, weight) for Leiden: no self-loops, only positive finite weights (NaN and
    infinity make it panic, and a weight <= 0 joins nothing). Weights outside a safe band are scaled so
    the heaviest is 1 (modularity does not change when all weights are scaled alike): an overflowing
    total, or one that underflows to zero, panics inside Leiden too; the multiplicities of a real graph
    are always inside the band and pass unchanged. Weights below `MIN_RELATIVE_WEIGHT` of the heaviest
    are negligible and dropped."""
    kept = []
    for edge in edges:
        weight = float(edge.weight)
        if edge.source != edge.target and math.isfinite(weight) and weight > 0:
            kept.append((edge.source, edge.target, weight))
    if not kept:
        return []
    heaviest = max(w for _, _, w in kept)
    if heaviest > MAX_EDGE_WEIGHT or min(w for _, _, w in kept) < MIN_EDGE_WEIGHT:
        kept = [(a, b, w / heaviest) for a, b, w in kept if w / heaviest >= MIN_RELATIVE_WEIGHT]
    return sorted(kept)


def detect_communities(
    edges: Sequence[Edge],
    *,
    seed: int = DEFAULT_SEED,
    max_cluster_size: int = DEFAULT_MAX_CLUSTER_SIZE,
    previous: Sequence[Community] = (),
) -> list[Community]:
    """Communities (without summaries) of the entity graph; empty for a graph without edges.

    `previous`: the published version's communities, the starting partition (see the module docstring).
    Raises `CommunityDetectionError` only when Leiden fails on this graph even without a warm start.
    """
    weighted = _weighted(edges)
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
