// The read-only Cypher console: `cypher_query` (which refuses writes on the server), its rows as a
// table or as a graph, and a refused or failed query's error with its hint.

import { api } from "./api.js";
import { byId, fill, hideError, plural, showError, table } from "./dom.js";
import { GraphCanvas, MAX_DRAWN } from "./graph/canvas.js";
import { Inspector } from "./graph/inspector.js";
import { Legend } from "./graph/legend.js";
import { RowReader } from "./rows.js";

const EXAMPLE = "MATCH (a:Entity)-[r:RELATES]->(b:Entity)\nRETURN a, r, b\nLIMIT 25";

export class CypherConsole {
  constructor() {
    this.input = byId("cypher-input");
    this.limit = byId("cypher-limit");
    this.status = byId("cypher-status");
    this.error = byId("cypher-error");
    this.tableBox = byId("cypher-table");
    this.graphBox = byId("cypher-graph-wrap");
    this.asTable = byId("cypher-as-table");
    this.asGraph = byId("cypher-as-graph");
    this.reader = new RowReader();
    this.result = null;
    this.mode = "table";
    this.canvas = null; // made when the graph view is first shown: Cytoscape needs a visible box
    this.input.value = EXAMPLE;
    byId("cypher-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.run();
    });
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.run();
      }
    });
    this.asTable.addEventListener("click", () => this.show("table"));
    this.asGraph.addEventListener("click", () => this.show("graph"));
  }

  /** The relationship tables of the schema, so rows' relationships are told from nodes. */
  setSchema(ontology) {
    this.reader = new RowReader(ontology.tables.filter((t) => t.kind === "relationship").map((t) => t.name));
  }

  /** Put `query` in the console and run it. */
  async runQuery(query) {
    this.input.value = query;
    await this.run();
  }

  async run() {
    const query = this.input.value.trim();
    if (!query) return;
    const limit = Math.min(1000, Math.max(1, Number(this.limit.value) || 100));
    hideError(this.error);
    this.status.textContent = "running…";
    try {
      this.result = await api.call("cypher_query", { query, limit });
    } catch (err) {
      this.result = null;
      this.status.textContent = "";
      fill(this.tableBox);
      this.graphBox.hidden = true;
      showError(this.error, err);
      return;
    }
    const { rows, truncated, hint } = this.result;
    // cut by the row limit, or shortened by the server to fit its result size (its hint says so)
    this.summary = plural(rows.length, "row") + (hint ? ` · ${hint}` : truncated ? ` (cut at the limit of ${limit})` : "");
    this.show(this.mode);
  }

  show(mode) {
    this.mode = mode;
    this.asTable.setAttribute("aria-pressed", String(mode === "table"));
    this.asGraph.setAttribute("aria-pressed", String(mode === "graph"));
    this.tableBox.hidden = mode !== "table";
    this.graphBox.hidden = mode !== "graph" || !this.result;
    if (!this.result) return;
    if (mode === "table") this.drawTable();
    else this.drawGraph();
  }

  drawTable() {
    const { columns, rows } = this.result;
    this.status.textContent = this.summary;
    fill(this.tableBox, table(columns, rows, (row) => columns.map((c) => this.reader.cell(row[c]))));
  }

  drawGraph() {
    if (!this.canvas) {
      this.canvas = new GraphCanvas(byId("cypher-graph"), {
        onSelect: (kind, data) => this.inspector.show(kind, data),
        onChange: () => this.legend.render(),
      });
      this.legend = new Legend(byId("cypher-legend"), this.canvas);
      this.inspector = new Inspector(byId("cypher-inspector"), {
        nameOf: (id) => this.canvas.cy.getElementById(id).data("name") || id,
      });
      window.evigraph.cypherGraph = this.canvas.cy;
    }
    this.canvas.cy.resize();
    this.canvas.clear();
    this.inspector.show(null, null);
    const { nodes, edges } = this.reader.graph(this.result.columns, this.result.rows);
    const { capped } = this.canvas.add(nodes, edges);
    this.canvas.layout();
    let note = "";
    if (!nodes.length) note = " · no nodes to draw: RETURN whole nodes (a, r, b) to see a graph";
    else if (capped) note = ` · drawing capped at ${MAX_DRAWN} nodes (${capped} not drawn)`;
    this.status.textContent = this.summary + note;
  }
}
