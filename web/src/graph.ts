// The GraphRAG view: the build's status (refreshed while a build runs; admins can rebuild), a local
// question, and the explorer (`graphexplorer.ts`): entity search, the largest communities a page at a
// time, and a small picture of one entity's neighbourhood with its evidence.
import "./graph.css";
import { ApiError, type Api } from "./api";
import { h } from "./dom";
import { explorer, searchEntities } from "./graphexplorer";
import { localPanel } from "./graphlocal";
import { decodeClaims } from "./session";
import { costPanel } from "./costs";

export interface Neighbourhood {
  center: string;
  nodes: { name: string; label: string; type: string }[];
  edges: { source: string; target: string; relation: string; weight: number }[];
}

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text) el.textContent = text;
  return el;
}

/** The entity in the middle (or the matched entities on a small inner ring), their neighbours on a
 * circle, one line per edge (thicker when heavier). With `matched`, the centres are the entities a
 * local question matched: drawn highlighted and titled so. */
const LABEL_CHARS = 24;

/** A node label that fits the picture: at most LABEL_CHARS characters, cut with an ellipsis. */
export function shortLabel(label: string): string {
  return label.length <= LABEL_CHARS ? label : `${label.slice(0, LABEL_CHARS - 1)}…`;
}

export function picture(n: Neighbourhood, centers: string[] = [n.center], id = "hood-title", matched = false): SVGSVGElement {
  const size = 420;
  const mid = size / 2;
  const radius = 150;
  const inner = centers.length > 1 ? 55 : 0;
  const isCenter = new Set(centers);
  const others = n.nodes.filter((x) => !isCenter.has(x.name));
  const at = new Map<string, [number, number]>();
  const ring = (names: string[], r: number, turn: number) =>
    names.forEach((name, i) => {
      const angle = (2 * Math.PI * i) / Math.max(names.length, 1) - Math.PI / 2 + turn;
      at.set(name, [mid + r * Math.cos(angle), mid + r * Math.sin(angle)]);
    });
  ring(centers, inner, Math.PI / 4);
  ring(others.map((x) => x.name), radius, 0);
  const labelOf = (key: string) => n.nodes.find((x) => x.name === key)?.label ?? key;
  const title = `${centers.map(labelOf).join(", ")} and ${others.length} related entities`;
  const root = svg("svg", { viewBox: `0 0 ${size} ${size}`, class: "neighbourhood", role: "img", "aria-labelledby": id });
  root.append(svg("title", { id }, title));
  const heaviest = Math.max(1, ...n.edges.map((e) => e.weight));
  for (const edge of n.edges) {
    const [x1, y1] = at.get(edge.source) ?? [mid, mid];
    const [x2, y2] = at.get(edge.target) ?? [mid, mid];
    const line = svg("line", { x1, y1, x2, y2, class: "edge", "stroke-width": 1 + (3 * edge.weight) / heaviest });
    line.append(svg("title", {}, edge.relation.replace(/_/g, " ")));
    root.append(line);
  }
  for (const node of n.nodes) {
    const [x, y] = at.get(node.name) ?? [mid, mid];
    const center = isCenter.has(node.name);
    const circle = svg("circle", { cx: x, cy: y, r: center ? 10 : 7, class: center ? (matched ? "node center matched" : "node center") : "node" });
    circle.append(svg("title", {}, center && matched ? `${node.label} (matched)` : node.label));
    root.append(circle);
    // labels grow towards the middle, and long names (code identifiers) are shortened: the full name
    // is the circle's title, so the picture never runs past a phone's screen
    const anchor = x < mid - 40 ? "start" : x > mid + 40 ? "end" : "middle";
    const x0 = anchor === "start" ? x - 8 : anchor === "end" ? x + 8 : x;
    root.append(svg("text", { x: x0, y: y - (center ? 16 : 12), "text-anchor": anchor, class: "node-label" }, shortLabel(node.label)));
  }
  return root;
}

/** What the status route says of the last build while it runs: its progress figures, in words. */
export function progressText(last: Record<string, any> | undefined): string {
  if (!last) return "";
  const figures = [
    last.documents ? `${last.documents} documents` : "",
    last.extracted?.length ? `${last.extracted.length} extracted` : "",
    last.chunksExtracted ? `${last.chunksExtracted} chunks read` : "",
    last.chunksReused ? `${last.chunksReused} chunks reused` : "",
    last.summariesWritten ? `${last.summariesWritten} summaries written` : "",
    last.summariesReused ? `${last.summariesReused} reused` : "",
    last.queuedRuns ? `${last.queuedRuns} queued` : "",
  ].filter(Boolean);
  return figures.length ? ` (${figures.join(", ")})` : "";
}

const BUILDING = new Set(["running", "queued"]);
const FIRST_POLL_MS = 1000;
const MAX_POLL_MS = 10_000;

export function renderGraph(root: HTMLElement, api: Api): () => void {
  const status = h("p", { class: "help", role: "status" }, "Loading the graph…");
  const progress = h("p", { class: "help build-progress", "aria-live": "polite" });
  const isAdmin = decodeClaims(api.token)?.role === "admin";
  const rebuild = isAdmin ? h("button", { type: "button", class: "secondary", id: "rebuild-graph" }, "Rebuild graph") : null;
  // the cost ledger's calls and tokens per phase (web/src/costs.ts)
  const costs = h("div", { class: "graph-costs", id: "graph-costs" }, costPanel(api));
  const statusArea = h("div", { class: "card graph-status" }, status, progress, rebuild, costs);
  const local = localPanel(api);
  const explore = explorer(api);
  root.replaceChildren(
    h("section", { "aria-labelledby": "graph-title", class: "graph-page" }, h("h2", { id: "graph-title" }, "Knowledge graph"), statusArea, local, explore.element),
  );
  let stopped = false;
  let timer = 0;
  let shownVersion: number | null | undefined;

  /** The status line; while a build runs, asked again with a growing delay until it ends. */
  async function refresh(delay = FIRST_POLL_MS): Promise<void> {
    try {
      const state = await api.graph();
      if (stopped) return;
      const last = state.lastBuild ?? {};
      const running = BUILDING.has(last.status);
      progress.textContent = running ? `Building now: ${last.status}${progressText(last)}.` : "";
      if (rebuild) rebuild.disabled = running;
      const build = last.status && last.status !== "never" && !running ? ` Last build: ${last.status}.` : ""; // a CLI build leaves no server build
      if (state.version == null) {
        status.textContent = `No knowledge graph is published yet; it is built after documents are indexed.${build}`;
      } else {
        status.textContent =
          `Version ${state.version}: ${state.entities} entities, ${state.edges} relations from ${state.documents} documents.` +
          (state.upToDate ? "" : " Some documents are not in it yet.") +
          build;
        if (state.version !== shownVersion) {
          shownVersion = state.version;
          void explore.load();
          void placeholderFromLibrary();
        }
      }
      if (running) timer = window.setTimeout(() => void refresh(Math.min(delay * 1.5, MAX_POLL_MS)), delay);
    } catch (e) {
      if (stopped) return;
      status.textContent =
        e instanceof ApiError && e.status === 404
          ? "This organization has no knowledge graph yet."
          : `Could not load the graph: ${(e as Error).message}`;
    }
  }

  /** The local question's example names an entity this library holds: its best connected one. */
  async function placeholderFromLibrary(): Promise<void> {
    try {
      const top = (await searchEntities(api, "", 1)).entities[0];
      const input = local.querySelector<HTMLInputElement>("#local-q");
      if (top && input && !stopped) input.placeholder = `e.g. What is ${top.label}?`;
    } catch {
      /* the generic placeholder stays */
    }
  }

  rebuild?.addEventListener("click", async () => {
    rebuild.disabled = true;
    try {
      await api.request(`/orgs/${encodeURIComponent(api.org)}/graph/rebuild`, { method: "POST" });
      progress.textContent = "Rebuild scheduled.";
      window.clearTimeout(timer);
      void refresh();
    } catch (e) {
      rebuild.disabled = false;
      progress.textContent = `Could not schedule a rebuild: ${(e as Error).message}`;
    }
  });

  void refresh();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}
