// The document library: upload (drag and drop or file picker), live status, filters, delete.
import { Api, type DocumentStatus } from "./api";
import type { Claims } from "./session";
import { announce, formatBytes, h } from "./dom";

const STATUSES = ["queued", "running", "indexed", "skipped", "failed", "cancelled"];
const BUSY = new Set(["queued", "running"]);
const FAST_POLL_MS = 1000;
const SLOW_POLL_MS = 10000;

export function renderLibrary(root: HTMLElement, api: Api, claims: Claims): () => void {
  const canWrite = claims.role !== "reader";
  let documents: DocumentStatus[] = [];
  const known = new Map<string, string>();
  let timer: number | undefined;
  let stopped = false;

  const fileInput = h("input", { type: "file", id: "file", multiple: true, class: "sr-only" });
  const drop = h(
    "label",
    { for: "file", class: "drop", id: "drop" },
    h("strong", {}, "Drop files here"),
    " or press to choose (PDF, Word, PowerPoint, Excel, HTML, Markdown, text)",
  );
  const uploads = h("ul", { class: "uploads", "aria-label": "Uploads" });
  const search = h("input", { type: "search", id: "filter-name", placeholder: "part of a name" });
  const statusFilter = h(
    "select",
    { id: "filter-status" },
    h("option", { value: "" }, "any status"),
    ...STATUSES.map((s) => h("option", { value: s }, s)),
  );
  const summary = h("p", { class: "summary", id: "library-summary" });
  const body = h("tbody");
  const table = h(
    "table",
    { class: "docs", "aria-describedby": "library-summary" },
    h("caption", { class: "sr-only" }, "Documents of this organization"),
    h(
      "thead",
      {},
      h("tr", {}, h("th", { scope: "col" }, "Document"), h("th", { scope: "col" }, "Status"),
        h("th", { scope: "col" }, "Chunks"), h("th", { scope: "col" }, "Size"), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions"))),
    ),
    body,
  );

  root.replaceChildren(
    h(
      "section",
      { "aria-labelledby": "library-title" },
      h("h2", { id: "library-title" }, `Library of ${claims.org}`),
      canWrite ? h("div", { class: "card" }, fileInput, drop, uploads) : h("p", { class: "help" }, "Your role can read documents but not upload or delete them."),
      h(
        "div",
        { class: "filters", role: "search" },
        h("label", { for: "filter-name" }, "Name"),
        search,
        h("label", { for: "filter-status" }, "Status"),
        statusFilter,
      ),
      summary,
      h("div", { class: "table-wrap" }, table),
    ),
  );

  function statusCell(doc: DocumentStatus): HTMLElement {
    const why = doc.reason || doc.error;
    return h(
      "td",
      {},
      h("span", { class: `badge ${doc.status}` }, doc.status),
      why ? h("span", { class: "reason" }, ` ${why}`) : null,
    );
  }

  function draw(): void {
    const needle = search.value.trim().toLowerCase();
    const wanted = statusFilter.value;
    const shown = documents.filter(
      (d) => (!needle || d.path.toLowerCase().includes(needle)) && (!wanted || d.status === wanted),
    );
    const counts = STATUSES.map((s) => [s, documents.filter((d) => d.status === s).length] as const).filter(([, n]) => n);
    summary.textContent =
      `${documents.length} document(s)` +
      (counts.length ? `: ${counts.map(([s, n]) => `${n} ${s}`).join(", ")}` : "") +
      (shown.length !== documents.length ? `; ${shown.length} shown` : "");
    body.replaceChildren(
      ...shown.map((doc) =>
        h(
          "tr",
          { "data-path": doc.path },
          h("th", { scope: "row" }, doc.path.replace(/^docs\//, "")),
          statusCell(doc),
          h("td", {}, doc.status === "indexed" ? `${doc.chunkCount ?? 0} chunks` : ""),
          h("td", {}, formatBytes(doc.sizeBytes)),
          h(
            "td",
            {},
            canWrite
              ? h("button", { type: "button", class: "danger", "aria-label": `Delete ${doc.path}`, onclick: () => remove(doc.path) }, "Delete")
              : null,
          ),
        ),
      ),
    );
  }

  async function refresh(): Promise<void> {
    try {
      documents = await api.listDocuments();
      for (const doc of documents) {
        const before = known.get(doc.path);
        if (before && before !== doc.status) announce(`${doc.path}: ${doc.status}`);
        known.set(doc.path, doc.status);
      }
      draw();
    } catch (e) {
      summary.textContent = `Could not load the documents: ${(e as Error).message}`;
    }
    schedule();
  }

  function schedule(): void {
    window.clearTimeout(timer);
    if (stopped) return;
    const busy = documents.some((d) => BUSY.has(d.status));
    timer = window.setTimeout(refresh, busy ? FAST_POLL_MS : SLOW_POLL_MS);
  }

  async function remove(path: string): Promise<void> {
    if (!window.confirm(`Delete ${path}? Its file and its search index entries are removed.`)) return;
    try {
      await api.remove(path);
      announce(`${path} deleted`);
    } catch (e) {
      announce(`Could not delete ${path}: ${(e as Error).message}`);
    }
    await refresh();
  }

  async function uploadAll(files: FileList | File[]): Promise<void> {
    for (const file of Array.from(files)) {
      const item = h("li", {}, `${file.name}: uploading…`);
      uploads.prepend(item);
      try {
        const { path } = await api.upload(file);
        item.textContent = `${file.name}: uploaded as ${path}, queued for indexing`;
        item.className = "ok";
      } catch (e) {
        item.textContent = `${file.name}: not uploaded: ${(e as Error).message}`;
        item.className = "error";
      }
      announce(item.textContent ?? "");
    }
    await refresh();
  }

  fileInput.addEventListener("change", () => {
    if (fileInput.files?.length) void uploadAll(fileInput.files);
    fileInput.value = "";
  });
  for (const type of ["dragenter", "dragover"]) {
    drop.addEventListener(type, (event) => {
      event.preventDefault();
      drop.classList.add("over");
    });
  }
  for (const type of ["dragleave", "drop"]) drop.addEventListener(type, () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    if (event.dataTransfer?.files.length) void uploadAll(event.dataTransfer.files);
  });
  search.addEventListener("input", draw);
  statusFilter.addEventListener("change", draw);

  void refresh();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}
