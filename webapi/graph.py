"""The GraphRAG routes: an admin's rebuild and cancel, the index's status, and the read-only views of
the web app (`webapi.graph_view`). Scheduling, cancelling and status are `services.graph_index_runs`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi.responses import JSONResponse

from services.graph_index_runs import NoActiveBuildError, cancel_build, schedule_build, server_status
from webapi.access import Access, Reader, admin
from webapi.errors import ApiError
from webapi.graph_view import communities_view, local_answer, neighbourhood_view
from webapi.models import (
    EntityNeighbourhood,
    GraphBuildCancelled,
    GraphBuildScheduled,
    GraphCommunities,
    GraphStatus,
    LocalAnswer,
)
from webapi.params import EntityName, Question
from webapi.routing import librarian_router, refusals

router = librarian_router()


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
    response_model=GraphCommunities,
    operation_id="getGraphCommunities",
    summary="The published graph's communities (level, title, summary, first members).",
    response_description="Communities, coarsest level first.",
    responses=refusals({404: "No published graph yet (`no_graph`)."}),
)
async def graph_communities(access: Reader) -> JSONResponse:
    return JSONResponse(await communities_view(access.org))


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
