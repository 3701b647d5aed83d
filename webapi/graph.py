"""The GraphRAG routes: an admin's rebuild and cancel, the index's status, the read-only views of
the web app (`webapi.graph_view`) and a DRIFT question (`GET /orgs/{org}/graph/drift`, answered by
`services.ask.answer_with_mode` like `librarian ask --mode drift`, citations checked). Scheduling,
cancelling and status are `services.graph_index_runs`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import Field

from services.graph_index_runs import NoActiveBuildError, cancel_build, schedule_build, server_status
from webapi.access import Access, Reader, admin
from webapi.errors import ApiError
from webapi.graph_explore import (
    community_detail_view,
    community_page_view,
    entity_evidence_view,
    search_entities_view,
)
from webapi.graph_explore_models import CommunityDetail, CommunityPage, EntityEvidence, EntityMatches
from webapi.graph_explore_params import (
    DEFAULT_COMMUNITY_PAGE,
    DEFAULT_SUGGESTIONS,
    CommunityId,
    PageLimit,
    PageOffset,
    SearchText,
    SuggestionLimit,
)
from webapi.graph_view import communities_view, local_answer, neighbourhood_view
from webapi.models import (
    EntityNeighbourhood,
    GraphBuildCancelled,
    GraphBuildScheduled,
    GraphCommunities,
    GraphStatus,
    LocalAnswer,
    LocalSource,
    Open,
)
from webapi.params import EntityName, Question
from webapi.routing import librarian_router, refusals

router = librarian_router()
PAGING = frozenset({"offset", "limit", "q"})  # any of them asks /communities for one page


@router.post(
    "/orgs/{org}/graph",
    status_code=202,
    response_model=GraphBuildScheduled,
    operation_id="rebuildGraph",
    summary="Organization admins: schedule a rebuild of the GraphRAG index.",
    description="Coalesced: when a build is already queued (not started), that one is returned instead "
    "of queueing another, so at most one build runs and one waits. Uploads and deletes schedule one too.",
    response_description="Scheduled (or already queued: `coalesced`).",
    responses=refusals({403: "Not an admin of the organization."}),
)
async def rebuild_graph(access: Annotated[Access, admin("rebuild the graph")]) -> GraphBuildScheduled:
    scheduled = await schedule_build(access.org, owner=access.owner)
    return GraphBuildScheduled(organization_id=access.org, **scheduled)


@router.post(
    "/orgs/{org}/graph/rebuild",
    status_code=202,
    response_model=GraphBuildScheduled,
    operation_id="rebuildGraphNamed",
    summary="Organization admins: schedule a rebuild of the GraphRAG index (same as POST /orgs/{org}/graph).",
    description='The Graph page\'s "Rebuild graph" button; coalesced like `POST /orgs/{org}/graph`.',
    response_description="Scheduled (or already queued: `coalesced`).",
    responses=refusals({403: "Not an admin of the organization."}),
)
async def rebuild_graph_named(access: Annotated[Access, admin("rebuild the graph")]) -> GraphBuildScheduled:
    return await rebuild_graph(access)


@router.post(
    "/orgs/{org}/graph/cancel",
    status_code=202,
    response_model=GraphBuildCancelled,
    operation_id="cancelGraphBuild",
    summary="Organization admins: cancel the queued and running GraphRAG builds.",
    description="The running build stops at its next stage boundary and ends `cancelled`, dropping "
    "the version it was writing; a queued build is removed before it starts. The published graph "
    "stays as it was (only a build's last stage publishes).",
    response_description="What was cancelled: the build told to stop, the queued builds removed.",
    responses=refusals(
        {403: "Not an admin of the organization.", 409: "No build is queued or running (`no_active_build`)."}
    ),
)
async def cancel_graph_build(access: Annotated[Access, admin("cancel a graph build")]) -> GraphBuildCancelled:
    try:
        cancelled = await cancel_build(access.org, owner=access.owner)
    except NoActiveBuildError as exc:
        raise ApiError(409, exc.code, str(exc)) from exc
    return GraphBuildCancelled(**cancelled)


@router.get(
    "/orgs/{org}/graph",
    response_model=GraphStatus,
    operation_id="getGraphStatus",
    summary="The GraphRAG index: published version, counts per level, last build, stale documents.",
    response_description="Status of the organization's graph index.",
)
async def graph_status(access: Reader) -> JSONResponse:
    return JSONResponse(await server_status(access.org))


@router.get(
    "/orgs/{org}/graph/communities",
    response_model=GraphCommunities | CommunityPage,
    operation_id="getGraphCommunities",
    summary="The published graph's communities (level, title, summary, first members).",
    description="Without `offset`, `limit` or `q`: every community, coarsest level first (the first "
    "shape, kept for existing clients). With any of them: one page of the communities that have a "
    "member from a document still indexed, largest first, with `total`; `q` keeps those whose title "
    "or a member's name matches.",
    response_description="Communities: all of them, or one page.",
    responses=refusals({400: "A bad `offset`, `limit` or `q`.", 404: "No published graph yet (`no_graph`)."}),
)
async def graph_communities(
    access: Reader,
    request: Request,
    offset: PageOffset = 0,
    limit: PageLimit = DEFAULT_COMMUNITY_PAGE,
    q: SearchText = "",
) -> JSONResponse:
    if not PAGING.intersection(request.query_params):
        return JSONResponse(await communities_view(access.org))
    return JSONResponse(await community_page_view(access.org, offset, limit, q))


@router.get(
    "/orgs/{org}/graph/communities/{community}",
    response_model=CommunityDetail,
    operation_id="getGraphCommunity",
    summary="One community of the published graph: its members and the relations between them.",
    response_description="The community, members best connected first.",
    responses=refusals(
        {400: "Not a community id (`bad_community`).", 404: "No graph, or no such community."}
    ),
)
async def graph_community(access: Reader, community: CommunityId) -> JSONResponse:
    return JSONResponse(await community_detail_view(access.org, community))


@router.get(
    "/orgs/{org}/graph/entities",
    response_model=EntityMatches,
    operation_id="searchGraphEntities",
    summary="Entities of the published graph whose name matches `q`: suggestions for a search box.",
    description="Exact key or alias first, then names starting with `q`, a word starting with it, "
    "containing it; the best connected first within each. Empty `q`: the best connected entities. "
    "Entities of deleted documents are left out.",
    response_description="Matching entities; look one up by its `name` (the key).",
    responses=refusals({400: "A bad `q` or `limit`.", 404: "No published graph yet (`no_graph`)."}),
)
async def graph_entities(
    access: Reader, q: SearchText = "", limit: SuggestionLimit = DEFAULT_SUGGESTIONS
) -> JSONResponse:
    return JSONResponse(await search_entities_view(access.org, q, limit))


@router.get(
    "/orgs/{org}/graph/evidence",
    response_model=EntityEvidence,
    operation_id="getEntityEvidence",
    summary="One entity's claims and relations, each citing the chunks (path, page, bbox) it came from.",
    response_description="Evidence with numbered sources, as a local answer cites them.",
    responses=refusals({404: "No published graph, or no such entity."}),
)
async def graph_evidence(access: Reader, entity: EntityName) -> JSONResponse:
    return JSONResponse(await entity_evidence_view(access.org, entity))


@router.get(
    "/orgs/{org}/graph/neighbourhood",
    response_model=EntityNeighbourhood,
    operation_id="getEntityNeighbourhood",
    summary="One entity of the published graph, its strongest neighbours and their edges.",
    response_description="Nodes and edges.",
    responses=refusals({404: "No published graph, or no such entity."}),
)
async def graph_neighbourhood(access: Reader, entity: EntityName) -> JSONResponse:
    return JSONResponse(await neighbourhood_view(access.org, entity))


@router.get(
    "/orgs/{org}/graph/local",
    response_model=LocalAnswer,
    operation_id="getGraphLocalAnswer",
    summary="Local GraphRAG retrieval: matched entities, evidence with numbered sources (path, page, "
    "bbox, text) and the matched entities' neighbourhood.",
    response_description="Local retrieval.",
    responses=refusals({404: "No published graph yet (`no_graph`)."}),
)
async def graph_local(access: Reader, q: Question) -> JSONResponse:
    return JSONResponse(await local_answer(access.org, q))


class DriftFollowUp(Open):
    question: str
    depth: int = Field(description="1: raised by the primer; 2: by a follow-up of depth 1; ...")
    score: float = Field(description="The rank it was asked at, among the pending follow-ups.")
    answer: str
    helpfulness: int = Field(description="0-100: how much it helped answer the question.")
    sourceIds: list[str]


class DriftAnswer(Open):
    organization_id: str
    version: int
    status: str = Field(description="`completed`, or `no_results` when no evidence answered the question.")
    question: str
    answer: str = Field(description="Cites `sources` as [n] (1-based); unsupported sentences are marked.")
    primer: dict[str, Any] = Field(description="The primer's broad answer, confidence and communities.")
    followUps: list[DriftFollowUp]
    communities: list[dict[str, Any]]
    sources: list[LocalSource]
    citations: list[dict[str, Any]] = Field(description="One record per checked sentence.")


@router.get(
    "/orgs/{org}/graph/drift",
    response_model=DriftAnswer,
    operation_id="getGraphDriftAnswer",
    summary="DRIFT search: a primer over the closest community reports, local searches on the "
    "follow-up questions it raises, then one answer citing their evidence.",
    description="For broad questions about something specific (how X affects the rest). Offline "
    "(no chat model) every step quotes the documents; with a chat model each step is a model call. "
    "Its size is fixed by LIBRARIAN_GRAPH_DRIFT_PRIMER_K, _FOLLOWUPS and _DEPTH.",
    response_description="The answer, its checked citations and the follow-up tree.",
    responses=refusals({404: "No published graph yet (`no_graph`)."}),
)
async def graph_drift(access: Reader, q: Question) -> JSONResponse:
    from librarian.stack import get_stack  # lazy: the agent's tools load models
    from services.ask import answer_with_mode

    stack = await asyncio.to_thread(get_stack)  # first use opens stores: off the event loop
    answered = await answer_with_mode(stack, access.org, q, "drift")
    details = answered["details"]
    if answered["status"] == "no_graph" or details.get("version") is None:
        raise ApiError(404, "no_graph", "this organization has no published knowledge graph yet")
    return JSONResponse(
        {
            "organization_id": access.org,
            "version": details["version"],
            "status": answered["status"],
            "question": q,
            "answer": answered["answer"],
            "primer": details["primer"],
            "followUps": details["followUps"],
            "communities": details["communities"],
            "sources": answered["sources"],
            "citations": details["citations"],
        }
    )
