"""Every community member the Graph page lists resolves through the neighbourhood route (issue 27).

A real build (ingest, spaCy, Leiden, SQLite) over documents of the shared example set, then the web
API's routes in-process: for every member of every community, the route answers 200 by the member's
key (what the page sends) and by its display name (what a person types), and every entity's key is
its display name normalised. Before the name rule, 305 of 1,916 FHS entities failed this ("7.3.1
Loading data" was keyed "7.3.1 loading datum") and their buttons answered 404.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from starlette.testclient import TestClient

from librarian.graph.model import normalize_name
from services.documents import DocumentService
from services.graph_index_service import GraphIndexService

ORG = "acme"
DOCUMENTS = ("md/docling-docs/concepts_chunking.md", "md/docling-tests/mixed.md", "docx/word_tables.docx")


class _User(dict):
    is_authenticated = True


def _with_user(app: Any, user: dict[str, Any]) -> Any:
    """The server's auth middleware stood in for: the scope carries a member of ORG."""

    async def authenticated(scope: dict, receive: Any, send: Any) -> None:
        await app({**scope, "user": _User(user)}, receive, send)

    return authenticated


@pytest.fixture
def built(stack, docs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    import server
    import webapi.graph_view

    saver = InMemorySaver()
    documents = DocumentService(stack, saver)
    for relative in DOCUMENTS:
        source = docs_dir / relative
        path = documents.upload(ORG, source.name, source.read_bytes())
        assert documents.ingest(ORG, path).status == "indexed", relative
    report = GraphIndexService(stack, saver).build(ORG)
    assert report["lastBuild"]["status"] == "published" and report["entities"] > 20, report
    monkeypatch.setattr(webapi.graph_view, "get_stack", lambda: stack)
    user = {"identity": "ann", "orgs": [ORG], "role": "member", "permissions": []}
    return TestClient(_with_user(server.app, user), raise_server_exceptions=False)


def test_every_community_member_resolves_by_key_and_by_display_name(built: TestClient, stack) -> None:
    graph = stack.graph_store.scope(ORG)
    entities = graph.entities()
    bad = [(e.display_name, e.name) for e in entities if normalize_name(e.display_name) != e.name]
    assert not bad, bad[:10]

    body = built.get(f"/orgs/{ORG}/graph/communities").json()
    members = [
        (key, label)
        for c in body["communities"]
        for key, label in zip(c["memberKeys"], c["members"], strict=True)
    ]
    assert members and all(len(c["memberKeys"]) == len(c["members"]) for c in body["communities"])
    for key, label in dict.fromkeys(members):
        for asked in (key, label):
            response = built.get(f"/orgs/{ORG}/graph/neighbourhood", params={"entity": asked})
            assert response.status_code == 200, (asked, response.text)
            assert response.json()["center"] == key, asked
    # an alias reaches its entity too, and an unknown name is a clean 404
    aliased = next((e for e in entities if e.aliases), None)
    if aliased is not None:
        hood = built.get(f"/orgs/{ORG}/graph/neighbourhood", params={"entity": aliased.aliases[0]})
        assert hood.status_code == 200 and hood.json()["center"] == aliased.name
    missing = built.get(f"/orgs/{ORG}/graph/neighbourhood", params={"entity": "no such entity at all"})
    assert missing.status_code == 404 and json.loads(missing.text)["error"]["code"] == "unknown_entity"
