"""The web app's server side over HTTP: static files without a token, page images with one.

`GET /orgs/{org}/documents/docs/{name}/pages/{n}.png` renders a PDF page for citation viewers; it
takes the same membership checks as the other document routes, serves widths from a fixed set,
caches the PNG in the bounded page cache, and answers a bad page or a non-PDF with a clear 4xx in
the error shape. Under load (issue 24) another organization's page is not queued behind one
organization's heavy renders, and a render whose client hung up stops and frees its slot.
"""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time
from pathlib import Path

import httpx
import pytest
from PIL import Image

from librarian.files.local import LocalFileStore
from tests.e2e.pdf import text_pdf
from tests.integration.server_fixtures import DevServer, bearer, token, upload, wait_for_status
from tests.pdf_heavy import heavy_pdf

ORG = "acme"
OTHER = "globex"


@pytest.fixture(scope="module")
def documents(http: httpx.Client) -> dict[str, str]:
    """A two-page PDF and a Markdown file of `acme`, indexed."""
    tok = token("alice", ORG)
    pdf = text_pdf(
        [
            [(72, 100, 14, "Route test, first page.")],
            [(72, 300, 14, "Route test, second page, with more words on it.")],
        ]
    )
    paths = {}
    for name, data in (("route.pdf", pdf), ("route-notes.md", b"# Notes\n\nA page-less document.\n")):
        response = upload(http, ORG, tok, name, data)
        assert response.status_code == 202, response.text
        paths[name] = response.json()["path"]
    for path in paths.values():
        assert wait_for_status(http, ORG, tok, path, deadline_s=120)["status"] == "indexed"
    return paths


def _page(http: httpx.Client, path: str, page: object, tok: str | None, **params: str) -> httpx.Response:
    headers = bearer(tok) if tok else {}
    return http.get(f"/orgs/{ORG}/documents/{path}/pages/{page}.png", params=params, headers=headers)


def test_a_member_gets_a_rendered_page_and_the_second_read_is_the_cached_file(
    http: httpx.Client, server: DevServer, documents: dict[str, str]
) -> None:
    tok = token("alice", ORG)
    first = _page(http, documents["route.pdf"], 2, tok, width="400")
    assert first.status_code == 200, first.text
    assert first.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(first.content)).convert("L")
    assert image.width == 400 and image.height == round(400 * 792 / 612)
    assert image.getextrema()[0] < 100  # the text is drawn, the page is not blank
    cached = list(Path(server.env["LIBRARIAN_DATA_DIR"]).rglob("page-2-w400-*.png"))
    assert len(cached) == 1 and cached[0].read_bytes() == first.content
    again = _page(http, documents["route.pdf"], 2, tok, width="400")
    assert again.content == first.content and again.headers["etag"] == first.headers["etag"]
    reader = _page(http, documents["route.pdf"], 1, token("rita", ORG, role="reader"))
    assert reader.status_code == 200  # reading pages is reading documents: readers may


@pytest.mark.parametrize(
    ("page", "params", "status", "code"),
    [
        (3, {}, 404, "page_not_found"),
        (0, {}, 404, "page_not_found"),
        ("two", {}, 400, "bad_page"),
        (1, {"width": "5000"}, 400, "bad_width"),
        (1, {"width": "-1"}, 400, "bad_width"),
        (1, {"width": "%C2%B2"}, 400, "bad_width"),
        (1, {"width": "²"}, 400, "bad_width"),
        ("%C2%B2", {}, 400, "bad_page"),
        ("+1", {}, 400, "bad_page"),
    ],
)
def test_bad_pages_and_widths_are_clear_4xx(
    http: httpx.Client,
    documents: dict[str, str],
    page: object,
    params: dict[str, str],
    status: int,
    code: str,
) -> None:
    response = _page(http, documents["route.pdf"], page, token("alice", ORG), **params)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    if page == 3:
        assert "2 page" in response.json()["error"]["message"]


def test_no_page_images_for_other_formats_or_unknown_documents(
    http: httpx.Client, documents: dict[str, str]
) -> None:
    tok = token("alice", ORG)
    markdown = _page(http, documents["route-notes.md"], 1, tok)
    assert markdown.status_code == 404 and markdown.json()["error"]["code"] == "no_page_images"
    missing = _page(http, "docs/never-uploaded.pdf", 1, tok)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_pages_take_the_same_membership_checks(http: httpx.Client, documents: dict[str, str]) -> None:
    path = documents["route.pdf"]
    assert _page(http, path, 1, None).status_code == 401
    outsider = _page(http, path, 1, token("bob", "globex"))
    assert outsider.status_code == 403 and outsider.json()["error"]["code"] == "forbidden"


def test_the_app_is_served_without_a_token_and_nothing_else_is(http: httpx.Client) -> None:
    index = http.get("/")
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in index.headers["content-security-policy"]
    assets = re.findall(r'(?:src|href)="(/assets/[^"]+)"', index.text)
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    for asset in assets:
        response = http.get(asset)
        assert response.status_code == 200 and len(response.content) > 100, asset
    assert http.get("/assets/..%2F..%2Fserver.py").status_code == 404
    assert http.get("/assets/missing.js").status_code == 404
    # The page is public; the data is not.
    assert http.get(f"/orgs/{ORG}/documents").status_code == 401
    assert http.post("/threads/search", json={}).status_code in (401, 403)
    assert http.get("/ok").status_code == 200


def test_a_width_is_served_at_the_nearest_of_the_fixed_set(
    http: httpx.Client, documents: dict[str, str]
) -> None:
    tok = token("alice", ORG)
    for asked, served in ((1993, 2000), (700, 800), (1000, 1000)):
        response = _page(http, documents["route.pdf"], 1, tok, width=str(asked))
        assert response.status_code == 200, response.text
        assert Image.open(io.BytesIO(response.content)).width == served


# --- under load (issue 24) -----------------------------------------------------------------------


def _store(server: DevServer, org: str, name: str, data: bytes) -> str:
    """Put a file in the server's store without an upload: the page route needs no ingest."""
    LocalFileStore(Path(server.env["LIBRARIAN_DATA_DIR"]) / "files").write(org, f"docs/{name}", data)
    return f"docs/{name}"


def _get_page(
    server: DevServer, org: str, path: str, page: int, width: int, timeout_s: float
) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=timeout_s) as client:
        return client.get(
            f"/orgs/{org}/documents/{path}/pages/{page}.png",
            params={"width": str(width)},
            headers=bearer(token("pat", org)),
        )


def _start_both_renderers(server: DevServer, documents: dict[str, str]) -> None:
    """Renders of two organizations at once: both renderer processes are up after them (as after the
    web app's page, which starts them)."""
    other = _store(server, OTHER, "warm.pdf", text_pdf([[(72, 100, 14, "Warm-up.")]]))
    for width in (400, 800):
        first = threading.Thread(target=_get_page, args=(server, ORG, documents["route.pdf"], 1, width, 60))
        first.start()
        _get_page(server, OTHER, other, 1, width, 60)
        first.join()


def test_renders_whose_clients_hung_up_free_their_slot(server: DevServer, documents: dict[str, str]) -> None:
    heavy = _store(server, ORG, "heavy-abandoned.pdf", heavy_pdf(pages=2))
    _start_both_renderers(server, documents)

    def hang_up_after_1_s(page: int) -> None:
        with contextlib.suppress(httpx.TimeoutException):
            _get_page(server, ORG, heavy, page, 2000, timeout_s=1.0)  # about 4 s each: both hang up

    abandoned = [threading.Thread(target=hang_up_after_1_s, args=(page,)) for page in (1, 2)]
    for thread in abandoned:
        thread.start()
    for thread in abandoned:
        thread.join()
    start = time.monotonic()
    light = _get_page(server, ORG, documents["route.pdf"], 2, 1600, timeout_s=60)
    assert light.status_code == 200
    # One render per organization at once: had the heavy ones gone on, this page would wait for both.
    assert time.monotonic() - start < 3.0


def test_another_organizations_page_is_not_queued_behind_heavy_renders(
    server: DevServer, documents: dict[str, str]
) -> None:
    heavy = _store(server, ORG, "heavy-flood.pdf", heavy_pdf(pages=3))
    light = _store(server, OTHER, "light.pdf", text_pdf([[(72, 100, 14, "Another organization's page.")]]))
    _start_both_renderers(server, documents)

    def hang_up_after_6_s(page: int) -> None:
        with contextlib.suppress(httpx.TimeoutException):
            _get_page(server, ORG, heavy, page, 2000, timeout_s=6.0)

    flood = [threading.Thread(target=hang_up_after_6_s, args=(page,)) for page in (1, 2, 3)]
    for thread in flood:
        thread.start()
    time.sleep(0.5)
    start = time.monotonic()
    response = _get_page(server, OTHER, light, 1, 1000, timeout_s=60)
    elapsed = time.monotonic() - start
    for thread in flood:
        thread.join()
    # Behind A's three renders (about 4 s each), this page would take over 12 s.
    assert response.status_code == 200 and elapsed < 4.0, elapsed
