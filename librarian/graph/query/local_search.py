"""Local GraphRAG retrieval: entities the question names → their graph neighbourhood → evidence.

Reference behaviour (graphrag-ts `GraphRAGRetrievalService.retrieve`), kept with its defaults:
1. parse the question (model when configured, rules offline: `librarian.graph.query.parse`);
2. match entities on four channels fused by RRF k = 80 (`librarian.graph.query.match`), plus intent entities;
3. community candidates: (a) topology: the communities of every entity within 2 hops of the matched
   ones (leaf communities; with a requested level, their ancestors at that level, climbing parents),
   (b) semantic: the top-k community summaries by cosine to the question;
4. evidence chunks: hybrid vector top 12 (the same search as `search_documents`, in the
   organization's namespace) + keyword hits (case-insensitive substrings of intent entities, exact
   matches, keywords, fuzzy/semantic matches; at most 16 terms; 24 hits), merged keeping the vector
   order first, deduplicated by chunk id, capped at 40;
5. community ranking: RRF over three lists (summary-vector rank; Jaccard of matched names and
   members; sum of edge weights between matched entities and members), top 8; with a chat model, a
   filter call `{"selectedCommunityIds": [...]}` keeps the relevant ones;
6. evidence claims: claims whose subject or object is a member of a selected community, with their
   source document and chunk.
Every evidence item maps to a `Source` (`path, page, bbox`), the shape search sources have, with
the graph channels behind its rank under `scores["graph"]` (`librarian.graph.query.source_scores`).

Added: **bridge expansion.** Multi-hop questions ("the woman who portrayed X in film Y") need a
second passage reachable only through an entity named in the first. The named entities the graph
extracted from the top first-hop chunks (not those the question itself names, and mentioned by at
least one other document) are bridges, most specific first; the documents that mention them (their
provenance) are searched with the question. The chain (first-hop chunks, then what the bridges
found) is fused (RRF, same k) with the evidence list above to order `sources`, so a bridge document
never outranks the passage that led to it. Nothing here is fitted: the sizes are the reference's
(12 vector, 40 evidence) or round numbers stated below. (On HotpotQA dev150 an earlier variant that
used every entity and let documents found by both lists jump the first hop was measured too; see
the README.)

Added: **liveness.** Until the next build the published graph still holds deleted or replaced
documents; every graph-derived id (keyword hits, claims, the first-hop chunks whose entities pick the
bridges, one chunk per bridge document) is checked against the organization's index in one batched
fetch (`librarian.graph.query.liveness`), and what the index no longer holds at the graph's content
hash is dropped.

The search runs as named stages (`_match`, `_recall_communities`, `_evidence_chunks`,
`_select_communities`, `_community_claims`, `_keep_live`, `_bridge_search`, `_resolve_sources`,
`_cite`), each one of the steps above; the pure ranking rules are in `librarian.graph.query.local_ranking` and
the per-version graph data in `librarian.graph.query.snapshot`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from librarian.chat_model import internal_model
from librarian.graph.json_repair import parse_llm_json, validate_selected_communities
from librarian.graph.model import ChunkRef, Claim, normalize_name
from librarian.graph.query.fusion import RRF_K, rrf_fuse, rrf_scores
from librarian.graph.query.liveness import Liveness
from librarian.graph.query.local_ranking import (
    TOP_K,
    bridge_entities,
    keyword_terms,
    merge_chunk_ids,
    rank_communities,
    topology_candidates,
)
from librarian.graph.query.match import MatchedEntity, match_entities
from librarian.graph.query.parse import ParsedQuery, parse_query
from librarian.graph.query.snapshot import GraphSnapshot, check_dimension, community_documents, load_snapshot
from librarian.graph.query.source_scores import local_scores
from librarian.retrieval.excerpts import excerpt
from librarian.retrieval.search import SearchOptions, Source, SourceScores, search
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id

VECTOR_CHILD_TOP_K = 12
KEYWORD_LIMIT = 24
EVIDENCE_LIMIT = 40
HOPS = 2
CLAIMS_LIMIT = 24
BRIDGE_FROM = 3  # first-hop chunks whose entities are bridges
BRIDGE_PATHS = 200  # documents searched for the second hop, at most
SOURCES_LIMIT = 12  # sources returned to the agent / caller

StopCheck = Callable[[], bool]


class LocalSearchCancelled(Exception):
    """The caller asked to stop; raised at the next stage boundary."""


# ------------------------------------------------------------------------------------------ result


class MatchedEntityOut(TypedDict):
    name: str
    displayName: str
    matchType: str
    score: float
    channels: dict[str, float]  # match channel -> its own score (the parts `score` fuses)


class CommunityOut(TypedDict):
    id: int
    level: int
    title: str
    summary: str
    score: float


class EvidenceOut(TypedDict):
    kind: str  # chunk | claim
    text: str
    sourceId: str  # the chunk id; `sources` holds its path/page/bbox
    subject: str | None
    object: str | None


class LocalResult(TypedDict):
    query: str
    status: str  # completed | no_graph
    version: int | None
    parsed: dict[str, Any]
    matchedEntities: list[MatchedEntityOut]
    bridgeEntities: list[str]
    communities: list[CommunityOut]
    evidence: list[EvidenceOut]
    sources: list[Source]
    relevantContext: str


@dataclass
class LocalOptions:
    top_k: int = TOP_K
    vector_child_top_k: int = VECTOR_CHILD_TOP_K
    keyword_limit: int = KEYWORD_LIMIT
    evidence_limit: int = EVIDENCE_LIMIT
    rrf_k: int = RRF_K
    hops: int = HOPS
    level: int | None = None
    claims_limit: int = CLAIMS_LIMIT
    bridge: bool = True
    sources_limit: int = SOURCES_LIMIT


def chunk_source(chunk: ChunkRef, score: float) -> Source:
    return Source(
        id=chunk.chunk_id,
        score=float(score),
        text=chunk.text,
        path=chunk.path,
        filename=os.path.basename(chunk.path),
        page=int(chunk.page or 0),
        bbox=chunk.bbox,
        blockType="",
        scores=SourceScores(dense=None, sparse=None, fused=float(score), rerank=None),
    )


def render_context(
    communities: Sequence[CommunityOut], sources: Sequence[Source], claims: Sequence[EvidenceOut]
) -> str:
    """The reference's two labelled parts, with our `[n]` source numbers for citation."""
    number = {s["id"]: n for n, s in enumerate(sources, start=1)}
    lines = ["[Community summaries]"]
    lines += [f"- {c['title']}: {c['summary']}" for c in communities if c["summary"]] or ["(none)"]
    lines.append("[Evidence]")
    for n, s in enumerate(sources, start=1):
        lines.append(excerpt(n, s["text"], s["filename"], s["page"]))
    for claim in claims:
        if claim["sourceId"] in number:
            lines.append(f"- claim [{number[claim['sourceId']]}]: {claim['text']}")
    return "\n".join(lines)


FILTER_PROMPT = """Which of these communities of a knowledge graph help answer the question?

Question: {query}

Communities:
{communities}

Reply with JSON only: {{"selectedCommunityIds": [ids of the relevant communities]}}"""


async def llm_filter(model: Any, query: str, communities: Sequence[CommunityOut]) -> list[int]:
    """The model keeps the relevant communities; an unusable reply keeps all of them."""
    listing = "\n".join(f"- id {c['id']}: {c['title']}: {c['summary']}" for c in communities)
    try:
        prompt = FILTER_PROMPT.format(query=query, communities=listing)
        reply = await internal_model(model).ainvoke(prompt)
        content = getattr(reply, "content", reply)
        kept = validate_selected_communities(
            parse_llm_json(str(content)), [str(c["id"]) for c in communities]
        )
    except Exception:  # the ranking stands when the filter cannot be read
        return [c["id"] for c in communities]
    return [int(k) for k in kept]


# ------------------------------------------------------------------------------------------- search


@dataclass(frozen=True)
class _Run:
    """What every stage of one search reads: the question, its options and the graph version."""

    stack: Stack
    org: str
    query: str
    options: LocalOptions
    graph: Any
    published: Any
    snapshot: GraphSnapshot
    reranker: Any | None
    should_stop: StopCheck | None

    @property
    def version(self) -> int:
        return self.published.version

    def check(self) -> None:
        """Stop between stages when the caller asked to: no further read or model call starts."""
        if self.should_stop is not None and self.should_stop():
            raise LocalSearchCancelled("the search was cancelled")


@dataclass
class _GraphEvidence:
    """What the graph contributed before liveness: every id in it is checked against the index."""

    communities: list[CommunityOut]
    hits: list[Any]  # keyword hits, each naming its chunk_id
    claims: list[Claim]
    first_hop: list[str]  # the chunks whose extracted entities pick the bridges
    bridges: list[str]
    paths: list[str]  # documents that mention the bridges


def no_graph_result(query: str) -> LocalResult:
    """The answer while the organization has published no graph: empty, and saying why."""
    return LocalResult(
        query=query,
        status="no_graph",
        version=None,
        parsed={},
        matchedEntities=[],
        bridgeEntities=[],
        communities=[],
        evidence=[],
        sources=[],
        relevantContext="",
    )


async def _match(
    run: _Run, parsed: ParsedQuery, embed_query: Callable[[str], Sequence[float]] | None
) -> tuple[np.ndarray, list[MatchedEntity]]:
    """The question's vector and the entities it names (four channels fused, plus intent entities)."""

    def embed() -> Sequence[float]:
        return (embed_query or run.stack.dense.embed_query)(run.query)

    query_vector = np.asarray(await asyncio.to_thread(embed), dtype=np.float32)
    check_dimension(run.snapshot.name_vectors, query_vector, run.published.embedding_model)
    # in a thread: matching scans every entity, and its first use reads wordfreq's tables from disk
    matched = await asyncio.to_thread(
        match_entities,
        run.query,
        run.snapshot.entities,
        lookup=run.snapshot.name_lookup,
        query_vector=query_vector,
        name_vectors=run.snapshot.name_vectors,
        intent_entities=parsed.entities,
        k=run.options.rrf_k,
    )
    return query_vector, matched


async def _recall_communities(
    run: _Run, query_vector: np.ndarray, matched_names: list[str]
) -> tuple[list[int], list[int]]:
    """Community candidates: (through the graph, `hops` from the matched entities; by summary vector)."""
    options, snapshot, graph = run.options, run.snapshot, run.graph

    def topology() -> list[int]:
        if not matched_names:
            return []
        reached = graph.neighbours(matched_names, hops=options.hops, version=run.version)
        memberships = graph.communities_of(reached, version=run.version)
        return topology_candidates(reached, memberships, snapshot.communities, options.level)

    topo_ids = await asyncio.to_thread(topology)
    if options.level not in snapshot.summary_vectors:
        snapshot.summary_vectors[options.level] = await asyncio.to_thread(
            graph.summary_embeddings, level=options.level, version=run.version
        )
    ids, matrix = snapshot.summary_vectors[options.level]
    semantic_ids: list[int] = []
    if len(ids):
        check_dimension(matrix, query_vector, run.published.embedding_model)
        cosines = matrix @ (query_vector / (np.linalg.norm(query_vector) or 1.0))
        semantic_ids = [ids[i] for i in np.argsort(-cosines, kind="stable")[: options.top_k]]
    return topo_ids, semantic_ids


async def _evidence_chunks(
    run: _Run, parsed: ParsedQuery, matched: list[MatchedEntity]
) -> tuple[list[Source], list[Any]]:
    """(the search_documents path's top chunks, the graph's keyword hits), not merged yet."""
    vector = await asyncio.to_thread(
        search,
        run.stack,
        run.org,
        run.query,
        SearchOptions.from_settings(run.stack, top_k=run.options.vector_child_top_k),
        run.reranker,
    )
    terms = keyword_terms(parsed, matched)
    hits = await asyncio.to_thread(
        run.graph.keyword_search, terms, limit=run.options.keyword_limit, version=run.version
    )
    return vector["sources"], hits


async def _select_communities(
    run: _Run, candidates: list[int], semantic_ids: list[int], matched_names: list[str], model: Any | None
) -> list[CommunityOut]:
    """The candidates ranked (RRF over summary vector, name overlap, edge weight), then the model's pick."""
    snapshot, options = run.snapshot, run.options
    members_of = {c: snapshot.communities[c].members for c in candidates if c in snapshot.communities}
    edges = (
        await asyncio.to_thread(run.graph.edges, matched_names, version=run.version) if matched_names else []
    )
    ranked = rank_communities(
        candidates, members_of, matched_names, edges, semantic_ids, options.top_k, options.rrf_k
    )
    communities = [
        CommunityOut(
            id=c,
            level=snapshot.communities[c].level,
            title=snapshot.communities[c].title,
            summary=snapshot.communities[c].summary,
            score=score,
        )
        for c, score in ranked
    ]
    if model is not None and communities:
        keep = set(await llm_filter(model, run.query, communities))
        communities = [c for c in communities if c["id"] in keep]
    return communities


async def _community_claims(
    run: _Run, communities: list[CommunityOut], matched_names: list[str]
) -> list[Claim]:
    """Claims about the selected communities' members, those of the matched entities first."""
    members = list(dict.fromkeys(m for c in communities for m in run.snapshot.communities[c["id"]].members))
    if not members:
        return []
    fetched: list[Claim] = await asyncio.to_thread(
        run.graph.claims_for, members, limit=run.options.claims_limit * 4, version=run.version
    )
    wanted = set(matched_names)
    fetched.sort(key=lambda cl: 0 if (cl.subject in wanted or cl.object in wanted) else 1)
    return fetched


def plan_bridges(
    snapshot: GraphSnapshot, hop: Sequence[str], exclude: set[str], first_paths: set[str]
) -> tuple[list[str], list[str]]:
    """(bridge entities of the `hop` chunks, the other documents mentioning them, at most 200)."""
    named = bridge_entities(
        hop, snapshot.chunk_entities, exclude, snapshot.document_frequency, snapshot.entity_types
    )
    paths = dict.fromkeys(p for b in named for p in snapshot.entity_paths.get(b, []) if p not in first_paths)
    return named, list(paths)[:BRIDGE_PATHS]


async def _keep_live(
    run: _Run,
    found: _GraphEvidence,
    vector_ids: list[str],
    replan: Callable[[list[str]], tuple[list[str], list[str]]],
) -> tuple[_GraphEvidence, list[str]]:
    """`found` without what the index no longer holds, and the merged evidence chunk ids.

    Everything the graph contributes (keyword hits, claims, the first-hop chunks' extracted entities,
    the bridge documents, the communities' documents) is checked in one fetch; a deleted or replaced
    document's graph copy is dropped, never cited.
    """
    snapshot = run.snapshot
    probes = [snapshot.path_chunk[p] for p in found.paths if p in snapshot.path_chunk]
    drawn_on = {c["id"]: community_documents(snapshot, c["id"]) for c in found.communities}
    community_probes = [snapshot.path_chunk[p] for docs in drawn_on.values() for p in docs[0]]
    graph_ids = [
        *found.first_hop,
        *(h.chunk_id for h in found.hits),
        *(cl.chunk_id for cl in found.claims),
        *probes,
        *community_probes,
    ]
    live = await asyncio.to_thread(
        lambda: Liveness.of(run.stack, run.org, run.graph, run.version).chunks(graph_ids)
    )
    # A community every document of which is gone keeps no summary in the context (its text was
    # written from those documents); one with documents left unprobed is kept.
    communities = [
        c
        for c in found.communities
        if drawn_on[c["id"]][1] or any(snapshot.path_chunk[p] in live for p in drawn_on[c["id"]][0])
    ]
    evidence_ids = merge_chunk_ids(
        vector_ids, [h.chunk_id for h in found.hits if h.chunk_id in live], run.options.evidence_limit
    )
    claims = [cl for cl in found.claims if cl.chunk_id in live][: run.options.claims_limit]
    bridges, paths = found.bridges, found.paths
    if any(cid not in live for cid in found.first_hop):  # entities extracted from a replaced text
        bridges, paths = replan([cid for cid in found.first_hop if cid in live])
    paths = [p for p in paths if snapshot.path_chunk.get(p) in live]  # unchecked ones count as gone
    kept = _GraphEvidence(communities, found.hits, claims, found.first_hop, bridges, paths)
    return kept, evidence_ids


async def _bridge_search(run: _Run, paths: list[str]) -> list[Source]:
    """The question searched again, in the documents that mention the bridges only."""
    if not paths:
        return []
    bridge_options = SearchOptions.from_settings(
        run.stack, top_k=run.options.vector_child_top_k, filter={"path": {"$in": paths}}
    )
    found = await asyncio.to_thread(search, run.stack, run.org, run.query, bridge_options, run.reranker)
    return found["sources"]


async def _resolve_sources(
    run: _Run, lists: list[list[str]], claims: list[Claim], searched: Sequence[Source]
) -> tuple[list[str], dict[str, Source]]:
    """(chunk ids in fused order, a Source for each of them and each claim's chunk the graph holds).

    Chunks that no search returned are read from the graph and scored by their fused RRF score.
    """
    order = [cid for cid, _ in rrf_fuse(lists, run.options.rrf_k)]
    known: dict[str, Source] = {s["id"]: s for s in searched}
    wanted = dict.fromkeys([*order, *(cl.chunk_id for cl in claims)])
    missing = [cid for cid in wanted if cid not in known]
    if missing:
        fused_scores = rrf_scores(lists, run.options.rrf_k)
        for chunk in await asyncio.to_thread(run.graph.chunks, missing, version=run.version):
            known[chunk.chunk_id] = chunk_source(chunk, fused_scores.get(chunk.chunk_id, 0.0))
    return order, known


def _cite(
    order: list[str], known: dict[str, Source], claims: list[Claim], limit: int
) -> tuple[list[Source], list[EvidenceOut], list[EvidenceOut]]:
    """(sources, chunk and claim evidence, claim evidence): a claim's chunk becomes a source too, after
    the first `limit`, so the claim can be cited."""
    sources = [known[cid] for cid in order if cid in known][:limit]
    evidence: list[EvidenceOut] = [
        EvidenceOut(kind="chunk", text=s["text"], sourceId=s["id"], subject=None, object=None)
        for s in sources
    ]
    claim_evidence = [
        EvidenceOut(
            kind="claim", text=cl.description, sourceId=cl.chunk_id, subject=cl.subject, object=cl.object
        )
        for cl in claims
        if cl.chunk_id in known
    ]
    listed = {s["id"] for s in sources}
    for item in claim_evidence:
        if item["sourceId"] not in listed:
            sources.append(known[item["sourceId"]])
            listed.add(item["sourceId"])
    return sources, evidence + claim_evidence, claim_evidence


def _result(
    run: _Run,
    parsed: ParsedQuery,
    matched: list[MatchedEntity],
    found: _GraphEvidence,
    sources: list[Source],
    evidence: list[EvidenceOut],
    claim_evidence: list[EvidenceOut],
) -> LocalResult:
    by_key = {e.id: e for e in run.snapshot.entities}
    return LocalResult(
        query=run.query,
        status="completed",
        version=run.version,
        parsed={
            "entities": parsed.entities,
            "keywords": parsed.keywords,
            "themes": parsed.themes,
            "parser": parsed.parser,
        },
        matchedEntities=[
            MatchedEntityOut(
                name=m.id,
                displayName=by_key[m.id].name if m.id in by_key else m.name,
                matchType=m.match_type,
                score=m.score,
                channels=dict(m.channels),
            )
            for m in matched
        ],
        bridgeEntities=found.bridges,
        communities=found.communities,
        evidence=evidence,
        sources=sources,
        relevantContext=render_context(found.communities, sources, claim_evidence),
    )


async def local_search(
    stack: Stack,
    organization_id: str,
    query: str,
    options: LocalOptions | None = None,
    *,
    model: Any | None = None,
    reranker: Any | None = None,
    embed_query: Callable[[str], Sequence[float]] | None = None,
    should_stop: StopCheck | None = None,
) -> LocalResult:
    """Local retrieval in the organization's graph and index. Blocking reads run in threads."""
    org = validate_organization_id(organization_id)
    options = options or LocalOptions()
    query = query.strip()
    if not query:
        raise ValueError("the question is empty")
    # Opening the store or the embedding model reads files: never on the event loop (the server
    # refuses blocking calls in async code), so every such first touch happens in a worker thread.
    graph = await asyncio.to_thread(lambda: stack.graph_store.scope(org))
    published = await asyncio.to_thread(graph.published_version)
    if published is None:
        return no_graph_result(query)
    snapshot = await asyncio.to_thread(load_snapshot, graph, published)
    run = _Run(stack, org, query, options, graph, published, snapshot, reranker, should_stop)
    run.check()
    parsed = await parse_query(query, model)
    run.check()
    query_vector, matched = await _match(run, parsed, embed_query)
    matched_names = [m.id for m in matched]
    run.check()
    topo_ids, semantic_ids = await _recall_communities(run, query_vector, matched_names)
    run.check()
    vector_sources, hits = await _evidence_chunks(run, parsed, matched)
    run.check()
    candidates = list(dict.fromkeys([*topo_ids, *semantic_ids]))
    communities = await _select_communities(run, candidates, semantic_ids, matched_names, model)
    run.check()
    fetched = await _community_claims(run, communities, matched_names)

    # Bridge expansion: entities of the first-hop chunks → the documents that mention them.
    first_hop = [s["id"] for s in vector_sources[:BRIDGE_FROM]] if options.bridge else []
    first_paths = {s["path"] for s in vector_sources[:BRIDGE_FROM]}
    exclude = set(matched_names) | {normalize_name(e) for e in parsed.entities}

    def replan(hop: Sequence[str]) -> tuple[list[str], list[str]]:
        return plan_bridges(snapshot, hop, exclude, first_paths)

    bridges, paths = replan(first_hop) if first_hop else ([], [])
    found = _GraphEvidence(communities, hits, fetched, first_hop, bridges, paths)
    found, evidence_ids = await _keep_live(run, found, [s["id"] for s in vector_sources], replan)
    bridge_sources = await _bridge_search(run, found.paths)
    run.check()

    # Sources: the evidence list fused with the bridge chain (the first-hop chunks that name the
    # bridges, then the chunks found through them); every id resolved to path/page/bbox. The chain
    # starts with the first hop, so a bridge document never outranks the passage that led to it.
    chain = [*first_hop, *(s["id"] for s in bridge_sources if s["id"] not in first_hop)]
    order, known = await _resolve_sources(
        run, [evidence_ids, chain], found.claims, [*vector_sources, *bridge_sources]
    )
    sources, evidence, claim_evidence = _cite(order, known, found.claims, options.sources_limit)
    sources = local_scores(
        sources,
        evidence_ids=evidence_ids,
        vector_ids=[s["id"] for s in vector_sources],
        keyword_ids=[h.chunk_id for h in found.hits],
        chain=chain,
        bridge_ids=[s["id"] for s in bridge_sources],
        rrf_k=options.rrf_k,
        claims=found.claims,
        communities=found.communities,
        members_of={c["id"]: snapshot.communities[c["id"]].members for c in found.communities},
        matched=matched,
        chunk_entities=snapshot.chunk_entities,
    )
    return _result(run, parsed, matched, found, sources, evidence, claim_evidence)
