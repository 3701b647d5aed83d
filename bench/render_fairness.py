"""Another organization's page image while one organization floods the renderer (issue 24, finding 2).

Why: in issue 24, organization A sent 8 concurrent renders of a small but heavy PDF page and gave
up after 15 s; B's page image then took 147 s (0.015 s idle), because renders were one queue for
everyone and went on after their client had gone. Goal: B's page image during A's 8 abandoned heavy
renders takes at most 3x its idle time.

The script serves the real app (`server.app`, the page route and its renderer processes) with
uvicorn on a local port, so requests, timeouts and hang-ups are real HTTP; only the LangGraph
server's token check is replaced by a header naming the caller's organization. It stores A's heavy
PDF (`tests.pdf_heavy`: 8 pages of about 4 s each at 2000 px) and B's light one in a temporary data
directory, then measures B's page image:

    idle           nothing else running (and `idle again` at the end)
    A waiting      while A's 8 renders (8 distinct pages at 2000 px) are waited for
    A gone         after A's client gave up (`--give-up` s), when its renders should have stopped

each as a render (`miss`: a page and width not cached yet) and as a cached read (`hit`), and prints
p50, p90 and max with the ratio of p50 to idle. Settings come from the environment
(`LIBRARIAN_PAGE_RENDER_WORKERS`, `LIBRARIAN_PAGE_RENDER_CONCURRENCY_PER_ORG`, ...).

    PYTHONPATH=. python bench/render_fairness.py [--give-up 15] [--after 10] [--heavy-pages 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

A, B = "acme", "globex"
LIGHT_PAGES = 400  # enough for every miss of a run


class User(dict):
    is_authenticated = True


def with_user(app: Any) -> Any:
    """The server's auth, stood in for: `x-bench-org` names the caller's organization."""

    async def authenticated(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            org = dict(scope.get("headers") or []).get(b"x-bench-org", b"").decode()
            user = User(identity=f"reader-{org}", orgs=[org], role="reader", permissions=[])
            scope = {**scope, "user": user}
        await app(scope, receive, send)

    return authenticated


def serve(port: int) -> Any:
    import uvicorn

    import server

    config = uvicorn.Config(with_user(server.app), host="127.0.0.1", port=port, log_level="warning")
    uv = uvicorn.Server(config)
    threading.Thread(target=uv.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not uv.started:
        if time.monotonic() > deadline:
            raise TimeoutError("uvicorn did not start")
        time.sleep(0.05)
    return uv


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def url(org: str, name: str, page: int, width: int) -> str:
    return f"/orgs/{org}/documents/docs/{name}/pages/{page}.png?width={width}"


class Pages:
    """B's page requests at 1000 px: `miss` asks for a page not asked before, `hit` for a cached one."""

    def __init__(self, pages: int) -> None:
        self.fresh = iter(range(2, pages + 1))

    async def miss(self, http: httpx.AsyncClient) -> float:
        return await timed(http, url(B, "light.pdf", next(self.fresh), 1000))

    async def hit(self, http: httpx.AsyncClient) -> float:
        return await timed(http, url(B, "light.pdf", 1, 1000))


async def timed(http: httpx.AsyncClient, path: str) -> float:
    start = time.perf_counter()
    response = await http.get(path, headers={"x-bench-org": B})
    response.raise_for_status()
    return time.perf_counter() - start


async def flood(base: str, heavy_pages: int, give_up_s: float) -> list[str]:
    """A's concurrent heavy renders, each abandoned (connection closed) after `give_up_s`."""

    async def one(page: int) -> str:
        async with httpx.AsyncClient(base_url=base, timeout=give_up_s) as http:
            try:
                response = await http.get(url(A, "heavy.pdf", page, 2000), headers={"x-bench-org": A})
                return str(response.status_code)
            except httpx.TimeoutException:
                return "gave up"

    return await asyncio.gather(*(one(page) for page in range(1, heavy_pages + 1)))


async def measure(base: str, args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {}
    b_pages = Pages(LIGHT_PAGES)
    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
        # One render of each organization at once starts the renderer processes (as the web app's
        # page does), then B's page 1 is cached for the hits.
        warm_a = http.get(url(A, "light.pdf", 1, 1000), headers={"x-bench-org": A})
        await asyncio.gather(warm_a, b_pages.hit(http))
        await b_pages.miss(http)
        results["idle"] = {"miss": [], "hit": []}
        for _ in range(args.repeat):
            results["idle"]["miss"].append(await b_pages.miss(http))
            results["idle"]["hit"].append(await b_pages.hit(http))
            await asyncio.sleep(0.2)
        start = time.monotonic()
        flooding = asyncio.ensure_future(flood(base, args.heavy_pages, args.give_up))
        await asyncio.sleep(1.0)  # A's renders are queued and running
        for phase, until in (("A waiting", args.give_up), ("A gone", args.give_up + args.after)):
            results[phase] = {"miss": [], "hit": []}
            while time.monotonic() - start < until:
                results[phase]["miss"].append(await b_pages.miss(http))
                results[phase]["hit"].append(await b_pages.hit(http))
                await asyncio.sleep(0.2)
            if phase == "A waiting":
                outcomes = await flooding
                print(f"A's {args.heavy_pages} heavy renders: {', '.join(outcomes)}")
        results["idle again"] = {"miss": [], "hit": []}
        for _ in range(args.repeat):
            results["idle again"]["miss"].append(await b_pages.miss(http))
            results["idle again"]["hit"].append(await b_pages.hit(http))
            await asyncio.sleep(0.2)
    return results


def report(results: dict[str, dict[str, list[float]]]) -> None:
    print(f"{'B page image':<23} {'n':>3} {'p50 ms':>9} {'p90 ms':>9} {'max ms':>9} {'p50/idle':>9}")
    for kind in ("miss", "hit"):
        idle = statistics.median(results["idle"][kind])
        for phase, by_kind in results.items():
            times = by_kind[kind]
            if not times:
                continue
            p50 = statistics.median(times)
            p90 = statistics.quantiles(times, n=10)[-1] if len(times) > 1 else times[0]
            label = f"{phase}, {kind}"
            print(
                f"{label:<23} {len(times):>3} {p50 * 1000:9.1f} {p90 * 1000:9.1f} "
                f"{max(times) * 1000:9.1f} {p50 / idle:8.2f}x"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--give-up", type=float, default=15.0, help="A's client timeout, seconds")
    parser.add_argument("--after", type=float, default=10.0, help="seconds measured after A gave up")
    parser.add_argument("--heavy-pages", type=int, default=8, help="A's concurrent renders")
    parser.add_argument("--repeat", type=int, default=20, help="idle samples of each kind, before and after")
    args = parser.parse_args()
    logging.disable(logging.ERROR)  # the app's background work has no LangGraph server to talk to here

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LIBRARIAN_DATA_DIR"] = str(Path(tmp) / "data")
        from librarian.stack import get_stack
        from tests.e2e.pdf import text_pdf
        from tests.pdf_heavy import heavy_pdf

        files = get_stack().files
        files.write(A, "docs/heavy.pdf", heavy_pdf(pages=args.heavy_pages))
        line = "Line {} of a light page, page {}."
        light = [[(72, 72 + 14 * i, 11, line.format(i, n)) for i in range(40)] for n in range(LIGHT_PAGES)]
        files.write(B, "docs/light.pdf", text_pdf(light))
        files.write(A, "docs/light.pdf", text_pdf(light[:1]))
        settings = get_stack().settings
        shown = {k: v for k, v in settings.model_dump().items() if k.startswith("page_")}
        print(f"settings: {json.dumps(shown, default=str)}")
        port = free_port()
        uv = serve(port)
        try:
            report(asyncio.run(measure(f"http://127.0.0.1:{port}", args)))
        finally:
            uv.should_exit = True
            time.sleep(0.5)


if __name__ == "__main__":
    main()
