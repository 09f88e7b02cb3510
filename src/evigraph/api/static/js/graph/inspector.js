// The inspector beside a canvas: what a clicked node or relation is, its properties, and its
// evidence number in this session (the [n] an agent would cite for it).

import { cite, fill, h, props } from "../dom.js";
import { colourOf } from "./style.js";

function where(location) {
  if (!location) return null;
  const trail = location.breadcrumbs?.length ? location.breadcrumbs.join(" › ") : location.title;
  return location.path ? `${trail} (${location.path})` : trail;
}

function labelChip(label) {
  return h("span", { class: "chip" }, h("span", { class: "swatch", style: { background: colourOf(label) } }), label);
}

function value(v) {
  if (v === null || v === undefined) return "";
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

export class Inspector {
  /** `actions(kind, data)` returns extra buttons for an element (e.g. expand), or nothing. */
  constructor(container, { nameOf = (id) => id, actions = () => [], placeholder = "" } = {}) {
    this.container = container;
    this.nameOf = nameOf;
    this.actions = actions;
    this.placeholder = placeholder || container.textContent.trim();
  }

  show(kind, data) {
    if (!kind) {
      fill(this.container, h("p", { class: "muted" }, this.placeholder));
      return;
    }
    const body = data.entity ? this.entity(data)
      : data.relation ? this.relation(data)
        : this.row(kind, data);
    const buttons = this.actions(kind, data) || [];
    fill(this.container, body, buttons.length ? h("div", { class: "actions" }, buttons) : null);
  }

  entity(data) {
    const e = data.entity;
    return [
      h("div", { class: "panel-head" }, h("h3", {}, e.name), cite(e.n)),
      labelChip(e.label),
      props([
        ["Evidence", e.n ? `[${e.n}] in this session` : "not numbered"],
        ["Evidence id", e.evidence_id, { mono: true }],
        ["Id", e.id, { mono: true }],
        ["Description", e.description],
        ["Mentioned in", where(e.location)],
        ["Drawn relations", String(data.degree ?? 0)],
      ]),
    ];
  }

  relation(data) {
    const r = data.relation;
    return [
      h("div", { class: "panel-head" }, h("h3", {}, r.type), cite(r.n)),
      h("p", {}, h("b", {}, r.source), " → ", h("b", {}, r.target)),
      r.fact ? h("blockquote", { class: "fact" }, r.fact) : null, // a code edge states no sentence
      props([
        ["Evidence", r.n ? `[${r.n}] in this session` : "not numbered"],
        ["Evidence id", r.evidence_id, { mono: true }],
        ["Confidence", String(r.confidence)],
        ["Stated in", where(r.location)],
        ["Passages", (r.passages || []).join(", "), { mono: true }],
      ]),
    ];
  }

  /** A node or relationship from a Cypher row: its table and every property the query returned. */
  row(kind, data) {
    const title = kind === "edge"
      ? [h("h3", {}, data.type || data.table), h("p", {}, this.nameOf(data.source), " → ", this.nameOf(data.target))]
      : [h("h3", {}, data.name), labelChip(data.label)];
    const rows = Object.entries(data.properties || {}).map(([k, v]) => [k, value(v), { mono: typeof v === "object" }]);
    return [
      ...title,
      h("p", { class: "muted small" }, `${data.table} row from the Cypher result (rows carry no evidence number)`),
      props(rows),
    ];
  }
}
