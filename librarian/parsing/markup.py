"""DOCX, PPTX, XLSX and HTML to Markdown with markitdown, then the Markdown reader does the rest.

markitdown is well kept, has no model downloads, and drops Word's header and footer parts (mammoth
reads the body only), which are furniture exactly like a PDF's running heads. HTML is trimmed to its
main content first: site navigation and sidebars would otherwise outnumber the article's own text.
"""

from __future__ import annotations

import io
import logging

from bs4 import BeautifulSoup
from markitdown import MarkItDown, StreamInfo

from librarian.errors import CorruptFileError
from librarian.parsing import media

log = logging.getLogger(__name__)

_EXTENSIONS = {media.DOCX: ".docx", media.PPTX: ".pptx", media.XLSX: ".xlsx", media.HTML: ".html"}
_CHROME = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "svg")
_CHROME_SELECTORS = ('[role="navigation"]', '[role="banner"]', '[role="contentinfo"]', '[aria-hidden="true"]')

_converter: MarkItDown | None = None


def _markitdown() -> MarkItDown:
    global _converter
    if _converter is None:
        _converter = MarkItDown(enable_plugins=False)
    return _converter


def main_content_html(html: str) -> str:
    """The document's main content: `<main>` (or `<article>`) without navigation, scripts and chrome."""
    soup = BeautifulSoup(html, "html.parser")
    for element in soup(_CHROME):
        element.decompose()
    for selector in _CHROME_SELECTORS:
        for element in soup.select(selector):
            element.decompose()
    main = soup.find("main") or soup.find("article") or soup.find("body") or soup
    title = soup.find("title")
    head = f"<title>{title.get_text(strip=True)}</title>" if title else ""
    return f"<html><head>{head}</head><body>{main}</body></html>"


def to_markdown(data: bytes, media_type: str, filename: str, text: str | None = None) -> str:
    """Markdown for an Office file or an HTML page; anything markitdown cannot read is corrupt."""
    if media_type == media.HTML and text is not None:
        data = main_content_html(text).encode("utf-8")
    info = StreamInfo(extension=_EXTENSIONS[media_type], mimetype=media_type, charset="utf-8")
    try:
        result = _markitdown().convert_stream(io.BytesIO(data), stream_info=info)
    except Exception as exc:  # zip, XML and OOXML readers raise many unrelated types on bad input
        log.info("markitdown failed on %s: %r", filename, exc)
        raise CorruptFileError(
            f"{filename} cannot be read as {media.label(media_type)}; is it damaged or password-protected?"
        ) from exc
    return result.markdown or ""
