"""The web app's assets go out compressed when the browser accepts it, raw otherwise (issue 29).

The middleware is driven in-process over ASGI (Starlette's TestClient) in front of a stub app, with
real files in a temporary `dist`: the build's `.br`/`.gz` siblings when present, a cached gzip when
not, the raw file for a client that accepts neither, and the CSP and cache headers kept throughout.
"""

from __future__ import annotations

import gzip
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import PlainTextResponse
from starlette.testclient import TestClient

from webapi.asset_encoding import accepted, asset_file
from webapi.webapp import SECURITY_HEADERS, WebAppMiddleware

SCRIPT = b"export const greeting = 'hello';\n" * 400


async def _api(scope, receive, send) -> None:
    await PlainTextResponse("api", 200)(scope, receive, send)


def _dist(root: Path, *, siblings: bool) -> Path:
    assets = root / "assets"
    assets.mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>Librarian</title>")
    (assets / "index-abc.js").write_bytes(SCRIPT)
    (assets / "logo.png").write_bytes(b"\x89PNG not really")
    if siblings:
        # distinct bodies, so the test sees which file was sent
        (assets / "index-abc.js.br").write_bytes(b"brotli-bytes")
        (assets / "index-abc.js.gz").write_bytes(gzip.compress(b"from the build"))
    return root


def _client(root: Path) -> TestClient:
    return TestClient(WebAppMiddleware(_api, directory=root))


def test_the_builds_brotli_sibling_is_preferred(tmp_path: Path) -> None:
    client = _client(_dist(tmp_path, siblings=True))
    response = client.get("/assets/index-abc.js", headers={"Accept-Encoding": "gzip, deflate, br"})
    assert response.status_code == 200
    assert response.headers["content-encoding"] == "br"
    assert response.headers["vary"] == "Accept-Encoding"
    assert response.headers["content-type"].split(";")[0] in ("text/javascript", "application/javascript")
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-length"] == str(len(b"brotli-bytes"))


def test_the_gzip_sibling_when_brotli_is_not_accepted(tmp_path: Path) -> None:
    client = _client(_dist(tmp_path, siblings=True))
    response = client.get("/assets/index-abc.js", headers={"Accept-Encoding": "gzip, br;q=0"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.content == b"from the build"  # httpx decoded the sibling's gzip


def test_without_siblings_the_asset_is_gzipped_on_the_fly(tmp_path: Path) -> None:
    client = _client(_dist(tmp_path, siblings=False))
    response = client.get("/assets/index-abc.js", headers={"Accept-Encoding": "gzip, br"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.content == SCRIPT
    assert int(response.headers["content-length"]) < len(SCRIPT) / 5
    head = client.head("/assets/index-abc.js", headers={"Accept-Encoding": "gzip"})
    assert head.status_code == 200
    assert head.headers["content-length"] == response.headers["content-length"]


def test_a_client_accepting_no_coding_gets_the_raw_file(tmp_path: Path) -> None:
    client = _client(_dist(tmp_path, siblings=True))
    response = client.get("/assets/index-abc.js", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in response.headers
    assert response.content == SCRIPT
    assert response.headers["vary"] == "Accept-Encoding"


def test_images_and_missing_files_are_not_touched(tmp_path: Path) -> None:
    client = _client(_dist(tmp_path, siblings=True))
    image = client.get("/assets/logo.png", headers={"Accept-Encoding": "gzip, br"})
    assert image.status_code == 200 and "content-encoding" not in image.headers
    assert client.get("/assets/nope.js", headers={"Accept-Encoding": "gzip"}).status_code == 404
    escaped = client.get("/assets/..%2Findex.html", headers={"Accept-Encoding": "gzip"})
    assert escaped.status_code == 404


def test_the_page_keeps_its_security_headers(tmp_path: Path) -> None:
    client = _client(_dist(tmp_path, siblings=True))
    page = client.get("/", headers={"Accept-Encoding": "gzip, br"})
    assert page.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    assert client.get("/orgs/acme/documents").text == "api"  # everything else passes through


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gzip, deflate, br, zstd", {"gzip", "deflate", "br", "zstd"}),
        ("br;q=0, gzip;q=0.5", {"gzip"}),
        ("*", {"br", "gzip"}),
        ("*;q=1, gzip;q=0", {"br"}),
        ("gzip;q=nonsense", set()),
        ("", set()),
        (None, set()),
    ],
)
def test_accept_encoding_is_read_as_http_says(header: str | None, expected: set[str]) -> None:
    assert accepted(header) == expected


@given(st.text(alphabet=string.printable, max_size=80))
def test_any_accept_encoding_header_is_read_without_error(header: str) -> None:
    assert accepted(header) <= {p.split(";")[0].strip().lower() for p in header.split(",")} | {"br", "gzip"}


@given(st.text(max_size=40))
def test_no_path_reaches_outside_the_assets(tmp_path_factory: pytest.TempPathFactory, relative: str) -> None:
    root = tmp_path_factory.mktemp("dist")
    (root / "assets").mkdir()
    (root / "secret.js").write_text("secret")
    found = asset_file(root / "assets", relative)
    assert found is None or found.is_relative_to((root / "assets").resolve())
