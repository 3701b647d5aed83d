// The source of a citation, in a modal dialog: for a PDF, the page image with the cited region
// highlighted; for every format, the chunk's text with the supporting span (or the whole chunk) marked.
import type { Api } from "./api";
import { h } from "./dom";
import { supportingSpan, type Citation, type Source } from "./citations";

let dialog: HTMLDialogElement;
let body: HTMLElement;
let objectUrl: string | null = null;

export function setupViewer(): void {
  dialog = document.getElementById("viewer") as HTMLDialogElement;
  body = document.getElementById("viewer-body") as HTMLElement;
  document.getElementById("viewer-close")!.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    objectUrl = null;
    body.replaceChildren();
  });
}

function chunkText(source: Source, span: { start: number; end: number } | null): HTMLElement {
  const text = source.text ?? "";
  const block = h("blockquote", { class: "chunk" });
  if (span) {
    block.append(text.slice(0, span.start), h("mark", { class: "span" }, text.slice(span.start, span.end)), text.slice(span.end));
  } else {
    block.append(h("mark", { class: "whole" }, text));
  }
  return h(
    "figure",
    { class: "excerpt" },
    h("figcaption", {}, span ? "Excerpt (the supporting passage is highlighted)" : "Excerpt"),
    block,
  );
}

function pageWidth(): number {
  const css = Math.min(window.innerWidth - 32, 900);
  // Steps of 200 px, so devices of similar size share the server's cached images.
  const px = Math.ceil((css * Math.min(window.devicePixelRatio || 1, 2)) / 200) * 200;
  return Math.max(200, Math.min(2000, px));
}

export async function openSource(
  api: Api,
  source: Source,
  n: number,
  citations: Citation[] | undefined,
  offset: number,
  answer: string,
  shown: number = n,
): Promise<void> {
  // `n` is the source's number in the conversation (what the server's evidence names); `shown` the
  // number the answer displays (each answer's citations count from [1]).
  const span = supportingSpan(citations, n, offset, source, answer);
  document.getElementById("viewer-title")!.textContent = `[${shown}] ${source.filename}, page ${source.page}`;
  const isPdf = /\.pdf$/i.test(source.path) && source.page >= 1;
  const page = isPdf ? h("div", { class: "page", id: "page" }, h("p", { class: "help" }, "Rendering the page…")) : null;
  body.replaceChildren(...[page, chunkText(source, span)].filter(Boolean) as HTMLElement[]);
  if (!dialog.open) dialog.showModal();
  if (!page) return;
  try {
    const blob = await api.pageImage(source.path, source.page, pageWidth());
    if (objectUrl) URL.revokeObjectURL(objectUrl);
    objectUrl = URL.createObjectURL(blob);
    const img = h("img", {
      src: objectUrl,
      alt: `Page ${source.page} of ${source.filename}` + (source.bbox ? ", with the cited region outlined" : ""),
    });
    page.replaceChildren(img);
    if (source.bbox) {
      // bbox: fractions of the page from its top-left corner; a little room around the text.
      const pad = 0.006;
      const b = source.bbox;
      const left = Math.max(0, b.left - pad);
      const top = Math.max(0, b.top - pad);
      const box = h("div", { class: "bbox", id: "bbox", "aria-hidden": "true" });
      box.style.left = `${left * 100}%`;
      box.style.top = `${top * 100}%`;
      box.style.width = `${(Math.min(1, b.left + b.width + pad) - left) * 100}%`;
      box.style.height = `${(Math.min(1, b.top + b.height + pad) - top) * 100}%`;
      page.append(box);
      img.addEventListener("load", () => box.scrollIntoView({ block: "center" }), { once: true });
    }
  } catch (e) {
    page.replaceChildren(h("p", { class: "error", role: "alert" }, `The page could not be shown: ${(e as Error).message}`));
  }
}
