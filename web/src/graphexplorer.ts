// The Graph page's explorer (issue 29): search entities by name with suggestions, the largest
// communities a page at a time (expand one into its members and relations), and one entity's
// neighbourhood picture with its evidence, whose citations open the source viewer.
// Every entity is looked up by its key (`name`), never by re-normalising a label.
import type { Api } from "./api";
import type { Source } from "./citations";
import { h } from "./dom";
import { picture, type Neighbourhood } from "./graph";
import { openSource } from "./viewer";

export interface GraphNode {
  name: string;
  label: string;
  type: string;
  degree: number;
}

interface CommunityCard {
  id: number;
  level: number;
  title: string;
  summary: string;
  size: number;
  members: string[];
  memberKeys: string[];
}

interface CommunityPage {
  total: number;
  offset: number;
  limit: number;
  communities: CommunityCard[];
}

interface CommunityDetail {
  id: number;
  size: number;
  members: GraphNode[];
  relations: { source: string; target: string; relation: string; weight: number }[];
  relationCount: number;
}

interface EntityEvidence {
  entity: GraphNode & { description: string };
  evidence: { kind: string; text: string; sources: number[] }[];
  sources: Source[];
}

export const PAGE_SIZE = 10;
const SUGGESTIONS = 8;
const SUGGEST_DELAY_MS = 200;
const EVIDENCE_SHOWN = 8; // the rest of an entity's evidence is one click away

/** GET a graph route of the signed-in organization. */
async function getGraph<T>(api: Api, path: string, params: Record<string, string | number> = {}): Promise<T> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
  const response = await api.request(`/orgs/${encodeURIComponent(api.org)}/graph${path}${query ? `?${query}` : ""}`);
  return (await response.json()) as T;
}

export function searchEntities(api: Api, q: string, limit = SUGGESTIONS): Promise<{ entities: GraphNode[]; total: number }> {
  return getGraph(api, "/entities", { q, limit });
}

const relationText = (r: string) => r.replace(/_/g, " ");

/** The explorer's panels; `showEntity` opens one entity (by key) from anywhere on the page. */
export function explorer(api: Api): { element: HTMLElement; showEntity: (key: string, label?: string) => Promise<void>; load: () => Promise<void> } {
  const hoodPanel = h("div", { class: "card graph-entity", id: "neighbourhood", hidden: true });
  const entity = h("input", { type: "search", id: "entity", placeholder: "an entity name", autocomplete: "off", list: "entity-suggestions" });
  const suggestions = h("datalist", { id: "entity-suggestions" });
  const suggestionList = h("ul", { class: "suggestions", id: "entity-suggestion-list", "aria-label": "Suggestions" });
  const lookup = h(
    "form",
    { class: "ask", role: "search", "aria-label": "Entity search" },
    h("label", { for: "entity" }, "Find an entity"),
    entity,
    suggestions,
    h("div", { class: "row" }, h("button", { type: "submit" }, "Show")),
    suggestionList,
  );
  const filter = h("input", { type: "search", id: "community-q", placeholder: "a title or member name", autocomplete: "off" });
  const filterForm = h(
    "form",
    { class: "ask community-filter", role: "search", "aria-label": "Community search" },
    h("label", { for: "community-q" }, "Filter communities"),
    filter,
  );
  const count = h("p", { class: "help", id: "community-count", "aria-live": "polite" });
  const list = h("ul", { class: "community-list communities", "aria-label": "Communities" });
  const previous = h("button", { type: "button", class: "secondary", disabled: true }, "Previous");
  const next = h("button", { type: "button", class: "secondary", disabled: true }, "Next");
  const pager = h("nav", { class: "pager", "aria-label": "Community pages" }, previous, next);
  let offset = 0;
  let query = "";

  async function showEntity(key: string, shown = key): Promise<void> {
    hoodPanel.hidden = false;
    hoodPanel.replaceChildren(h("p", { class: "help" }, `Loading ${shown}…`));
    try {
      const n = await getGraph<Neighbourhood>(api, "/neighbourhood", { entity: key });
      const label = (k: string) => n.nodes.find((x) => x.name === k)?.label ?? k;
      const evidence = h("div", { class: "entity-evidence" });
      const evidenceButton = h("button", { type: "button", class: "secondary" }, "Show evidence");
      evidenceButton.addEventListener("click", () => {
        evidenceButton.remove();
        void showEvidence(evidence, n.center);
      });
      hoodPanel.replaceChildren(
        h("h3", {}, `Around ${label(n.center)}`),
        h(
          "div",
          { class: "entity-view" },
          picture(n),
          h(
          "ul",
          { class: "edges", "aria-label": "Relations" },
          ...n.edges.map((e) => {
            // the other end is a link: its own neighbourhood, by key
            const end = (key: string) =>
              key === n.center ? label(key) : h("button", { type: "button", class: "link", "data-key": key, onclick: () => showEntity(key, label(key)) }, label(key));
            return h("li", {}, end(e.source), ` — ${relationText(e.relation)} — `, end(e.target));
          }),
          ),
        ),
        h("div", { class: "entity-more" }, evidenceButton, evidence),
      );
    } catch (e) {
      hoodPanel.replaceChildren(h("p", { class: "error", role: "alert" }, (e as Error).message));
    }
    hoodPanel.scrollIntoView({ block: "nearest" });
  }

  async function showEvidence(panel: HTMLElement, key: string): Promise<void> {
    panel.replaceChildren(h("p", { class: "help" }, "Loading the evidence…"));
    try {
      const found = await getGraph<EntityEvidence>(api, "/evidence", { entity: key });
      const cite = (n: number) => {
        const source = found.sources[n - 1];
        if (!source) return null;
        return h(
          "button",
          { type: "button", class: "cite", "data-n": n, "aria-label": `Source ${n}: ${source.filename}, page ${source.page}`, onclick: () => openSource(api, source, n, undefined, -1, "") },
          `[${n}]`,
        );
      };
      const item = (e: EntityEvidence["evidence"][number]) => h("li", {}, e.kind === "claim" ? "Claim: " : "Relation: ", e.text, " ", ...e.sources.map(cite));
      const first = found.evidence.slice(0, EVIDENCE_SHOWN);
      const rest = found.evidence.slice(EVIDENCE_SHOWN);
      panel.replaceChildren(
        h("h4", {}, `Evidence about ${found.entity.label}`),
        found.evidence.length
          ? h("ol", { class: "evidence", "aria-label": "Entity evidence" }, ...first.map(item))
          : h("p", { class: "help" }, "No claim or relation about it cites a document that is still in the library."),
        rest.length
          ? h(
              "details",
              { class: "more" },
              h("summary", {}, `More evidence (${rest.length})`),
              h("ol", { class: "evidence", start: EVIDENCE_SHOWN + 1, "aria-label": "More entity evidence" }, ...rest.map(item)),
            )
          : "",
      );
    } catch (e) {
      panel.replaceChildren(h("p", { class: "error", role: "alert" }, (e as Error).message));
    }
  }

  async function expand(card: HTMLElement, c: CommunityCard, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    const panel = h("div", { class: "community-detail" }, h("p", { class: "help" }, "Loading the members…"));
    card.append(panel);
    try {
      const d = await getGraph<CommunityDetail>(api, `/communities/${c.id}`);
      const label = new Map(d.members.map((m) => [m.name, m.label]));
      button.remove();
      panel.replaceChildren(
        h("h5", {}, `All ${d.size} members`),
        h(
          "ul",
          { class: "member-list members", "aria-label": `Members of ${c.title || `community ${c.id}`}` },
          ...d.members.map((m) => h("li", {}, h("button", { type: "button", class: "link", "data-key": m.name, onclick: () => showEntity(m.name, m.label) }, m.label))),
        ),
        d.size > d.members.length ? h("p", { class: "help" }, `and ${d.size - d.members.length} more; search for them by name.`) : "",
        h(
          "details",
          { class: "more" },
          h("summary", {}, `Relations between them (${d.relationCount})`),
          h(
            "ul",
            { class: "edges", "aria-label": `Relations in ${c.title || `community ${c.id}`}` },
            ...d.relations.map((r) => h("li", {}, `${label.get(r.source) ?? r.source} — ${relationText(r.relation)} — ${label.get(r.target) ?? r.target}`)),
          ),
          d.relationCount > d.relations.length ? h("p", { class: "help" }, `The strongest ${d.relations.length} are listed.`) : "",
        ),
      );
    } catch (e) {
      button.disabled = false;
      panel.replaceChildren(h("p", { class: "error", role: "alert" }, (e as Error).message));
    }
  }

  function card(c: CommunityCard): HTMLElement {
    const more = h("button", { type: "button", class: "secondary" }, "Members and relations");
    const item = h(
      "li",
      { class: "card community" },
      h("h4", {}, c.title || `Community ${c.id}`),
      h("p", { class: "help" }, `${c.size} entities · level ${c.level}`),
      c.summary ? h("p", { class: "community-summary" }, c.summary) : null,
      h(
        "p",
        { class: "members" },
        "Best connected: ",
        ...c.members.flatMap((m, i) => [i ? ", " : "", h("button", { type: "button", class: "link", "data-key": c.memberKeys[i], onclick: () => showEntity(c.memberKeys[i], m) }, m)]),
        c.size > c.members.length ? ", …" : "",
      ),
      more,
    );
    more.addEventListener("click", () => void expand(item, c, more));
    return item;
  }

  async function load(): Promise<void> {
    count.textContent = "Loading the communities…";
    try {
      const page = await getGraph<CommunityPage>(api, "/communities", { offset, limit: PAGE_SIZE, q: query });
      list.replaceChildren(...page.communities.map(card));
      count.textContent = page.total
        ? `Communities ${page.offset + 1}–${page.offset + page.communities.length} of ${page.total}, largest first.`
        : query
          ? `No community matches “${query}”.`
          : "The graph has no community yet.";
      previous.disabled = page.offset <= 0;
      next.disabled = page.offset + page.communities.length >= page.total;
    } catch (e) {
      count.textContent = `Could not load the communities: ${(e as Error).message}`;
    }
  }

  previous.addEventListener("click", () => {
    offset = Math.max(0, offset - PAGE_SIZE);
    void load();
  });
  next.addEventListener("click", () => {
    offset += PAGE_SIZE;
    void load();
  });
  filterForm.addEventListener("submit", (event) => {
    event.preventDefault();
    query = filter.value.trim();
    offset = 0;
    void load();
  });

  // Suggestions while typing: a datalist for the keyboard, a list of buttons that open by key.
  let timer = 0;
  let asked = 0;
  entity.addEventListener("input", () => {
    window.clearTimeout(timer);
    const typed = entity.value.trim();
    if (!typed) {
      suggestions.replaceChildren();
      suggestionList.replaceChildren();
      return;
    }
    timer = window.setTimeout(async () => {
      const ticket = ++asked;
      try {
        const found = await searchEntities(api, typed);
        if (ticket !== asked) return; // a later keystroke's answer wins
        suggestions.replaceChildren(...found.entities.map((e) => h("option", { value: e.label })));
        suggestionList.replaceChildren(
          ...found.entities.map((e) => h("li", {}, h("button", { type: "button", class: "link", "data-key": e.name, onclick: () => showEntity(e.name, e.label) }, e.label))),
        );
      } catch {
        /* suggestions are a convenience: the search itself reports errors */
      }
    }, SUGGEST_DELAY_MS);
  });
  lookup.addEventListener("submit", async (event) => {
    event.preventDefault();
    const typed = entity.value.trim();
    if (!typed) return;
    try {
      // the best match's key: a typed label is never re-keyed on the page
      const found = await searchEntities(api, typed, 1);
      const best = found.entities[0];
      if (best) return void showEntity(best.name, best.label);
    } catch {
      /* fall through: the neighbourhood route resolves names and aliases too */
    }
    void showEntity(typed);
  });

  const element = h(
    "div",
    { class: "graph-explorer" },
    lookup,
    hoodPanel,
    h("h3", { id: "communities-title" }, "Communities"),
    filterForm,
    count,
    list,
    pager,
  );
  return { element, showEntity, load };
}
