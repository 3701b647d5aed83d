"""Every page of the web app, light and dark, has no serious or critical axe-core violation (issue 29).

axe-core (web/node_modules, the version web/package.json locks) is injected by Playwright into the
real app served by a real `langgraph dev`: the sign-in form, the library with documents, the chat
with a cited answer, the source viewer dialog over it, and the graph page. Each state is checked in
the light and the dark colour scheme (`prefers-color-scheme`, switched with `emulate_media`), since
contrast is what dark mode most often breaks. The context bypasses the page's CSP only so the
injected script may run; the app's own scripts are unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.pdf import AURORA_QUESTION, aurora_pdf
from tests.integration.server_fixtures import DevServer, token, upload, wait_for_status
from tests.web_packages import web_node_modules

AXE = Path(__file__).resolve().parents[2] / "web" / "node_modules" / "axe-core" / "axe.min.js"
ORG = "stark"  # its own organization, apart from the other browser tests
TIMEOUT_MS = 120_000
BLOCKING = ("serious", "critical")
RUN_AXE = """async (blocking) => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => blocking.includes(v.impact))
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                   nodes: v.nodes.slice(0, 4).map((n) => n.target.join(" ")) }));
}"""


@pytest.fixture(scope="module")
def page(browser: Any, server: DevServer, http: httpx.Client) -> Iterator[Any]:
    web_node_modules("axe-core/axe.min.js")  # a fresh clone installs web/'s locked packages first
    tok = token("tony", ORG)
    response = upload(http, ORG, tok, "aurora.pdf", aurora_pdf(), "application/pdf")
    assert response.status_code == 202, response.text
    assert wait_for_status(http, ORG, tok, "docs/aurora.pdf", deadline_s=120)["status"] == "indexed"
    context = browser.new_context(viewport={"width": 1100, "height": 820}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def _violations(page: Any, where: str) -> list[dict[str, Any]]:
    """axe in both colour schemes on what the page shows now."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    found = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for violation in page.evaluate(RUN_AXE, list(BLOCKING)):
            found.append({"page": where, "scheme": scheme, **violation})
    page.emulate_media(color_scheme="light")
    return found


def test_every_page_has_no_serious_or_critical_violation(page: Any, server: DevServer) -> None:
    from playwright.sync_api import expect

    found: list[dict[str, Any]] = []
    page.goto(server.url + "/")
    expect(page.get_by_label("Access token")).to_be_visible()
    found += _violations(page, "sign-in")

    page.get_by_label("Access token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    found += _violations(page, "sign-in with an error")

    page.get_by_label("Access token").fill(token("tony", ORG))
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator('tr[data-path="docs/aurora.pdf"] .badge')).to_have_text("indexed")
    found += _violations(page, "library")

    page.get_by_role("link", name="Chat").click()
    question = page.get_by_label("Question")
    expect(question).to_be_visible()
    found += _violations(page, "chat")
    question.fill(AURORA_QUESTION)
    question.press("Enter")
    cite = page.get_by_role("button", name=re.compile(r"aurora\.pdf")).first
    expect(cite).to_be_visible(timeout=TIMEOUT_MS)
    found += _violations(page, "chat with a cited answer")

    cite.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("img")).to_be_visible()
    found += _violations(page, "source viewer")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    page.get_by_role("link", name="Graph").click()
    expect(page.get_by_role("heading", level=2).first).to_be_visible()
    found += _violations(page, "graph")

    assert not found, "axe found serious or critical violations:\n" + json.dumps(found, indent=1)
