"""DOCX, PPTX, XLSX and HTML to Markdown, then the Markdown reader does the rest.

Office files go through markitdown: well kept, no model downloads, and it drops Word's header and
footer parts (mammoth reads the body only), which are furniture exactly like a PDF's running heads.
HTML is trimmed to its main content (site navigation and sidebars would otherwise outnumber the
article's own text) and converted by markdownify, the converter markitdown itself uses, on the tree we
already parsed: handing markitdown the trimmed page made it parse the page a second time, with the
slower pure-Python parser, which was half of an HTML file's parse time.

Links become their text and images their alt text: a chunk is read by people and embedded, and URLs
are noise to both. Footnote markers (Wikipedia's `[45]`), tables of contents and other blocks that are
nothing but links are dropped, or the index fills with chunks of link lists that match every query.
"""

from __future__ import annotations

import io
import logging

import markdownify
from bs4 import BeautifulSoup, Tag
from markitdown import MarkItDown, StreamInfo

from librarian.errors import CorruptFileError
from librarian.parsing import media

log = logging.getLogger(__name__)

_EXTENSIONS = {media.DOCX: ".docx", media.PPTX: ".pptx", media.XLSX: ".xlsx"}
_CHROME = (
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "svg",
    "video", "audio",
)  # fmt: skip
_CHROME_ROLES = {"navigation", "banner", "contentinfo"}
_CHROME_CLASSES = {"toc", "mw-editsection", "printfooter"}  # tables of contents, "[edit]", "Retrieved from"
_MARKER_CLASSES = {"sup": {"reference", "noprint"}, "a": {"footnote"}}  # Wikipedia's [45], DocBook's [3]
# A block is navigation when it holds at least this many links and link text is this share of its text.
_NAV_LINKS = 5
_NAV_LINK_SHARE = 0.8
_NAV_CANDIDATES = ("ul", "ol", "dl", "div", "table", "section")

_converter: MarkItDown | None = None


def _markitdown() -> MarkItDown:
    global _converter
    if _converter is None:
        _converter = MarkItDown(enable_plugins=False)
    return _converter


class _HtmlMarkdown(markdownify.MarkdownConverter):
    """markdownify as markitdown sets it up for HTML (`#` headings), but links reduced to their text
    and images to their alt text."""

    def __init__(self) -> None:
        super().__init__(heading_style=markdownify.ATX)

    def convert_a(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return text

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return " ".join(str(el.get("alt") or "").split())


def _is_chrome(tag: Tag) -> bool:
    """Scripts, page chrome, tables of contents and footnote markers: nothing a reader searches for."""
    if tag.name in _CHROME or tag.get("role") in _CHROME_ROLES or tag.get("aria-hidden") == "true":
        return True
    classes = set(tag.get("class") or ())
    return tag.get("id") == "toc" or bool(classes & (_CHROME_CLASSES | _MARKER_CLASSES.get(tag.name, set())))


def _text_within(element: Tag, limit: float) -> bool:
    """Whether the element's text (without spaces) is at most `limit` characters; stops reading as
    soon as it is not, so a page-wide wrapper costs no more than its links."""
    total = 0
    for text in element.strings:
        total += len("".join(text.split()))
        if total > limit:
            return False
    return True


def _drop_navigation(main: Tag) -> None:
    """Drop lists, tables and boxes of mostly links (a table of contents, a navbox, category links).

    Link counts are summed up each link's ancestors in one pass, so a deeply nested page costs the
    depth of its links, not the square of its size.
    """
    counts: dict[int, list[int]] = {}  # id(candidate) -> [links, characters of link text]
    for link in main.find_all("a"):
        size = len("".join(link.get_text().split()))
        for parent in link.parents:
            if parent is main:
                break
            if parent.name in _NAV_CANDIDATES:
                count = counts.setdefault(id(parent), [0, 0])
                count[0] += 1
                count[1] += size
    if not counts:
        return
    for element in main.find_all(_NAV_CANDIDATES):  # outer blocks first: a dropped one takes its children
        links, linked = counts.get(id(element), (0, 0))
        if links < _NAV_LINKS or element.decomposed:
            continue
        if _text_within(element, linked / _NAV_LINK_SHARE):
            element.decompose()


def main_content(html: str) -> Tag:
    """The page's main content element: `<main>` (or `<article>`, or the body) without navigation,
    tables of contents, footnote markers, scripts and chrome. lxml builds the tree: several times
    faster than Python's own parser."""
    soup = BeautifulSoup(html, "lxml")
    for element in soup.find_all(_is_chrome):  # one pass; CSS selectors cost a pass each, in Python
        if not element.decomposed:
            element.decompose()
    main = soup.find("main") or soup.find("article") or soup.find("body") or soup
    _drop_navigation(main)
    return main


def html_to_markdown(html: str) -> str:
    """Markdown of the page's main content."""
    main = main_content(html)
    try:
        return _HtmlMarkdown().convert_soup(main).strip()
    except RecursionError:  # markdownify recurses per element; absurdly deep pages get plain text
        return main.get_text("\n", strip=True)


def to_markdown(data: bytes, media_type: str, filename: str, text: str | None = None) -> str:
    """Markdown for an Office file or an HTML page; anything markitdown cannot read is corrupt."""
    if media_type == media.HTML:
        return html_to_markdown(text if text is not None else data.decode("utf-8", "replace"))
    info = StreamInfo(extension=_EXTENSIONS[media_type], mimetype=media_type, charset="utf-8")
    try:
        result = _markitdown().convert_stream(io.BytesIO(data), stream_info=info)
    except Exception as exc:  # zip, XML and OOXML readers raise many unrelated types on bad input
        log.info("markitdown failed on %s: %r", filename, exc)
        raise CorruptFileError(
            f"{filename} cannot be read as {media.label(media_type)}; is it damaged or password-protected?"
        ) from exc
    return result.markdown or ""
