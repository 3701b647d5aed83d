"""The Graph page's explorer routes (issue 29): entity search, paged communities, one community, an
entity's evidence; member-only, published version only, deleted documents left out.

Two documents are really ingested (upload, parse, embed, index) and a hand-made graph over their
chunks is published (`test_graph_liveness.publish_over_index`); the web API's routes run in-process
with a member of the organization in the scope, as the server's auth middleware would put it.
Hypothesis sends arbitrary query strings: every answer is a 200 or a clean 4xx, never a 500.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from starlette.testclient import TestClient

from services.documents import DocumentService
from tests.integration.test_graph_liveness import ORG, TEXT_A, TEXT_B, B, publish_over_index

OTHER_ORG = "other-org"


class _User(dict):
    is_authenticated = True


def _client(app: Any, orgs: list[str]) -> TestClient:
    user = _User({"identity": "ann", "orgs": orgs, "role": "member", "permissions": []})

    async def authenticated(scope: dict, receive: Any, send: Any) -> None:
        await app({**scope, "user": user}, receive, send)

    return TestClient(authenticated, raise_server_exceptions=False)


@pytest.fixture
def explorer(stack, monkeypatch: pytest.MonkeyPatch) -> tuple[TestClient, DocumentService]:
    import server
    import webapi.graph_explore
    import webapi.graph_view

    service = DocumentService(stack, InMemorySaver())
    for name, text in (("carol-a.txt", TEXT_A), ("carol-b.txt", TEXT_B)):
        path = service.upload(ORG, name, text.encode())
        assert service.ingest(ORG, path).status == "indexed"
    publish_over_index(stack)
    monkeypatch.setattr(webapi.graph_explore, "get_stack", lambda: stack)
    monkeypatch.setattr(webapi.graph_view, "get_stack", lambda: stack)
    return _client(server.app, [ORG, OTHER_ORG]), service


def url(path: str, org: str = ORG) -> str:
    return f"/orgs/{org}/graph{path}"


def test_entity_search_ranks_names_and_suggests(explorer) -> None:
    client, _ = explorer
    body = client.get(url("/entities"), params={"q": "scro"}).json()
    assert [e["name"] for e in body["entities"]] == ["scrooge"] and body["total"] == 1
    assert body["entities"][0]["label"] == "Ebenezer Scrooge"
    # a word inside the label, an alias, case does not matter
    assert [e["name"] for e in client.get(url("/entities"), params={"q": "CRATCH"}).json()["entities"]] == [
        "bob cratchit"
    ]
    assert (
        client.get(url("/entities"), params={"q": "ebenezer scrooge"}).json()["entities"][0]["name"]
        == "scrooge"
    )
    # no query: the best connected first; `limit` caps the list, not `total`
    every = client.get(url("/entities"), params={"limit": 2}).json()
    assert every["total"] == 4 and len(every["entities"]) == 2 and every["entities"][0]["name"] == "scrooge"
    nobody = client.get(url("/entities"), params={"q": "nobody"}).json()
    assert nobody["total"] == 0 and nobody["entities"] == []


def test_communities_page_largest_first_and_keep_the_old_shape(explorer) -> None:
    client, _ = explorer
    old = client.get(url("/communities")).json()
    assert "total" not in old and [c["id"] for c in old["communities"]] == [1, 2, 3]  # level order
    first = client.get(url("/communities"), params={"limit": 2}).json()
    assert first["total"] == 3 and [c["id"] for c in first["communities"]] == [1, 2]
    assert [c["size"] for c in first["communities"]] == [4, 2]
    second = client.get(url("/communities"), params={"offset": 2, "limit": 2}).json()
    assert [c["id"] for c in second["communities"]] == [3] and second["offset"] == 2
    past = client.get(url("/communities"), params={"offset": 99}).json()
    assert past["communities"] == [] and past["total"] == 3
    card = first["communities"][0]
    assert card["memberKeys"][0] == "scrooge" and card["members"][0] == "Ebenezer Scrooge"  # best connected
    assert len(card["members"]) == len(card["memberKeys"])
    matched = client.get(url("/communities"), params={"q": "fezzi"}).json()
    assert {c["id"] for c in matched["communities"]} == {1, 3}
    by_title = client.get(url("/communities"), params={"q": "scrooge at work"}).json()
    assert [c["id"] for c in by_title["communities"]] == [2]


def test_a_community_opens_into_members_and_relations(explorer) -> None:
    client, _ = explorer
    body = client.get(url("/communities/1")).json()
    assert body["size"] == 4 and body["members"][0]["name"] == "scrooge"
    assert {m["name"] for m in body["members"]} == {
        "scrooge",
        "bob cratchit",
        "ghost of christmas past",
        "fezziwig",
    }
    assert body["relationCount"] == 3 and body["relations"][0]["weight"] == 2.0
    small = client.get(url("/communities/3")).json()
    assert small["relations"] == []  # both edges of Fezziwig and the Ghost leave the community
    for member in body["members"]:  # every member's key opens its neighbourhood
        hood = client.get(url("/neighbourhood"), params={"entity": member["name"]})
        assert hood.status_code == 200 and hood.json()["center"] == member["name"]
    missing = client.get(url("/communities/42"))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_community"
    for bad in ("abc", "-1", "1.5", "9" * 12):
        refused = client.get(url(f"/communities/{bad}"))
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_community", bad


def test_evidence_cites_the_chunks_an_entity_came_from(explorer) -> None:
    client, _ = explorer
    body = client.get(url("/evidence"), params={"entity": "scrooge"}).json()
    assert body["entity"]["label"] == "Ebenezer Scrooge"
    claims = [e for e in body["evidence"] if e["kind"] == "claim"]
    assert {c["text"] for c in claims} == {TEXT_A, TEXT_B}
    relations = [e for e in body["evidence"] if e["kind"] == "relation"]
    assert len(relations) == 3 and "employs" in relations[0]["text"]
    for item in body["evidence"]:
        assert item["sources"] and all(1 <= n <= len(body["sources"]) for n in item["sources"])
    for source in body["sources"]:  # what the viewer opens
        assert {"id", "path", "filename", "page", "bbox", "text"} <= set(source)
        assert source["path"].startswith("docs/carol-") and source["text"] in (TEXT_A, TEXT_B)
    by_label = client.get(url("/evidence"), params={"entity": "Ebenezer Scrooge"}).json()
    assert by_label["entity"]["name"] == "scrooge"
    unknown = client.get(url("/evidence"), params={"entity": "nobody"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_entity"
    assert client.get(url("/evidence"), params={"entity": " "}).status_code == 400


def test_a_deleted_document_leaves_the_explorer_before_any_rebuild(explorer, stack) -> None:
    client, service = explorer
    assert service.delete(ORG, B).status == "deleted"  # vectors and file gone; the graph untouched
    assert stack.graph_store.scope(ORG).published_version().version == 1
    names = {e["name"] for e in client.get(url("/entities")).json()["entities"]}
    assert names == {"scrooge", "bob cratchit"}  # Fezziwig and the Ghost came from B only
    page = client.get(url("/communities"), params={"limit": 10}).json()
    assert [(c["id"], c["size"]) for c in page["communities"]] == [(1, 2), (2, 2)]
    assert client.get(url("/communities/3")).status_code == 404
    assert client.get(url("/evidence"), params={"entity": "fezziwig"}).status_code == 404
    body = client.get(url("/evidence"), params={"entity": "scrooge"}).json()
    assert {s["path"] for s in body["sources"]} == {"docs/carol-a.txt"}
    assert TEXT_B not in {e["text"] for e in body["evidence"]}


def test_other_organizations_and_bad_parameters_are_refused(explorer) -> None:
    client, _ = explorer
    import server

    outsider = _client(server.app, ["globex"])
    for path in ("/entities", "/communities?limit=5", "/communities/1", "/evidence?entity=scrooge"):
        assert outsider.get(url(path)).status_code == 403, path
        never_built = client.get(url(path, OTHER_ORG))  # a member, but no graph there
        assert never_built.status_code == 404 and never_built.json()["error"]["code"] == "no_graph", path
    refusals = {
        "/entities?limit=0": "bad_limit",
        "/entities?limit=51": "bad_limit",
        "/entities?limit=-1": "bad_limit",
        "/entities?limit=1e3": "bad_limit",
        "/entities?q=" + "x" * 201: "bad_query",
        "/communities?offset=-1": "bad_offset",
        "/communities?offset=x": "bad_offset",
        "/communities?limit=500": "bad_limit",
        "/communities?q=%00": "bad_query",
    }
    for path, code in refusals.items():
        refused = client.get(url(path))
        assert refused.status_code == 400 and refused.json()["error"]["code"] == code, (path, refused.text)
        assert "Traceback" not in refused.text


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    q=st.text(max_size=250),
    offset=st.one_of(st.none(), st.text(max_size=12), st.integers(-5, 10**12).map(str)),
    limit=st.one_of(st.none(), st.text(max_size=12), st.integers(-5, 10**12).map(str)),
)
def test_any_query_string_is_answered_or_refused_cleanly(
    explorer, q: str, offset: str | None, limit: str | None
) -> None:
    client, _ = explorer
    params = {k: v for k, v in {"q": q, "offset": offset, "limit": limit}.items() if v is not None}
    for path in ("/communities", "/entities"):
        asked = params if path == "/communities" else {k: v for k, v in params.items() if k != "offset"}
        response = client.get(url(path), params=asked)
        assert response.status_code in (200, 400), (path, params, response.text)
        body = response.json()
        if response.status_code == 400:
            assert body["error"]["code"] in {"bad_query", "bad_offset", "bad_limit", "bad_question"}, body
        else:
            listed = body.get("communities", body.get("entities"))
            assert isinstance(listed, list) and len(listed) <= 50
