// The graph page's cost panel: the organization's model calls, tokens and seconds per phase
// (GET /orgs/{org}/graph/costs, the cost ledger). The graph page mounts it; this module only renders.

import type { Api } from "./api";
import { h } from "./dom";

export interface PhaseCost {
  phase: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  seconds: number;
}

export interface GraphCosts {
  organization_id: string;
  phases: PhaseCost[];
  totals: { calls: number; inputTokens: number; outputTokens: number; seconds: number };
}

export const OFFLINE_TEXT = "no model-backed calls (offline defaults)";

const number = new Intl.NumberFormat("en");

/** The table of one ledger, or the offline sentence when nothing was spent. */
export function costTable(costs: GraphCosts): HTMLElement {
  if (!costs.phases.some((p) => p.calls > 0)) return h("p", { class: "costs-offline" }, OFFLINE_TEXT);
  const head = ["Phase", "Calls", "Input tokens", "Output tokens", "Seconds"];
  const row = (cells: string[], total = false) =>
    h(
      "tr",
      total ? { class: "costs-total" } : {},
      h("th", { scope: "row" }, cells[0]),
      ...cells.slice(1).map((cell) => h("td", { class: "num" }, cell)),
    );
  const figures = (p: Omit<PhaseCost, "phase">) => [
    number.format(p.calls),
    number.format(p.inputTokens),
    number.format(p.outputTokens),
    p.seconds.toFixed(2),
  ];
  return h(
    "table",
    { class: "costs-table" },
    h("caption", {}, "Model calls per phase"),
    h("thead", {}, h("tr", {}, ...head.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, ...costs.phases.map((p) => row([p.phase, ...figures(p)]))),
    h("tfoot", {}, row(["Total", ...figures(costs.totals)], true)),
  );
}

/** A section that loads the organization's cost ledger and shows it (or why it could not). */
export function costPanel(api: Api): HTMLElement {
  const body = h("div", { class: "costs-body", "aria-live": "polite", "aria-busy": "true" }, "Loading costs…");
  const panel = h(
    "section",
    { class: "costs-panel", "aria-labelledby": "costs-heading" },
    h("h3", { id: "costs-heading" }, "Model costs"),
    body,
  );
  void (async () => {
    try {
      const response = await api.request(`/orgs/${encodeURIComponent(api.org)}/graph/costs`);
      body.replaceChildren(costTable((await response.json()) as GraphCosts));
    } catch (error) {
      body.replaceChildren(h("p", { role: "alert" }, `Costs could not be loaded: ${(error as Error).message}`));
    } finally {
      body.removeAttribute("aria-busy");
    }
  })();
  return panel;
}
