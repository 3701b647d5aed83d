"""`GET /orgs/{org}/graph/costs`: the organization's cost ledger per phase (issue 30 §3).

Member-readable, like the graph status it sits next to: the figures are calls, tokens and seconds of
the organization's own model-backed work (no document content), and every member sees the graph
status that a budget stop explains. Budgets are settings, so there is nothing to write here.
"""

from __future__ import annotations

import asyncio

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from librarian.costs.ledger import ledger_of
from librarian.stack import get_stack
from webapi.access import Reader
from webapi.routing import librarian_router

router = librarian_router()


class PhaseCostModel(BaseModel):
    phase: str = Field(description="extract, summarise, map, reduce, answer, judge or embed.")
    calls: int
    inputTokens: int
    outputTokens: int
    seconds: float = Field(description="Wall time of the phase's model calls.")


class CostTotals(BaseModel):
    calls: int
    inputTokens: int
    outputTokens: int
    seconds: float


class GraphCosts(BaseModel):
    organization_id: str
    phases: list[PhaseCostModel] = Field(description="Every phase, in order; zeros offline.")
    totals: CostTotals


@router.get(
    "/orgs/{org}/graph/costs",
    response_model=GraphCosts,
    operation_id="getGraphCosts",
    summary="The organization's model calls, input and output tokens and seconds, per phase.",
    response_description="The cost ledger; all zeros with the offline defaults.",
)
async def graph_costs(access: Reader) -> JSONResponse:
    report = await asyncio.to_thread(lambda: ledger_of(get_stack()).report(access.org))
    return JSONResponse(report)
