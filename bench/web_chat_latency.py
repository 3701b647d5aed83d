"""Chat latency in the browser: time to the first token and to the complete answer, today's app
against another build (the app before the chat rework), offline and with a streaming chat model.

Why: the chat now renders Markdown, renumbers citations per answer and keeps a conversation sidebar;
this checks that none of it slows what a user waits for. Measured in Debian's chromium (Playwright)
from the question's submit to (a) the first answer text on screen, (b) the answer marked complete
(`aria-busy="false"`), with a MutationObserver in the page, so only the browser's clock counts.

One `langgraph dev` per model setting (offline extractive; the OpenAI wire server streaming a
60-word answer, one word every `--delay` seconds, after a `search_documents` call) with the same
real documents. The server serves this tree's build (`LIBRARIAN_WEB_DIST`); the other build
(`--old-dist`) is served to the browser by Playwright from its folder, against the same API.

    git archive HEAD web | tar -x -C /tmp/old && ln -s $PWD/web/node_modules /tmp/old/web/
    (cd /tmp/old/web && npx vite build --outDir /tmp/old-dist --emptyOutDir)
    (cd web && npx vite build --outDir /tmp/new-dist --emptyOutDir)
    PYTHONPATH=. python bench/web_chat_latency.py --new-dist /tmp/new-dist --old-dist /tmp/old-dist
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.integration.server_fixtures import (
    A_FILES,
    DevServer,
    running_server,
    token,
    upload,
    wait_for_status,
)
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

ORG = "acme"
QUESTIONS = [
    "Which word processing software was popular among legal professionals?",
    "What is chunking?",
    "What does the hybrid chunker do?",
    "How are tables handled when chunking?",
    "What is in the multi page document?",
]
ANSWER = " ".join(["The documents say so [1]."] + [f"word{i}" for i in range(55)])

TIMED_ASK = """([question]) => new Promise((resolve) => {
  const before = document.querySelectorAll('.turn').length;
  let first = null;
  const t0 = performance.now();
  const check = () => {
    const turns = document.querySelectorAll('.turn');
    if (turns.length <= before) return;
    const answer = turns[turns.length - 1].querySelector('.answer');
    if (!answer) return;
    const text = answer.textContent.replace('Searching…', '').trim();
    if (first === null && text) first = performance.now() - t0;
    if (answer.getAttribute('aria-busy') === 'false') {
      observer.disconnect();
      resolve({ first: first ?? performance.now() - t0, done: performance.now() - t0 });
    }
  };
  const observer = new MutationObserver(check);
  const all = { subtree: true, childList: true, characterData: true, attributes: true };
  observer.observe(document.getElementById('main'), all);
  const box = document.getElementById('question');
  box.value = question;
  box.form.requestSubmit();
})"""


def scripted_model(body: dict[str, Any]) -> Any:
    """Search first; once the excerpts are in, a 60-word answer citing [1]."""
    if body["messages"][-1].get("role") == "tool":
        return TextReply(ANSWER)
    return ToolCallReply("search_documents", {"query": str(body["messages"][-1].get("content"))[:200]})


@contextmanager
def server_with_docs(tmp: Path, env: dict[str, str]) -> Iterator[DevServer]:
    with running_server(tmp, env, jobs=2) as dev, httpx.Client(base_url=dev.url, timeout=60) as http:
        tok = token("alice", ORG)
        for name, path in A_FILES.items():
            upload(http, ORG, tok, name, path.read_bytes())
        for name in A_FILES:
            wait_for_status(http, ORG, tok, f"docs/{name}", deadline_s=600)
        yield dev


def serve_build(context: Any, server: DevServer, dist: Path) -> None:
    """The browser gets `dist`'s page and assets; API calls still go to the server."""

    def fulfil(route: Any) -> None:
        path = route.request.url.removeprefix(server.url).split("?")[0].split("#")[0]
        file = dist / ("index.html" if path in ("", "/") else path.lstrip("/"))
        if path in ("", "/") or path.startswith("/assets/"):
            return route.fulfill(path=str(file))
        return route.continue_()

    context.route(f"{server.url}/**", fulfil)
    context.route(server.url, fulfil)


def measure(browser: Any, server: DevServer, dist: Path | None, repeat: int) -> list[dict[str, float]]:
    context = browser.new_context(viewport={"width": 1100, "height": 820})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {token('alice', ORG)!r})")
    if dist is not None:
        serve_build(context, server, dist)
    page = context.new_page()
    page.set_default_timeout(300_000)
    try:
        page.goto(server.url + "/#/chat")
        page.wait_for_selector("#question")
        page.evaluate(TIMED_ASK, ["Warm-up: what is chunking?"])  # first run: connections, models
        return [page.evaluate(TIMED_ASK, [QUESTIONS[i % len(QUESTIONS)]]) for i in range(repeat)]
    finally:
        context.close()


def summary(label: str, runs: list[dict[str, float]]) -> str:
    first = statistics.median(r["first"] for r in runs)
    done = statistics.median(r["done"] for r in runs)
    return f"| {label} | {first:.0f} | {done:.0f} | {len(runs)} |"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--new-dist", type=Path, required=True)
    parser.add_argument("--old-dist", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.02, help="seconds between streamed words")
    args = parser.parse_args()
    os.environ["LIBRARIAN_WEB_DIST"] = str(args.new_dist)
    from playwright.sync_api import sync_playwright

    rows = [
        "| app, model | first token ms (median) | complete ms (median) | questions |",
        "| --- | --- | --- | --- |",
    ]
    with sync_playwright() as pw, OpenAIWireServer() as wire:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        wire.default_reply = scripted_model
        wire.stream_delay_s = args.delay
        settings = {
            "offline": {},
            "wire model": {
                "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
                "LIBRARIAN_CHAT_BASE_URL": wire.base_url,
                "OPENAI_API_KEY": TEST_API_KEY,
            },
        }
        for label, env in settings.items():
            with tempfile.TemporaryDirectory() as tmp, server_with_docs(Path(tmp), env) as dev:
                # before, now, now, before: a server-side cache warmed by one app's questions
                # helps both equally (the first pass of the first app would otherwise pay for it)
                runs: dict[str, list[dict[str, float]]] = {"before": [], "now": []}
                for app in ("before", "now", "now", "before"):
                    dist = args.old_dist if app == "before" else None
                    runs[app] += measure(browser, dev, dist, args.repeat)
                for app, measured in runs.items():
                    rows.append(summary(f"{app}, {label}", measured))
                    print(rows[-1], flush=True)
        browser.close()
    print("\n".join(rows))


if __name__ == "__main__":
    main()
