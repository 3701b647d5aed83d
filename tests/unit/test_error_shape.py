"""The server-wide error shape, the last net for unhandled errors, and the client-chosen-id guard."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from webapi.errors import ErrorShapeMiddleware
from webapi.guard import PlatformBodyGuardMiddleware, loopback_error


async def _crash(request: Request) -> JSONResponse:
    raise KeyError("namespace_prefix")


async def _platform_404(request: Request) -> JSONResponse:
    return JSONResponse({"detail": "Thread not found"}, status_code=404)


async def _ours_403(request: Request) -> JSONResponse:
    return JSONResponse({"detail": "not a member"}, status_code=403)


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"body": json.loads(await request.body() or b"null")})


async def _loopback_refused(request: Request) -> JSONResponse:
    inner = httpx.Response(
        403, json={"detail": "only the agent graph"}, request=httpx.Request("POST", "http://api/x")
    )
    raise httpx.HTTPStatusError("403", request=inner.request, response=inner)


def _app() -> Starlette:
    return Starlette(
        routes=[
            Route("/crash", _crash),
            Route("/threads/x", _platform_404),
            Route("/orgs/a/documents", _ours_403),
            Route("/threads", _echo, methods=["POST"]),
            Route("/threads/t1/history", _echo, methods=["POST"]),
            Route("/mcp", _loopback_refused, methods=["POST"]),
            Route("/text", lambda request: PlainTextResponse("teapot", status_code=418)),
        ],
        middleware=[
            Middleware(ErrorShapeMiddleware, prefixes=("/orgs/",)),
            Middleware(PlatformBodyGuardMiddleware),
        ],
        exception_handlers={httpx.HTTPStatusError: loopback_error},
    )


@pytest.fixture
def client() -> TestClient:
    return TestClient(_app(), raise_server_exceptions=False)


def test_unhandled_errors_are_a_plain_500_in_the_error_shape_and_logged(client, caplog):
    with caplog.at_level(logging.ERROR, logger="librarian.server"):
        response = client.get("/crash")
    assert response.status_code == 500
    assert response.json()["error"] == {
        "code": "internal_error",
        "message": "the server could not complete the request",
    }
    assert "namespace_prefix" not in response.text and "Traceback" not in response.text
    assert any("KeyError" in (r.exc_text or "") for r in caplog.records)  # visible to operators


def test_platform_errors_get_the_shape_and_keep_detail_ours_get_only_the_shape(client):
    platform = client.get("/threads/x").json()
    assert platform == {
        "error": {"code": "not_found", "message": "Thread not found"},
        "detail": "Thread not found",
    }
    assert client.get("/orgs/a/documents").json() == {
        "error": {"code": "forbidden", "message": "not a member"}
    }
    teapot = client.get("/text")
    assert teapot.status_code == 418 and teapot.json()["error"]["message"] == "teapot"


def test_a_refused_loopback_call_keeps_its_status(client):
    response = client.post("/mcp", json={})
    assert response.status_code == 403
    assert response.json()["error"] == {"code": "forbidden", "message": "only the agent graph"}


@pytest.mark.parametrize(
    "body",
    [{"thread_id": "6f1c1e0e-1111-4111-8111-111111111111"}, {"thread_id": 7, "if_exists": "do_nothing"}],
)
def test_client_chosen_ids_are_refused(client, body):
    response = client.post("/threads", json=body)
    assert response.status_code == 403
    assert response.json()["error"]["message"].startswith("thread_id cannot be chosen")


def test_other_bodies_reach_the_route_unchanged(client):
    for body in ({}, {"metadata": {"thread_id": "x"}}, {"thread_id": None}):
        assert client.post("/threads", json=body).json() == {"body": body}


def test_in_process_calls_may_name_their_thread():
    client = TestClient(_app(), root_path="/noauth")
    body = {"thread_id": "6f1c1e0e-1111-4111-8111-111111111111", "if_exists": "do_nothing"}
    assert client.post("/threads", json=body).json() == {"body": body}


@pytest.mark.parametrize("before", [{"x": 1}, {"configurable": "x"}, {}])
def test_a_history_query_the_platform_would_500_on_is_a_bad_request(client, before):
    response = client.post("/threads/t1/history", json={"before": before})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"


@pytest.mark.parametrize("body", [{"before": {"configurable": {"checkpoint_id": "c"}}}, {"limit": 5}, {}])
def test_history_queries_with_a_checkpoint_config_or_none_pass(client, body):
    assert client.post("/threads/t1/history", json=body).json() == {"body": body}
