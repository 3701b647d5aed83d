"""HTML to Markdown: one parse, the article only, link text without targets, no footnote markers or
navigation blocks, images as their alt text."""

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


def test_links_keep_their_text_but_not_their_targets() -> None:
    markdown = html_to_markdown(PAGE)
    assert "See family and" in markdown and "](" not in markdown and "/wiki/" not in markdown


def test_script_links_keep_their_text_only() -> None:
    markdown = html_to_markdown(PAGE)
    assert "this trick" in markdown and "javascript" not in markdown


def test_inline_image_data_is_dropped_but_its_alt_text_kept() -> None:
    markdown = html_to_markdown(PAGE)
    assert "a duck" in markdown and "base64" not in markdown and "iVBOR" not in markdown
    assert "pond" in markdown and "a%20b" not in markdown and "/img/" not in markdown


WIKI = """<html><body><main>
<div id="toc" class="toc"><ul><li><a href="#Taxonomy">1 Taxonomy</a></li></ul></div>
<p>A duckling is a young duck<sup id="cite_ref-1" class="reference"><a href="#cite_note-1">[1]</a></sup> in
downy plumage.<sup class="noprint Inline-Template"><i><a href="/wiki/WP:CN">citation needed</a></i></sup></p>
<p>Ducks eat <a href="/wiki/Poaceae">grasses</a>, <a href="/wiki/Mollusc">molluscs</a> and
<a href="/wiki/Fish">fish</a>; see the <a href="/wiki/Food">list</a> of <a href="/wiki/Diet">diets</a>.</p>
<div class="navbox"><ul>
  <li><a href="/wiki/A">Anas</a></li><li><a href="/wiki/B">Aythya</a></li>
  <li><a href="/wiki/C">Cairina</a></li>
  <li><a href="/wiki/D">Dendrocygna</a></li><li><a href="/wiki/E">Mergus</a></li>
</ul></div>
</main></body></html>"""


def test_footnote_markers_and_tables_of_contents_are_dropped() -> None:
    markdown = " ".join(html_to_markdown(WIKI).split())
    assert "A duckling is a young duck in downy plumage." in markdown
    assert "[1]" not in markdown and "citation needed" not in markdown and "1 Taxonomy" not in markdown


def test_a_block_of_nothing_but_links_is_dropped_but_prose_with_links_is_kept() -> None:
    markdown = " ".join(html_to_markdown(WIKI).split())
    assert "Dendrocygna" not in markdown and "Cairina" not in markdown
    assert "Ducks eat grasses, molluscs and fish; see the list of diets." in markdown


def test_chunks_of_an_html_page_carry_the_text_not_the_urls() -> None:
    result = LocalParser(ocr="off").parse(PAGE.encode(), "page.html", "text/html")
    embed = " ".join(chunk["embed"] for chunk in result["chunks"])
    assert "family" in embed and "Family_%28biology%29" not in embed


def test_a_page_nested_beyond_the_recursion_limit_still_gives_its_text() -> None:
    deep = "<div>" * 5000 + "deep text" + "</div>" * 5000
    assert "deep text" in html_to_markdown(f"<html><body><main>{deep}</main></body></html>")
