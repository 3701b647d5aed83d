"""`LIBRARIAN_GRAPH_AUTO_BUILD=false` on a real `langgraph dev` server: uploads and deletes no longer
schedule a graph build, and an admin's POST /orgs/{org}/graph still builds."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.server_fixtures import (
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)
from tests.integration.test_graph_build_server import wait_for_graph

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ORG = "acme"
ADMIN = token("ada", ORG, role="admin")
CAROL = b"Ebenezer Scrooge employs Bob Cratchit in London. Mr. Scrooge fears Jacob Marley."
OTHER = b"Fred invites Ebenezer Scrooge to dinner. Scrooge declines."


@pytest.fixture(scope="module")
def http(tmp_path_factory) -> Iterator[httpx.Client]:
    extra = {"LIBRARIAN_GRAPH_AUTO_BUILD": "false"}
    with (
        running_server(tmp_path_factory.mktemp("graphmanual"), extra) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        yield client


def graph_status(http: httpx.Client) -> dict:
    response = http.get(f"/orgs/{ORG}/graph", headers=bearer(ADMIN))
    assert response.status_code == 200, response.text
    return response.json()


def test_uploads_and_deletes_schedule_no_build_but_a_manual_rebuild_still_builds(http):
    response = upload(http, ORG, ADMIN, "carol.txt", CAROL)
    assert response.status_code == 202, response.text
    # with automatic builds on, the upload has enqueued a build before it answers (status queued or
    # running); off, the build thread has no run at all
    assert graph_status(http)["lastBuild"]["status"] == "never"
    path = response.json()["path"]
    assert wait_for_status(http, ORG, ADMIN, path)["status"] == "indexed"

    other = upload(http, ORG, ADMIN, "other.txt", OTHER).json()["path"]
    assert wait_for_status(http, ORG, ADMIN, other)["status"] == "indexed"
    assert http.delete(f"/orgs/{ORG}/documents/{other}", headers=bearer(ADMIN)).status_code == 200
    status = graph_status(http)
    assert status["lastBuild"]["status"] == "never" and status["version"] is None
    assert status["staleDocuments"] == [path] and status["upToDate"] is False

    response = http.post(f"/orgs/{ORG}/graph", headers=bearer(ADMIN))
    assert response.status_code == 202, response.text
    built = wait_for_graph(http, ORG, ADMIN)
    assert built["version"] == 1 and built["documents"] == 1
    assert built["lastBuild"]["extracted"] == [path]
