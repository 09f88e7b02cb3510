// The graph explorer: start from an entity (found by name, clicked in a search result, or the most
// connected one), click to inspect, double-click to draw its neighbours.
//
// Each expansion is one `explore_relationships` call bounded on the server (max_nodes, max_edges),
// and the canvas draws at most MAX_DRAWN nodes, so a knowledge base of any size shows one
// neighbourhood at a time; whenever either bound cut something, the notice says so.

import { api } from "../api.js";
import { byId, fill, h, plural, showError } from "../dom.js";
import { GraphCanvas, MAX_DRAWN } from "./canvas.js";
import { Inspector } from "./inspector.js";
import { Legend } from "./legend.js";
import { colourOf } from "./style.js";

const EXPAND = { depth: 1, max_nodes: 50, max_edges: 100 };
const MOST_CONNECTED =
  "MATCH (e:Entity)-[r:RELATES]-(:Entity) RETURN e.id AS id, count(r) AS degree ORDER BY degree DESC LIMIT 1";

function entityNode(e) {
  return { id: e.id, name: e.name, label: e.label, entity: e };
}

/**
 * The relations of an exploration as canvas edges. A relation names its ends by entity name, so
 * each name is looked up among the entities of the same reply first, then among those drawn.
 */
function relationEdges(relations, nodes, canvas) {
  const idOf = new Map();
  for (const n of nodes) if (!idOf.has(n.name)) idOf.set(n.name, n.id);
  const drawnId = (name) => {
    const found = canvas.cy.nodes().filter((n) => n.data("name") === name);
    return found.nonempty() ? found[0].id() : null;
  };
  const edges = [];
  for (const r of relations) {
    const source = idOf.get(r.source) || drawnId(r.source);
    const target = idOf.get(r.target) || drawnId(r.target);
    if (source && target) edges.push({ id: `rel:${r.id}`, source, target, type: r.type, relation: r });
  }
  return edges;
}

export class Explorer {
  /** `ask(question)` runs a search from the inspector's button. */
  constructor({ ask }) {
    this.status = byId("graph-status");
    this.notice = byId("graph-notice");
    this.hits = byId("entity-hits");
    this.canvas = new GraphCanvas(byId("graph"), {
      onSelect: (kind, data) => this.inspect(kind, data),
      onExpand: (data) => this.expand(data.id),
      onChange: () => this.changed(),
    });
    this.legend = new Legend(byId("legend"), this.canvas);
    this.inspector = new Inspector(byId("inspector"), {
      actions: (kind, data) => kind === "node" ? [
        h("button", { type: "button", class: "primary", onclick: () => this.expand(data.id) }, "Expand neighbours"),
        h("button", { type: "button", onclick: () => ask(data.name) }, "Search for it"),
      ] : [],
    });
    this.seeded = false;
    this.asked = 0; // counts the person's own searches and picks, so a late seed cannot undo them
    byId("entity-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.find(byId("entity-input").value.trim());
    });
    byId("graph-fit").addEventListener("click", () => this.canvas.fit());
    byId("graph-layout").addEventListener("click", () => this.canvas.layout({ force: true }));
    byId("graph-clear").addEventListener("click", () => {
      this.canvas.clear();
      this.inspect(null, null);
      this.say();
    });
    this.changed();
  }

  /** Called when the view opens: an empty canvas starts from the most connected entity. */
  async open() {
    this.canvas.cy.resize();
    if (this.seeded || this.canvas.nodeCount) return;
    this.seeded = true;
    const asked = this.asked;
    try {
      const found = await api.call("cypher_query", { query: MOST_CONNECTED, limit: 1 });
      // the person searched or picked an entity while the seed was on its way: theirs wins
      if (this.asked !== asked) return;
      if (found.rows.length) await this.start(found.rows[0].id, false);
      else this.say("No relations yet: find an entity by name above.");
    } catch (err) {
      this.fail(err);
    }
  }

  async find(query) {
    if (!query) return;
    this.asked += 1;
    try {
      const found = await api.call("search_entities", { query, limit: 12 });
      const chips = found.hits.map((e) =>
        h("button", { type: "button", class: "chip", onclick: () => this.start(e.id) },
          h("span", { class: "swatch", style: { background: colourOf(e.label) } }), `${e.name} (${e.label})`));
      fill(this.hits, h("span", { class: "muted small" }, chips.length ? "Start from:" : `No entity matches “${query}”.`), chips);
      this.hits.hidden = false;
    } catch (err) {
      this.fail(err);
    }
  }

  /** A fresh drawing around one entity; `byPerson` is false only for the page's own first drawing. */
  async start(entityId, byPerson = true) {
    this.seeded = true;
    if (byPerson) this.asked += 1;
    const asked = this.asked;
    this.canvas.clear();
    this.hits.hidden = true;
    await this.expand(entityId, true, asked);
    if (this.asked !== asked) return;
    if (this.canvas.has(entityId)) {
      this.canvas.select(entityId);
      this.inspect("node", this.canvas.cy.getElementById(entityId).data());
    }
  }

  /** `asked`, when given, is the drawing this belongs to: a reply for a drawing since replaced is dropped. */
  async expand(entityId, seed = false, asked = undefined) {
    let walk;
    try {
      walk = await api.call("explore_relationships", { entity: entityId, ...EXPAND });
    } catch (err) {
      this.fail(err);
      return;
    }
    if (asked !== undefined && asked !== this.asked) return;
    const nodes = walk.nodes.map(entityNode);
    const centre = nodes.find((n) => n.id === entityId) || nodes[0];
    if (centre && !this.canvas.has(centre.id)) this.canvas.add([centre], []);
    const before = this.canvas.nodeCount;
    const { capped } = this.canvas.add(nodes, relationEdges(walk.edges, nodes, this.canvas), centre?.id);
    if (centre) {
      this.canvas.addClass(centre.id, seed ? "seed" : "expanded");
      if (seed) this.canvas.addClass(centre.id, "expanded");
    }
    this.canvas.layout();
    const selected = this.canvas.cy.$("node:selected");
    if (selected.nonempty()) this.inspect("node", selected.data()); // its drawn relations changed
    this.report(centre?.name || entityId, this.canvas.nodeCount - before, capped, walk);
  }

  report(name, drawn, capped, walk) {
    const notes = [];
    if (capped) {
      notes.push(`The drawing is capped at ${MAX_DRAWN} nodes: ${plural(capped, "neighbour")} of ${name} not drawn. ` +
        "Clear the canvas or start from another entity to see them.");
    }
    if (walk.truncated_by?.length) {
      notes.push(`${name} has more relations than one expansion draws (cut by ${walk.truncated_by.join(" and ")}: ` +
        `at most ${EXPAND.max_nodes} entities and ${EXPAND.max_edges} relations).`);
    } else if (walk.truncated && walk.hint) {
      notes.push(`${name}: ${walk.hint}`); // shortened by the server to fit its result size
    }
    if (!notes.length && !drawn && walk.nodes.length <= 1) notes.push(`${name} has no relations.`);
    this.say(...notes);
  }

  inspect(kind, data) {
    if (kind === "node") data = { ...data, degree: this.canvas.degree(data.id) };
    this.inspector.show(kind, data);
  }

  changed() {
    const nodes = this.canvas.nodeCount;
    const edges = this.canvas.edgeCount;
    this.status.dataset.nodes = String(nodes);
    this.status.dataset.edges = String(edges);
    this.status.textContent = nodes ? `${plural(nodes, "node")} · ${plural(edges, "relation")} drawn (at most ${MAX_DRAWN})` : "";
    this.legend.render();
  }

  say(...notes) {
    fill(this.notice, notes.map((n) => h("div", {}, n)));
    this.notice.hidden = !notes.length;
    this.notice.classList.remove("error-box");
  }

  fail(err) {
    showError(this.notice, err);
    this.notice.classList.add("error-box");
  }
}
