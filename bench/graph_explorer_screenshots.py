"""Screenshots of the Graph page's explorer over a real library, desktop and phone (issue 29).

Reuses `bench/graph_screenshots.py`: ingest a folder (default `$LIBRARIAN_SHARED_DIR/data/docs`) into
one organization with the CLI, build its graph, serve the web app with `langgraph dev`, sign in and
drive Debian's chromium. Here the page is used as a reader would: the largest community is expanded
into its members and relations, a member's neighbourhood is opened and its evidence shown. Printed:
the page's height and widest element at 1280 px and at 390 px (the issue's figures were 168,503 px
tall with 439 cards, and 597 px wide on a 390 px screen).

    .venv/bin/python bench/graph_explorer_screenshots.py                  # ingest, build, shoot
    .venv/bin/python bench/graph_explorer_screenshots.py --data-dir D --skip-build
    LIBRARIAN_WEB_DIST=/tmp/my-dist .venv/bin/python bench/graph_explorer_screenshots.py ...

Pictures: `docs/screenshots/graph-explorer.png` (1280 px) and `docs/screenshots/graph-phone.png` (390 px).
"""

from __future__ import annotations

import argparse
import secrets
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import graph_screenshots as base

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
DEADLINE_MS = 180_000
MAX_PICTURE_PX = 6_000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/graph-explorer-screenshots/data"))
    parser.add_argument(
        "--docs", type=Path, help="folder to ingest (default: $LIBRARIAN_SHARED_DIR/data/docs)"
    )
    parser.add_argument("--org", default="demo")
    parser.add_argument("--out", type=Path, default=base.HERE / "docs" / "screenshots")
    parser.add_argument("--skip-build", action="store_true", help="the data directory is already built")
    args = parser.parse_args(argv)
    args.source = base.HERE  # what graph_screenshots' helpers run
    return args


def explore(page: Any, url: str) -> dict[str, float]:
    """Open the page, expand the largest community, open a member and its evidence; the page's size."""
    from playwright.sync_api import expect

    page.goto(url + "/#/graph")
    expect(page.get_by_role("status")).to_contain_text("Version", timeout=DEADLINE_MS)
    first = page.locator(".community").first
    expect(first).to_be_visible(timeout=DEADLINE_MS)
    first.get_by_role("button", name="Members and relations").click()
    member = first.locator(".member-list button").first
    expect(member).to_be_visible(timeout=DEADLINE_MS)
    member.click()
    expect(page.get_by_role("img", name="related entities")).to_be_visible(timeout=DEADLINE_MS)
    page.locator("#neighbourhood").get_by_role("button", name="Show evidence").click()
    expect(page.locator(".entity-evidence h4, .entity-evidence [role=alert]").first).to_be_visible(
        timeout=DEADLINE_MS
    )
    page.locator("#neighbourhood").scroll_into_view_if_needed()
    return page.evaluate(
        "({height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth,"
        " cards: document.querySelectorAll('.community').length})"
    )


def shoot(page: Any, path: Path, width: int) -> None:
    height = min(int(page.evaluate("document.documentElement.scrollHeight")), MAX_PICTURE_PX)
    page.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": 0, "width": width, "height": height})


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    args = parse_args(argv)
    args.data_dir = args.data_dir.resolve()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        if not args.skip_build:
            base.prepare(args, args.data_dir)
        secret = secrets.token_urlsafe(48)
        url = base.start_server(args, args.data_dir, stack, secret)
        from librarian.auth import mint_token

        token = mint_token(secret, "screenshots", args.org, ttl_s=3600)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=base.chromium(), headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            try:
                for name, viewport in (("graph-explorer.png", DESKTOP), ("graph-phone.png", PHONE)):
                    context = browser.new_context(viewport=viewport)
                    context.add_init_script(f"sessionStorage.setItem('librarian.token', {token!r})")
                    page = context.new_page()
                    size = explore(page, url)
                    shoot(page, args.out / name, viewport["width"])
                    print(
                        f"{name}: {viewport['width']} px screen, page {size['width']} px wide, "
                        f"{size['height']} px tall, {size['cards']} community cards",
                        flush=True,
                    )
                    context.close()
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
