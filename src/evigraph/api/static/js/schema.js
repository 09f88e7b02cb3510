// The schema sidebar: counts, entity labels and relation types with how many of each (`status`),
// the declared types, tables and Cypher guide (`get_ontology`). A label or type opens its rows in
// the Cypher console.

import { api } from "./api.js";
import { byId, fill, h, showError } from "./dom.js";
import { colourOf } from "./graph/style.js";

function quoted(text) {
  return `'${String(text).replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

export function labelQuery(label) {
  return `MATCH (e:Entity)\nWHERE e.label = ${quoted(label)}\nRETURN e\nLIMIT 50`;
}

export function relationQuery(type) {
  return `MATCH (a:Entity)-[r:RELATES]->(b:Entity)\nWHERE r.type = ${quoted(type)}\nRETURN a, r, b\nLIMIT 50`;
}

function counts(status) {
  const cell = (n, what) => h("div", {}, h("b", {}, n.toLocaleString()), h("span", {}, what));
  return h("div", { class: "counts" },
    cell(status.documents, "documents"), cell(status.passages, "passages"),
    cell(status.entities, "entities"), cell(status.relations, "relations"));
}

/** What code the knowledge base holds (`ingest_code`): files, then symbols per kind. */
function codeLine(status) {
  const symbols = Object.entries(status.code_symbols || {}).map(([kind, n]) => ` · ${n.toLocaleString()} ${kind}`);
  return `Code: ${status.code_files.toLocaleString()} files${symbols.join("")}`;
}

export class SchemaSidebar {
  /** `openQuery(query, mode)` shows a query's result in the Cypher console. */
  constructor({ openQuery }) {
    this.box = byId("schema");
    this.openQuery = openQuery;
  }

  /** Loads and draws the schema; returns {status, ontology} for the other views. */
  async load() {
    let status;
    let ontology;
    try {
      [status, ontology] = await Promise.all([api.call("status"), api.call("get_ontology")]);
    } catch (err) {
      const box = h("div", { class: "error-box" });
      showError(box, err);
      fill(this.box, box);
      throw err;
    }
    this.render(status, ontology);
    return { status, ontology };
  }

  render(status, ontology) {
    const described = new Map(ontology.entity_types.map((t) => [t.label, t.description]));
    const labels = Object.entries(status.labels).map(([label, n]) =>
      h("li", { title: described.get(label) || "" },
        h("span", { class: "swatch", style: { background: colourOf(label) } }),
        h("button", { type: "button", class: "link", onclick: () => this.openQuery(labelQuery(label), "table") }, label),
        h("span", { class: "n" }, n.toLocaleString())));
    const idle = ontology.entity_types.filter((t) => !status.labels[t.label]).map((t) => t.label);
    const types = Object.entries(status.relation_types).map(([type, n]) =>
      h("li", { title: ontology.relation_types.find((t) => t.label === type)?.description || "" },
        h("button", { type: "button", class: "link", onclick: () => this.openQuery(relationQuery(type), "graph") }, type),
        h("span", { class: "n" }, n.toLocaleString())));
    const tables = ontology.tables.map((t) =>
      h("li", { title: Object.keys(t.properties).join(", ") },
        h("code", {}, t.name), h("span", { class: "muted small" }, t.kind), h("span", { class: "n" }, t.rows.toLocaleString())));
    fill(this.box,
      h("h2", {}, "Knowledge base"),
      counts(status),
      h("p", { class: "muted small" },
        `Embedding model: ${status.embedding_model || "none"}`,
        status.themes ? ` · ${status.themes} themes` : "",
        status.pending_embeddings ? ` · ${status.pending_embeddings} pending embeddings` : ""),
      status.code_files ? h("p", { class: "muted small", id: "schema-code" }, codeLine(status)) : null,
      h("h2", {}, "Entity labels"),
      labels.length ? h("ul", { class: "schema-list", id: "schema-labels" }, labels) : h("p", { class: "muted" }, "No entities yet."),
      idle.length ? h("p", { class: "muted small", title: idle.join(", ") }, `${idle.length} declared labels have no entities yet.`) : null,
      h("h2", {}, "Relation types"),
      types.length ? h("ul", { class: "schema-list", id: "schema-relations" }, types) : h("p", { class: "muted" }, "No relations yet."),
      h("details", {}, h("summary", {}, "Tables"), h("ul", { class: "schema-list" }, tables)),
      h("details", {}, h("summary", {}, "Cypher guide"), h("p", { class: "guide" }, ontology.cypher_guide)));
  }
}
