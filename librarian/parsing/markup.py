"""DOCX, PPTX, XLSX and HTML to Markdown, then the Markdown reader does the rest.

Office files go through markitdown: well kept, no model downloads, and it drops Word's header and
footer parts (mammoth reads the body only), which are furniture exactly like a PDF's running heads.
HTML is trimmed to its main content (site navigation and sidebars would otherwise outnumber the
article's own text) and converted by markdownify, the converter markitdown itself uses, on the tree we
already parsed: handing markitdown the trimmed page made it parse the page a second time, with the
slower pure-Python parser, which was half of an HTML file's parse time.
"""

from __future__ import annotations

import io
import logging
from urllib.parse import quote, urlparse, urlunparse

import markdownify
from bs4 import BeautifulSoup, Tag
from markitdown import MarkItDown, StreamInfo

from librarian.errors import CorruptFileError
from librarian.parsing import media

log = logging.getLogger(__name__)

_EXTENSIONS = {media.DOCX: ".docx", media.PPTX: ".pptx", media.XLSX: ".xlsx"}
_CHROME = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "svg")
_CHROME_SELECTORS = ('[role="navigation"]', '[role="banner"]', '[role="contentinfo"]', '[aria-hidden="true"]')
_LINK_SCHEMES = ("", "http", "https", "file")

_converter: MarkItDown | None = None


def _markitdown() -> MarkItDown:
    global _converter
    if _converter is None:
        _converter = MarkItDown(enable_plugins=False)
    return _converter


def _escaped(url: str) -> str | None:
    """The URL with its path percent-encoded, as markitdown writes links, so that parentheses or spaces
    in a path cannot end the Markdown link early; None for a script link or one that does not parse."""
    try:
        parts = urlparse(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in _LINK_SCHEMES:
        return None
    return urlunparse(parts._replace(path=quote(parts.path, safe="/%")))


class _HtmlMarkdown(markdownify.MarkdownConverter):
    """markdownify as markitdown sets it up for HTML: `#` headings, escaped link paths, script links
    reduced to their text, inline `data:` images to their alt text (base64 would flood a chunk)."""

    def __init__(self) -> None:
        super().__init__(heading_style=markdownify.ATX)

    def convert_a(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        href = el.get("href")
        if isinstance(href, str):
            escaped = _escaped(href)
            if escaped is None:
                return text
            el["href"] = escaped
        return super().convert_a(el, text, parent_tags)

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        src = el.get("src")
        if isinstance(src, str):
            escaped = _escaped(src) if src[:5].lower() != "data:" else None
            if escaped is None:
                return str(el.get("alt") or "")
            el["src"] = escaped
        return super().convert_img(el, text, parent_tags)


def main_content(html: str) -> Tag:
    """The page's main content element: `<main>` (or `<article>`, or the body) without navigation,
    scripts and chrome. lxml builds the tree: several times faster than Python's own parser."""
    soup = BeautifulSoup(html, "lxml")
    for element in soup(_CHROME):
        element.decompose()
    for selector in _CHROME_SELECTORS:
        for element in soup.select(selector):
            element.decompose()
    return soup.find("main") or soup.find("article") or soup.find("body") or soup


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
