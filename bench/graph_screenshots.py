"""Screenshots of the Graph page, a global answer and a local answer over a real library (issue 27).

Why a script: the issue's before/after pictures must come from the same documents, questions and
viewport, once from the unchanged code and once from the current tree. The script ingests a folder
(default: `$LIBRARIAN_SHARED_DIR/data/docs`) into one organization with the given source tree's own
CLI, builds its knowledge graph, serves that tree's web app with `langgraph dev`, signs in with a
JWT and drives Debian's chromium with Playwright at 1280 px wide.

    # "before": today's committed code in a scratch tree, sharing this repository's virtualenv
    mkdir /tmp/before && git archive HEAD | tar -x -C /tmp/before
    cd /tmp/before && PYTHONPATH=/tmp/before /work/main/.venv/bin/python \\
        /work/main/bench/graph_screenshots.py --source /tmp/before --suffix before
    # "after": the current tree
    .venv/bin/python bench/graph_screenshots.py --suffix after
    # an already running server (its organization already built), pictures only
    .venv/bin/python bench/graph_screenshots.py --url http://127.0.0.1:8123 --secret S --suffix after

The pictures land in `docs/screenshots/` of this repository (`--out` to change), named
`graph-SUFFIX.png`, `global-answer-SUFFIX.png` and `graph-local-SUFFIX.png`; the heights of the
answers are printed, since "a wall of text" is a number of pixels.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
GLOBAL_QUESTION = "What are the main topics of this library?"
LOCAL_QUESTION = "What is /usr/libexec?"
WIDTH, HEIGHT = 1280, 800
DEADLINE_MS = 180_000
MAX_PICTURE_PX = 6_000  # a full Graph page lists every community: tens of thousands of pixels


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", type=Path, default=HERE, help="source tree to run (default: this one)")
    parser.add_argument("--url", help="an already running server: skip ingest, build and start-up")
    parser.add_argument("--secret", help="the running server's LIBRARIAN_AUTH_SECRET (with --url)")
    parser.add_argument("--data-dir", type=Path, help="data directory to reuse or fill (default: a new one)")
    parser.add_argument(
        "--docs", type=Path, help="folder to ingest (default: $LIBRARIAN_SHARED_DIR/data/docs)"
    )
    parser.add_argument("--org", default="demo")
    parser.add_argument("--suffix", default="after", help="file name suffix: before or after")
    parser.add_argument("--out", type=Path, default=HERE / "docs" / "screenshots")
    parser.add_argument("--global-question", default=GLOBAL_QUESTION)
    parser.add_argument("--local-question", default=LOCAL_QUESTION)
    parser.add_argument("--skip-build", action="store_true", help="the data directory is already built")
    return parser.parse_args(argv)


def cli(source: Path, data_dir: Path, *args: str) -> None:
    """Run `librarian ARGS` from `source` (its own code, whichever package is installed)."""
    env = {**os.environ, "PYTHONPATH": str(source), "LIBRARIAN_DATA_DIR": str(data_dir)}
    code = "import sys; from librarian_cli import main; sys.argv[0] = 'librarian'; sys.exit(main())"
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code, *args], cwd=source, env=env, check=True)
    print(f"librarian {' '.join(args)}: {time.monotonic() - started:.0f} s", flush=True)


def prepare(args: argparse.Namespace, data_dir: Path) -> None:
    docs = args.docs or Path(os.environ.get("LIBRARIAN_SHARED_DIR", "/work/shared")) / "data" / "docs"
    cli(args.source, data_dir, "ingest", str(docs), "--org", args.org)
    cli(args.source, data_dir, "graph", "build", "--org", args.org)


def start_server(args: argparse.Namespace, data_dir: Path, stack: ExitStack, secret: str) -> str:
    """`langgraph dev` serving `args.source`'s configuration, with `data_dir` as its data."""
    sys.path.insert(0, str(args.source))  # the source tree's own tests.devserver and configuration
    from tests import devserver

    assert args.source.resolve() == devserver.REPO_DIR, f"imported {devserver.__file__}; set PYTHONPATH"
    workdir = data_dir.parent / "server"
    workdir.mkdir(parents=True, exist_ok=True)
    # Background GraphRAG rebuilds would race the pictures; the graph is built already.
    extra = {"PYTHONPATH": str(args.source)}
    server = devserver.DevServer(workdir, devserver.server_env(data_dir, secret, extra), jobs=2)
    server.start()
    stack.callback(server.stop)
    return server.url


def chromium() -> str:
    for candidate in (os.environ.get("LIBRARIAN_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise SystemExit("no chromium: apt-get install -y chromium")


def full_page(page: Any, path: str) -> None:
    """A full-page screenshot, cut at MAX_PICTURE_PX (the rest is the same kind of list)."""
    height = min(int(page.evaluate("document.documentElement.scrollHeight")), MAX_PICTURE_PX)
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": height}
    page.screenshot(path=path, full_page=True, clip=clip, timeout=DEADLINE_MS)


def height_of(page: Any, selector: str) -> float:
    box = page.locator(selector).last.bounding_box()
    return box["height"] if box else 0.0


def shoot_graph(page: Any, url: str, path: str) -> None:
    from playwright.sync_api import expect

    page.goto(url + "/#/graph")
    expect(page.get_by_role("status")).to_contain_text("Version", timeout=DEADLINE_MS)
    expect(page.locator(".members button").first).to_be_visible(timeout=DEADLINE_MS)
    full_page(page, path)
    print(f"graph page: {page.evaluate('document.body.scrollHeight')} px high", flush=True)


def shoot_local(page: Any, url: str, question_text: str, path: str) -> None:
    from playwright.sync_api import expect

    page.goto(url + "/#/graph")
    expect(page.get_by_role("status")).to_contain_text("Version", timeout=DEADLINE_MS)
    question = page.get_by_label("Ask the graph (local)", exact=True)
    question.fill(question_text)
    question.press("Enter")
    answer = page.locator("#local-answer")
    expect(answer.locator("h3, [role=alert]").first).to_be_visible(timeout=DEADLINE_MS)
    print(f"local answer panel: {height_of(page, '#local-answer'):.0f} px high", flush=True)
    full_page(page, path)
    alert = answer.locator("[role=alert]")
    if alert.count():  # the picture is taken, but it shows an error, not an answer
        raise RuntimeError(f"the local answer failed: {alert.first.inner_text()}")


def shoot_global(page: Any, url: str, question_text: str, path: str) -> None:
    from playwright.sync_api import expect

    page.goto(url + "/#/chat")
    page.get_by_label("Question").fill(question_text)
    page.get_by_label("Question").press("Enter")
    expect(page.locator(".answer[aria-busy=false]").last).to_be_visible(timeout=DEADLINE_MS)
    print(f"global answer: {height_of(page, '.answer'):.0f} px high", flush=True)
    full_page(page, path)


def shoot(url: str, token: str, args: argparse.Namespace) -> list[str]:
    """Take the three pictures; one that fails is reported and the others are still taken."""
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    out = {
        stem: str(args.out / f"{stem}-{args.suffix}.png")
        for stem in ("graph", "graph-local", "global-answer")
    }
    shots = {
        "graph": lambda page: shoot_graph(page, url, out["graph"]),
        "graph-local": lambda page: shoot_local(page, url, args.local_question, out["graph-local"]),
        "global-answer": lambda page: shoot_global(page, url, args.global_question, out["global-answer"]),
    }
    failed = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium(), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        context.add_init_script(f"sessionStorage.setItem('librarian.token', {token!r})")
        try:
            for stem, take in shots.items():
                page = context.new_page()
                try:
                    take(page)
                except Exception as error:  # a bench run reports each picture it missed
                    failed.append(stem)
                    print(f"{stem}: FAILED: {type(error).__name__}: {str(error).splitlines()[0]}", flush=True)
                finally:
                    page.close()
        finally:
            context.close()
            browser.close()
    return failed


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.source = args.source.resolve()
    with ExitStack() as stack:
        if args.url:
            if not args.secret:
                raise SystemExit("--url needs --secret (the server's LIBRARIAN_AUTH_SECRET) to sign in")
            url, secret = args.url.rstrip("/"), args.secret
        else:
            data_dir = (args.data_dir or Path(f"/tmp/graph-screenshots-{args.suffix}/data")).resolve()
            data_dir.mkdir(parents=True, exist_ok=True)
            if not args.skip_build:
                prepare(args, data_dir)
            secret = secrets.token_urlsafe(48)
            url = start_server(args, data_dir, stack, secret)
        from librarian.auth import mint_token

        failed = shoot(url, mint_token(secret, "screenshots", args.org, ttl_s=3600), args)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
