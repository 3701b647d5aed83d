"""The server's own list of read routes, checked against the routes the probes cover.

The channel list is explicit, but the product grows: the audit also reads `/openapi-librarian.json`
(the deployment's custom routes) and reports every read route (GET) that no probe covers as an
untested row, so a route added without a probe is visible in the tally instead of silently passing.
The Platform API's routes (threads, runs, assistants) are not in that document; the user channels
cover them.
"""

from __future__ import annotations

from typing import Any

from librarian.evaluation.leaks.session import AuditSession, json_of
from librarian.evaluation.leaks.tally import ChannelResult
from librarian.evaluation.leaks.world import Member

OPENAPI_PATH = "/openapi-librarian.json"
#: "METHOD path" of the OpenAPI document -> the channel whose probe reads it.
COVERED_ROUTES: dict[str, str] = {
    "GET /orgs/{org}/documents": "document-status",
    "GET /orgs/{org}/documents/{path}": "document-status",
    "GET /orgs/{org}/graph": "document-status",
    "GET /orgs/{org}/documents/{path}/pages/{page}.png": "page-images",
    "GET /orgs/{org}/graph/communities": "graph-communities",
    "GET /orgs/{org}/graph/communities/{community}": "graph-communities",
    "GET /orgs/{org}/graph/entities": "graph-entities",
    "GET /orgs/{org}/graph/evidence": "graph-claims",
    "GET /orgs/{org}/graph/neighbourhood": "graph-entities",
    "GET /orgs/{org}/graph/local": "graph-claims",
    "GET /orgs/{org}/graph/drift": "drift-answers",
    "GET /orgs/{org}/documents/receipts": "delete-receipts",
    "GET /orgs/{org}/eval/gate": "eval-gate",
    "GET /orgs/{org}/graph/costs": "graph-costs",
}


def read_routes(openapi: Any) -> list[str]:
    """Every `GET path` of an OpenAPI document (of any shape: a broken one lists nothing)."""
    paths = openapi.get("paths") if isinstance(openapi, dict) else None
    if not isinstance(paths, dict):
        return []
    return sorted(f"GET {path}" for path, ops in paths.items() if isinstance(ops, dict) and "get" in ops)


def unprobed(openapi: Any, probed: set[str]) -> list[str]:
    """The read routes whose covering channel has no probe in this audit (or that none covers)."""
    return [route for route in read_routes(openapi) if COVERED_ROUTES.get(route) not in probed]


async def unprobed_route_results(
    session: AuditSession, member: Member, probed: set[str]
) -> list[ChannelResult]:
    """One untested row per read route of the server that no probe of this audit reads."""
    reading = await session.call(member, "GET", OPENAPI_PATH)
    if reading.status != 200:
        note = f"the route list {OPENAPI_PATH} answered {reading.status}: routes not checked"
        return [ChannelResult("route list", "-", note=note)]
    note = "a read route of this server that no probe covers"
    return [ChannelResult(f"route {route}", "-", note=note) for route in unprobed(json_of(reading), probed)]
