// "Ask the graph (local)": a local GraphRAG retrieval for a question (`GET /orgs/{org}/graph/local`),
// shown as a short answer that fits a screen (the few cited sentences the server ranked best, `brief`)
// with everything it stands on one click away in collapsed <details>: the matched entities and their
// neighbourhood picture, the communities, and every evidence item. Each citation button opens its
// source in the same viewer as a chat citation. (The whole retrieval shown at once was 5,117 px tall
// on a technical manual, issue 27.)
import { ApiError, type Api } from "./api";
import type { Source } from "./citations";
import { h } from "./dom";
import { picture, type Neighbourhood } from "./graph";
import { openSource } from "./viewer";

interface LocalAnswer {
  matchedEntities: { name: string; label: string }[];
  communities: { id: number; title: string; summary: string }[];
  evidence: { kind: string; text: string; source: number }[];
  sources: Source[];
  neighbourhood: (Omit<Neighbourhood, "center"> & { matched: string[] }) | null;
  brief?: { text: string; sources: number[] }[];
}

async function askLocal(api: Api, question: string): Promise<LocalAnswer> {
  const url = `/orgs/${encodeURIComponent(api.org)}/graph/local?q=${encodeURIComponent(question)}`;
  const response = await fetch(url, { headers: api.headers() });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(response.status, body?.error?.code ?? "error", body?.error?.message ?? `${response.status} ${response.statusText}`);
  }
  return body as LocalAnswer;
}

function cite(api: Api, answer: LocalAnswer, n: number): HTMLElement | null {
  const source = answer.sources[n - 1];
  if (!source) return null;
  return h(
    "button",
    {
      type: "button",
      class: "cite",
      "data-n": n,
      "aria-label": `Source ${n}: ${source.filename}, page ${source.page}`,
      onclick: () => openSource(api, source, n, undefined, -1, ""),
    },
    `[${n}]`,
  );
}

/** A collapsed section of the answer: its summary says what it holds and how many. */
function more(title: string, count: number, ...children: (HTMLElement | SVGSVGElement | null)[]): HTMLElement | null {
  if (!count) return null;
  return h("details", { class: "more" }, h("summary", {}, `${title} (${count})`), ...children);
}

function show(panel: HTMLElement, api: Api, answer: LocalAnswer): void {
  const matched = answer.matchedEntities.map((m) => m.label);
  const hood = answer.neighbourhood;
  const brief = answer.brief ?? [];
  panel.replaceChildren(
    h("h3", {}, "Local answer"),
    brief.length
      ? h(
          "ol",
          { class: "brief", "aria-label": "Answer" },
          ...brief.map((b) => h("li", {}, `“${b.text}” `, ...b.sources.map((n) => cite(api, answer, n)))),
        )
      : h("p", { class: "help" }, answer.evidence.length ? "No sentence of the evidence answers this question closely; the evidence is below." : "No evidence was found for this question."),
    matched.length
      ? more(
          "Matched entities",
          matched.length,
          h("p", { class: "help" }, `${matched.join(", ")}.`),
          hood ? picture({ ...hood, center: hood.matched[0] }, hood.matched, "local-hood-title", true) : null,
        ) ?? ""
      : h("p", { class: "help" }, "No entity of the graph matched; the evidence comes from the text."),
    more("Communities", answer.communities.length, ...answer.communities.map((c) => h("p", {}, h("strong", {}, `${c.title}: `), c.summary))) ?? "",
    more(
      "All evidence",
      answer.evidence.length,
      h(
        "ol",
        { class: "evidence", "aria-label": "Evidence" },
        ...answer.evidence.map((e) => h("li", {}, e.kind === "claim" ? "Claim: " : "", e.text, " ", cite(api, answer, e.source))),
      ),
    ) ?? "",
  );
}

/** The form and its answer panel, for the Graph page. */
export function localPanel(api: Api): HTMLElement {
  const input = h("input", { type: "search", id: "local-q", maxlength: 1000, placeholder: "a question naming something in your documents" }); // the page names one of its entities once the graph loads (graph.ts)
  const result = h("div", { id: "local-answer", "aria-live": "polite" });
  const button = h("button", { type: "submit" }, "Ask");
  const form = h(
    "form",
    { class: "ask", role: "search", "aria-label": "Local graph search" },
    h("label", { for: "local-q" }, "Ask the graph (local)"),
    input,
    h("div", { class: "row" }, button),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    button.disabled = true;
    result.replaceChildren(h("p", { class: "help" }, "Searching the graph…"));
    try {
      show(result, api, await askLocal(api, question));
    } catch (e) {
      const message = e instanceof ApiError && e.code === "no_graph" ? "This organization has no knowledge graph yet." : (e as Error).message;
      result.replaceChildren(h("p", { class: "error", role: "alert" }, message));
    } finally {
      button.disabled = false;
    }
  });
  return h("div", { class: "card local" }, form, result);
}
