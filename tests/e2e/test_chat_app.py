"""The chat in a real browser against a real `langgraph dev` whose chat model is the local OpenAI
wire server (streaming, scripted): conversations kept across Library and reload and named in the URL,
the sidebar's rename and delete, Regenerate, Markdown answers with citation buttons numbered from [1]
in each answer, the mode select and label, Copy, and Stop cancelling the run on the server.

One server for the module (the wire model is needed for a run slow enough to stop); the screenshots
`docs/screenshots/chat-history.png` (desktop) and `chat-phone.png` (390 px) come from here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import SCREENSHOTS
from tests.integration.server_fixtures import (
    DevServer,
    bearer,
    running_server,
    token,
    upload,
    wait_for_status,
)
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

ORG = "acme"
TIMEOUT_MS = 120_000
AURORA = b"# Aurora\n\nThe aurora season above the harbour lasts ninety nights every winter.\n"
PARKING = b"# Parking\n\nStaff park in the north lot behind the library building.\n"
THREAD_URL = re.compile(r"#/chat/([0-9a-f-]{36})$")


@pytest.fixture(scope="module")
def wire() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, wire: OpenAIWireServer) -> Iterator[DevServer]:
    env = {
        "LIBRARIAN_CHAT_MODEL": "openai:gpt-test",
        "LIBRARIAN_CHAT_BASE_URL": wire.base_url,
        "OPENAI_API_KEY": TEST_API_KEY,
    }
    with running_server(tmp_path_factory.mktemp("webchat"), env, jobs=2) as dev:
        with httpx.Client(base_url=dev.url, timeout=60) as http:
            tok = token("alice", ORG)
            for name, data in (("aurora.md", AURORA), ("parking.md", PARKING)):
                assert upload(http, ORG, tok, name, data, "text/markdown").status_code < 300
            for name in ("aurora.md", "parking.md"):
                assert wait_for_status(http, ORG, tok, f"docs/{name}")["status"] == "indexed"
        yield dev


@pytest.fixture()
def page(browser: Any, server: DevServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 820})
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {token('alice', ORG)!r})")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def ask(page: Any, question: str) -> None:
    box = page.get_by_role("textbox", name="Question", exact=True)
    box.fill(question)
    box.press("Enter")


def wait_answered(page: Any, count: int) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".turn")).to_have_count(count)
    expect(page.locator('.answer[aria-busy="false"]')).to_have_count(count)


def number_of(filename: str, body: dict[str, Any]) -> int:
    """The number the search tool gave `filename`'s excerpt in the request the model got."""
    tool_text = "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") == "tool")
    return int(re.search(rf"^\[(\d+)\] {re.escape(filename)}, page \d+:$", tool_text, re.M).group(1))


def test_history_survives_library_and_reload_with_rename_regenerate_and_delete(page, server, wire):
    from playwright.sync_api import expect

    wire.chat_script[:] = [TextReply("First answer."), TextReply("Second answer.")]
    page.goto(server.url + "/#/chat")
    ask(page, "When is the aurora season?")
    wait_answered(page, 1)
    ask(page, "And how long does it last?")
    wait_answered(page, 2)
    thread_id = THREAD_URL.search(page.url).group(1)  # the URL names the conversation
    sidebar = page.get_by_role("navigation", name="Conversations")
    expect(sidebar.get_by_role("link", name="When is the aurora season?")).to_be_visible()

    page.get_by_role("link", name="Library").click()
    expect(page.get_by_role("heading", name=f"Library of {ORG}")).to_be_visible()
    page.get_by_role("link", name="Chat").click()
    wait_answered(page, 2)
    expect(page.locator(".answer").nth(1)).to_contain_text("Second answer.")
    page.reload()
    wait_answered(page, 2)
    assert THREAD_URL.search(page.url).group(1) == thread_id
    expect(page.locator(".q").first).to_contain_text("When is the aurora season?")

    # Regenerate replaces the last answer, on the server too.
    wire.chat_script[:] = [TextReply("Second answer, regenerated.")]
    page.get_by_role("button", name="Regenerate the last answer").click()
    expect(page.locator(".answer").nth(1)).to_contain_text("regenerated")
    wait_answered(page, 2)
    page.reload()
    wait_answered(page, 2)
    expect(page.locator(".answer").nth(1)).to_contain_text("Second answer, regenerated.")

    # Rename (thread metadata `title`), kept across reload; delete, gone from the list.
    sidebar.get_by_role("button", name="Rename When is the aurora season?").click()
    page.get_by_label("New name of the conversation").fill("Aurora questions")
    page.get_by_label("New name of the conversation").press("Enter")
    page.reload()
    expect(sidebar.get_by_role("link", name="Aurora questions")).to_be_visible()
    expect(page.get_by_role("heading", name="Aurora questions")).to_be_visible()

    # A new conversation, deleted from the sidebar: gone from the list and from the server.
    sidebar.get_by_role("button", name="New conversation").click()
    expect(page.locator(".turn")).to_have_count(0)
    expect(page.get_by_role("heading", name=f"Ask {ORG}'s documents")).to_be_visible()
    wire.chat_script[:] = [TextReply("An answer to throw away.")]
    ask(page, "A question to delete")
    wait_answered(page, 1)
    doomed = THREAD_URL.search(page.url).group(1)
    assert doomed != thread_id
    page.once("dialog", lambda dialog: dialog.accept())
    sidebar.get_by_role("button", name="Delete A question to delete").click()
    expect(sidebar.get_by_role("link", name="A question to delete")).to_have_count(0)
    expect(page.locator(".turn")).to_have_count(0)  # the open conversation was the deleted one
    with httpx.Client(base_url=server.url) as http:
        gone = http.get(f"/threads/{doomed}", headers=bearer(token("alice", ORG)))
        kept = http.get(f"/threads/{thread_id}", headers=bearer(token("alice", ORG)))
        other = http.get(f"/threads/{thread_id}", headers=bearer(token("bob", ORG)))
    assert (gone.status_code, kept.status_code) == (404, 200)
    assert other.status_code == 404  # another member of the organization does not see it


def test_markdown_answers_with_citations_from_one_the_mode_label_and_copy(page, server, wire):
    from playwright.sync_api import expect

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    def first_reply(body: dict[str, Any]) -> TextReply:
        n = number_of("aurora.md", body)
        return TextReply(
            f"The **aurora season** above the harbour lasts ninety nights every winter [{n}].\n\n"
            f"- lasts *ninety nights* [{n}]\n- every winter\n\n"
            f"| season | nights |\n| --- | --- |\n| aurora | 90 [{n}] |\n\n"
            f"Inline `code [{n}]` stays code.\n\n"
            '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'
        )

    def second_reply(body: dict[str, Any]) -> TextReply:
        return TextReply(
            f"Staff park in the north lot behind the library building [{number_of('parking.md', body)}]."
        )

    wire.chat_script[:] = [
        ToolCallReply("search_documents", {"query": "aurora season"}),
        first_reply,
        ToolCallReply("search_documents", {"query": "staff parking north lot"}),
        second_reply,
    ]
    page.goto(server.url + "/#/chat")
    page.get_by_label("Answer from").select_option("search")
    ask(page, "How long is the aurora season?")
    wait_answered(page, 1)
    answer = page.locator(".answer").first
    expect(answer.locator("strong")).to_have_text("aurora season")
    expect(answer.locator("table td").first).to_have_text("aurora")
    assert "[" in answer.locator("p code").first.inner_text()  # markers inside code stay text
    expect(
        answer.locator("p").first.get_by_role("button", name="Source 1: aurora.md, page 1")
    ).to_be_visible()
    expect(answer.locator("table").get_by_role("button", name="Source 1: aurora.md, page 1")).to_be_visible()
    assert answer.locator("script, img").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    expect(answer.locator(".path")).to_have_text("Answered by search (your choice)")
    offered = [t["function"]["name"] for t in wire.chat_requests[-2]["tools"]]
    assert offered == ["search_documents"]  # the chosen path reached the server

    # The second answer's citations start at [1] again, and open the right source.
    ask(page, "Where do staff park?")
    wait_answered(page, 2)
    second = page.locator(".answer").nth(1)
    cite = second.get_by_role("button", name="Source 1: parking.md, page 1").first
    expect(cite).to_have_text("[1]")
    assert cite.get_attribute("data-n") != answer.locator(".cite").first.get_attribute("data-n")
    cite.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator(".chunk")).to_contain_text("north lot")
    expect(page.locator("#viewer-title")).to_have_text("[1] parking.md, page 1")
    page.keyboard.press("Escape")

    second.get_by_role("button", name="Copy the answer with its sources").click()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert "north lot behind the library building [1]" in copied and "[1] parking.md, page 1" in copied
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "chat-history.png"))


def test_stop_cancels_the_run_on_the_server(page, server, wire):
    from langgraph_sdk import get_sync_client
    from playwright.sync_api import expect

    wire.chat_script[:] = [TextReply(" ".join(f"word{i}" for i in range(200)))]
    wire.stream_delay_s = 0.2  # 40 s if nobody stops it
    try:
        page.goto(server.url + "/#/chat")
        ask(page, "Tell me everything, slowly.")
        expect(page.locator(".answer").first).to_contain_text("word3")
        page.get_by_role("button", name="Stop").click()
        expect(page.locator(".answer .tag", has_text="Stopped")).to_be_visible()
        thread_id = THREAD_URL.search(page.url).group(1)
        client = get_sync_client(url=server.url, headers=bearer(token("alice", ORG)))
        deadline = time.monotonic() + 30
        statuses: list[str] = []
        while time.monotonic() < deadline:
            statuses = [run["status"] for run in client.runs.list(thread_id)]
            if statuses and statuses[0] == "interrupted":
                break
            time.sleep(0.2)
        assert statuses == ["interrupted"], statuses
        assert "word199" not in page.locator(".answer").first.inner_text()
    finally:
        wire.stream_delay_s = 0.0


def test_phone_width_shows_the_conversations_without_sideways_scrolling(browser, server, wire):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {token('alice', ORG)!r})")
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server.url + "/#/chat")
        sidebar = page.get_by_role("navigation", name="Conversations")
        expect(sidebar.get_by_role("link", name="How long is the aurora season?")).to_be_visible()
        sidebar.get_by_role("link", name="How long is the aurora season?").click()
        wait_answered(page, 2)
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
        page.screenshot(path=str(SCREENSHOTS / "chat-phone.png"), full_page=True)
    finally:
        context.close()
