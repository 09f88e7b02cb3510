// Evidence items as a person reads them: passages, entities and relations, each with its [n].
// These are the structured items of a tool result; the text an agent reads is the server's own
// rendering and is shown as it came (see search.js), never rebuilt here.

import { cite, h } from "./dom.js";
import { colourOf } from "./graph/style.js";

function trail(source) {
  return source.breadcrumbs?.length ? source.breadcrumbs.join(" › ") : source.title;
}

export function passageCard(p) {
  const loc = p.source.page ? `page ${p.source.page}, ` : "";
  return h("article", { class: "passage", dataset: { n: p.n } },
    h("header", {},
      cite(p.n),
      h("span", { class: "where" }, trail(p.source)),
      h("span", { class: "score", title: "fused score and the search paths that found it" },
        `${(p.paths || []).join(", ")}${p.score ? ` · ${p.score.toFixed(3)}` : ""}`)),
    h("div", { class: "path" }, `${p.source.path || p.source.document_key} (${loc}chars ${p.source.start}–${p.source.end})`),
    h("p", { class: "text" }, p.text),
    p.partial ? h("div", { class: "muted small" }, "shortened: read_passages gives the whole passage") : null);
}

/** Entities; `onEntity(e)` opens one in the graph explorer. */
export function entityList(entities, onEntity) {
  return h("ul", { class: "item-list" }, entities.map((e) =>
    h("li", {},
      cite(e.n),
      h("button", { type: "button", class: "link", title: "show it in the graph", onclick: () => onEntity(e) }, e.name),
      h("span", { class: "chip" }, h("span", { class: "swatch", style: { background: colourOf(e.label) } }), e.label),
      e.description ? h("span", { class: "muted" }, e.description) : null)));
}

export function relationList(relations) {
  return h("ul", { class: "item-list" }, relations.map((r) =>
    h("li", {},
      cite(r.n),
      h("span", {}, h("b", {}, r.source), ` —${r.type}→ `, h("b", {}, r.target), h("span", { class: "muted" }, `: ${r.fact}`)))));
}
