"""The web app's Graph page: communities with summaries and one entity's neighbourhood picture.

An upload schedules the organization's GraphRAG build; once a version is published the page lists
its communities, and choosing a member draws that entity with its neighbours (an SVG) and lists the
relations as text. A local question (`/graph/local`) returns the evidence with the organization's
sources and the matched entities' neighbourhood, which the page draws with those entities highlighted.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import SCREENSHOTS
from tests.integration.server_fixtures import DevServer, bearer, token, upload, wait_for_status

ORG = "umbrella"
LOCAL_QUESTION = "Who works for Ebenezer Scrooge?"
BUILD_DEADLINE_S = 240.0
STORY = (
    b"# The counting house\n\n"
    b"Ebenezer Scrooge runs a counting house in London with his clerk Bob Cratchit. "
    b"Bob Cratchit works for Ebenezer Scrooge every day of the year, even at Christmas.\n\n"
    b"Jacob Marley was the business partner of Ebenezer Scrooge in London. Jacob Marley visits "
    b"Ebenezer Scrooge as a ghost on Christmas Eve.\n\n"
    b"Tiny Tim is the son of Bob Cratchit. Bob Cratchit carries Tiny Tim home from church in London.\n"
)


@pytest.fixture(scope="module")
def published(http: httpx.Client) -> dict[str, Any]:
    tok = token("umberto", ORG)
    response = upload(http, ORG, tok, "carol.md", STORY, "text/markdown")
    assert response.status_code == 202, response.text
    assert wait_for_status(http, ORG, tok, response.json()["path"], deadline_s=120)["status"] == "indexed"
    deadline = time.monotonic() + BUILD_DEADLINE_S
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = http.get(f"/orgs/{ORG}/graph", headers=bearer(tok)).json()
        if status.get("version") is not None:
            return status
        if (status.get("lastBuild") or {}).get("status") == "failed":
            break
        time.sleep(0.5)
    raise AssertionError(f"no graph version was published: {status}")


def test_communities_and_neighbourhood_over_http(http: httpx.Client, published: dict[str, Any]) -> None:
    tok = token("umberto", ORG)
    body = http.get(f"/orgs/{ORG}/graph/communities", headers=bearer(tok)).json()
    assert body["version"] == published["version"] and body["communities"]
    members = {m.lower() for c in body["communities"] for m in c["members"]}
    assert any("scrooge" in m for m in members), members
    hood_url = f"/orgs/{ORG}/graph/neighbourhood"
    hood = http.get(hood_url, params={"entity": "Bob Cratchit"}, headers=bearer(tok))
    assert hood.status_code == 200, hood.text
    names = {n["name"] for n in hood.json()["nodes"]}
    assert hood.json()["center"] in names and len(names) >= 2 and hood.json()["edges"]
    unknown = http.get(hood_url, params={"entity": "Nobody"}, headers=bearer(tok))
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_entity"
    empty = http.get(hood_url, params={"entity": " "}, headers=bearer(tok))
    assert empty.status_code == 400
    outsider = http.get(f"/orgs/{ORG}/graph/communities", headers=bearer(token("bob", "globex")))
    assert outsider.status_code == 403
    never_built = http.get("/orgs/hooli/graph/communities", headers=bearer(token("hal", "hooli")))
    assert never_built.status_code == 404 and never_built.json()["error"]["code"] == "no_graph"


def test_graph_page_draws_a_neighbourhood(browser: Any, server: DevServer, published: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1000, "height": 900})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {token('umberto', ORG)!r})")
    page = context.new_page()
    try:
        page.goto(server.url + "/#/graph")
        expect(page.get_by_role("status")).to_contain_text(f"Version {published['version']}", timeout=30_000)
        member = page.locator(".members button").filter(has_text="Scrooge").first
        expect(member).to_be_visible()
        member.click()
        picture = page.get_by_role("img", name="related entities")
        expect(picture).to_be_visible()
        assert page.locator("svg.neighbourhood circle").count() >= 2
        expect(page.get_by_role("list", name="Relations").locator("li").first).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / "graph.png"), full_page=True)
    finally:
        context.close()


def test_local_answer_over_http(http: httpx.Client, published: dict[str, Any]) -> None:
    tok = token("umberto", ORG)
    local_url = f"/orgs/{ORG}/graph/local"
    response = http.get(local_url, params={"q": LOCAL_QUESTION}, headers=bearer(tok))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "completed" and body["version"] == published["version"]
    assert any("scrooge" in m["label"].lower() for m in body["matchedEntities"]), body["matchedEntities"]
    own = {d["path"] for d in http.get(f"/orgs/{ORG}/documents", headers=bearer(tok)).json()["documents"]}
    assert body["sources"] and {s["path"] for s in body["sources"]} <= own
    assert all({"path", "page", "bbox", "text"} <= set(s) for s in body["sources"])
    assert body["evidence"] and all(1 <= e["source"] <= len(body["sources"]) for e in body["evidence"])
    hood = body["neighbourhood"]
    names = {n["name"] for n in hood["nodes"]}
    assert hood["matched"] and set(hood["matched"]) <= names and hood["edges"]

    def get(question: str, tok: str | None, org: str = ORG) -> httpx.Response:
        headers = bearer(tok) if tok else {}
        return http.get(f"/orgs/{org}/graph/local", params={"q": question}, headers=headers)

    assert get(LOCAL_QUESTION, token("bob", "globex")).status_code == 403
    assert get(LOCAL_QUESTION, None).status_code == 401
    never_built = get(LOCAL_QUESTION, token("hal", "hooli"), "hooli")
    assert never_built.status_code == 404 and never_built.json()["error"]["code"] == "no_graph"
    for bad in (" ", "x" * 1001):
        refused = get(bad, tok)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_question"
        assert "Traceback" not in refused.text


def test_graph_page_asks_locally(browser: Any, server: DevServer, published: dict[str, Any]) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1000, "height": 900})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {token('umberto', ORG)!r})")
    page = context.new_page()
    try:
        page.goto(server.url + "/#/graph")
        expect(page.get_by_role("status")).to_contain_text(f"Version {published['version']}", timeout=30_000)
        question = page.get_by_label("Ask the graph (local)", exact=True)
        question.fill(LOCAL_QUESTION)
        question.press("Enter")  # the keyboard submits the form
        answer = page.locator("#local-answer")
        expect(answer.get_by_role("list", name="Answer").locator("button.cite").first).to_be_visible()
        answer.locator("summary", has_text="Matched entities").click()  # the details, on request
        picture = answer.get_by_role("img", name="related entities")
        expect(picture).to_be_visible()
        assert answer.locator("svg.neighbourhood circle.matched").count() >= 1
        answer.locator("summary", has_text="All evidence").click()
        citation = answer.get_by_role("list", name="Evidence").locator("button.cite").first
        expect(citation).to_be_visible()
        page.screenshot(path=str(SCREENSHOTS / "graph-local.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})  # a phone: the picture shrinks to fit
        box = picture.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        citation.click()
        expect(page.locator("#viewer")).to_be_visible()
        expect(page.locator("#viewer-body mark")).to_be_visible()
    finally:
        context.close()


# --- a local answer over a real document fits a screen (issue 27) --------------------------------

DOCLING_ORG = "docling"
DOCLING_QUESTION = "What does the Docling chunker do?"
SCREEN_PX = 900
# Text and elements of the local answer that pass the screen's right edge: what a failure names. (The
# page's own community list is another panel; its long words are not this test's business.)
WIDER_THAN_SCREEN = """(() => {
  const edge = document.documentElement.clientWidth + 0.5;
  const found = [];
  const walker = document.createTreeWalker(document.getElementById('local-answer'), NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t && found.length < 5; t = walker.nextNode()) {
    const range = document.createRange();
    range.selectNodeContents(t);
    if (range.getBoundingClientRect().right > edge) {
      const e = t.parentElement;
      found.push(`${e.tagName.toLowerCase()}.${e.className}: ${t.textContent.slice(0, 50)}`);
    }
  }
  for (const e of document.querySelectorAll('#local-answer, #local-answer *')) {
    const tag = `${e.tagName.toLowerCase()}.${e.className}`;
    if (found.length < 5 && e.getBoundingClientRect().right > edge) found.push(tag);
  }
  return found;
})()"""  # a 1280x800 desktop window with the page's header: the answer must fit one screen


@pytest.fixture(scope="module")
def docling_published(http: httpx.Client, docs_dir_path: Any) -> dict[str, Any]:
    """`concepts_chunking.md` of data/docs in its own organization, with a published graph."""
    tok = token("dora", DOCLING_ORG)
    data = (docs_dir_path / "md" / "docling-docs" / "concepts_chunking.md").read_bytes()
    response = upload(http, DOCLING_ORG, tok, "concepts_chunking.md", data, "text/markdown")
    assert response.status_code == 202, response.text
    path = response.json()["path"]
    assert wait_for_status(http, DOCLING_ORG, tok, path, deadline_s=120)["status"] == "indexed"
    deadline = time.monotonic() + BUILD_DEADLINE_S
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = http.get(f"/orgs/{DOCLING_ORG}/graph", headers=bearer(tok)).json()
        if status.get("version") is not None:
            return status
        if (status.get("lastBuild") or {}).get("status") == "failed":
            break
        time.sleep(0.5)
    raise AssertionError(f"no graph version was published: {status}")


@pytest.fixture(scope="module")
def docs_dir_path() -> Any:
    from tests.conftest import DOCS_DIR

    if not DOCS_DIR.is_dir():
        pytest.skip(f"example documents not found at {DOCS_DIR} (set LIBRARIAN_SHARED_DIR)")
    return DOCS_DIR


def test_local_answer_over_http_is_brief_with_details(
    http: httpx.Client, docling_published: dict[str, Any]
) -> None:
    from librarian.answers.quotes import normal_words

    tok = token("dora", DOCLING_ORG)
    body = http.get(
        f"/orgs/{DOCLING_ORG}/graph/local", params={"q": DOCLING_QUESTION}, headers=bearer(tok)
    ).json()
    brief = body["brief"]
    assert 1 <= len(brief) <= 3 and sum(len(b["text"]) for b in brief) <= 600, brief
    assert all(b["sources"] and all(1 <= n <= len(body["sources"]) for n in b["sources"]) for b in brief)
    assert [b["score"] for b in brief] == sorted((b["score"] for b in brief), reverse=True)
    for b in brief:  # each sentence is quoted from a source it cites (cleaned of Markdown only)
        cited = {w for n in b["sources"] for w in normal_words(body["sources"][n - 1]["text"]).split()}
        assert set(normal_words(b["text"]).split()) <= cited, b
    assert len(body["evidence"]) > len(brief)  # the rest travels as details


def test_local_answer_fits_a_screen_with_details_collapsed(
    browser: Any, server: DevServer, docling_published: dict[str, Any]
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {token('dora', DOCLING_ORG)!r})")
    page = context.new_page()
    try:
        page.goto(server.url + "/#/graph")
        expect(page.get_by_role("status")).to_contain_text(f"Version {docling_published['version']}")
        question = page.get_by_label("Ask the graph (local)", exact=True)
        question.fill(DOCLING_QUESTION)
        question.press("Enter")
        answer = page.locator("#local-answer")
        expect(answer.get_by_role("list", name="Answer").locator("li").first).to_be_visible()
        assert answer.get_by_role("list", name="Answer").locator("li").count() <= 3
        details = answer.locator("details")
        assert details.count() >= 2 and all(not d.evaluate("e => e.open") for d in details.all())
        box = answer.bounding_box()
        assert box is not None and box["height"] <= SCREEN_PX, (
            f"local answer is {box and box['height']} px high"
        )

        page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than the screen
        for summary in answer.locator("summary").all():
            summary.click()  # open every detail: the evidence (paths, long words) must wrap too
        expect(answer.get_by_role("img", name="related entities")).to_be_visible()
        expect(answer.get_by_role("list", name="Evidence")).to_be_visible()
        wide = page.evaluate(WIDER_THAN_SCREEN)
        assert not wide, f"wider than a 390 px screen: {wide}"
    finally:
        context.close()
