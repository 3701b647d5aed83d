"""Why a graph source ranks where it does: the per-channel scores behind its place, on the source.

A search source carries its dense, sparse, fused and rerank scores (`SourceScores`); a graph source
used to carry one bare number (local: the search score or the fused RRF score; global: 0.0). Each now
also carries `scores["graph"]`, the channels the graph path actually combined for it:

- local (`LocalGraphScores`): the two lists `local_search` fuses with RRF (the evidence list, i.e.
  vector hits then keyword hits, and the bridge chain, i.e. first-hop chunks then what the bridges
  found), the rank of the chunk in each and in their parts, its fused RRF score, the best matched
  entity it names (with that entity's own match channels: exact, alias, fuzzy, semantic) and the best
  ranked community whose claims come from it;
- global (`GlobalGraphScores`): the communities it stands for, the map step's usefulness (0-100) of
  the best map answer that read them, the rank of the community among those the answer cites, and the
  offline map's cosine when the chunk's own claim was quoted. A global source's `score` is that
  usefulness over 100, so it is never 0.0 for a community the answer drew on.

Ranks are 1-based and None when the chunk is not in that list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from librarian.graph.query.fusion import rrf_scores
from librarian.retrieval.search import Source, SourceScores


class EntityMatchScore(TypedDict):
    entity: str
    score: float  # the entity's fused match score (RRF over its channels)
    channels: dict[str, float]  # exact | alias | fuzzy | semantic | intent -> that channel's score


class LocalGraphScores(TypedDict):
    rrf: float  # fused over the evidence list and the bridge chain: the order of `sources`
    evidenceRank: int | None
    vectorRank: int | None
    keywordRank: int | None
    chainRank: int | None
    bridge: bool  # found by the search in the bridge entities' documents
    claims: int  # claims of the selected communities taken from this chunk
    communityScore: float | None  # best RRF score of a selected community whose claims come from it
    entityMatch: EntityMatchScore | None  # best matched entity the chunk names


class GlobalGraphScores(TypedDict):
    communities: list[str]
    usefulness: int  # 0-100, the map step's, best over the map answers that read these communities
    communityRank: int | None  # 1-based among the communities the answer cites
    quote: float | None  # offline map: cosine of the quoted claim of this chunk to the question


class GraphSourceScores(SourceScores, total=False):
    graph: LocalGraphScores | GlobalGraphScores


def _rank(ids: Sequence[str]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for position, chunk_id in enumerate(ids, start=1):
        ranks.setdefault(chunk_id, position)
    return ranks


def with_graph_scores(
    source: Source, graph: LocalGraphScores | GlobalGraphScores, score: float | None = None
) -> Source:
    """A copy of `source` (search results are shared dicts) with `scores["graph"]` and maybe a new score."""
    scores = GraphSourceScores(**source["scores"])  # type: ignore[typeddict-item]
    scores["graph"] = graph
    updated = dict(source)
    if score is not None:
        updated["score"] = float(score)
        scores["fused"] = float(score)
    updated["scores"] = scores
    return updated  # type: ignore[return-value]


def local_scores(
    sources: Sequence[Source],
    *,
    evidence_ids: Sequence[str],
    vector_ids: Sequence[str],
    keyword_ids: Sequence[str],
    chain: Sequence[str],
    bridge_ids: Sequence[str],
    rrf_k: int,
    claims: Sequence[Any],
    communities: Sequence[Mapping[str, Any]],
    members_of: Mapping[int, Sequence[str]],
    matched: Sequence[Any],
    chunk_entities: Mapping[str, Sequence[str]],
) -> list[Source]:
    """`sources` (in order) each with its `LocalGraphScores`."""
    fused = rrf_scores([list(evidence_ids), list(chain)], rrf_k)
    evidence_rank, vector_rank = _rank(evidence_ids), _rank(vector_ids)
    keyword_rank, chain_rank = _rank(keyword_ids), _rank(chain)
    bridged = set(bridge_ids)
    match_of = {m.id: m for m in matched}
    community_score: dict[str, float] = {}  # entity key -> best selected community score
    for community in communities:
        for member in members_of.get(community["id"], []):
            community_score[member] = max(community_score.get(member, 0.0), float(community["score"]))
    claims_of: dict[str, list[Any]] = {}
    for claim in claims:
        claims_of.setdefault(claim.chunk_id, []).append(claim)
    out: list[Source] = []
    for source in sources:
        chunk_id = source["id"]
        chunk_claims = claims_of.get(chunk_id, [])
        ends = {e for cl in chunk_claims for e in (cl.subject, cl.object) if e}
        community = max((community_score[e] for e in ends if e in community_score), default=None)
        named = [match_of[e] for e in chunk_entities.get(chunk_id, []) if e in match_of]
        named += [match_of[e] for e in ends if e in match_of]
        best = max(named, key=lambda m: m.score, default=None)
        graph = LocalGraphScores(
            rrf=round(fused.get(chunk_id, 0.0), 6),
            evidenceRank=evidence_rank.get(chunk_id),
            vectorRank=vector_rank.get(chunk_id),
            keywordRank=keyword_rank.get(chunk_id),
            chainRank=chain_rank.get(chunk_id),
            bridge=chunk_id in bridged,
            claims=len(chunk_claims),
            communityScore=None if community is None else round(community, 6),
            entityMatch=None
            if best is None
            else EntityMatchScore(
                entity=best.id,
                score=round(float(best.score), 6),
                channels={k: round(float(v), 6) for k, v in best.channels.items()},
            ),
        )
        out.append(with_graph_scores(source, graph))
    return out


def global_scores(
    sources: Sequence[Source],
    communities_of: Mapping[str, Sequence[str]],
    selected: Sequence[Any],
    cited_order: Sequence[str],
    quote_of: Mapping[str, float],
) -> list[Source]:
    """`sources` each with its `GlobalGraphScores`; `score` = the map usefulness / 100.

    `selected` are the map answers the reduce read (`MapAnswer`: `usefulness`, `community_ids`);
    `quote_of` maps a chunk id to the cosine of its quoted claim (offline map only).
    """
    usefulness: dict[str, int] = {}
    for answer in selected:
        for community_id in answer.community_ids:
            usefulness[community_id] = max(usefulness.get(community_id, 0), int(answer.usefulness))
    rank = _rank(cited_order)
    out: list[Source] = []
    for source in sources:
        ids = list(communities_of.get(source["id"], []))
        best = max((usefulness.get(c, 0) for c in ids), default=0)
        ranks = [rank[c] for c in ids if c in rank]
        quote = quote_of.get(source["id"])
        graph = GlobalGraphScores(
            communities=ids,
            usefulness=best,
            communityRank=min(ranks) if ranks else None,
            quote=None if quote is None else round(float(quote), 4),
        )
        out.append(with_graph_scores(source, graph, best / 100))
    return out
