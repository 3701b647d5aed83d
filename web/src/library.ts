// The document library: upload (drag and drop or file picker), each document's pipeline stage and
// progress, filters, delete, and for admins cancel of an ingest and a rebuild of the graph.
import { Api, type DocumentStatus } from "./api";
import type { Claims } from "./session";
import { announce, breakableName, formatBytes, h, ordinal, plural } from "./dom";

const STATUSES = ["queued", "running", "indexed", "skipped", "failed", "cancelled"];
const BUSY = new Set(["queued", "running"]);
// What a document goes through; a running one is in one of the middle three (the API's `stage`).
const STAGES = ["queued", "parsing", "embedding", "indexing", "done"] as const;
const FAST_POLL_MS = 1000;
const SLOW_POLL_MS = 10000;

/** Where a document is in the pipeline: the index into STAGES. */
function stageIndex(doc: DocumentStatus): number {
  if (doc.status === "queued") return 0;
  if (doc.status === "running") return Math.max(1, STAGES.indexOf((doc.stage ?? "parsing") as (typeof STAGES)[number]));
  return STAGES.length - 1;
}

/** Queued documents in the order the server admits them (oldest waiting run first): 1-based places. */
function placesInLine(documents: DocumentStatus[]): Map<string, number> {
  const queued = documents
    .filter((d) => d.status === "queued")
    .sort((a, b) => (a.queuedSince ?? "").localeCompare(b.queuedSince ?? "") || a.path.localeCompare(b.path));
  return new Map(queued.map((d, i) => [d.path, i + 1]));
}

/** One line for people: what the document is doing now (upload notes and announcements). */
export function describe(doc: DocumentStatus, place?: number): string {
  switch (doc.status) {
    case "queued":
      return place ? `waiting for its turn (${ordinal(place)} in line)` : "waiting for its turn";
    case "running":
      if (doc.stage === "embedding" && doc.chunkTotal) return `embedding, ${doc.chunkCount ?? 0} of ${plural(doc.chunkTotal, "chunk")}`;
      return doc.stage ?? "starting";
    case "indexed":
      return `indexed, ${plural(doc.chunkCount ?? 0, "chunk")}`;
    default:
      return doc.reason ? `${doc.status}: ${doc.reason}` : doc.status;
  }
}

export function renderLibrary(root: HTMLElement, api: Api, claims: Claims): () => void {
  const canWrite = claims.role !== "reader";
  const isAdmin = claims.role === "admin";
  let documents: DocumentStatus[] = [];
  const known = new Map<string, string>();
  const notes = new Map<string, { item: HTMLLIElement; name: string }>(); // upload notes kept current
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
  const graphNote = h("span", { class: "help", id: "graph-note", role: "status" });
  const rebuild = h("button", { type: "button", class: "secondary", id: "rebuild-graph" }, "Rebuild graph");
  rebuild.addEventListener("click", () => void rebuildGraph());

  root.replaceChildren(
    h(
      "section",
      { "aria-labelledby": "library-title" },
      h(
        "div",
        { class: "library-head" },
        h("h2", { id: "library-title" }, `Library of ${claims.org}`),
        isAdmin ? h("div", { class: "admin-actions" }, rebuild, graphNote) : null,
      ),
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

  function stagesList(doc: DocumentStatus): HTMLElement {
    const current = stageIndex(doc);
    return h(
      "ol",
      { class: "stages", "aria-label": "Pipeline stages" },
      ...STAGES.map((stage, i) =>
        h("li", { class: i < current ? "past" : i === current ? "current" : "", "aria-current": i === current ? "step" : undefined }, stage),
      ),
    );
  }

  function statusCell(doc: DocumentStatus, place: number | undefined): HTMLElement {
    const why = doc.reason || doc.error;
    const busy = BUSY.has(doc.status);
    const embedding = doc.status === "running" && doc.stage === "embedding" && doc.chunkTotal;
    return h(
      "td",
      { class: "status-cell" },
      h("span", { class: `badge ${doc.status}` }, doc.status),
      busy ? h("span", { class: "now" }, ` ${describe(doc, place)}`) : null,
      busy ? stagesList(doc) : null,
      embedding
        ? h("progress", { max: doc.chunkTotal ?? 0, value: doc.chunkCount ?? 0, "aria-label": `Chunks embedded of ${doc.path}` })
        : null,
      !busy && why ? h("span", { class: "reason" }, ` ${why}`) : null,
    );
  }

  function actions(doc: DocumentStatus): HTMLElement {
    const cancelButton =
      isAdmin && BUSY.has(doc.status)
        ? h("button", { type: "button", class: "secondary small", "aria-label": `Cancel the ingest of ${doc.path}`, onclick: () => cancelIngest(doc.path) }, "Cancel")
        : null;
    const del = canWrite
      ? h("button", { type: "button", class: "danger", "aria-label": `Delete ${doc.path}`, onclick: () => remove(doc.path) }, "Delete")
      : null;
    return h("td", { class: "actions" }, cancelButton, del);
  }

  function summarize(): string {
    const running = documents.filter((d) => d.status === "running").length;
    const waiting = documents.filter((d) => d.status === "queued").length;
    const rest = STATUSES.filter((s) => !BUSY.has(s))
      .map((s) => [s, documents.filter((d) => d.status === s).length] as const)
      .filter(([, n]) => n)
      .map(([s, n]) => `${n} ${s}`);
    const busy = [running ? `${running} running` : "", waiting ? `${waiting} waiting for their turn` : ""].filter(Boolean);
    const parts = [...busy, ...rest];
    return plural(documents.length, "document") + (parts.length ? `: ${parts.join(", ")}` : "");
  }

  function draw(): void {
    const needle = search.value.trim().toLowerCase();
    const wanted = statusFilter.value;
    const shown = documents.filter(
      (d) => (!needle || d.path.toLowerCase().includes(needle)) && (!wanted || d.status === wanted),
    );
    const places = placesInLine(documents);
    summary.textContent = summarize() + (shown.length !== documents.length ? `; ${shown.length} shown` : "");
    body.replaceChildren(
      ...shown.map((doc) =>
        h(
          "tr",
          { "data-path": doc.path, "data-status": doc.status },
          h("th", { scope: "row", class: "name" }, breakableName(doc.path.replace(/^docs\//, ""))),
          statusCell(doc, places.get(doc.path)),
          h("td", { class: "count" }, doc.status === "indexed" ? plural(doc.chunkCount ?? 0, "chunk") : ""),
          h("td", { class: "size" }, formatBytes(doc.sizeBytes)),
          actions(doc),
        ),
      ),
    );
    for (const doc of documents) {
      const note = notes.get(doc.path);
      if (!note) continue;
      note.item.textContent = `${note.name}: ${describe(doc, places.get(doc.path))}`;
      note.item.className = doc.status === "failed" ? "error" : doc.status === "indexed" ? "ok" : "";
      if (!BUSY.has(doc.status)) notes.delete(doc.path); // final: the note stays as it is
    }
  }

  async function refresh(): Promise<void> {
    try {
      documents = await api.listDocuments();
      for (const doc of documents) {
        const before = known.get(doc.path);
        if (before && before !== doc.status) announce(`${doc.path}: ${describe(doc)}`);
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

  async function cancelIngest(path: string): Promise<void> {
    if (!window.confirm(`Cancel the ingest of ${path}? What it indexed so far is removed.`)) return;
    try {
      await api.cancelIngest(path);
      announce(`The ingest of ${path} is cancelled`);
    } catch (e) {
      announce(`Could not cancel the ingest of ${path}: ${(e as Error).message}`);
    }
    await refresh();
  }

  async function rebuildGraph(): Promise<void> {
    rebuild.disabled = true;
    try {
      const scheduled = await api.rebuildGraph();
      graphNote.textContent = scheduled.coalesced
        ? "A graph rebuild was already waiting; it will include every document."
        : "Graph rebuild scheduled.";
    } catch (e) {
      graphNote.textContent = `Could not schedule a graph rebuild: ${(e as Error).message}`;
    } finally {
      rebuild.disabled = false;
    }
  }

  async function uploadAll(files: FileList | File[]): Promise<void> {
    for (const file of Array.from(files)) {
      const item = h("li", {}, `${file.name}: uploading…`);
      uploads.prepend(item);
      try {
        const { path } = await api.upload(file);
        item.textContent = `${file.name}: uploaded as ${path}, queued`;
        notes.set(path, { item, name: file.name });
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
