// The documents view: the stored documents a page at a time (their current version, loader and
// passages, read with `cypher_query` from the Document table get_ontology describes), the sources
// whose last ingest failed (`status`), and one document's source status (`source_status`).

import { api } from "./api.js";
import { byId, fill, h, plural, props, showError, table } from "./dom.js";

const PAGE = 50;
// What a row shows, by Document property, when the store has it (get_ontology lists them).
const COLUMNS = [
  ["key", "Key"], ["title", "Title"], ["version", "Version"], ["loader", "Loader"],
  ["chunk_count", "Passages"], ["ingested_at", "Ingested"],
];

function when(iso) {
  return iso ? String(iso).replace("T", " ").replace(/\.\d+/, "").replace(/Z$/, " UTC") : "";
}

function stat(n, what, bad = false) {
  return h("div", { class: `stat${bad ? " bad" : ""}` }, h("b", {}, n.toLocaleString()), h("span", {}, what));
}

export class DocumentsView {
  constructor() {
    this.summary = byId("documents-summary");
    this.failures = byId("documents-failures");
    this.tableBox = byId("documents-table");
    this.pager = byId("documents-pager");
    this.detail = byId("document-detail");
    this.columns = COLUMNS.slice(0, 2);
    this.offset = 0;
    this.total = 0;
  }

  /** The Document properties this store has, from get_ontology's tables. */
  setSchema(ontology) {
    const doc = ontology.tables.find((t) => t.name === "Document");
    const present = new Set(Object.keys(doc?.properties || { key: 1, title: 1 }));
    this.columns = COLUMNS.filter(([prop]) => present.has(prop));
  }

  /** Called when the view opens: everything is read again, as ingests may have run since. */
  async open() {
    try {
      const status = await api.call("status");
      this.total = status.documents;
      this.drawSummary(status);
      await this.page(Math.min(this.offset, Math.max(0, this.total - 1)));
    } catch (err) {
      this.fail(err);
    }
  }

  drawSummary(status) {
    fill(this.summary,
      stat(status.documents, "documents"), stat(status.passages, "passages"),
      stat(status.failed_documents, "failed at their last ingest", status.failed_documents > 0),
      stat(status.pending_embeddings, "pending embeddings"));
    if (!status.failed_sources.length) {
      fill(this.failures);
      return;
    }
    fill(this.failures,
      h("h3", {}, "Failed at their last ingest"),
      h("div", { class: "table-wrap" }, table(["Key", "Error", "At"], status.failed_sources,
        (f) => [h("code", {}, f.key), f.error || "no reason recorded", when(f.at)],
        { onRow: (f) => this.inspect(f.key) })));
  }

  async page(offset) {
    this.offset = Math.max(0, offset);
    const fields = this.columns.map(([prop]) => `d.${prop} AS ${prop}`).join(", ");
    const query = `MATCH (d:Document) RETURN ${fields} ORDER BY d.key SKIP $skip LIMIT $take`;
    const found = await api.call("cypher_query", { query, params: { skip: this.offset, take: PAGE }, limit: PAGE });
    const numeric = this.columns.map(([prop], i) => (prop === "version" || prop === "chunk_count" ? i : -1));
    fill(this.tableBox, table(this.columns.map(([, title]) => title), found.rows,
      (row) => this.columns.map(([prop]) => (prop === "key" ? h("code", {}, row.key)
        : prop === "ingested_at" ? when(row[prop]) : row[prop] ?? "")),
      { numeric, onRow: (row, tr) => this.inspect(row.key, row, tr) }));
    this.drawPager(found.rows.length);
  }

  drawPager(shown) {
    if (!this.total) {
      fill(this.pager, "No documents yet: ingest some with evigraph ingest.");
      return;
    }
    const first = this.offset + 1;
    const last = this.offset + shown;
    fill(this.pager,
      h("button", { type: "button", class: "small", disabled: this.offset === 0, onclick: () => this.page(this.offset - PAGE) }, "‹ Previous"),
      `${first.toLocaleString()}–${last.toLocaleString()} of ${plural(this.total, "document")}`,
      h("button", { type: "button", class: "small", disabled: last >= this.total, onclick: () => this.page(this.offset + PAGE) }, "Next ›"));
  }

  async inspect(key, row = null, tr = null) {
    for (const other of this.tableBox.querySelectorAll("tr.selected")) other.classList.remove("selected");
    tr?.classList.add("selected");
    fill(this.detail, h("p", { class: "muted" }, "Reading its status…"));
    let st;
    try {
      st = await api.call("source_status", { document_key: key });
    } catch (err) {
      const box = h("div", { class: "error-box" });
      showError(box, err);
      fill(this.detail, box);
      return;
    }
    fill(this.detail,
      h("h3", {}, row?.title || key),
      h("p", {}, "State: ", h("span", { class: `state ${st.state}`, id: "document-state" }, st.state)),
      props([
        ["Key", st.document_key, { mono: true }],
        ["Version", st.version ? String(st.version) : ""],
        ["Content hash", st.content_hash, { mono: true }],
        ["Since", when(st.at)],
        ["Error", st.error],
        ["Loader", row?.loader],
        ["Passages", row?.chunk_count !== undefined ? String(row.chunk_count) : ""],
      ]),
      st.hint ? h("p", { class: "muted small" }, st.hint) : null);
  }

  fail(err) {
    const box = h("div", { class: "error-box" });
    showError(box, err);
    fill(this.failures, box);
  }
}
