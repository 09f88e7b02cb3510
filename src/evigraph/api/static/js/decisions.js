// The decisions view: decisions flagged needs_review, each with the source change that flagged it
// (`list_decisions_for_review`). The server offers that tool only when it runs with a project and
// an agent; without it, or with nothing to review, the tab stays hidden.

import { api } from "./api.js";
import { byId, fill, h, props } from "./dom.js";

const TOOL = "list_decisions_for_review";
const LIMIT = 100;

function cause(c) {
  if (c.document) {
    const now = c.now_version === null || c.now_version === undefined ? "deleted" : `now version ${c.now_version}`;
    return `document ${c.document} changed: read at version ${c.read_version}, ${now}`;
  }
  return `rests on decision ${c.decision}, which was ${String(c.change).replace(/_/g, " ")}`;
}

function support(s) {
  const what = s.kind === "passage" ? `${s.ref} (${s.document} v${s.version})` : `decision ${s.ref}`;
  return `${what}${s.note ? `: ${s.note}` : ""}`;
}

function card(d) {
  return h("article", { class: "decision", dataset: { id: d.id } },
    h("div", { class: "panel-head" }, h("h3", {}, d.conclusion), h("span", { class: `state ${d.state}` }, d.state.replace(/_/g, " "))),
    props([
      ["Task", d.task], ["Choice", d.choice_key], ["Recorded", `${d.agent}, ${String(d.created_at).slice(0, 16).replace("T", " ")}`],
      ["Id", d.id, { mono: true }], ["Rationale", d.rationale],
    ]),
    h("h4", {}, "Needs review because"), h("ul", {}, d.review.map((c) => h("li", {}, cause(c)))),
    d.supports.length ? [h("h4", {}, "Rests on"), h("ul", {}, d.supports.map((s) => h("li", {}, support(s))))] : null);
}

export class DecisionsView {
  constructor() {
    this.tab = byId("tab-decisions");
    this.count = byId("decisions-count");
    this.list = byId("decisions-list");
  }

  /** Shows the tab when `tools` offers the review list and it lists any decision. */
  async load(tools) {
    this.tab.hidden = true;
    if (!tools.some((t) => t.name === TOOL)) return;
    let page;
    try {
      page = await api.call(TOOL, { limit: LIMIT });
    } catch {
      return; // the review list is an extra: the rest of the page works without it
    }
    if (!page.decisions.length) return;
    this.count.textContent = page.next_after_id ? `${LIMIT}+` : String(page.decisions.length);
    fill(this.list,
      h("p", { class: "muted" }, "Decisions whose supporting sources changed since they were recorded. An agent settles one with ",
        h("code", {}, "reaffirm_decision"), " or ", h("code", {}, "supersede_decision"), "."),
      page.decisions.map(card),
      page.next_after_id ? h("p", { class: "muted small" }, `Only the first ${LIMIT} are shown.`) : null);
    this.tab.hidden = false;
  }
}
