"""Runaway ingests on the server: limits per document, cancel on delete / re-upload / by an admin.

One `langgraph dev` server with small limits (`LIBRARIAN_MAX_CHUNKS_PER_DOCUMENT`, a batch of 2) so
that a "large" document is small: it stays running for seconds, long enough to be cancelled. The
index is read directly from the server's data directory to show that nothing of a cancelled run
remains.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.server_fixtures import (
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
ORG, OTHER = "runaway", "bystander"
MAX_CHUNKS = 400
ADMIN = token("ada", ORG, role="admin")
MEMBER = token("mel", ORG, role="member")
READER = token("rea", ORG, role="reader")
OUTSIDER_ADMIN = token("oz", OTHER, role="admin")


def long_document(parts: int, word: str = "valve") -> bytes:
    """About one chunk per part: `parts` chunks to embed two at a time."""
    return "\n\n".join(
        f"# Part {i}\n\n" + f"The {word} {i} procedure is done step by step with care. " * 16
        for i in range(parts)
    ).encode()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("limits")
    env = {"LIBRARIAN_MAX_CHUNKS_PER_DOCUMENT": str(MAX_CHUNKS), "LIBRARIAN_UPSERT_BATCH_SIZE": "2"}
    with running_server(tmp, env) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=120) as client:
        yield client


def index_ids(server: DevServer, path: str) -> set[str]:
    from librarian.settings import load_settings
    from librarian.stack import Stack

    stack = Stack(load_settings(data_dir=server.workdir.parent / "data"))
    return {i for i in stack.index.list_ids(namespace=ORG) if i.startswith(f"{path}:")}


def start_long_ingest(http: httpx.Client, name: str) -> str:
    """Upload a document of ~300 chunks and wait until its run has written something."""
    response = upload(http, ORG, MEMBER, name, long_document(300))
    assert response.status_code == 202, response.text
    path = response.json()["path"]
    wait_for_status(http, ORG, MEMBER, path, done=("running",), deadline_s=120)
    return path


# --- limits -----------------------------------------------------------------------------------------


def test_a_document_over_the_chunk_limit_is_skipped_with_the_limit_named(http, server):
    response = upload(http, ORG, MEMBER, "huge.md", long_document(MAX_CHUNKS + 50))
    assert response.status_code == 202, response.text
    path = response.json()["path"]
    status = wait_for_status(http, ORG, MEMBER, path)
    assert (status["status"], status["error"]) == ("skipped", "too_many_chunks"), status
    assert f"LIBRARIAN_MAX_CHUNKS_PER_DOCUMENT is {MAX_CHUNKS}" in status["reason"]
    assert index_ids(server, path) == set()


# --- one outcome for delete -------------------------------------------------------------------------


def test_delete_reads_deleted_like_the_cli_and_unknown_paths_are_404(http, server):
    response = upload(http, ORG, MEMBER, "short.md", b"# Short\n\nA short note about pumps.")
    path = response.json()["path"]
    assert wait_for_status(http, ORG, MEMBER, path)["status"] == "indexed"
    assert http.delete(f"/orgs/{ORG}/documents/{path}", headers=bearer(MEMBER)).status_code == 200
    status = wait_for_status(http, ORG, MEMBER, path, done=("deleted",))
    assert (status["status"], status["chunkCount"]) == ("deleted", 0)
    assert http.delete(f"/orgs/{ORG}/documents/{path}", headers=bearer(MEMBER)).status_code == 404
    missing = http.delete(f"/orgs/{ORG}/documents/docs/never-uploaded.md", headers=bearer(MEMBER))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    unknown = http.get(f"/orgs/{ORG}/documents/docs/never-uploaded.md", headers=bearer(MEMBER))
    assert unknown.status_code == 404


# --- cancellation -------------------------------------------------------------------------------------


def test_only_an_admin_of_the_organization_can_cancel(http):
    path = "docs/anything.md"
    for tok, expected in ((MEMBER, 403), (READER, 403), (OUTSIDER_ADMIN, 403)):
        response = http.post(f"/orgs/{ORG}/documents/{path}/cancel", headers=bearer(tok))
        assert response.status_code == expected, (tok, response.text)
        assert "error" in response.json()
    assert http.post(f"/orgs/{ORG}/documents/{path}/cancel").status_code == 401
    missing = http.post(f"/orgs/{ORG}/documents/docs/never-uploaded.md/cancel", headers=bearer(ADMIN))
    assert missing.status_code == 404


def test_an_admin_cancels_a_running_ingest_and_nothing_of_it_remains(http, server):
    path = start_long_ingest(http, "cancel-me.md")
    response = http.post(f"/orgs/{ORG}/documents/{path}/cancel", headers=bearer(ADMIN))
    assert response.status_code == 202, response.text
    status = wait_for_status(http, ORG, MEMBER, path, done=("cancelled",), deadline_s=120)
    assert (status["status"], status["chunkCount"]) == ("cancelled", 0), status
    assert index_ids(server, path) == set()
    again = http.post(f"/orgs/{ORG}/documents/{path}/cancel", headers=bearer(ADMIN))
    assert again.status_code == 409 and again.json()["error"]["code"] == "no_active_ingest"


def test_delete_cancels_the_running_ingest(http, server):
    path = start_long_ingest(http, "delete-me.md")
    assert http.delete(f"/orgs/{ORG}/documents/{path}", headers=bearer(MEMBER)).status_code == 200
    status = wait_for_status(http, ORG, MEMBER, path, done=("deleted",), deadline_s=120)
    assert status["chunkCount"] == 0
    assert index_ids(server, path) == set()


def test_reupload_cancels_the_running_ingest_and_only_the_new_version_is_indexed(http, server):
    path = start_long_ingest(http, "replace-me.md")
    response = upload(http, ORG, MEMBER, "replace-me.md", b"# Replaced\n\nOnly this sentence remains.")
    assert response.status_code == 202
    status = wait_for_status(http, ORG, MEMBER, path, done=("indexed",), deadline_s=120)
    assert status["chunkCount"] == 1
    assert index_ids(server, path) == {f"{path}:0"}


# --- a server restart during an ingest ----------------------------------------------------------------

PICKLE_INTERVAL_S = 10.0  # the dev server saves its runs every 10 s (PLATFORM-NOTES 12)


def test_a_server_killed_during_an_ingest_resumes_it_after_restart(tmp_path):
    """kill -9 the whole server mid-ingest; the restarted server retries the run to the same index."""
    data = long_document(600, word="pump")
    with running_server(tmp_path, {"LIBRARIAN_UPSERT_BATCH_SIZE": "2"}) as first:
        with httpx.Client(base_url=first.url, timeout=120) as http:
            response = upload(http, ORG, MEMBER, "restart.md", data)
            assert response.status_code == 202, response.text
            path = response.json()["path"]
            saved_by = time.monotonic() + PICKLE_INTERVAL_S + 1.5
            wait_for_status(http, ORG, MEMBER, path, done=("running",), deadline_s=120)
            while time.monotonic() < saved_by:  # the run must be in the server's saved state
                status = http.get(f"/orgs/{ORG}/documents/{path}", headers=bearer(MEMBER)).json()
                assert status["status"] in ("running", "queued"), f"finished before the kill: {status}"
                time.sleep(0.25)
            first.kill()
        workdir, env = first.workdir, first.env
    second = DevServer(workdir, env).start()
    try:
        with httpx.Client(base_url=second.url, timeout=120) as http:
            status = wait_for_status(http, ORG, MEMBER, path, done=("indexed", "failed"), deadline_s=600)
        assert status["status"] == "indexed", status
        ids = index_ids(second, path)
        assert len(ids) == status["chunkCount"] >= 600
        assert ids == {f"{path}:{n}" for n in range(status["chunkCount"])}
    finally:
        second.stop()
