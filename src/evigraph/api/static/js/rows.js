// Cypher rows read two ways: as table cells, and as a graph of the nodes and relationships they hold.
//
// `cypher_query` returns a node or relationship as an object naming its `table`, and a path as
// {_nodes, _rels}. A relationship object does not name its ends, so the graph links each one to
// the nodes beside it in the row: `RETURN a, r, b` (and a path) draws a -r-> b.

import { h } from "./dom.js";

const SHORT = 60;

function isElement(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v) && typeof v.table === "string";
}

function isPath(v) {
  return v !== null && typeof v === "object" && Array.isArray(v._nodes) && Array.isArray(v._rels);
}

function short(text) {
  const s = String(text);
  return s.length > SHORT ? `${s.slice(0, SHORT - 1)}…` : s;
}

function properties(v) {
  const out = { ...v };
  delete out.table;
  return out;
}

export class RowReader {
  /** `relationshipTables`: the names get_ontology lists as relationship tables. */
  constructor(relationshipTables = []) {
    this.relTables = new Set(relationshipTables);
  }

  isRelationship(v) {
    return isElement(v) && (this.relTables.has(v.table) || (v.type !== undefined && v.name === undefined && v.key === undefined));
  }

  nodeOf(v) {
    const key = v.id ?? v.key ?? JSON.stringify(properties(v));
    const label = v.table === "Entity" && v.label ? v.label : v.table;
    return { id: `${v.table}:${key}`, name: short(v.name ?? v.title ?? v.key ?? v.id ?? v.table), label, table: v.table, properties: properties(v) };
  }

  /** One cell as a person reads it: a node or relationship by its name, other values as JSON. */
  cell(v) {
    if (isPath(v)) return h("span", { class: "cell-node" }, `path: ${v._nodes.length} nodes, ${v._rels.length} relationships`);
    if (isElement(v)) {
      if (this.isRelationship(v)) return h("span", { class: "cell-node" }, `${v.table} · ${v.type ?? ""}`);
      const node = this.nodeOf(v);
      return h("span", { class: "cell-node", title: node.id }, `${node.label} · ${node.name}`);
    }
    if (v === null || v === undefined) return h("span", { class: "muted" }, "null");
    if (typeof v === "object") return h("span", { class: "cell-json" }, JSON.stringify(v));
    return String(v);
  }

  /** The nodes and edges of `rows` (deduplicated), in the shape GraphCanvas.add takes. */
  graph(columns, rows) {
    const nodes = new Map();
    const edges = new Map();
    for (const row of rows) {
      const sequence = [];
      for (const col of columns) {
        const v = row[col];
        if (isPath(v)) {
          v._nodes.forEach((n, i) => {
            sequence.push(n);
            if (i < v._rels.length) sequence.push(v._rels[i]);
          });
        } else if (isElement(v)) {
          sequence.push(v);
        }
      }
      sequence.forEach((v, i) => {
        if (!this.isRelationship(v)) {
          const node = this.nodeOf(v);
          nodes.set(node.id, node);
          return;
        }
        const before = sequence.slice(0, i).reverse().find((x) => !this.isRelationship(x));
        const after = sequence.slice(i + 1).find((x) => !this.isRelationship(x));
        if (!before || !after) return;
        const source = this.nodeOf(before).id;
        const target = this.nodeOf(after).id;
        const id = `${v.table}:${v.id ?? `${source}>${target}`}`;
        edges.set(id, { id, source, target, type: v.type ?? v.table, table: v.table, properties: properties(v) });
      });
    }
    return { nodes: [...nodes.values()], edges: [...edges.values()] };
  }
}
