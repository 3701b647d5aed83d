"""Every number in the path or query string of Librarian's routes: an odd one is a 4xx, never a 5xx.

Issue 24 §7: `?width=%C2%B2` (a superscript two, which `str.isdigit` accepts and `int` refuses)
answered 500. The numeric parameters are found on the app's routes (any parameter declared `int` or
`float`, in the path or the query, of every route, documented or not), so a route added later is
covered without touching this test. Each gets odd number strings: other scripts' digits, super- and
subscripts, signs, spaces, underscores, floats, exponents, huge and empty ones. Anything but ASCII
digits is refused as not a number (the parameter's own 400), never read as some other number. The app runs
in-process with a stand-in for the server's auth (as in `test_webapi.py`); the document is a
Markdown file, so a number that passes its check ends in a 404 before anything is read.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any, get_args
from urllib.parse import quote

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

import server
from webapi.errors import ApiError
from webapi.params import CHECKS

#: A valid value for every other parameter a route with a number may have.
VALID = {"org": "acme", "path": "docs/a.md", "page": "1", "width": "1000", "member": "bob", "model": "m"}
NUMBER_TYPES = (int, float)


class User(dict):
    is_authenticated = True


WHO = json.dumps(User(identity="ann", orgs=["acme"], role="admin", permissions=["documents:write"]))


def with_user(app: Any) -> Any:
    async def authenticated(scope: dict, receive: Any, send: Any) -> None:
        await app({**scope, "user": User(json.loads(WHO))}, receive, send)

    return authenticated


def _params(dependant: Dependant) -> Iterator[Any]:
    yield from dependant.path_params
    yield from dependant.query_params
    for sub in dependant.dependencies:
        yield from _params(sub)


def _is_number(annotation: Any) -> bool:
    return annotation in NUMBER_TYPES or any(arg in NUMBER_TYPES for arg in get_args(annotation))


def numeric_parameters() -> list[tuple[str, str, str, str]]:
    """(method, route path, parameter, `path` or `query`) for every number parameter of every route."""
    found = []
    for route in server.app.routes:
        if not isinstance(route, APIRoute):
            continue
        for param in _params(route.dependant):
            if _is_number(param.field_info.annotation):
                where = "path" if param in route.dependant.path_params else "query"
                found.extend((method, route.path, param.name, where) for method in sorted(route.methods))
    return found


NUMERIC = numeric_parameters()


def url_for(route_path: str, name: str, where: str, value: str) -> str:
    values = {key: quote(text, safe="/" if key == "path" else "") for key, text in VALID.items()}
    if where == "path":
        values[name] = quote(value, safe="")
    path = route_path.replace("{path:path}", "{path}").format(**values)
    return path + (f"?{name}={quote(value, safe='')}" if where == "query" else "")


unicode_digits = st.text(
    st.characters(categories=["Nd", "No", "Nl"], exclude_characters="0123456789"), min_size=1, max_size=6
)
odd_numbers = st.one_of(
    unicode_digits,
    st.builds(lambda ascii_, odd: ascii_ + odd, st.from_regex(r"[0-9]{1,4}", fullmatch=True), unicode_digits),
    st.from_regex(r"[+-]?[0-9]{1,6}", fullmatch=True),
    st.from_regex(r"[ \t\n\r\f\v\u00a0\u2003]*[+-]?[0-9_]{0,8}[ \t\u3000]*", fullmatch=True),
    st.integers(min_value=1, max_value=6_000).map(lambda n: "9" * n),
    st.integers(min_value=1, max_value=60).map(lambda n: "0" * n + "1"),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"[0-9]{1,5}([.,][0-9]{0,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
    st.sampled_from(
        ["", " ", "0x10", "0o7", "0b1", "1_000", "１２００", "²", "¹⁰", "Ⅻ", "½", "NaN", "-0", "+", "-"]
    ),
    st.text(max_size=8),
)


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    logging.disable(logging.ERROR)  # a failing example would log its traceback; the assertion says it
    try:
        yield TestClient(with_user(server.app), raise_server_exceptions=False)
    finally:
        logging.disable(logging.NOTSET)


def test_the_routes_numbers_are_found():
    assert {(name, where) for _, _, name, where in NUMERIC} >= {("page", "path"), ("width", "query")}


@pytest.mark.parametrize(("method", "route_path", "name", "where"), NUMERIC)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=odd_numbers)
@example(value="²")
@example(value="%C2%B2")
@example(value="1" * 5000)
@example(value="\u0661\u0662\u0660\u0660")  # ١٢٠٠, Arabic-Indic 1200
def test_an_odd_number_is_refused_with_a_4xx(client, method, route_path, name, where, value):
    response = client.request(method, url_for(route_path, name, where, value))
    assert 400 <= response.status_code < 500, (value, response.status_code, response.text)
    if response.request.url.path.startswith("/orgs/"):
        assert set(response.json()) == {"error"}
    # "/" splits the path, and "." or ".." is a dot segment the URL drops: neither reaches the route
    reaches_the_parameter = where == "query" or (value and "/" not in value and value not in (".", ".."))
    if reaches_the_parameter and not (value.isascii() and value.isdecimal()):
        # Refused as not a number, never read as another one (`int()` takes " +1_0" and "١").
        refusal = not_a_number(name)
        assert (response.status_code, response.json()["error"]["code"]) == refusal, (value, response.text)


def not_a_number(name: str) -> tuple[int, str]:
    """The status and code the parameter's check refuses a non-number with."""
    try:
        CHECKS[name]("x")
    except ApiError as refusal:
        return refusal.status, refusal.code
    raise AssertionError(f"the check of {name} takes 'x'")


@pytest.mark.parametrize("declared", ["²".encode("latin-1"), b"1" * 5000])
def test_an_odd_content_length_is_refused_with_a_4xx(declared):
    """Not a path or query number, and HTTP servers refuse these before the app; in-process, 500."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/orgs/acme/documents", "raw_path": b"/orgs/acme/documents",
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1), "server": ("test", 80),
        "headers": [(b"content-type", b"multipart/form-data; boundary=zz"), (b"content-length", declared)],
    }  # fmt: skip
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    logging.disable(logging.ERROR)
    try:
        asyncio.run(with_user(server.app)(scope, receive, send))
    finally:
        logging.disable(logging.NOTSET)
    assert 400 <= sent[0]["status"] < 500
