"""Librarian's FastAPI routes in-process: the order of refusals, their shape, and the generated OpenAPI.

The server's auth middleware is stood in for by one that puts a user dict in the scope, as the server
does; no route here reaches the services (every request is refused, or answered, before that). The
real server runs the same routes in `tests/integration/test_server_*.py` and `tests/e2e/`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.routing import APIRoute
from starlette.testclient import TestClient

import server
from services.document_status import DocumentStatus
from services.graph_index_status import build_status, status_report
from webapi import models
from webapi.routing import LibrarianRoute


class User(dict):
    """The server's user: a dict that also answers `is_authenticated`."""

    is_authenticated = True


def user(org: str = "acme", role: str = "member") -> User:
    permissions = [] if role == "reader" else ["documents:write"]
    return User(identity="ann", orgs=[org], role=role, permissions=permissions)


def with_user(app: Any) -> Any:
    async def authenticated(scope: dict, receive: Any, send: Any) -> None:
        raw = dict(scope.get("headers") or []).get(b"x-test-user")
        if raw is not None:
            scope = {**scope, "user": User(json.loads(raw))}
        await app(scope, receive, send)

    return authenticated


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(with_user(server.app), raise_server_exceptions=False)


def get(
    client: TestClient, url: str, who: User | None = None, method: str = "GET", headers: Any = None, **kw: Any
) -> Any:
    headers = {**(headers or {}), **({"x-test-user": json.dumps(who)} if who is not None else {})}
    return client.request(method, url, headers=headers, **kw)


def refused(response: Any, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    return body["error"]["message"]


PAGE = "/orgs/acme/documents/docs/a.md/pages/{page}.png"


@pytest.mark.parametrize(
    ("url", "who", "status", "code"),
    [
        ("/orgs/acme/documents", None, 401, "unauthenticated"),
        ("/orgs/Bad!/documents/bad", user(), 404, "not_found"),  # the org before the path
        ("/orgs/-x/documents", None, 401, "unauthenticated"),  # the caller before the org
        ("/orgs/globex/documents/bad", user(), 403, "forbidden"),  # membership before the path
        ("/orgs/acme/documents/other/x.md", user(), 400, "invalid_path"),
        ("/orgs/acme/documents/", user(), 400, "invalid_path"),
        ("/orgs/acme/documents/docs/a.md/cancel", user(), 400, "invalid_path"),  # GET: a path
        (PAGE.format(page="two") + "?width=5", user(), 400, "bad_page"),  # the page before the width
        (PAGE.format(page="0"), user(), 404, "page_not_found"),
        (PAGE.format(page="100001"), user(), 404, "page_not_found"),
        (PAGE.format(page="1") + "?width=5000", user(), 400, "bad_width"),
        (PAGE.format(page="1") + "?width=", user(), 400, "bad_width"),
        (PAGE.format(page="1") + "?width=%C2%B2", user(), 400, "bad_width"),  # a superscript two
        (PAGE.format(page="1"), user(), 404, "no_page_images"),  # the page route, not getDocument
        ("/orgs/acme/documents/nodocs/pages/1.png?width=5", user(), 400, "invalid_path"),
        ("/orgs/globex/documents/docs/a.md/pages/x.png?width=5", user(), 403, "forbidden"),
        ("/orgs/acme/graph/neighbourhood", user(), 400, "bad_entity"),  # missing: read as empty
        ("/orgs/acme/graph/neighbourhood?entity=%20", user(), 400, "bad_entity"),
        ("/orgs/acme/graph/neighbourhood?entity=" + "x" * 201, user(), 400, "bad_entity"),
        ("/orgs/acme/graph/local", user(), 400, "bad_question"),
        ("/orgs/acme/graph/local?q=" + "x" * 1001, user(), 400, "bad_question"),
        ("/orgs/globex/graph/local", user(), 403, "forbidden"),
    ],
)
def test_refusals_come_in_order_and_in_the_error_shape(client, url, who, status, code):
    refused(get(client, url, who), status, code)


@pytest.mark.parametrize(
    ("method", "url", "who", "message"),
    [
        ("POST", "/orgs/acme/documents", user(role="reader"), "your role cannot change"),
        ("DELETE", "/orgs/acme/documents/docs/a.md", user(role="reader"), "your role cannot change"),
        ("POST", "/orgs/acme/documents/docs/a.md/cancel", user(), "only an organization admin can cancel"),
        ("POST", "/orgs/acme/graph", user(), "only an organization admin can rebuild the graph"),
        ("POST", "/orgs/acme/graph", user(role="reader"), "your role cannot change"),
    ],
)
def test_writes_need_the_role(client, method, url, who, message):
    assert refused(get(client, url, who, method), 403, "forbidden").startswith(message)


def test_an_upload_is_checked_before_its_body_is_read(client):
    writer = user()
    headers = {"content-type": "multipart/form-data; boundary=zz", "content-length": "x"}
    response = get(client, "/orgs/acme/documents", writer, "POST", headers=headers, content=b"")
    assert refused(response, 400, "malformed_upload") == "Content-Length is not a number"
    response = get(client, "/orgs/acme/documents", writer, "POST", content=b"{}")
    refused(response, 400, "malformed_upload")


def test_head_is_answered_like_get(client):
    response = get(client, PAGE.format(page="1"), user(), "HEAD")
    assert response.status_code == 404 and response.headers["content-type"] == "application/json"


def test_the_401_names_the_scheme(client):
    response = get(client, "/orgs/acme/graph")
    assert response.headers["www-authenticate"] == 'Bearer realm="librarian"'


# --- the OpenAPI document ------------------------------------------------------------------------

OPERATIONS = {
    "uploadDocument",
    "listDocuments",
    "getDocument",
    "deleteDocument",
    "cancelDocumentIngest",
    "getDocumentPage",
    "rebuildGraph",
    "cancelGraphBuild",
    "getGraphStatus",
    "getGraphCommunities",
    "getGraphCommunity",  # webapi/graph.py: the Graph page's explorer (issue 29)
    "searchGraphEntities",
    "getEntityEvidence",
    "rebuildGraphNamed",
    "getEntityNeighbourhood",
    "getGraphLocalAnswer",
    "getGraphDriftAnswer",
    "eraseMemberConversations",
    "putEvalQuestions",  # webapi/eval_gate.py
    "getEvalGate",
    "getGraphCosts",  # webapi/graph_costs.py
    "listDeleteReceipts",  # webapi/documents.py (delete receipts)
}


@pytest.fixture(scope="module")
def spec(client) -> dict[str, Any]:
    response = get(client, "/openapi-librarian.json", user())
    assert response.status_code == 200
    return response.json()


def test_the_document_is_generated_with_every_operation(spec):
    assert spec["info"]["title"] == "Librarian" and spec["openapi"].startswith("3.1")
    operations = [op for item in spec["paths"].values() for op in item.values()]
    assert {op["operationId"] for op in operations} == OPERATIONS
    assert spec == server.app.openapi()  # what the server merges into /openapi.json


def test_every_refusal_is_documented_in_the_error_shape_never_as_fastapis_422(spec):
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    page = spec["paths"]["/orgs/{org}/documents/{path}/pages/{page}.png"]["get"]["responses"]["200"]
    assert list(page["content"]) == ["image/png"]
    for item in spec["paths"].values():
        for op in item.values():
            assert op["security"] == [{"bearer": []}]
            for status, response in op["responses"].items():
                if status == "default" or int(status) >= 400:
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}, (op["operationId"], status)


def test_parameters_carry_their_checks_constraints(spec):
    page = spec["paths"]["/orgs/{org}/documents/{path}/pages/{page}.png"]["get"]
    params = {p["name"]: p for p in page["parameters"]}
    assert {"minimum": 200, "maximum": 2000, "default": 1000}.items() <= params["width"]["schema"].items()
    assert params["page"]["schema"]["minimum"] == 1 and params["path"]["schema"]["pattern"] == "^docs/.+$"
    assert params["org"]["schema"]["pattern"].startswith("^[A-Za-z0-9]")
    upload = spec["paths"]["/orgs/{org}/documents"]["post"]
    form = upload["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["required"] == ["file"] and form["properties"]["file"]["format"] == "binary"
    local = spec["paths"]["/orgs/{org}/graph/local"]["get"]["parameters"]
    assert any(p["name"] == "q" and p["required"] and p["schema"]["maxLength"] == 1000 for p in local)


def test_every_route_is_a_plain_route_the_server_can_wrap_with_auth():
    """The server puts its auth middleware on each route's `app`; an included router has none."""
    for route in server.app.routes:
        assert isinstance(route, LibrarianRoute) and isinstance(route, APIRoute) and callable(route.app)


# --- the services' bodies match the declared models ----------------------------------------------


THREAD = "6f1c1e0e-1111-4111-8111-111111111111"


def _keys_declared(model: type[models.BaseModel], body: dict[str, Any]) -> None:
    model.model_validate(body)
    assert set(body) <= set(model.model_fields), set(body) - set(model.model_fields)


def test_document_statuses_match_their_model():
    full = DocumentStatus("docs/a.md", "queued", threadId=THREAD, queuedRuns=1)
    for status in (DocumentStatus("docs/a.md", "not_ingested"), full):
        _keys_declared(models.DocumentStatus, status.as_dict())


def test_graph_status_matches_its_model():
    values = {"status": "published", "extracted": [{"path": "docs/a.md", "status": "failed"}]}
    last = build_status(values, [], ["x"])
    last.update(threadId=THREAD, queuedRuns=0)
    _keys_declared(models.LastBuild, last)
    report = status_report("acme", None, {}, {"docs/a.md": "h"}, last)
    _keys_declared(models.GraphStatus, report)
    _keys_declared(models.LastBuild, build_status({}, [], []))
