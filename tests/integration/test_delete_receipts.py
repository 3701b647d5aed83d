"""A receipt for every delete: measured counts per place, pending graph contributions, probed channels.

Two documents are really ingested and a graph over their indexed chunks is published (the fixture of
`test_graph_liveness`); B's page image is in the page cache. Before the delete every channel finds B
by its own words (so the probes can fail); after `delete_with_receipt` none does, the receipt counts
each place before and after, lists B's graph rows as pending until the next build, and is kept for
its organization only.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.page_cache import page_cache
from librarian.receipts.counting import measure
from librarian.stack import Stack
from services.delete_receipts import receipts_of
from services.documents import DocumentNotFoundError, DocumentService
from services.receipt_probes import probe_all
from tests.integration.test_graph_liveness import ORG, TEXT_A, TEXT_B, A, B, publish_over_index

CHANNELS = {"search", "vector_query_tool", "graph_local", "graph_global", "graph_drift", "page_route"}


@pytest.fixture
def corpus(settings) -> tuple[Stack, DocumentService]:
    stack = Stack(settings)
    service = DocumentService(stack, InMemorySaver())
    for name, text in (("carol-a.txt", TEXT_A), ("carol-b.txt", TEXT_B)):
        path = service.upload(ORG, name, text.encode())
        assert service.ingest(ORG, path).status == "indexed"
    publish_over_index(stack)
    page_cache(stack).put(ORG, B, "page-1-w800-1-1.png", b"\x89PNG rendered page")
    return stack, service


def counts(receipt: dict[str, Any]) -> dict[str, tuple[int, int, str]]:
    return {p["place"]: (p["before"], p["after"], p["action"]) for p in receipt["places"]}


async def test_every_channel_finds_the_document_before_the_delete(corpus) -> None:
    """The probes can fail: with B in place, each channel answers with B's path, ids or text."""
    stack, _ = corpus
    footprint = measure(stack, ORG, B)
    probes = await probe_all(stack, ORG, B, footprint.texts)
    assert {p.channel for p in probes} == CHANNELS
    assert [p.channel for p in probes if not p.found] == []


def test_the_receipt_counts_every_place_and_verifies_no_channel_returns_it(corpus) -> None:
    stack, service = corpus
    status, receipt = service.delete_with_receipt(ORG, B)
    assert status.status == "deleted"
    shown = receipt.as_dict()
    assert shown["verified"] is True and shown["foundIn"] == []
    assert {p["channel"] for p in shown["probes"]} == CHANNELS
    assert all(not p["found"] and p["query"] for p in shown["probes"])

    places = counts(shown)
    for place in ("stored_file", "vectors_dense", "vectors_sparse", "parse_cache", "page_images"):
        assert places[place] == (1, 0, "removed"), place
    sparse_before, sparse_after, action = places["sparse_statistics"]
    assert sparse_before > sparse_after >= 0 and action == "removed"
    # measured, not assumed: the stores agree now
    assert not stack.files.exists(ORG, B) and page_cache(stack).images_of(ORG, B) == 0
    assert stack.index.list_ids(namespace=ORG, prefix="docs/carol-b.txt:") == []

    # the published graph keeps B's rows until the next build: pending, with that build named
    assert places["graph_document"] == (1, 1, "pending_rebuild")
    assert places["graph_entities"] == (3, 3, "pending_rebuild")  # scrooge, the ghost, fezziwig
    assert places["graph_relations"] == (2, 2, "pending_rebuild")
    assert places["graph_claims"] == (1, 1, "pending_rebuild")
    assert places["graph_communities"] == (3, 3, "pending_rebuild")
    pending = {p["place"]: p for p in shown["pending"]}
    assert set(pending) == {k for k, v in places.items() if v[2] == "pending_rebuild"}
    build = pending["graph_claims"]["removedBy"]
    assert build == {
        "publishedVersion": 1,
        "scheduled": False,
        "command": f"librarian graph build --org {ORG}",
    }
    # A is untouched
    assert stack.files.exists(ORG, A) and measure(stack, ORG, A).counts["vectors_dense"] == 1


def test_receipts_are_kept_per_organization(corpus) -> None:
    stack, service = corpus
    _, receipt = service.delete_with_receipt(ORG, B)
    store = receipts_of(stack)
    kept = store.list(ORG)
    assert [r.as_dict() for r in kept] == [receipt.as_dict()]
    assert store.list(ORG, path=B)[0].id == receipt.id and store.list(ORG, path=A) == []
    assert store.list("another-org") == []  # another organization never sees them
    with pytest.raises(DocumentNotFoundError):  # a second delete is refused, and leaves no receipt
        service.delete_with_receipt(ORG, B)
    assert len(store.list(ORG)) == 1


def test_a_channel_that_still_returns_the_text_makes_the_receipt_unverified(corpus) -> None:
    """A copy of B's text under another name is still retrievable: the receipt must not say verified."""
    _, service = corpus
    copy = service.upload(ORG, "carol-b-copy.txt", TEXT_B.encode())
    assert service.ingest(ORG, copy).status == "indexed"
    _, receipt = service.delete_with_receipt(ORG, B)
    assert receipt.verified is False
    assert {"search", "vector_query_tool"} <= set(receipt.found_in)
    assert receipt.as_dict()["foundIn"] == receipt.found_in


# --- the route and the listing, through a real server ------------------------------------------------

SERVER_ORG, OTHER_ORG = "receipts-org", "receipts-other"
SERVER_DOC = (
    b"# Heron survey\n\nThe grey heron colony at Marsh Lane counted forty-one nests in April, three more "
    b"than the year before, and the wardens ringed twelve fledglings.\n"
)


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    import httpx

    from tests.integration.server_fixtures import running_server

    with (
        running_server(
            tmp_path_factory.mktemp("receipts-server"), {"LIBRARIAN_GRAPH_AUTO_BUILD": "true"}
        ) as srv,
        httpx.Client(base_url=srv.url, timeout=120) as client,
    ):
        yield client


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_delete_route_answers_the_receipt_and_admins_list_it(http) -> None:
    from tests.integration.server_fixtures import bearer, token, upload, wait_for_status

    writer, admin = token("wes", SERVER_ORG), token("ada", SERVER_ORG, role="admin")
    path = upload(http, SERVER_ORG, writer, "heron.md", SERVER_DOC).json()["path"]
    wait_for_status(http, SERVER_ORG, writer, path)

    response = http.delete(f"/orgs/{SERVER_ORG}/documents/{path}", headers=bearer(writer))
    assert response.status_code == 200
    body = response.json()
    assert body["deleted"] is True and body["path"] == path and body["run_id"] and body["thread_id"]
    receipt = body["receipt"]
    assert receipt["verified"] is True and receipt["organizationId"] == SERVER_ORG
    assert receipt["deletedBy"] == "wes"
    assert counts(receipt)["vectors_dense"][:2] == (1, 0)
    assert counts(receipt)["stored_file"] == (1, 0, "removed")
    assert {p["channel"] for p in receipt["probes"]} == CHANNELS

    listed = http.get(f"/orgs/{SERVER_ORG}/documents/receipts", headers=bearer(admin))
    assert listed.status_code == 200
    assert [r["id"] for r in listed.json()["receipts"]] == [receipt["id"]]
    assert listed.json()["receipts"][0] == receipt
    one = http.get(f"/orgs/{SERVER_ORG}/documents/receipts", params={"path": path}, headers=bearer(admin))
    assert [r["id"] for r in one.json()["receipts"]] == [receipt["id"]]

    # only admins, only of their organization; bad parameters are clear 400s
    assert http.get(f"/orgs/{SERVER_ORG}/documents/receipts", headers=bearer(writer)).status_code == 403
    other_admin = token("oz", OTHER_ORG, role="admin")
    assert http.get(f"/orgs/{SERVER_ORG}/documents/receipts", headers=bearer(other_admin)).status_code == 403
    theirs = http.get(f"/orgs/{OTHER_ORG}/documents/receipts", headers=bearer(other_admin))
    assert theirs.status_code == 200 and theirs.json()["receipts"] == []
    for params in ({"limit": "0"}, {"limit": "x"}, {"path": "../etc"}):
        bad = http.get(f"/orgs/{SERVER_ORG}/documents/receipts", params=params, headers=bearer(admin))
        assert bad.status_code == 400 and "error" in bad.json(), params


# --- the command line ---------------------------------------------------------------------------------


def test_the_cli_prints_the_receipt_and_lists_the_kept_ones(tmp_path, monkeypatch, capsys) -> None:
    import json
    import os

    from librarian.settings import get_settings
    from librarian_cli import main

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        folder = tmp_path / "in"
        folder.mkdir()
        (folder / "heron.md").write_bytes(SERVER_DOC)
        assert main(["ingest", str(folder), "--org", "cli-receipts", "--quiet"]) == 0
        capsys.readouterr()
        assert main(["delete", "heron.md", "--org", "cli-receipts", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["status"] == "deleted" and shown["receipt"]["verified"] is True
        assert counts(shown["receipt"])["vectors_dense"] == (1, 0, "removed")

        assert main(["delete", "--receipts", "--org", "cli-receipts", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["receipts"]
        assert [r["id"] for r in listed] == [shown["receipt"]["id"]]
        assert main(["delete", "--receipts", "--org", "cli-other", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["receipts"] == []
        assert main(["delete", "--receipts", "--org", "cli-receipts"]) == 0
        assert "verified: no channel returns it" in capsys.readouterr().out
        assert main(["delete", "--org", "cli-receipts"]) == 1  # no path, no --receipts: a clear error
        assert "give the document to delete" in capsys.readouterr().err
    finally:
        get_settings.cache_clear()
