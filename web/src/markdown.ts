// Answers as safe Markdown: markdown-it with raw HTML off renders lists, emphasis, code and tables;
// DOMPurify sanitises the result into a DOM fragment; then `[n]` markers in its text nodes (never
// inside code) become citation buttons, built as elements: no HTML string is ever assembled around them.
import MarkdownIt from "markdown-it";
import DOMPurify from "dompurify";
import { segments } from "./citations";

const md = new MarkdownIt({ html: false, linkify: false, breaks: true, typographer: false });

/** Builds the element shown for one marker (the caller decides label, number and action). */
export type MarkerButton = (n: number, offset: number) => Node;

/** Markdown text → sanitised fragment, with each `[n]` / `[1, 3]` outside code replaced by `button(n)`.
 * `offset` is the marker's position in `source` (the citation viewer looks up its sentence with it). */
export function renderMarkdown(source: string, button: MarkerButton): DocumentFragment {
  const html = md.render(source);
  const fragment = DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ["style", "img", "form", "input", "iframe"],
    FORBID_ATTR: ["style"],
  });
  for (const link of fragment.querySelectorAll("a")) {
    link.setAttribute("rel", "noopener noreferrer nofollow");
    link.setAttribute("target", "_blank");
  }
  let searchFrom = 0;
  const walker = document.createTreeWalker(fragment, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) texts.push(node as Text);
  for (const text of texts) {
    if (text.parentElement?.closest("code, pre")) continue;
    const parts = segments(text.data);
    if (!parts.some((part) => "markers" in part)) continue;
    const replacement = document.createDocumentFragment();
    for (const part of parts) {
      if ("text" in part) replacement.append(part.text);
      else {
        const at = source.indexOf(part.raw, searchFrom);
        if (at >= 0) searchFrom = at + part.raw.length;
        for (const n of part.markers) replacement.append(button(n, at));
      }
    }
    text.replaceWith(replacement);
  }
  return fragment;
}
