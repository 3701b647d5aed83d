// The GraphRAG view: the build's status, the communities with their summaries, and a small picture
// of one entity's neighbourhood (pick a member of a community, or type a name).
import { ApiError, type Api } from "./api";
import { h } from "./dom";
import { localPanel } from "./graphlocal";

interface Community {
  id: number;
  level: number;
  title: string;
  summary: string;
  size: number;
  members: string[];
  /** Entity keys of `members`, same order: what a member is looked up by (a label may not re-key). */
  memberKeys?: string[];
}

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

export function renderGraph(root: HTMLElement, api: Api): () => void {
  const status = h("p", { class: "help", role: "status" }, "Loading the graph…");
  const list = h("div", { class: "communities" });
  const hoodPanel = h("div", { class: "card", id: "neighbourhood", hidden: true });
  const entity = h("input", { type: "search", id: "entity", placeholder: "an entity name" });
  const lookup = h(
    "form",
    { class: "ask", role: "search" },
    h("label", { for: "entity" }, "Show the neighbourhood of"),
    entity,
    h("div", { class: "row" }, h("button", { type: "submit" }, "Show")),
  );
  root.replaceChildren(
    h("section", { "aria-labelledby": "graph-title" }, h("h2", { id: "graph-title" }, "Knowledge graph"), status, localPanel(api), lookup, hoodPanel, list),
  );
  let stopped = false;

  async function showNeighbourhood(name: string, shown = name): Promise<void> {
    hoodPanel.hidden = false;
    hoodPanel.replaceChildren(h("p", { class: "help" }, `Loading ${shown}…`));
    try {
      const n = (await api.graph("/neighbourhood", name)) as Neighbourhood;
      const label = (key: string) => n.nodes.find((x) => x.name === key)?.label ?? key;
      hoodPanel.replaceChildren(
        h("h3", {}, `Around ${label(n.center)}`),
        picture(n),
        h(
          "ul",
          { class: "edges", "aria-label": "Relations" },
          ...n.edges.map((e) => h("li", {}, `${label(e.source)} — ${e.relation.replace(/_/g, " ")} — ${label(e.target)}`)),
        ),
      );
    } catch (e) {
      hoodPanel.replaceChildren(h("p", { class: "error", role: "alert" }, (e as Error).message));
    }
    hoodPanel.scrollIntoView({ block: "nearest" });
  }

  lookup.addEventListener("submit", (event) => {
    event.preventDefault();
    if (entity.value.trim()) void showNeighbourhood(entity.value.trim());
  });

  (async () => {
    try {
      const state = await api.graph();
      if (stopped) return;
      const build = state.lastBuild?.status ? ` Last build: ${state.lastBuild.status}.` : "";
      if (state.version == null) {
        status.textContent = `No knowledge graph is published yet; it is built after documents are indexed.${build}`;
        return;
      }
      status.textContent =
        `Version ${state.version}: ${state.entities} entities, ${state.edges} relations from ${state.documents} documents.` +
        (state.upToDate ? "" : " Some documents are not in it yet.") +
        build;
      const { communities } = (await api.graph("/communities")) as { communities: Community[] };
      if (stopped) return;
      const levels = [...new Set(communities.map((c) => c.level))].sort((a, b) => a - b);
      for (const level of levels) {
        list.append(
          h("h3", {}, level === 0 ? "Broadest themes" : `Level ${level}`),
          h(
            "ul",
            { class: "community-list" },
            ...communities
              .filter((c) => c.level === level)
              .map((c) =>
                h(
                  "li",
                  { class: "card" },
                  h("h4", {}, c.title || `Community ${c.id}`),
                  c.summary ? h("p", {}, c.summary) : null,
                  h(
                    "p",
                    { class: "members" },
                    `${c.size} entities: `,
                    ...c.members.flatMap((m, i) => [
                      i ? ", " : "",
                      h("button", { type: "button", class: "link", onclick: () => showNeighbourhood(c.memberKeys?.[i] ?? m, m) }, m),
                    ]),
                    c.size > c.members.length ? ", …" : "",
                  ),
                ),
              ),
          ),
        );
      }
    } catch (e) {
      if (stopped) return;
      status.textContent =
        e instanceof ApiError && e.status === 404
          ? "This organization has no knowledge graph yet."
          : `Could not load the graph: ${(e as Error).message}`;
    }
  })();
  return () => {
    stopped = true;
  };
}
