"""HTML to Markdown: one parse, the article only, links that stay links, no inline image data."""

from __future__ import annotations

from librarian.parsing.local import LocalParser
from librarian.parsing.markup import html_to_markdown

PAGE = """<!doctype html><html><head><title>T</title><script>var x = 1;</script></head><body>
<nav><a href="/home">Main menu</a></nav>
<main>
  <h2>Ducks</h2>
  <p>See <a href="/wiki/Family_(biology)">family</a> and
     <a href="javascript:alert(1)">this trick</a>.</p>
  <p><img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" alt="a duck"></p>
  <p><img src="/img/a b.png" alt="pond"></p>
</main>
<footer>Copyright</footer>
</body></html>"""


def test_main_content_only_with_atx_headings() -> None:
    markdown = html_to_markdown(PAGE)
    assert markdown.startswith("## Ducks")
    assert "Main menu" not in markdown and "Copyright" not in markdown and "var x" not in markdown


def test_link_paths_are_escaped_so_parentheses_cannot_end_the_link() -> None:
    assert "[family](/wiki/Family_%28biology%29)" in html_to_markdown(PAGE)


def test_script_links_keep_their_text_only() -> None:
    markdown = html_to_markdown(PAGE)
    assert "this trick" in markdown and "javascript" not in markdown


def test_inline_image_data_is_dropped_but_its_alt_text_kept() -> None:
    markdown = html_to_markdown(PAGE)
    assert "a duck" in markdown and "base64" not in markdown and "iVBOR" not in markdown
    assert "![pond](/img/a%20b.png)" in markdown


def test_chunks_of_an_html_page_carry_the_text_not_the_urls() -> None:
    result = LocalParser(ocr="off").parse(PAGE.encode(), "page.html", "text/html")
    embed = " ".join(chunk["embed"] for chunk in result["chunks"])
    assert "family" in embed and "Family_%28biology%29" not in embed


def test_a_page_nested_beyond_the_recursion_limit_still_gives_its_text() -> None:
    deep = "<div>" * 5000 + "deep text" + "</div>" * 5000
    assert "deep text" in html_to_markdown(f"<html><body><main>{deep}</main></body></html>")
