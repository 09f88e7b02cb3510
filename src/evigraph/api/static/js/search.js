// The search view: one question through the `retrieve` tool, shown twice. On the left its cited
// items (passages, entities, relations, facts, each with the [n] to cite); on the right the exact
// text the tool hands an agent, which the server renders (`Accept: text/plain`) from the same
// session, so its numbers are the ones on the left.

import { api } from "./api.js";
import { byId, fill, h, plural, showError } from "./dom.js";
import { entityList, passageCard, relationList } from "./evidence.js";

export class SearchView {
  /** `showEntity(e)` opens an entity in the graph explorer. */
  constructor({ showEntity }) {
    this.showEntity = showEntity;
    this.empty = byId("search-empty");
    this.results = byId("search-results");
    this.meta = byId("search-meta");
    this.items = byId("search-items");
    this.context = byId("search-context");
    byId("context-copy").addEventListener("click", () => this.copy());
  }

  async run(question) {
    this.empty.hidden = true;
    this.results.hidden = false;
    fill(this.meta, h("span", {}, `Searching for “${question}”…`));
    fill(this.items);
    this.context.textContent = "";
    const args = { question };
    let result;
    let text;
    try {
      // Both in this tab's evidence session: the ledger gives an item the number it already has,
      // so the text's [n] match the items'.
      [result, text] = await Promise.all([api.call("retrieve", args), api.text("retrieve", args)]);
    } catch (err) {
      fill(this.meta);
      const box = h("div", { class: "error-box" });
      showError(box, err);
      fill(this.items, box);
      return;
    }
    this.context.textContent = text;
    this.render(result);
  }

  render(r) {
    const counts = [
      plural(r.passages.length, "passage"), plural(r.entities.length, "entity", "entities"),
      plural(r.relations.length, "relation"), plural(r.facts.length, "fact"),
    ];
    fill(this.meta,
      h("span", {}, counts.join(" · ")),
      h("span", {}, `paths: ${r.paths.join(", ")}`),
      r.match?.reason ? h("span", {}, `match: ${r.match.reason}`) : null,
      r.hint ? h("span", { class: "hint" }, r.hint) : null);
    const sections = [];
    if (r.passages.length) sections.push(h("h4", {}, "Passages"), r.passages.map(passageCard));
    if (r.entities.length) sections.push(h("h4", {}, "Entities"), entityList(r.entities, this.showEntity));
    if (r.relations.length) sections.push(h("h4", {}, "Relations"), relationList(r.relations));
    if (r.facts.length) sections.push(h("h4", {}, "Facts"), relationList(r.facts));
    if (!sections.length) sections.push(h("p", { class: "muted" }, "Nothing matched."));
    fill(this.items, sections);
  }

  async copy() {
    const text = this.context.textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // no clipboard off a secure context: select the text for Ctrl+C instead
      getSelection().selectAllChildren(this.context);
    }
  }
}
