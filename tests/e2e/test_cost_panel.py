"""The graph page's cost panel (`web/src/costs.ts`) in chromium, without a server: the module is
bundled alone with the web app's own vite, and its one request is answered by Playwright's router.
It shows the ledger as an accessible table, the offline sentence when nothing was spent, and an
alert when the route refuses."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_accessibility import AXE, BLOCKING, RUN_AXE
from tests.web_packages import web_node_modules

WEB = Path(__file__).resolve().parents[2] / "web"
ORIGIN = "http://costs.test"
PHASES = ["extract", "summarise", "map", "reduce", "answer", "judge", "embed"]
CONFIG = """export default {{
  root: {web}, logLevel: "warn",
  build: {{ outDir: {out}, emptyOutDir: true,
    lib: {{ entry: {entry}, name: "Costs", formats: ["iife"], fileName: () => "costs.js" }} }},
}};
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> str:
    """costs.ts (and the helpers it imports) as one script that defines `Costs.costPanel`."""
    web_node_modules(".bin/vite")  # a fresh clone installs web/'s locked packages first
    npx = shutil.which("npx")
    assert npx, "node is installed but npx is not"
    folder = tmp_path_factory.mktemp("costs-bundle")
    config = folder / "vite.config.mjs"
    config.write_text(
        CONFIG.format(
            web=json.dumps(str(WEB)),
            out=json.dumps(str(folder / "dist")),
            entry=json.dumps(str(WEB / "src" / "costs.ts")),
        )
    )
    subprocess.run([npx, "vite", "build", "--config", str(config)], cwd=WEB, check=True, timeout=180)
    return (folder / "dist" / "costs.js").read_text()


def ledger(**calls: int) -> dict[str, Any]:
    phases = [
        {
            "phase": p,
            "calls": calls.get(p, 0),
            "inputTokens": 1200 * calls.get(p, 0),
            "outputTokens": 30 * calls.get(p, 0),
            "seconds": 0.5 * calls.get(p, 0),
        }
        for p in PHASES
    ]
    totals = {k: sum(p[k] for p in phases) for k in ("calls", "inputTokens", "outputTokens", "seconds")}
    return {"organization_id": "acme", "phases": phases, "totals": totals}


@pytest.fixture
def panel(browser: Any, bundle: str) -> Iterator[Any]:
    """Mount the panel for a served body: `mount(status, body)` returns the page."""
    context = browser.new_context()
    page = context.new_page()
    seen: list[str] = []

    def mount(status: int, body: dict[str, Any]) -> Any:
        def answer(route: Any) -> None:
            seen.append(route.request.headers.get("authorization", ""))
            route.fulfill(status=status, content_type="application/json", body=json.dumps(body))

        page.route(f"{ORIGIN}/orgs/acme/graph/costs", answer)
        page.route(
            f"{ORIGIN}/",
            lambda r: r.fulfill(
                content_type="text/html", body="<html lang=en><title>costs</title><main></main></html>"
            ),
        )
        page.goto(f"{ORIGIN}/")
        page.add_script_tag(content=bundle)
        page.evaluate(
            """() => {
              const api = { org: "acme", request: async (path) => {
                const r = await fetch(path, { headers: { Authorization: "Bearer t" } });
                if (!r.ok) throw new Error((await r.json()).error.message);
                return r; } };
              document.querySelector("main").append(Costs.costPanel(api));
            }"""
        )
        page.wait_for_function("() => !document.querySelector('.costs-body[aria-busy]')", timeout=10_000)
        return page

    mount.seen = seen  # type: ignore[attr-defined]
    yield mount
    context.close()


def test_the_panel_shows_each_phase_and_the_total_in_an_accessible_table(panel):
    page = panel(200, ledger(extract=3, embed=2))
    rows = page.eval_on_selector_all(
        "table.costs-table tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert rows[0] == ["Phase", "Calls", "Input tokens", "Output tokens", "Seconds"]
    assert rows[1] == ["extract", "3", "3,600", "90", "1.50"] and rows[7] == [
        "embed",
        "2",
        "2,400",
        "60",
        "1.00",
    ]
    assert rows[-1] == ["Total", "5", "6,000", "150", "2.50"] and len(rows) == 9
    assert page.text_content("table.costs-table caption") == "Model calls per phase"
    assert page.get_attribute("section.costs-panel", "aria-labelledby") == "costs-heading"
    assert panel.seen == ["Bearer t"]
    page.add_script_tag(path=str(AXE))
    assert page.evaluate(RUN_AXE, list(BLOCKING)) == []


def test_the_offline_defaults_read_as_one_sentence(panel):
    page = panel(200, ledger())
    assert page.text_content(".costs-body") == "no model-backed calls (offline defaults)"
    assert page.query_selector("table") is None


def test_a_refusal_is_announced(panel):
    page = panel(
        403, {"error": {"code": "forbidden", "message": "you are not a member of this organization"}}
    )
    assert page.get_attribute(".costs-body p", "role") == "alert"
    assert "you are not a member" in page.text_content(".costs-body")
