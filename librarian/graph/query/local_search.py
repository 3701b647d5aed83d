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
Every evidence item maps to a `Source` (`path, page, bbox`), the shape search sources have.

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
fetch (`librarian.graph.query.liveness`), and what the index no longer holds at the graph's content hash is dropped.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from librarian.errors import ContractMismatchError
from librarian.graph.json_repair import parse_llm_json, validate_selected_communities
from librarian.graph.model import ChunkRef, Claim, Community, Edge, normalize_name
from librarian.graph.query.fusion import RRF_K, rrf_fuse, rrf_scores
from librarian.graph.query.liveness import Liveness
from librarian.graph.query.match import EntityRef, MatchedEntity, match_entities, name_lookup
from librarian.graph.query.parse import ParsedQuery, parse_query
from librarian.retrieval.search import SearchOptions, Source, SourceScores, search
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id

TOP_K = 8
VECTOR_CHILD_TOP_K = 12
KEYWORD_LIMIT = 24
KEYWORD_CAP = 16
EVIDENCE_LIMIT = 40
HOPS = 2
CLAIMS_LIMIT = 24
BRIDGE_FROM = 3  # first-hop chunks whose entities are bridges
BRIDGE_ENTITIES = 8
NOUN_PHRASE = "NOUN_PHRASE"  # the local extractor's type for phrases that are not names
BRIDGE_PATHS = 200  # documents searched for the second hop, at most
SOURCES_LIMIT = 12  # sources returned to the agent / caller

StopCheck = Callable[[], bool]


class LocalSearchCancelled(Exception):
    """The caller asked to stop; raised at the next stage boundary."""


# -------------------------------------------------------------------------------- pure parity parts


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


# ------------------------------------------------------------------------------------- snapshots


@dataclass
class GraphSnapshot:
    """What every query of one (organization, version) reads: loaded once, then shared."""

    version: int
    entities: list[EntityRef]
    name_vectors: np.ndarray | None
    entity_types: dict[str, str]
    entity_paths: dict[str, list[str]]  # key -> document paths mentioning it
    chunk_entities: dict[str, list[str]]  # chunk id -> entity keys extracted from it
    communities: dict[int, Community]
    path_chunk: dict[str, str]  # document path -> one chunk id of it (its liveness probe)
    summary_vectors: dict[int | None, tuple[list[int], np.ndarray]] = field(default_factory=dict)  # by level

    @property
    def name_lookup(self) -> dict[str, EntityRef]:
        """Normalised name or alias -> entity, for intent entities (computed once per snapshot)."""
        cached = self.__dict__.get("_lookup")
        if cached is None:
            cached = self.__dict__["_lookup"] = name_lookup(self.entities)
        return cached

    @property
    def document_frequency(self) -> dict[str, int]:
        """Entity key -> number of documents mentioning it (computed once per snapshot)."""
        cached = self.__dict__.get("_frequency")
        if cached is None:
            cached = self.__dict__["_frequency"] = {k: len(v) for k, v in self.entity_paths.items()}
        return cached


_SNAPSHOTS: dict[tuple[Any, ...], GraphSnapshot] = {}


COMMUNITY_PROBES = 20
"""Documents probed per selected community: a community drawing on more is kept without probing
the rest (every one of them deleted since the build is unlikely, and the next build drops it)."""


def community_documents(snapshot: GraphSnapshot, community_id: int) -> tuple[list[str], bool]:
    """(up to COMMUNITY_PROBES documents its members come from, whether more were left unprobed)."""
    paths = sorted(
        {
            p
            for m in snapshot.communities[community_id].members
            for p in snapshot.entity_paths.get(m, [])
            if p in snapshot.path_chunk
        }
    )
    return paths[:COMMUNITY_PROBES], len(paths) > COMMUNITY_PROBES


def version_key(graph: Any, published: Any) -> tuple[Any, ...]:
    """Identifies one published version of one organization in one store, for in-process caches.

    The engine object tells stores apart, and the publication time tells a version from one that
    reused its number in another store whose engine got the same `id` after garbage collection.
    """
    engine = getattr(graph, "_engine", graph)
    return (id(engine), graph.org, published.version, published.published_at or published.created_at)


def load_snapshot(graph: Any, published: Any) -> GraphSnapshot:
    key = version_key(graph, published)
    version = published.version
    cached = _SNAPSHOTS.get(key)
    if cached is not None:
        return cached
    entities = graph.entities(version=version)
    # The key is a spelling of the name too ("scrooge" for "Ebenezer Scrooge"): it joins the aliases.
    refs = [
        EntityRef(
            e.name, e.display_name or e.name, tuple(dict.fromkeys(a for a in [e.name, *e.aliases] if a))
        )
        for e in entities
    ]
    keys, matrix = graph.entity_name_embeddings(version=version)
    name_vectors = None
    if len(keys):
        row = {k: i for i, k in enumerate(keys)}
        dim = matrix.shape[1]
        name_vectors = np.zeros((len(refs), dim), dtype=np.float32)
        for i, ref in enumerate(refs):
            if ref.id in row:
                name_vectors[i] = matrix[row[ref.id]]
    chunk_entities: dict[str, list[str]] = {}
    entity_paths: dict[str, list[str]] = {}
    path_chunk: dict[str, str] = {}
    for e in entities:
        entity_paths[e.name] = sorted({s.path for s in e.sources})
        for source in e.sources:
            chunk_entities.setdefault(source.chunk_id, []).append(e.name)
            path_chunk.setdefault(source.path, source.chunk_id)
    communities = {c.id: c for c in graph.communities(version=version)}
    snapshot = GraphSnapshot(
        version,
        refs,
        name_vectors,
        {e.name: e.type for e in entities},
        entity_paths,
        chunk_entities,
        communities,
        path_chunk,
    )
    for old in [k for k in _SNAPSHOTS if k[:2] == key[:2]]:
        del _SNAPSHOTS[old]  # one version per organization in memory
    _SNAPSHOTS[key] = snapshot
    return snapshot


def check_dimension(matrix: np.ndarray | None, query_vector: np.ndarray, model: str) -> None:
    """Graph vectors and the query vector must come from one embedding model (invariant 1)."""
    if matrix is not None and matrix.size and matrix.shape[1] != query_vector.shape[0]:
        raise ContractMismatchError(
            f"the graph was embedded with {model or 'another model'} ({matrix.shape[1]}-d) but queries are "
            f"embedded {query_vector.shape[0]}-d: rebuild the graph with the configured dense model"
        )


# ------------------------------------------------------------------------------------------ result


class MatchedEntityOut(TypedDict):
    name: str
    displayName: str
    matchType: str
    score: float


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
        lines.append(f"[{n}] {s['filename']}, page {s['page']}:\n{s['text']}")
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
        reply = await model.ainvoke(FILTER_PROMPT.format(query=query, communities=listing))
        content = getattr(reply, "content", reply)
        kept = validate_selected_communities(
            parse_llm_json(str(content)), [str(c["id"]) for c in communities]
        )
    except Exception:  # the ranking stands when the filter cannot be read
        return [c["id"] for c in communities]
    return [int(k) for k in kept]


# ------------------------------------------------------------------------------------------- search


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

    def check() -> None:
        if should_stop is not None and should_stop():
            raise LocalSearchCancelled("the search was cancelled")

    # Opening the store or the embedding model reads files: never on the event loop (the server
    # refuses blocking calls in async code), so every such first touch happens in a worker thread.
    graph = await asyncio.to_thread(lambda: stack.graph_store.scope(org))
    published = await asyncio.to_thread(graph.published_version)
    empty = LocalResult(
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
    if published is None:
        return empty
    version = published.version
    snapshot = await asyncio.to_thread(load_snapshot, graph, published)
    check()

    parsed = await parse_query(query, model)
    check()

    def embed() -> Sequence[float]:
        return (embed_query or stack.dense.embed_query)(query)

    query_vector = np.asarray(await asyncio.to_thread(embed), dtype=np.float32)
    check_dimension(snapshot.name_vectors, query_vector, published.embedding_model)
    matched = match_entities(
        query,
        snapshot.entities,
        lookup=snapshot.name_lookup,
        query_vector=query_vector,
        name_vectors=snapshot.name_vectors,
        intent_entities=parsed.entities,
        k=options.rrf_k,
    )
    matched_names = [m.id for m in matched]
    check()

    # Community candidates: topology (2 hops) and summary vectors.
    def topology() -> list[int]:
        if not matched_names:
            return []
        reached = graph.neighbours(matched_names, hops=options.hops, version=version)
        memberships = graph.communities_of(reached, version=version)
        return topology_candidates(reached, memberships, snapshot.communities, options.level)

    topo_ids = await asyncio.to_thread(topology)
    if options.level not in snapshot.summary_vectors:
        snapshot.summary_vectors[options.level] = await asyncio.to_thread(
            graph.summary_embeddings, level=options.level, version=version
        )
    ids, matrix = snapshot.summary_vectors[options.level]
    semantic_ids: list[int] = []
    if len(ids):
        check_dimension(matrix, query_vector, published.embedding_model)
        cosines = matrix @ (query_vector / (np.linalg.norm(query_vector) or 1.0))
        semantic_ids = [ids[i] for i in np.argsort(-cosines, kind="stable")[: options.top_k]]
    check()

    # Evidence chunks: vector (the search_documents path) + keyword, merged.
    vector = await asyncio.to_thread(
        search,
        stack,
        org,
        query,
        SearchOptions.from_settings(stack, top_k=options.vector_child_top_k),
        reranker,
    )
    vector_sources = vector["sources"]
    terms = keyword_terms(parsed, matched)
    hits = await asyncio.to_thread(graph.keyword_search, terms, limit=options.keyword_limit, version=version)
    check()

    # Community ranking and the optional model filter.
    candidates = list(dict.fromkeys([*topo_ids, *semantic_ids]))
    members_of = {c: snapshot.communities[c].members for c in candidates if c in snapshot.communities}
    edges = await asyncio.to_thread(graph.edges, matched_names, version=version) if matched_names else []
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
        keep = set(await llm_filter(model, query, communities))
        communities = [c for c in communities if c["id"] in keep]
    check()

    # Evidence claims of the selected communities (matched entities' claims first).
    members = list(dict.fromkeys(m for c in communities for m in snapshot.communities[c["id"]].members))
    fetched: list[Claim] = []
    if members:
        fetched = await asyncio.to_thread(
            graph.claims_for, members, limit=options.claims_limit * 4, version=version
        )
        wanted = set(matched_names)
        fetched.sort(key=lambda cl: 0 if (cl.subject in wanted or cl.object in wanted) else 1)

    # Bridge expansion: entities of the first-hop chunks → the documents that mention them.
    first_hop = [s["id"] for s in vector_sources[:BRIDGE_FROM]] if options.bridge else []
    first_paths = {s["path"] for s in vector_sources[:BRIDGE_FROM]}
    exclude = set(matched_names) | {normalize_name(e) for e in parsed.entities}

    def bridge_plan(hop: Sequence[str]) -> tuple[list[str], list[str]]:
        """(bridge entities of the `hop` chunks, the other documents mentioning them, at most 200)."""
        named = bridge_entities(
            hop, snapshot.chunk_entities, exclude, snapshot.document_frequency, snapshot.entity_types
        )
        paths = dict.fromkeys(
            p for b in named for p in snapshot.entity_paths.get(b, []) if p not in first_paths
        )
        return named, list(paths)[:BRIDGE_PATHS]

    bridges, paths = bridge_plan(first_hop) if first_hop else ([], [])

    # Liveness (`librarian.graph.query.liveness`): everything the graph contributes (keyword hits, claims, the
    # first-hop chunks' extracted entities, the bridge documents) is checked against the index in
    # one fetch; a deleted or replaced document's graph copy is dropped, never cited.
    probes = [snapshot.path_chunk[p] for p in paths if p in snapshot.path_chunk]
    drawn_on = {c["id"]: community_documents(snapshot, c["id"]) for c in communities}
    community_probes = [snapshot.path_chunk[p] for docs in drawn_on.values() for p in docs[0]]
    graph_ids = [
        *first_hop,
        *(h.chunk_id for h in hits),
        *(cl.chunk_id for cl in fetched),
        *probes,
        *community_probes,
    ]
    live = await asyncio.to_thread(lambda: Liveness.of(stack, org, graph, version).chunks(graph_ids))
    # A community every document of which is gone keeps no summary in the context (its text was
    # written from those documents); one with documents left unprobed is kept.
    communities = [
        c
        for c in communities
        if drawn_on[c["id"]][1] or any(snapshot.path_chunk[p] in live for p in drawn_on[c["id"]][0])
    ]
    evidence_ids = merge_chunk_ids(
        [s["id"] for s in vector_sources],
        [h.chunk_id for h in hits if h.chunk_id in live],
        options.evidence_limit,
    )
    claims = [cl for cl in fetched if cl.chunk_id in live][: options.claims_limit]
    if any(cid not in live for cid in first_hop):  # entities extracted from a replaced text
        bridges, paths = bridge_plan([cid for cid in first_hop if cid in live])
    paths = [p for p in paths if snapshot.path_chunk.get(p) in live]  # unchecked ones count as gone
    bridge_sources: list[Source] = []
    if paths:
        bridge_options = SearchOptions.from_settings(
            stack, top_k=options.vector_child_top_k, filter={"path": {"$in": paths}}
        )
        found = await asyncio.to_thread(search, stack, org, query, bridge_options, reranker)
        bridge_sources = found["sources"]
    check()

    # Sources: the evidence list fused with the bridge chain (the first-hop chunks that name the
    # bridges, then the chunks found through them); every id resolved to path/page/bbox. The chain
    # starts with the first hop, so a bridge document never outranks the passage that led to it.
    chain = [*first_hop, *(s["id"] for s in bridge_sources if s["id"] not in first_hop)]
    order = [cid for cid, _ in rrf_fuse([evidence_ids, chain], options.rrf_k)]
    claim_chunks = [cl.chunk_id for cl in claims]
    known: dict[str, Source] = {s["id"]: s for s in [*vector_sources, *bridge_sources]}
    missing = [cid for cid in dict.fromkeys([*order, *claim_chunks]) if cid not in known]
    if missing:
        fused_scores = rrf_scores([evidence_ids, chain], options.rrf_k)
        for chunk in await asyncio.to_thread(graph.chunks, missing, version=version):
            known[chunk.chunk_id] = chunk_source(chunk, fused_scores.get(chunk.chunk_id, 0.0))
    sources = [known[cid] for cid in order if cid in known][: options.sources_limit]
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
    for item in claim_evidence:  # a claim's chunk becomes a source too, so the claim can be cited
        if item["sourceId"] not in listed:
            sources.append(known[item["sourceId"]])
            listed.add(item["sourceId"])
    evidence += claim_evidence
    by_key = {e.id: e for e in snapshot.entities}
    return LocalResult(
        query=query,
        status="completed",
        version=version,
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
            )
            for m in matched
        ],
        bridgeEntities=bridges,
        communities=communities,
        evidence=evidence,
        sources=sources,
        relevantContext=render_context(communities, sources, claim_evidence),
    )
