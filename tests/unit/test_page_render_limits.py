"""Page images under load (issue 24): fair between organizations, stopped when abandoned, bounded on disk.

`GET /orgs/{org}/documents/docs/{name}/pages/{n}.png` runs in-process here (the FastAPI app with a
stand-in for the server's auth, as in `test_webapi.py`) against a local file store in a temporary
data directory, with real renderer processes. The heavy page is `tests.pdf_heavy`: a 3 KB PDF page
that keeps pdfium busy for seconds at 2000 px.

- one organization's renders never queue another's (`LIBRARIAN_PAGE_RENDER_CONCURRENCY_PER_ORG`);
- a request whose client goes away, or whose deadline passes, stops its render and frees its slot;
- widths come from a fixed set, images have at most `LIBRARIAN_PAGE_MAX_PIXELS` pixels;
- the cache keeps within its bounds per organization and overall, dropping the least recently used.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from starlette.testclient import TestClient

import server
from librarian.page_cache import PageCache, cache_dir, image_name
from librarian.settings import get_settings
from librarian.stack import get_stack
from tests.e2e.pdf import text_pdf
from tests.pdf_heavy import heavy_pdf
from webapi import pages
from webapi.page_render import render_page_png
from webapi.page_workers import FairGate
from webapi.params import PAGE_WIDTHS_PX, snap_width

A, B = "acme", "globex"
KEEP = {"LIBRARIAN_SHARED_DIR", "LIBRARIAN_TEST_POSTGRES_URL"}


class User(dict):
    is_authenticated = True


def member(org: str) -> dict[str, str]:
    who = User(identity=f"reader-of-{org}", orgs=[org], role="reader", permissions=[])
    return {"x-test-user": json.dumps(who)}


def with_user(app: Any) -> Any:
    async def authenticated(scope: dict, receive: Any, send: Any) -> None:
        raw = dict(scope.get("headers") or []).get(b"x-test-user")
        if raw is not None:
            scope = {**scope, "user": User(json.loads(raw))}
        await app(scope, receive, send)

    return authenticated


APP = with_user(server.app)


def page_url(org: str, name: str, page: int, width: int | None = None) -> str:
    query = "" if width is None else f"?width={width}"
    return f"/orgs/{org}/documents/docs/{name}/pages/{page}.png{query}"


@pytest.fixture
def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Settings from the environment, rooted in `tmp_path`; `configure(name=value, ...)` changes them."""
    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name not in KEEP:
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(tmp_path / "data"))

    def apply(**values: object) -> None:
        for name, value in values.items():
            monkeypatch.setenv(f"LIBRARIAN_{name.upper()}", str(value))
        get_settings.cache_clear()
        pages.reset_renderer()

    apply()
    yield apply
    pages.reset_renderer()
    monkeypatch.undo()
    get_settings.cache_clear()


def store(org: str, name: str, data: bytes) -> None:
    get_stack().files.write(org, f"docs/{name}", data)


def light_pdf(pages_count: int = 1) -> bytes:
    return text_pdf([[(72, 100, 14, f"A light page, number {n}.")] for n in range(1, pages_count + 1)])


def cached_files() -> list[Path]:
    return sorted(cache_dir(get_settings()).rglob("*.png"))


def alive(pid: int) -> bool:
    """Running (a killed process awaiting its reaping is a zombie: not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def wait_until(condition: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def warm() -> None:
    pages.renderer().warm()  # both processes up, so timings compare renders, not process starts


# --- widths and pixels ------------------------------------------------------------------------------


def test_a_width_is_served_at_the_nearest_of_a_fixed_set():
    assert [snap_width(w) for w in (200, 400, 599, 600, 1000, 1100, 1400, 1993, 2000)] == [
        400, 400, 400, 800, 1000, 1200, 1600, 2000, 2000,
    ]  # fmt: skip
    assert all(snap_width(w) == w for w in PAGE_WIDTHS_PX)


def test_one_page_at_thirty_widths_is_at_most_one_image_per_allowed_width(configure):
    store(A, "light.pdf", light_pdf())
    client = TestClient(APP)
    widths = range(200, 2001, 60)  # 31 widths, as the reader of issue 24 asked for 30
    for width in widths:
        response = client.get(page_url(A, "light.pdf", 1, width), headers=member(A))
        assert response.status_code == 200, response.text
        assert Image.open(io.BytesIO(response.content)).width == snap_width(width)
    kept = sorted(int(file.name.split("-w")[1].split("-")[0]) for file in cached_files())
    assert kept == sorted(PAGE_WIDTHS_PX)
    default = client.get(page_url(A, "light.pdf", 1), headers=member(A))
    assert Image.open(io.BytesIO(default.content)).width == 1000  # the default width is one of the set


def test_an_image_has_at_most_the_pixel_cap(configure):
    configure(page_max_pixels=500_000)
    store(A, "light.pdf", light_pdf())
    response = TestClient(APP).get(page_url(A, "light.pdf", 1, 2000), headers=member(A))
    image = Image.open(io.BytesIO(response.content))
    assert image.width * image.height <= 500_000 and image.width >= 600  # scaled down, not refused
    assert abs(image.height / image.width - 792 / 612) < 0.01
    for width_pt, height_pt in ((612, 792), (14_400, 14_400), (3, 14_400), (14_400, 3)):
        rendered = render_page_png(_blank_page(width_pt, height_pt), 1, 2000, max_pixels=300_000)
        assert rendered.width_px * rendered.height_px <= 300_000


def _blank_page(width_pt: float, height_pt: float) -> bytes:
    return text_pdf([[]]).replace(
        b"/MediaBox [0 0 612 792]", b"/MediaBox [0 0 %g %g]" % (width_pt, height_pt)
    )


# --- the cache's bounds -------------------------------------------------------------------------------


def test_the_cache_drops_the_organizations_least_recently_used_image_first(tmp_path):
    cache = PageCache(tmp_path, max_bytes=10_000, max_bytes_per_org=3_000)
    image = b"x" * 1_000
    for page in (1, 2, 3):
        cache.put(A, "docs/a.pdf", image_name(page, 400, 9, 9), image)
        time.sleep(0.01)
    assert cache.get(A, "docs/a.pdf", image_name(1, 400, 9, 9)) == image  # page 1 is now the freshest
    cache.put(A, "docs/a.pdf", image_name(4, 400, 9, 9), image)
    kept = {page for page in (1, 2, 3, 4) if cache.get(A, "docs/a.pdf", image_name(page, 400, 9, 9))}
    assert kept == {1, 3, 4}  # page 2 was the least recently used
    assert cache.usage() == (3_000, {A: 3_000})
    assert sum(f.stat().st_size for f in tmp_path.rglob("*.png")) == 3_000


def test_the_cache_keeps_its_overall_bound_across_organizations(tmp_path):
    cache = PageCache(tmp_path, max_bytes=4_000, max_bytes_per_org=3_000)
    image = b"y" * 1_000
    for org in (A, B):
        for page in (1, 2, 3):
            cache.put(org, "docs/a.pdf", image_name(page, 400, 9, 9), image)
            time.sleep(0.01)
    total, per_org = cache.usage()
    assert total == 4_000 and per_org == {A: 1_000, B: 3_000}  # A's older images went first
    assert cache.get(A, "docs/a.pdf", image_name(3, 400, 9, 9)) == image
    # A restart reads the same order back from the files' times.
    again = PageCache(tmp_path, max_bytes=3_000, max_bytes_per_org=3_000)
    again.put(B, "docs/b.pdf", image_name(1, 400, 9, 9), image)
    assert again.usage()[0] == 3_000
    assert again.get(A, "docs/a.pdf", image_name(3, 400, 9, 9)) == image  # read just before: kept
    assert again.get(B, "docs/a.pdf", image_name(1, 400, 9, 9)) is None  # B's oldest went


def test_the_cache_forgets_replaced_versions_deleted_documents_and_oversized_images(tmp_path):
    cache = PageCache(tmp_path, max_bytes=10_000, max_bytes_per_org=5_000)
    cache.put(A, "docs/a.pdf", image_name(1, 400, 9, 100), b"old")
    cache.put(A, "docs/a.pdf", image_name(1, 400, 12, 200), b"new")  # the file was replaced
    assert cache.get(A, "docs/a.pdf", image_name(1, 400, 9, 100)) is None
    cache.put(A, "docs/a.pdf", image_name(1, 400, 12, 200), b"z" * 6_000)  # over the bound: not kept
    assert cache.get(A, "docs/a.pdf", image_name(1, 400, 12, 200)) == b"new"
    cache.put(A, "docs/b.pdf", image_name(1, 400, 1, 1), b"b")
    cache.forget(A, "docs/a.pdf")
    assert [f.read_bytes() for f in tmp_path.rglob("*.png")] == [b"b"] and cache.usage()[0] == 1


def test_the_route_keeps_the_cache_within_its_bounds(configure):
    configure(page_cache_max_bytes_per_org=60_000, page_cache_max_bytes=90_000)
    store(A, "many.pdf", light_pdf(12))
    store(B, "many.pdf", light_pdf(12))
    client = TestClient(APP)
    for org in (A, B):
        for page in range(1, 13):
            for width in (400, 1200):
                assert (
                    client.get(page_url(org, "many.pdf", page, width), headers=member(org)).status_code == 200
                )
    sizes: dict[str, int] = {}
    for file in cached_files():
        org = file.relative_to(cache_dir(get_settings())).parts[0]
        sizes[org] = sizes.get(org, 0) + file.stat().st_size
    assert sum(sizes.values()) <= 90_000 and all(size <= 60_000 for size in sizes.values()), sizes
    assert sizes[B] > 30_000  # the latest writer keeps its recent images


# --- fairness and abandoned renders ---------------------------------------------------------------


def test_the_gate_passes_over_an_organization_at_its_limit():
    async def scenario() -> None:
        gate = FairGate(total=2, per_key=1)
        await gate.acquire(A)
        second_of_a = asyncio.ensure_future(gate.acquire(A))
        await asyncio.sleep(0)
        await asyncio.wait_for(gate.acquire(B), 1)  # not behind A's waiting request
        assert gate.state() == (2, {A: 1, B: 1}, {A: 1})
        gate.release(A)
        await asyncio.wait_for(second_of_a, 1)
        third = asyncio.ensure_future(gate.acquire(A))
        await asyncio.sleep(0)
        third.cancel()  # a waiter whose client left leaves the queue
        await asyncio.gather(third, return_exceptions=True)
        gate.release(A)
        gate.release(B)
        assert gate.state() == (0, {}, {})

    asyncio.run(scenario())


async def _get(http: httpx.AsyncClient, url: str, org: str) -> tuple[httpx.Response, float]:
    response = await http.get(url, headers=member(org))
    return response, time.monotonic()


def test_another_organizations_page_is_not_queued_behind_heavy_renders(configure):
    configure(page_render_workers=2, page_render_concurrency_per_org=1)
    store(A, "heavy.pdf", heavy_pdf(pages=3))
    store(B, "light.pdf", light_pdf())
    warm()

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=APP)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as http:
            heavy = [
                asyncio.ensure_future(_get(http, page_url(A, "heavy.pdf", n, 2000), A)) for n in (1, 2, 3)
            ]
            await asyncio.sleep(0.3)  # A's first render runs, its other two wait
            start = time.monotonic()
            light, light_done = await _get(http, page_url(B, "light.pdf", 1, 1000), B)
            heavy_done = sum(task.done() for task in heavy)
            for task in heavy:
                task.cancel()  # A's client leaves: its renders stop
            await asyncio.gather(*heavy, return_exceptions=True)
        assert light.status_code == 200
        assert heavy_done == 0, "B's page waited for A's renders"
        assert light_done - start < 2.0

    asyncio.run(scenario())


async def _abandoned_request(url: str, org: str, leave_after_s: float) -> list[dict[str, Any]]:
    """Call the app as a server would for a client that hangs up after `leave_after_s`."""
    sent: list[dict[str, Any]] = []
    path, _, query = url.partition("?")
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
        "root_path": "", "headers": [(k.encode(), v.encode()) for k, v in member(org).items()],
        "client": ("127.0.0.1", 5000), "server": ("test", 80),
    }  # fmt: skip
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.sleep(leave_after_s)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await APP(scope, receive, send)
    return sent


def test_a_render_whose_client_left_is_stopped_and_its_slot_freed(configure):
    configure(page_render_workers=1, page_render_concurrency_per_org=1)
    store(A, "heavy.pdf", heavy_pdf())
    store(A, "light.pdf", light_pdf())
    warm()
    pool = pages.renderer()
    (worker_pid,) = pool.pids()
    finished: list[float] = []

    def abandon() -> None:
        asyncio.run(_abandoned_request(page_url(A, "heavy.pdf", 1, 2000), A, leave_after_s=0.5))
        finished.append(time.monotonic())

    left = time.monotonic()
    thread = threading.Thread(target=abandon)
    thread.start()
    thread.join(timeout=30)
    assert finished and finished[0] - left < 2.0, "the request went on after its client left"
    assert wait_until(lambda: not alive(worker_pid), 2.0), "the abandoned render's process still runs"
    assert pool.gate.state() == (0, {}, {})
    start = time.monotonic()
    response = TestClient(APP).get(page_url(A, "light.pdf", 1, 400), headers=member(A))
    assert response.status_code == 200 and time.monotonic() - start < 3.0  # a new process, at once
    assert [file.name.split("-")[2] for file in cached_files()] == ["w400"]  # nothing of the abandoned one


def test_a_render_past_its_deadline_is_refused_and_stopped(configure):
    configure(page_render_workers=1, page_render_timeout_s=1)
    store(A, "heavy.pdf", heavy_pdf())
    warm()
    pool = pages.renderer()
    (worker_pid,) = pool.pids()
    start = time.monotonic()
    response = TestClient(APP).get(page_url(A, "heavy.pdf", 1, 2000), headers=member(A))
    assert response.status_code == 503 and response.json()["error"]["code"] == "render_timeout"
    assert time.monotonic() - start < 3.0
    assert wait_until(lambda: not alive(worker_pid), 2.0)
    assert pool.gate.state() == (0, {}, {}) and not cached_files()
