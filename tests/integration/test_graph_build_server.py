"""The graph routes through a real `langgraph dev` server: who may rebuild, what the status shows, that an
upload schedules a (coalesced) build, and that organizations never see each other's graph."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.server_fixtures import DevServer, bearer, running_server, token, upload

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ORG, OTHER = "acme", "globex"
ADMIN = token("ada", ORG, role="admin")
MEMBER = token("max", ORG)
READER = token("rex", ORG, role="reader")
OTHER_ADMIN = token("olga", OTHER, role="admin")
CAROL = b"Ebenezer Scrooge employs Bob Cratchit in London. Mr. Scrooge fears Jacob Marley."


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    with running_server(tmp_path_factory.mktemp("graphserver")) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def wait_for_graph(
    http: httpx.Client, org: str, tok: str, *, documents: int = 1, deadline_s: float = 300.0
) -> dict:
    """Poll GET /orgs/{org}/graph until a published version reflects every indexed document (at least
    `documents` of them)."""
    deadline = time.monotonic() + deadline_s
    last: dict = {}
    while time.monotonic() < deadline:
        response = http.get(f"/orgs/{org}/graph", headers=bearer(tok))
        assert response.status_code == 200, response.text
        last = response.json()
        if last["upToDate"] and last["lastBuild"]["status"] == "published" and last["documents"] >= documents:
            return last
        time.sleep(0.5)
    raise TimeoutError(f"the graph of {org} was not built in {deadline_s}s: {last}")


def test_status_before_any_build(http):
    response = http.get(f"/orgs/{OTHER}/graph", headers=bearer(OTHER_ADMIN))
    assert response.status_code == 200
    body = response.json()
    assert body["organization_id"] == OTHER and body["version"] is None
    assert body["lastBuild"]["status"] == "never" and body["communitiesPerLevel"] == {}


def test_only_admins_of_the_organization_may_rebuild(http):
    for tok in (MEMBER, READER):
        response = http.post(f"/orgs/{ORG}/graph", headers=bearer(tok))
        assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
    assert http.post(f"/orgs/{ORG}/graph", headers=bearer(OTHER_ADMIN)).status_code == 403
    assert http.get(f"/orgs/{ORG}/graph", headers=bearer(OTHER_ADMIN)).status_code == 403
    assert http.post(f"/orgs/{ORG}/graph").status_code == 401


def test_an_upload_schedules_a_build_that_publishes_the_graph(http):
    response = upload(http, ORG, MEMBER, "carol.txt", CAROL)
    assert response.status_code == 202, response.text
    # no one asked for a build: the upload scheduled it, and it waited for the ingest to finish
    status = wait_for_graph(http, ORG, READER)  # readers may read the status
    assert status["version"] == 1 and status["documents"] == 1
    assert status["lastBuild"]["extracted"] == ["docs/carol.txt"]
    assert status["entities"] >= 3 and status["communitiesPerLevel"]
    other = http.get(f"/orgs/{OTHER}/graph", headers=bearer(OTHER_ADMIN)).json()
    assert other["version"] is None and other["entities"] == 0  # acme's graph is not globex's


def test_admin_rebuilds_are_coalesced(http):
    runs = []
    for _ in range(3):
        response = http.post(f"/orgs/{ORG}/graph", headers=bearer(ADMIN))
        assert response.status_code == 202, response.text
        runs.append(response.json())
    assert all(r["organization_id"] == ORG for r in runs)
    assert len({r["run_id"] for r in runs}) <= 2  # at most one running and one queued
    assert any(r["coalesced"] for r in runs[1:])
    status = wait_for_graph(http, ORG, ADMIN)
    assert status["lastBuild"]["extracted"] == []  # nothing changed: nothing re-extracted
    assert status["lastBuild"]["summariesWritten"] == 0
