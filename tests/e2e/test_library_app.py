"""The library page and the app's shell in a real browser against a real `langgraph dev` (issue 29).

- signed out, the nav and "Sign out" are hidden; Enter in the token field signs in;
- an expired token (on load, when it runs out on an open page, or a 401 mid-session) says
  "Your session expired. Sign in again." rather than silently showing the form;
- each document shows its pipeline stage (queued, parsing, embedding, indexing, done) with the
  chunk progress, only one ingest of the organization runs at a time and the others show their
  place in line; upload notes follow the status to "indexed, 1 chunk";
- an admin cancels a running ingest and schedules a graph rebuild from buttons; a member has neither;
- names wrap without widening the page and sizes stay on one line at 390 px; dark mode follows the
  system setting. Screenshots: docs/screenshots/library-stages.png, library-phone.png, library-dark.png.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from librarian.auth import mint_token
from tests.conftest import DOCS_DIR
from tests.e2e.conftest import SCREENSHOTS
from tests.integration.server_fixtures import DevServer, bearer, token, upload, wait_for_status

ORG = "umbrella"  # its own organization: the other browser tests' uploads do not show here
TIMEOUT_MS = 120_000
EXPIRED = "Your session expired. Sign in again."
CAROL = DOCS_DIR.parent / "christmas-carol" / "body_only.txt"  # long enough to watch it embed
LONG_NAME = "word_sample_quarterly_report_of_the_facilities_committee_final_version.md"

# Records, on every change of the table, how many rows say `running` and which stages and places
# in line were shown: the library's history, not just its last frame.
RECORD = """() => {
  window.__seen = { maxRunning: 0, stages: new Set(), places: new Set(), progress: false };
  const look = () => {
    const seen = window.__seen;
    const running = document.querySelectorAll('tr[data-status="running"]').length;
    seen.maxRunning = Math.max(seen.maxRunning, running);
    for (const li of document.querySelectorAll('.stages [aria-current="step"]')) {
      seen.stages.add(li.textContent);
    }
    for (const now of document.querySelectorAll(".now")) {
      const place = /(\\d+)(st|nd|rd|th) in line/.exec(now.textContent);
      if (place) seen.places.add(Number(place[1]));
    }
    if (document.querySelector(".status-cell progress")) seen.progress = true;
  };
  new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true });
  look();
}"""
SEEN = """() => {
  const seen = window.__seen;
  return { ...seen, stages: [...seen.stages], places: [...seen.places] };
}"""
# The name wraps only at its separators: no piece between two <wbr> is split over lines.
WHOLE_PIECES = """(cell) => [...cell.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).every((n) => {
  const range = document.createRange();
  range.selectNodeContents(n);
  return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size === 1;
})"""
LINES = """(cell) => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
}"""
# The cell's text lies on one line (its client rects share one top).
ONE_LINE = """(cell) => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size === 1;
}"""


def _signed_in(browser: Any, server: DevServer, tok: str, **context_options: Any) -> tuple[Any, Any]:
    context = browser.new_context(**{"viewport": {"width": 1100, "height": 820}, **context_options})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {tok!r})")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server.url + "/#/library")
    return context, page


@pytest.fixture
def fresh(browser: Any, server: DevServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 820})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def test_signed_out_shows_no_nav_and_enter_signs_in(fresh: Any, server: DevServer) -> None:
    from playwright.sync_api import expect

    fresh.goto(server.url + "/")
    expect(fresh.get_by_label("Access token")).to_be_visible()
    expect(fresh.locator("#nav")).to_be_hidden()
    expect(fresh.get_by_role("button", name="Sign out")).to_be_hidden()

    fresh.get_by_label("Access token").fill(token("mallory", ORG))
    fresh.get_by_label("Access token").press("Enter")
    expect(fresh.get_by_role("heading", name=f"Library of {ORG}")).to_be_visible()
    expect(fresh.locator("#nav")).to_be_visible()
    # a member: neither admin action
    expect(fresh.get_by_role("button", name="Rebuild graph")).to_have_count(0)


def test_a_token_that_expired_before_the_visit_says_so(browser: Any, server: DevServer) -> None:
    from playwright.sync_api import expect

    old = token("mallory", ORG)
    expired = mint_token(
        "test-secret-" + "x" * 40, "mallory", ORG, ttl_s=60, now=time.time() - 3600
    )  # tests.integration.server_fixtures.SECRET, an hour ago
    assert old != expired
    context, page = _signed_in(browser, server, expired)
    try:
        expect(page.get_by_role("alert")).to_have_text(EXPIRED)
        expect(page.get_by_label("Access token")).to_be_visible()
        expect(page.locator("#nav")).to_be_hidden()
    finally:
        context.close()


def test_a_token_running_out_on_an_open_page_says_so(browser: Any, server: DevServer) -> None:
    from playwright.sync_api import expect

    context, page = _signed_in(browser, server, token("mallory", ORG, ttl_s=8))
    try:
        expect(page.get_by_role("heading", name=f"Library of {ORG}")).to_be_visible()
        expect(page.get_by_role("alert")).to_have_text(EXPIRED, timeout=30_000)
        expect(page.locator("#nav")).to_be_hidden()
    finally:
        context.close()


def test_a_401_mid_session_says_so(browser: Any, server: DevServer) -> None:
    """A token the server no longer accepts (here: signed with another secret) though not expired."""
    from playwright.sync_api import expect

    revoked = mint_token("another-secret-" + "y" * 40, "mallory", ORG)
    context, page = _signed_in(browser, server, revoked)
    try:
        expect(page.get_by_role("alert")).to_have_text(EXPIRED)
        assert page.evaluate("() => sessionStorage.getItem('librarian.token')") is None
    finally:
        context.close()


def test_a_401_on_the_chat_page_says_so(browser: Any, server: DevServer) -> None:
    """The chat talks to the server through the LangGraph SDK, not `Api`: its 401 ends the session too."""
    from playwright.sync_api import expect

    revoked = mint_token("another-secret-" + "y" * 40, "mallory", ORG)
    context = browser.new_context(viewport={"width": 1100, "height": 820})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {revoked!r})")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server.url + "/#/chat")  # lists the user's conversations through the SDK
        expect(page.get_by_role("alert")).to_have_text(EXPIRED)
        assert page.evaluate("() => sessionStorage.getItem('librarian.token')") is None
    finally:
        context.close()


def test_stages_one_running_ingest_cancel_and_rebuild(browser: Any, server: DevServer) -> None:
    from playwright.sync_api import expect

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context, page = _signed_in(browser, server, token("root", ORG, role="admin"))
    try:
        expect(page.get_by_role("heading", name=f"Library of {ORG}")).to_be_visible()
        page.evaluate(RECORD)
        page.on("dialog", lambda dialog: dialog.accept())  # the confirm() of Cancel
        note = b"# Facilities\n\nThe committee meets on Tuesdays in room four.\n"
        page.locator("#file").set_input_files(
            files=[
                {"name": "carol.txt", "mimeType": "text/plain", "buffer": CAROL.read_bytes()},
                {"name": "carol-again.txt", "mimeType": "text/plain", "buffer": CAROL.read_bytes()},
                {"name": LONG_NAME, "mimeType": "text/markdown", "buffer": note},
            ]
        )
        carol = page.locator('tr[data-path="docs/carol.txt"]')
        # The first ingest embeds, with its progress; the two after it wait, in line.
        expect(carol.locator(".now")).to_contain_text("embedding", timeout=TIMEOUT_MS)
        expect(carol.locator("progress")).to_be_visible()
        expect(page.locator('tr[data-path="docs/carol-again.txt"] .now')).to_contain_text("1st in line")
        expect(page.locator(f'tr[data-path="docs/{LONG_NAME}"] .now')).to_contain_text("2nd in line")
        expect(page.locator("#library-summary")).to_contain_text("1 running, 2 waiting for their turn")
        page.screenshot(path=str(SCREENSHOTS / "library-stages.png"))
        # Until the cancel below (whose short follow-up run may take a slot beyond the share).
        before_cancel = page.evaluate(SEEN)
        assert before_cancel["maxRunning"] == 1, before_cancel  # one ingest per organization at a time

        # An admin cancels the running ingest from its row.
        carol.get_by_role("button", name="Cancel the ingest of docs/carol.txt").click()
        expect(carol.locator(".badge")).to_have_text("cancelled", timeout=TIMEOUT_MS)
        # The cancel let the next one run; cancel that one too, then the note is indexed.
        again = page.locator('tr[data-path="docs/carol-again.txt"]')
        expect(again.locator(".badge")).to_have_text("running", timeout=TIMEOUT_MS)
        again.get_by_role("button", name="Cancel the ingest of docs/carol-again.txt").click()
        expect(again.locator(".badge")).to_have_text("cancelled", timeout=TIMEOUT_MS)
        row = page.locator(f'tr[data-path="docs/{LONG_NAME}"]')
        expect(row.locator(".badge")).to_have_text("indexed", timeout=TIMEOUT_MS)
        expect(row.locator("td.count")).to_have_text("1 chunk")
        # The upload note followed the status instead of staying "queued for indexing".
        expect(page.get_by_role("list", name="Uploads")).to_contain_text(f"{LONG_NAME}: indexed, 1 chunk")
        expect(page.get_by_role("list", name="Uploads")).to_contain_text("carol.txt: cancelled")
        expect(row.get_by_role("button", name=f"Cancel the ingest of docs/{LONG_NAME}")).to_have_count(0)

        seen = page.evaluate(SEEN)
        assert {"queued", "embedding"} <= set(seen["stages"]), seen
        assert {1, 2} <= set(seen["places"]) and seen["progress"], seen

        # The admin's graph rebuild: scheduled (or joined to the one the uploads queued).
        page.get_by_role("button", name="Rebuild graph").click()
        expect(page.locator("#graph-note")).to_contain_text("rebuild", ignore_case=True)
        expect(page.locator("#graph-note")).not_to_contain_text("Could not")

        # A short name stays on one line at desktop width.
        assert page.locator('tr[data-path="docs/carol.txt"] th.name').evaluate(ONE_LINE)
        assert page.locator(f'tr[data-path="docs/{LONG_NAME}"] th.name').evaluate(WHOLE_PIECES)
    finally:
        context.close()


@pytest.fixture(scope="module")
def long_named(http: httpx.Client) -> str:
    """The long-named note in the library (uploaded by the test above, or here when run alone)."""
    tok = token("root", ORG, role="admin")
    path = f"docs/{LONG_NAME}"
    if http.get(f"/orgs/{ORG}/documents/{path}", headers=bearer(tok)).status_code == 404:
        assert upload(http, ORG, tok, LONG_NAME, b"# Facilities\n\nRoom four.\n").status_code == 202
        wait_for_status(http, ORG, tok, path, deadline_s=120)
    return path


def test_phone_width_wraps_names_and_keeps_sizes_whole(
    browser: Any, server: DevServer, long_named: str
) -> None:
    from playwright.sync_api import expect

    context, page = _signed_in(
        browser,
        server,
        token("root", ORG, role="admin"),
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
    )
    try:
        row = page.locator(f'tr[data-path="{long_named}"]')
        expect(row).to_be_visible()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        size = row.locator("td.size")
        expect(size).to_contain_text("B")
        assert size.evaluate(ONE_LINE)  # "62 B" never splits over two lines
        name = row.locator("th.name")
        assert name.evaluate(LINES) > 1 and name.evaluate(WHOLE_PIECES)  # wrapped, at "_" only
        page.screenshot(path=str(SCREENSHOTS / "library-phone.png"), full_page=True)
    finally:
        context.close()


def test_dark_mode_follows_the_system(browser: Any, server: DevServer, long_named: str) -> None:
    from playwright.sync_api import expect

    context, page = _signed_in(browser, server, token("root", ORG, role="admin"), color_scheme="dark")
    try:
        expect(page.locator(f'tr[data-path="{long_named}"]')).to_be_visible()
        # The page's canvas (the root's background, what shows behind everything) and its text.
        luminance = """(which) => {
          const style = getComputedStyle(which === "root" ? document.documentElement : document.body);
          const colour = which === "root" ? style.backgroundColor : style.color;
          const [r, g, b, a] = colour.match(/[\\d.]+/g).map(Number);
          if (a === 0) return null;  // transparent: no colour set
          return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
        }"""
        canvas, text = page.evaluate(luminance, "root"), page.evaluate(luminance, "text")
        assert canvas is not None and canvas < 0.2, canvas  # a dark page, not white
        assert text > 0.7, text  # light text on it
        page.screenshot(path=str(SCREENSHOTS / "library-dark.png"))
    finally:
        context.close()
