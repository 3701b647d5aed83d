"""Local search's ranking and selection rules, as pure functions over ids and names.

They are the parts of graphrag-ts `GraphRAGRetrievalService.retrieve` whose results the parity tests
pin down (community recall by topology, the RRF community ranking, the keyword terms, the evidence
merge), plus the choice of bridge entities; kept free of I/O so each can be checked on its own.
`librarian.graph.query.local_search` runs them against the store and the index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from librarian.graph.model import Community, Edge
from librarian.graph.query.fusion import RRF_K, rrf_fuse
from librarian.graph.query.match import MatchedEntity
from librarian.graph.query.parse import ParsedQuery

TOP_K = 8
KEYWORD_CAP = 16
BRIDGE_ENTITIES = 8
NOUN_PHRASE = "NOUN_PHRASE"  # the local extractor's type for phrases that are not names


def climb_to_level(
    community_ids: Iterable[int], parent_of: dict[int, int | None], level_of: dict[int, int], level: int
) -> list[int]:
    """Each community's ancestor (or itself) at `level`; communities with none there are dropped.

    The reference resolves candidates to a requested level through parents the same way (an SQL
    recursive walk keeping rows at that level); results are sorted by id, as its ORDER BY does.
    """
    found: set[int] = set()
    for community_id in community_ids:
        current: int | None = community_id
        seen: set[int] = set()
        while current is not None and current not in seen:
            seen.add(current)
            if level_of.get(current) == level:
                found.add(current)
                break
            current = parent_of.get(current)
    return sorted(found)


def topology_candidates(
    reached: Iterable[str],
    memberships: dict[str, list[int]],
    communities: dict[int, Community],
    level: int | None,
) -> list[int]:
    """Communities recalled through the graph: the finest community of each reached entity
    (or its ancestor at `level`), sorted by id."""
    leaves: set[int] = set()
    for name in reached:
        ids = [c for c in memberships.get(name, []) if c in communities]
        if not ids:
            continue
        deepest = max(communities[c].level for c in ids)
        leaves.update(c for c in ids if communities[c].level == deepest)
    if level is None:
        return sorted(leaves)
    parent_of = {c.id: c.parent for c in communities.values()}
    level_of = {c.id: c.level for c in communities.values()}
    return climb_to_level(leaves, parent_of, level_of, level)


def merge_chunk_ids(primary: Sequence[str], secondary: Sequence[str], cap: int) -> list[str]:
    """Primary order first, then secondary; deduplicated by id; at most `cap`."""
    merged: list[str] = []
    for chunk_id in [*primary, *secondary]:
        if len(merged) >= cap:
            break
        if chunk_id not in merged:
            merged.append(chunk_id)
    return merged


def keyword_terms(parsed: ParsedQuery, matched: Sequence[MatchedEntity]) -> list[str]:
    """Reference order: intent entities → exact/alias matches → keywords → other matches; ≤ 16."""
    exact = [m.name for m in matched if m.match_type in ("exact", "alias")]
    other = [m.name for m in matched if m.match_type not in ("exact", "alias")]
    terms: list[str] = []
    for term in [*parsed.entities, *exact, *parsed.keywords, *other]:
        term = term.strip()
        if term and term not in terms:
            terms.append(term)
    return terms[:KEYWORD_CAP]


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    union = len(left | right)
    return len(left & right) / union if union else 0.0


def edge_weight_sum(matched: Iterable[str], members: Iterable[str], edges: Iterable[Edge]) -> float:
    """Σ over (matched q, member m) pairs of the weight of the edge q–m, as the reference sums it.

    An edge whose both ends are matched and members counts once per direction (the reference loops
    over query × member pairs), so a community holding two connected matched entities ranks higher.
    """
    q, m = set(matched), set(members)
    total = 0.0
    for e in edges:
        pairs = (e.source in q and e.target in m) + (e.target in q and e.source in m)
        total += e.weight * pairs
    return total


def rank_communities(
    candidates: Sequence[int],
    members_of: dict[int, list[str]],
    matched: Sequence[str],
    edges: Sequence[Edge],
    semantic_ranking: Sequence[int],
    top_k: int = TOP_K,
    k: int = RRF_K,
) -> list[tuple[int, float]]:
    """RRF over (semantic rank, Jaccard rank, edge-weight rank); both sorts are stable on `candidates`."""
    overlap = sorted(candidates, key=lambda c: -jaccard(matched, members_of.get(c, [])))
    # Σ over (q, m) pairs of w(q–m) = Σ over members of what the edges from matched entities bring
    # them: one pass over the edges instead of one per candidate (same sums as `edge_weight_sum`).
    q = set(matched)
    brought: dict[str, float] = {}
    for e in edges:
        if e.source in q:
            brought[e.target] = brought.get(e.target, 0.0) + e.weight
        if e.target in q:
            brought[e.source] = brought.get(e.source, 0.0) + e.weight
    weight = {c: sum(brought.get(m, 0.0) for m in set(members_of.get(c, []))) for c in candidates}
    structure = sorted(candidates, key=lambda c: -weight[c])
    fused = rrf_fuse([list(semantic_ranking), overlap, structure], k)
    return [(c, s) for c, s in fused if c in members_of][:top_k]


def bridge_entities(
    first_hop: Sequence[str],
    chunk_entities: dict[str, list[str]],
    exclude: set[str],
    document_frequency: dict[str, int],
    entity_types: dict[str, str] | None = None,
    limit: int = BRIDGE_ENTITIES,
) -> list[str]:
    """Named entities of the first-hop chunks that the question does not name and that lead on.

    A bridge must be a name (the extractor's noun phrases, "main character", are not), and must be
    mentioned by at least one other document (else it leads nowhere). Order: most specific first (the
    fewest documents mention it: a name in three documents says more than one in three hundred,
    which is a hub such as "American"), then the rank of the first chunk naming it, then its key.
    """
    types = entity_types or {}
    first_rank: dict[str, int] = {}
    for rank, chunk_id in enumerate(first_hop):
        for key in chunk_entities.get(chunk_id, []):
            if key in exclude or key in first_rank or types.get(key) == NOUN_PHRASE:
                continue
            if document_frequency.get(key, 0) >= 2:
                first_rank[key] = rank
    ordered = sorted(first_rank, key=lambda key: (document_frequency[key], first_rank[key], key))
    return ordered[:limit]
