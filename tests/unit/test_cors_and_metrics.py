"""CORS granted to configured origins only, and `/metrics` for admin tokens (issue 23 §6.3, §6.4).

The inner app stands in for the LangGraph server: its own CORS layer (Starlette's, configured as the
server configures it by default) grants every origin, and `/metrics` answers without auth. The
middleware under test wraps it as `server.py`'s middleware list wraps the server.
"""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from librarian.auth import TokenVerifier, mint_token
from librarian.settings import load_settings
from webapi.cors import CorsMiddleware
from webapi.metrics_guard import MetricsGuardMiddleware

SECRET = "unit-test-secret-" + "y" * 32
ALLOWED = "http://localhost:3000"
STRANGER = "https://evil.example"


def _server_like_app(outer: list[Middleware]) -> Starlette:
    async def ok(request):
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/threads", ok, methods=["GET", "POST"]),
            Route("/metrics", lambda request: PlainTextResponse("http_requests_total 7")),
            Route("/ok", ok),
        ],
        middleware=[
            *outer,
            Middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"], allow_headers=["*"]),
        ],
    )


@pytest.fixture
def cors() -> TestClient:
    return TestClient(_server_like_app([Middleware(CorsMiddleware, origins=lambda: [ALLOWED])]))


def test_without_the_middleware_the_server_grants_every_origin():
    stock = TestClient(_server_like_app([]))
    assert stock.get("/threads", headers={"origin": STRANGER}).headers["access-control-allow-origin"] == "*"


def test_another_origin_gets_no_grant(cors):
    response = cors.get("/threads", headers={"origin": STRANGER})
    assert response.status_code == 200
    assert not [k for k in response.headers if k.startswith("access-control-")]


def test_a_configured_origin_gets_its_grant(cors):
    response = cors.post("/threads", headers={"origin": ALLOWED, "authorization": "Bearer x"})
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert "x-pagination-total" in response.headers["access-control-expose-headers"]
    assert "origin" in response.headers["vary"].lower()


def test_same_origin_requests_pass_untouched(cors):
    response = cors.get("/threads")
    assert response.text == "ok" and "access-control-allow-origin" not in response.headers


def test_preflight_of_a_configured_origin_allows_the_token_headers(cors):
    response = cors.options(
        "/threads",
        headers={
            "origin": ALLOWED,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, x-api-key, content-type",
        },
    )
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert response.headers["access-control-allow-headers"] == "authorization, x-api-key, content-type"
    assert "POST" in response.headers["access-control-allow-methods"]


def test_preflight_of_another_origin_is_refused_without_grants(cors):
    response = cors.options(
        "/threads",
        headers={
            "origin": STRANGER,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization",
            "access-control-request-private-network": "true",
        },
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert not [k for k in response.headers if k.startswith("access-control-")]


def test_star_allows_every_origin_and_empty_allows_none():
    anyone = TestClient(_server_like_app([Middleware(CorsMiddleware, origins=lambda: ["*"])]))
    assert (
        anyone.get("/threads", headers={"origin": STRANGER}).headers["access-control-allow-origin"]
        == STRANGER
    )
    nobody = TestClient(_server_like_app([Middleware(CorsMiddleware, origins=lambda: [])]))
    assert "access-control-allow-origin" not in nobody.get("/threads", headers={"origin": ALLOWED}).headers


def test_origins_come_from_the_setting(settings, monkeypatch):
    defaults = load_settings(data_dir=settings.data_dir).cors_origin_list()
    assert defaults == ("http://localhost:3000", "https://smith.langchain.com")  # Agent Chat UI, Studio
    monkeypatch.setenv("LIBRARIAN_CORS_ORIGINS", "https://chat.example.com, http://127.0.0.1:5173/")
    loaded = load_settings(data_dir=settings.data_dir)
    assert loaded.cors_origin_list() == ("https://chat.example.com", "http://127.0.0.1:5173")
    monkeypatch.setenv("LIBRARIAN_CORS_ORIGINS", "")
    assert load_settings(data_dir=settings.data_dir).cors_origin_list() == ()


# --- /metrics ------------------------------------------------------------------------------------


@pytest.fixture
def metrics() -> TestClient:
    guard = Middleware(MetricsGuardMiddleware, verifier=lambda: TokenVerifier(secret=SECRET))
    return TestClient(_server_like_app([guard]))


def _token(role: str) -> str:
    return mint_token(SECRET, "ada", "acme", role=role)


def test_metrics_without_a_token_is_a_401(metrics):
    response = metrics.get("/metrics")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert metrics.get("/metrics/", headers={"authorization": "Bearer forged"}).status_code == 401
    assert metrics.get("/metrics?format=json").status_code == 401


@pytest.mark.parametrize("role", ["member", "reader"])
def test_metrics_for_a_non_admin_is_a_403(metrics, role):
    response = metrics.get("/metrics", headers={"authorization": f"Bearer {_token(role)}"})
    assert response.status_code == 403 and "admin" in response.json()["error"]["message"]


def test_metrics_for_an_admin_token_in_either_header(metrics):
    admin = _token("admin")
    assert (
        metrics.get("/metrics", headers={"authorization": f"Bearer {admin}"}).text == "http_requests_total 7"
    )
    assert metrics.get("/metrics", headers={"x-api-key": admin}).status_code == 200


def test_other_routes_are_not_the_guards_business(metrics):
    assert metrics.get("/ok").text == "ok"
    assert metrics.get("/threads").text == "ok"  # the server's own auth decides there
