// Starts the page: finds the knowledge base to read, loads its schema, and wires the views.
//
// `window.evigraph` holds the graph canvases (Cytoscape instances), the explorer and the API
// client, for the browser console and the browser tests.

import { api, setToken } from "./api.js";
import { CypherConsole } from "./cypher.js";
import { pickDatabase } from "./dbpicker.js";
import { DecisionsView } from "./decisions.js";
import { DocumentsView } from "./documents.js";
import { byId, fill, h, showError } from "./dom.js";
import { Explorer } from "./graph/explorer.js";
import { SchemaSidebar } from "./schema.js";
import { SearchView } from "./search.js";
import { Tabs } from "./tabs.js";

function serverState(text, ok) {
  const pill = byId("server-state");
  pill.textContent = text;
  pill.className = `pill ${ok ? "ok" : "bad"}`;
}

/** A server started with a token (off loopback) answers 401 until the page sends it. */
function askForToken(err) {
  const input = h("input", { type: "password", autocomplete: "off", placeholder: "token", "aria-label": "Token" });
  const form = h("form", { class: "inline-form" }, input, h("button", { type: "submit", class: "primary" }, "Use token"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    location.reload();
  });
  const box = byId("fatal");
  fill(box, h("div", {}, err.message), h("div", { class: "hint" }, "this server needs its token (--token or EVIGRAPH_MCP_TOKEN)"), form);
  box.hidden = false;
}

function fatal(err) {
  serverState(err.status === 401 ? "token needed" : "error", false);
  if (err.status === 401) askForToken(err);
  else showError(byId("fatal"), err);
}

async function boot() {
  window.evigraph = { api };
  const search = new SearchView({ showEntity: (e) => showEntity(e) });
  const cypher = new CypherConsole();
  const documents = new DocumentsView();
  const decisions = new DecisionsView();
  const explorer = new Explorer({ ask: (question) => ask(question) });
  window.evigraph.graph = explorer.canvas.cy;
  window.evigraph.explorer = explorer;

  const tabs = new Tabs(document.querySelector(".tabs"), (view) => {
    if (view === "graph") explorer.open();
    else if (view === "documents") documents.open();
  });
  const schema = new SchemaSidebar({
    openQuery: (query, mode) => {
      tabs.show("cypher");
      cypher.show(mode);
      cypher.runQuery(query);
    },
  });

  function ask(question) {
    byId("search-input").value = question;
    tabs.show("search");
    search.run(question);
  }

  function showEntity(entity) {
    explorer.start(entity.id); // first: the explorer then skips its own starting point
    tabs.show("graph");
  }

  byId("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const question = byId("search-input").value.trim();
    if (question) ask(question);
  });

  try {
    await api.health();
    const db = await pickDatabase();
    const { tools } = await api.tools();
    serverState(db ? `connected · ${db}` : "connected", true);
    const { ontology } = await schema.load();
    cypher.setSchema(ontology);
    documents.setSchema(ontology);
    await decisions.load(tools);
  } catch (err) {
    fatal(err);
    return;
  }
  tabs.show(tabs.fromHash(), false);
}

boot();
