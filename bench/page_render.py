"""Latency of a citation's page image (`GET /orgs/{org}/documents/docs/{name}/pages/{n}.png`).

Why: clicking a citation must show its page quickly. The route renders with pdfium in a worker
process (pdfium is not thread-safe, see `webapi/page_render.py`) and caches the PNG beside the
document. This script measures each part against the floor, pdfium's own render of the page to a
bitmap in this process:

    floor      pdfium render to a bitmap (no PNG), in process
    png        render + PNG encode, in process
    route      what the route does on a cache miss: worker process round trip (render + encode + IPC)
    cache hit  what the route does on a repeat: read the cached PNG (`librarian.page_cache`)

    PYTHONPATH=. python bench/page_render.py [--pdf FILE] [--width 1000] [--repeat 30]

With `--url URL --token TOKEN --org ORG` it also uploads the PDF to a running server and times the
route over HTTP: `http miss` (a page and width not asked before: widths come from a fixed set, so
at most six misses per page) and `http hit`. For renders under load from several organizations,
see `bench/render_fairness.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pypdfium2 as pdfium

from librarian.page_cache import PageCache
from webapi import pages
from webapi.page_render import render_page_png
from webapi.params import PAGE_WIDTHS_PX

SHARED = Path(os.environ.get("LIBRARIAN_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))
ACTIVE = ("queued", "running", "pending")
DEFAULT_PDF = SHARED / "data" / "docs" / "pdf" / "docling" / "2305.03393v1-pg9.pdf"


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def floor_render(data: bytes, page: int, width: int) -> None:
    pdf = pdfium.PdfDocument(data)
    p = pdf[page - 1]
    p.render(scale=width / p.get_size()[0])
    p.close()
    pdf.close()


def over_http(
    url: str, token: str, org: str, data: bytes, width: int, page_numbers: list[int]
) -> dict[str, list[float]]:
    """Upload the PDF, wait until it is indexed, then time cache misses and hits of the route."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
        response = http.post(f"/orgs/{org}/documents", files={"file": ("bench-page.pdf", data)})
        response.raise_for_status()
        path = response.json()["path"]
        deadline = time.monotonic() + 300
        while http.get(f"/orgs/{org}/documents/{path}").json().get("status") not in ("indexed", "skipped"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} was not indexed in 300 s")
            time.sleep(0.5)
        while (http.get(f"/orgs/{org}/graph").json().get("lastBuild") or {}).get("status") in ACTIVE:
            if time.monotonic() > deadline:  # the upload's graph build would compete for the CPU
                raise TimeoutError("the graph build did not finish in 300 s")
            time.sleep(0.5)
        url_of = f"/orgs/{org}/documents/{path}/pages/{{}}.png?width={{}}"
        http.get(url_of.format(1, width)).raise_for_status()  # starts the renderer process
        fresh = [(n, w) for w in PAGE_WIDTHS_PX for n in sorted(set(page_numbers)) if (n, w) != (1, width)]
        uncached = iter(fresh[: len(page_numbers)])  # each page at each allowed width once
        miss = timed(
            lambda: http.get(url_of.format(*next(uncached))).raise_for_status(),
            len(fresh[: len(page_numbers)]),
        )
        hit = timed(lambda: http.get(url_of.format(1, width)).raise_for_status(), len(page_numbers))
    return {"http miss": miss, "http hit": hit}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--url", help="a running Librarian server, to time the route over HTTP")
    parser.add_argument("--token", help="bearer token of a member of --org")
    parser.add_argument("--org", default="acme")
    args = parser.parse_args()
    data = args.pdf.read_bytes()
    pdf = pdfium.PdfDocument(data)
    count = len(pdf)
    pdf.close()
    page_numbers = [1 + i % count for i in range(args.repeat)]
    print(f"{args.pdf.name}: {count} page(s), {len(data) / 1024:.0f} KiB, width {args.width} px")

    results: dict[str, list[float]] = {}
    cycle = iter(page_numbers * 4)
    results["floor"] = timed(lambda: floor_render(data, next(cycle), args.width), args.repeat)
    results["png"] = timed(lambda: render_page_png(data, next(cycle), args.width), args.repeat)

    async def route_miss() -> tuple[list[float], float]:
        start = time.perf_counter()
        await pages.render(data, 1, args.width)  # starts the worker process
        cold = (time.perf_counter() - start) * 1000
        times = []
        for number in page_numbers:
            start = time.perf_counter()
            await pages.render(data, number, args.width)
            times.append((time.perf_counter() - start) * 1000)
        return times, cold

    results["route"], cold_ms = asyncio.run(route_miss())
    pages.reset_renderer()

    with tempfile.TemporaryDirectory() as tmp:
        cache = PageCache(Path(tmp), max_bytes=64 << 20, max_bytes_per_org=64 << 20)
        png = render_page_png(data, 1, args.width).png
        name = pages.cache_name(1, args.width, len(data), 0)
        cache.put("bench", "docs/bench.pdf", name, png)
        results["cache hit"] = timed(lambda: cache.get("bench", "docs/bench.pdf", name), args.repeat)
        print(f"PNG size at {args.width} px: {len(png) / 1024:.0f} KiB")

    if args.url:
        results.update(over_http(args.url, args.token, args.org, data, args.width, page_numbers))

    base = statistics.median(results["floor"])
    print(f"{'step':<10} {'p50 ms':>8} {'p90 ms':>8} {'p50 / floor':>12}")
    for step, times in results.items():
        p50 = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"{step:<10} {p50:8.1f} {p90:8.1f} {p50 / base:12.2f}")
    print(f"route, first call (worker process start included): {cold_ms:.0f} ms")


if __name__ == "__main__":
    main()
