"""The Graph page's explorer over a real build (issue 29): every member button works, the page pages
its communities, search suggests entities, evidence opens the viewer, the status refreshes while a
build runs, and nothing is wider than a 390 px phone.

Three documents (two of the shared examples and one with a long path-like entity) are uploaded to
one organization of the package's dev server; its build is what the page explores.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.integration.server_fixtures import DevServer, bearer, token, upload, wait_for_status

ORG = "atlas"
BUILD_DEADLINE_S = 240.0
LONG_PATH = "/srv/librarian/collections/a-very-long-directory-name/another-very-long-directory-name/index"
LONG_KEY = LONG_PATH.strip("/")
ATLAS = (
    "# The archive\n\n"
    f"The Librarian Project publishes its archive for every reader. Ada Lovelace keeps `{LONG_PATH}` "
    f"on the server. The directory {LONG_PATH} holds every release of the Librarian Project.\n"
).encode()
SHARED = ("md/docling-docs/concepts_chunking.md", "md/docling-tests/mixed.md")
PAGE_SIZE = 10  # graphexplorer.ts


def member() -> str:
    return token("ines", ORG)


def admin() -> str:
    return token("ines", ORG, role="admin")


@pytest.fixture(scope="module")
def explored(http: httpx.Client) -> dict[str, Any]:
    """The organization with a published graph of all three documents."""
    from tests.conftest import DOCS_DIR

    if not DOCS_DIR.is_dir():
        pytest.skip(f"example documents not found at {DOCS_DIR} (set LIBRARIAN_SHARED_DIR)")
    tok = member()
    files = [(p.rsplit("/", 1)[-1], (DOCS_DIR / p).read_bytes()) for p in SHARED] + [("atlas.md", ATLAS)]
    paths = []
    for name, data in files:  # all at once: their graph builds coalesce
        response = upload(http, ORG, tok, name, data, "text/markdown")
        assert response.status_code == 202, response.text
        paths.append(response.json()["path"])
    for path in paths:
        assert wait_for_status(http, ORG, tok, path, deadline_s=120)["status"] == "indexed"
    deadline = time.monotonic() + BUILD_DEADLINE_S
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = http.get(f"/orgs/{ORG}/graph", headers=bearer(tok)).json()
        if status.get("version") is not None and status["documents"] == len(files) and status["upToDate"]:
            return status
        if (status.get("lastBuild") or {}).get("status") == "failed":
            break
        time.sleep(0.5)
    raise AssertionError(f"no graph version of all documents was published: {status}")


def all_members(http: httpx.Client) -> dict[str, str]:
    """key -> label of every member of every community, paging through the communities."""
    headers = bearer(member())
    members: dict[str, str] = {}
    offset, total = 0, 1
    while offset < total:
        page = http.get(
            f"/orgs/{ORG}/graph/communities", params={"offset": offset, "limit": 50}, headers=headers
        )
        assert page.status_code == 200, page.text
        body = page.json()
        total = body["total"]
        for card in body["communities"]:
            members.update(zip(card["memberKeys"], card["members"], strict=True))
            detail = http.get(f"/orgs/{ORG}/graph/communities/{card['id']}", headers=headers)
            assert detail.status_code == 200, detail.text
            assert detail.json()["size"] == card["size"]
            members.update({m["name"]: m["label"] for m in detail.json()["members"]})
        offset += len(body["communities"]) or total
    return members


def test_every_community_member_resolves_to_a_neighbourhood(
    http: httpx.Client, explored: dict[str, Any]
) -> None:
    members = all_members(http)
    assert len(members) > 20 and LONG_KEY in members, sorted(members)[:20]
    failed = []
    for key in members:
        hood = http.get(f"/orgs/{ORG}/graph/neighbourhood", params={"entity": key}, headers=bearer(member()))
        if hood.status_code != 200 or hood.json()["center"] != key:
            failed.append((key, hood.status_code))
    assert not failed, f"{len(failed)} of {len(members)} members do not resolve: {failed[:10]}"


def new_page(
    browser: Any, server: DevServer, tok: str, width: int = 1000, height: int = 900
) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {tok!r})")
    page = context.new_page()
    page.goto(server.url + "/#/graph")
    return context, page


def test_member_buttons_draw_the_picture_and_communities_page(
    browser: Any, server: DevServer, explored: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    context, page = new_page(browser, server, member())
    try:
        expect(page.get_by_role("status")).to_contain_text(f"Version {explored['version']}")
        cards = page.locator("li.community")
        expect(cards.first).to_be_visible()
        assert cards.count() <= PAGE_SIZE
        expect(page.locator("#community-count")).to_contain_text(f"Communities 1–{cards.count()} of ")
        first_titles = cards.locator("h4").all_inner_texts()
        # the first card's members and relations, on request; a sample of its member buttons
        cards.first.get_by_role("button", name="Members and relations").click()
        buttons = cards.first.locator(".member-list button")
        expect(buttons.first).to_be_visible()
        count = buttons.count()
        sample = sorted({0, count - 1, *range(0, count, max(1, count // 5))})
        for i in sample:
            button = buttons.nth(i)
            label = button.inner_text()
            button.click()
            heading = page.locator("#neighbourhood h3")
            expect(heading).to_have_text(f"Around {label}")
            expect(page.locator("#neighbourhood").get_by_role("img", name="related entities")).to_be_visible()
        best = cards.nth(1).locator(".members button").first  # a card's best-connected member
        label = best.inner_text()
        best.click()
        expect(page.locator("#neighbourhood h3")).to_have_text(f"Around {label}")
        next_page = page.get_by_role("button", name="Next")
        if next_page.is_enabled():
            next_page.click()
            expect(page.locator("#community-count")).to_contain_text(f"Communities {PAGE_SIZE + 1}–")
            assert cards.locator("h4").all_inner_texts() != first_titles
    finally:
        context.close()


def test_search_suggests_entities_and_evidence_opens_the_viewer(
    browser: Any, server: DevServer, explored: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    context, page = new_page(browser, server, member())
    try:
        expect(page.get_by_role("status")).to_contain_text(f"Version {explored['version']}")
        page.get_by_label("Find an entity").fill("another-very-long")
        suggestion = page.get_by_role("list", name="Suggestions").get_by_role("button").first
        expect(suggestion).to_have_attribute("data-key", LONG_KEY)
        suggestion.click()
        hood = page.locator("#neighbourhood")
        expect(hood.get_by_role("img", name="related entities")).to_be_visible()
        hood.get_by_role("button", name="Show evidence").click()
        citation = hood.get_by_role("list", name="Entity evidence").locator("button.cite").first
        expect(citation).to_be_visible()
        citation.click()
        expect(page.locator("#viewer")).to_be_visible()
        expect(page.locator("#viewer-title")).to_contain_text("atlas.md")
        expect(page.locator("#viewer-body mark")).to_be_visible()
    finally:
        context.close()


def test_nothing_is_wider_than_a_phone(browser: Any, server: DevServer, explored: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    context, page = new_page(browser, server, member(), width=390, height=844)
    try:
        expect(page.get_by_role("status")).to_contain_text(f"Version {explored['version']}")
        expect(page.locator(".members button").first).to_be_visible()  # the communities are listed
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the Graph page is {width} px wide on a 390 px screen, as it loads"
        # the local question's example names an entity of this library, not a stranger's
        placeholder = page.get_by_label("Ask the graph (local)", exact=True)
        expect(placeholder).not_to_have_attribute("placeholder", "e.g. Who works for Ebenezer Scrooge?")
        top = httpx.get(
            server.url + f"/orgs/{ORG}/graph/entities", params={"limit": 1}, headers=bearer(member())
        ).json()["entities"][0]
        expect(placeholder).to_have_attribute("placeholder", f"e.g. What is {top['label']}?")
        page.locator("li.community").first.get_by_role("button", name="Members and relations").click()
        expect(page.locator(".member-list button").first).to_be_visible()
        for summary in page.locator("li.community summary").all():
            summary.click()
        page.get_by_label("Find an entity").fill(LONG_PATH)
        page.get_by_label("Find an entity").press("Enter")
        hood = page.locator("#neighbourhood")
        expect(hood.locator("h3")).to_contain_text("a-very-long-directory-name")
        hood.get_by_role("button", name="Show evidence").click()
        expect(hood.get_by_role("list", name="Entity evidence")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the Graph page is {width} px wide on a 390 px screen"
    finally:
        context.close()


# Text the progress line showed, recorded as it changes (a build may pass between two polls).
RECORD_PROGRESS = """(() => {
  window.progressSeen = [];
  const line = document.querySelector('.build-progress');
  new MutationObserver(() => window.progressSeen.push(line.textContent)).observe(
    line, {childList: true, characterData: true, subtree: true});
})()"""


def test_status_refreshes_while_a_rebuild_runs(
    browser: Any, server: DevServer, explored: dict[str, Any]
) -> None:
    """Last in the module: the rebuild publishes a new version."""
    from playwright.sync_api import expect

    context, page = new_page(browser, server, member())
    try:  # a member has no rebuild button
        expect(page.get_by_role("status")).to_contain_text(f"Version {explored['version']}")
        assert page.get_by_role("button", name="Rebuild graph").count() == 0
    finally:
        context.close()
    context, page = new_page(browser, server, admin())
    try:
        status = page.get_by_role("status")
        expect(status).to_contain_text(f"Version {explored['version']}")
        page.evaluate(RECORD_PROGRESS)
        page.get_by_role("button", name="Rebuild graph").click()
        # no reload: the page polls the status until the build ends and shows the new version
        expect(status).to_contain_text(f"Version {explored['version'] + 1}", timeout=BUILD_DEADLINE_S * 1000)
        expect(status).to_contain_text("Last build: published")
        seen = page.evaluate("window.progressSeen")
        assert any(text.startswith("Building now") for text in seen), seen
        expect(page.locator(".build-progress")).to_have_text("")
    finally:
        context.close()
