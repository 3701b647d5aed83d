"""The web app in a real browser against a real `langgraph dev`: upload → indexed → ask → citation.

Debian's chromium, driven by Playwright, signs in with a token, drops a PDF on the library, watches it
become indexed, asks a question in the chat, opens the answer's citation from the keyboard and checks
the page image: not blank, and the highlight drawn over the cited lines (where the test's PDF put
them), not elsewhere. Screenshots go to `docs/screenshots/`.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from tests.e2e.conftest import SCREENSHOTS
from tests.e2e.pdf import AURORA_BAND, AURORA_QUESTION, aurora_pdf
from tests.integration.server_fixtures import DevServer, token

ORG = "acme"
TIMEOUT_MS = 120_000
HIGHLIGHT_EDGE = (0xD6, 0x3B, 0x00)  # `--hl-edge` in web/src/style.css

IMAGE_LOADED = """() => {
  const img = document.querySelector("#page img");
  return img?.complete && img.naturalWidth > 0;
}"""
DROP_FILE = """async ([name, type, b64]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, { type }));
  const zone = document.getElementById("drop");
  zone.dispatchEvent(new DragEvent("dragenter", { dataTransfer: transfer, bubbles: true, cancelable: true }));
  zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
}"""


@pytest.fixture(scope="module")
def page(browser: Any, server: DevServer) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 820})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def _is_edge(pixel: tuple[int, ...]) -> bool:
    return all(abs(a - b) <= 40 for a, b in zip(pixel[:3], HIGHLIGHT_EDGE, strict=True))


def test_upload_ask_and_open_the_highlighted_page(page: Any, server: DevServer) -> None:
    from playwright.sync_api import expect

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    streams: list[str] = []
    page.on("request", lambda r: streams.append(r.url) if "/runs/stream" in r.url else None)

    # Sign in: the page itself needs no token; a bad token is refused with a message.
    page.goto(server.url + "/")
    page.get_by_label("Access token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not a Librarian token")
    page.get_by_label("Access token").fill(token("alice", ORG))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name=f"Library of {ORG}")).to_be_visible()

    # Upload: the PDF by drag and drop, a note through the file picker; both become indexed.
    page.evaluate(DROP_FILE, ["aurora.pdf", "application/pdf", base64.b64encode(aurora_pdf()).decode()])
    page.locator("#file").set_input_files(
        files=[{"name": "parking.md", "mimeType": "text/markdown", "buffer": PARKING}]
    )
    page.locator("#file").set_input_files(
        files=[{"name": "empty.txt", "mimeType": "text/plain", "buffer": b""}]
    )
    for name in ("aurora.pdf", "parking.md"):
        expect(page.locator(f'tr[data-path="docs/{name}"] .badge')).to_have_text(
            "indexed", timeout=TIMEOUT_MS
        )
    empty_row = page.locator('tr[data-path="docs/empty.txt"]')
    expect(empty_row.locator(".badge")).to_have_text("skipped", timeout=TIMEOUT_MS)
    expect(empty_row.locator(".reason")).not_to_be_empty()  # skipped says why

    # Filters narrow the table by name and by status.
    page.get_by_label("Name").fill("aurora")
    expect(page.locator("tbody tr")).to_have_count(1)
    page.get_by_label("Name").fill("")
    page.get_by_label("Status").select_option("skipped")
    expect(page.locator("tbody tr")).to_have_count(1)
    page.get_by_label("Status").select_option("")
    page.screenshot(path=str(SCREENSHOTS / "library.png"))

    # Ask: the answer streams over the Platform API and its [n] markers open the sources.
    page.get_by_role("link", name="Chat").click()
    page.get_by_label("Question").fill(AURORA_QUESTION)
    page.get_by_label("Question").press("Enter")
    cite = page.get_by_role("button", name="Source 1: aurora.pdf, page 2").first
    expect(cite).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".answer").last).to_contain_text("ninety nights")
    assert any("/threads/" in url for url in streams), streams  # the answer came over a stream
    page.screenshot(path=str(SCREENSHOTS / "answer.png"))

    # Open the citation from the keyboard: the page image with the cited lines highlighted.
    cite.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    expect(
        dialog.get_by_role("img", name="Page 2 of aurora.pdf, with the cited region outlined")
    ).to_be_visible()
    page.wait_for_function(IMAGE_LOADED)
    expect(dialog.locator(".chunk mark")).to_contain_text("ninety nights")
    page.locator("#page").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "citation.png"))
    _check_highlight(page.locator("#page").screenshot())

    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # A citation of a Markdown file: no page image, the chunk's text with the supporting span marked.
    page.get_by_label("Question").fill("Where do staff park?")
    page.get_by_label("Question").press("Enter")
    note = page.get_by_role("button", name="parking.md, page 1").first
    expect(note).to_be_visible(timeout=TIMEOUT_MS)
    note.click()
    expect(dialog).to_be_visible()
    expect(dialog.locator("mark").first).to_contain_text("north lot")
    expect(dialog.locator("#page")).to_have_count(0)
    page.screenshot(path=str(SCREENSHOTS / "citation-text.png"))
    dialog.get_by_role("button", name="Close the source").click()
    expect(dialog).to_be_hidden()


def _check_highlight(png: bytes) -> None:
    """The rendered page shows text, and the highlight's outline frames the cited band, only there."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    width, height = image.size
    pixels = image.load()
    dark = sum(1 for y in range(0, height, 2) for x in range(0, width, 2) if sum(pixels[x, y]) < 200)
    assert dark > 50, "the page image is blank"
    edge_rows = [y for y in range(height) if sum(_is_edge(pixels[x, y]) for x in range(0, width, 3)) > 20]
    assert edge_rows, "no highlight outline on the page image"
    top, bottom = min(edge_rows) / height, max(edge_rows) / height
    band_top, band_bottom = AURORA_BAND
    assert band_top - 0.03 <= top <= band_top + 0.02, (top, AURORA_BAND)
    assert band_bottom - 0.02 <= bottom <= band_bottom + 0.03, (bottom, AURORA_BAND)
    # Inside the frame sit the cited lines of text.
    inside = [
        pixels[x, y]
        for y in range(int(top * height) + 4, int(bottom * height) - 4)
        for x in range(width // 8, width // 2)
    ]
    assert sum(1 for p in inside if sum(p) < 300) > 30, "the highlight does not cover text"


def test_phone_width_needs_no_sideways_scrolling(browser: Any, server: DevServer) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    tok = token("alice", ORG)
    context.add_init_script(f"sessionStorage.setItem('librarian.token', {tok!r})")
    page = context.new_page()
    try:
        page.goto(server.url + "/#/library")
        expect(page.get_by_role("heading", name=f"Library of {ORG}")).to_be_visible(timeout=TIMEOUT_MS)
        expect(page.locator("tbody tr").first).to_be_visible(timeout=TIMEOUT_MS)
        overflow = "() => document.documentElement.scrollWidth - window.innerWidth"
        assert page.evaluate(overflow) <= 0
        page.screenshot(path=str(SCREENSHOTS / "library-phone.png"))
        page.get_by_role("link", name="Chat").click()
        expect(page.get_by_label("Question")).to_be_visible()
        assert page.evaluate(overflow) <= 0
    finally:
        context.close()


PARKING = (
    b"# Parking\n\nStaff park in the north lot. Visitors use the two spaces by the main door and sign the "
    b"visitor book at reception.\n"
)
