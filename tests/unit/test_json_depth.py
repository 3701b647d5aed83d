"""The nesting check of Platform API JSON bodies (issue 23 §6.2): deep bodies are a 400, not a 500.

`json_depth` is compared with a recursive reference on hypothesis-generated JSON (strings full of
brackets and escapes included); the middleware is driven through Starlette's test client with the
error-shape middleware around it, as `server.py` stacks them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from webapi import guard
from webapi.errors import ErrorShapeMiddleware
from webapi.guard import MAX_JSON_DEPTH, PlatformBodyGuardMiddleware, json_depth

# Strings that look like structure: brackets, quotes and backslashes inside JSON strings never nest.
TRICKY_TEXT = st.text(alphabet=st.sampled_from('[]{}"\\ab,:é\n'), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | TRICKY_TEXT
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY_TEXT, inner, max_size=3),
    max_leaves=40,
)


def reference_depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((reference_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((reference_depth(v) for v in value.values()), default=0)
    return 0


def nested(levels: int, kinds: list[str]) -> Any:
    """`levels` arrays or objects inside each other, the kind of each level from `kinds` (cycled)."""
    value: Any = "leaf [not {a level}]"
    for i in range(levels):
        value = [value] if kinds[i % len(kinds)] == "list" else {"k": value}
    return value


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 2]))
def test_depth_matches_a_recursive_count_on_any_json(value, indent):
    assert json_depth(json.dumps(value, indent=indent, ensure_ascii=False).encode()) == reference_depth(value)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.lists(st.sampled_from(["list", "dict"]), min_size=1, max_size=4))
def test_depth_of_deeply_nested_bodies_without_recursion(levels, kinds):
    body = json.dumps(nested(levels, kinds)).encode() if levels < 900 else None
    if body is None:  # beyond what json.dumps can recurse: build the text directly
        opening = "".join("[" if kinds[i % len(kinds)] == "list" else '{"k":' for i in range(levels))
        closing = "".join("]" if kinds[i % len(kinds)] == "list" else "}" for i in reversed(range(levels)))
        body = f'{opening}"leaf"{closing}'.encode()
    assert json_depth(body) == levels


def test_hundred_thousand_levels_are_counted():
    assert json_depth(b"[" * 100_000 + b"]" * 100_000) == 100_000
    assert json_depth(b'{"a":' * 5_000 + b"1" + b"}" * 5_000) == 5_000


# --- the middleware ------------------------------------------------------------------------------


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"size": len(await request.body())})


def _client(**kwargs: Any) -> TestClient:
    app = Starlette(
        routes=[
            Route("/threads", _echo, methods=["POST"]),
            Route("/assistants", _echo, methods=["POST"]),
            Route("/threads/t1/state", _echo, methods=["POST", "PATCH", "GET"]),
            Route("/runs/wait", _echo, methods=["POST"]),
            Route("/orgs/a/documents", _echo, methods=["POST"]),
        ],
        middleware=[
            Middleware(ErrorShapeMiddleware, prefixes=("/orgs/",)),
            Middleware(PlatformBodyGuardMiddleware),
        ],
    )
    return TestClient(app, raise_server_exceptions=False, **kwargs)


DEEP_BODIES = {
    "array-100k": b"[" * 100_000 + b"]" * 100_000,
    "object-5k": b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    "metadata-1k": b'{"metadata":' + b'{"a":' * 1_000 + b"1" + b"}" * 1_001,
    "just-over": json.dumps(nested(MAX_JSON_DEPTH + 1, ["dict", "list"])).encode(),
}


@pytest.mark.parametrize("route", ["/threads", "/assistants", "/runs/wait", "/threads/t1/state"])
@pytest.mark.parametrize("name", list(DEEP_BODIES))
def test_deep_bodies_are_a_400_in_the_error_shape(route, name):
    response = _client().post(route, content=DEEP_BODIES[name], headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {
        "code": "too_deep",
        "message": f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels",
    }


def test_any_content_type_and_put_or_patch_are_checked():
    client = _client()
    deep = DEEP_BODIES["array-100k"]
    assert client.post("/threads", content=deep, headers={"content-type": "text/plain"}).status_code == 400
    assert client.patch("/threads/t1/state", content=deep).status_code == 400


@settings(max_examples=40, deadline=None)
@given(st.integers(1, MAX_JSON_DEPTH), st.lists(st.sampled_from(["list", "dict"]), min_size=1, max_size=3))
def test_bodies_up_to_the_limit_reach_the_route(levels, kinds):
    body = json.dumps({"input": nested(levels - 1, kinds)}).encode()
    response = _client().post("/runs/wait", content=body)
    assert response.status_code == 200 and response.json() == {"size": len(body)}


def test_own_routes_and_in_process_calls_are_not_checked():
    deep = DEEP_BODIES["array-100k"]
    assert _client().post("/orgs/a/documents", content=deep).json() == {"size": len(deep)}
    assert _client(root_path="/noauth").post("/runs/wait", content=deep).json() == {"size": len(deep)}


def test_reads_carry_no_body_to_check():
    assert _client().get("/threads/t1/state").status_code == 200


def test_bodies_over_the_bound_are_a_413(monkeypatch):
    monkeypatch.setattr(guard, "MAX_PLATFORM_BODY_BYTES", 1000)
    response = _client().post("/runs/wait", content=b'{"a": "' + b"x" * 2000 + b'"}')
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"


def test_large_bodies_are_scanned_off_the_event_loop(monkeypatch):
    body = json.dumps({"text": "[" * 300_000, "deep": nested(MAX_JSON_DEPTH + 1, ["list"])}).encode()
    assert len(body) >= guard._SCAN_IN_THREAD_BYTES
    assert _client().post("/runs/wait", content=body).status_code == 400
    shallow = json.dumps({"text": "[" * 300_000}).encode()
    assert _client().post("/runs/wait", content=shallow).json() == {"size": len(shallow)}
