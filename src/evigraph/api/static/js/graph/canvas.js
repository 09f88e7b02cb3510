// A Cytoscape canvas that draws at most `maxNodes` nodes.
//
// A knowledge base may hold a hundred thousand entities; a browser stays responsive with a few
// hundred drawn. So nothing here ever loads "the graph": views add one neighbourhood at a time,
// and once the cap is reached further nodes are refused and counted, for the view to say so.

import { colourOf, STYLESHEET } from "./style.js";

export const MAX_DRAWN = 400;
const COSE_UP_TO = 250;
const FIT_ZOOM = 1.25; // the most a fit zooms in: labels stay at about their CSS size // beyond this, the force layout takes too long to run on every expansion

export class GraphCanvas {
  /**
   * `onSelect(kind, data)` is called with "node" or "edge" and the element's data, or (null, null)
   * when the background is clicked; `onExpand(data)` on a node's double-click; `onChange()` after
   * anything was drawn or removed.
   */
  constructor(container, { onSelect = () => {}, onExpand = null, onChange = () => {}, maxNodes = MAX_DRAWN } = {}) {
    if (typeof window.cytoscape !== "function") throw new Error("Cytoscape.js did not load (vendor/cytoscape.min.js)");
    this.maxNodes = maxNodes;
    this.onChange = onChange;
    this.hiddenLabels = new Set();
    this.cy = window.cytoscape({
      container,
      style: STYLESHEET,
      minZoom: 0.1,
      maxZoom: 3,
      boxSelectionEnabled: false,
    });
    this.cy.on("tap", "node", (e) => onSelect("node", e.target.data()));
    this.cy.on("tap", "edge", (e) => onSelect("edge", e.target.data()));
    this.cy.on("tap", (e) => {
      if (e.target === this.cy) onSelect(null, null);
    });
    if (onExpand) this.cy.on("dbltap", "node", (e) => onExpand(e.target.data()));
  }

  get nodeCount() {
    return this.cy.nodes().length;
  }

  get edgeCount() {
    return this.cy.edges().length;
  }

  has(id) {
    return this.cy.getElementById(id).nonempty();
  }

  clear() {
    this.cy.elements().remove();
    this.onChange();
  }

  /**
   * Draw `nodes` ({id, name, label, ...}) and `edges` ({id, source, target, type, ...}) not drawn
   * yet, new nodes placed around `anchor` (a drawn node's id). Returns how many nodes were drawn
   * and how many were left out by the cap; an edge is drawn only when both its ends are.
   */
  add(nodes, edges, anchor = null) {
    const fresh = nodes.filter((n, i) => !this.has(n.id) && nodes.findIndex((m) => m.id === n.id) === i);
    const room = Math.max(0, this.maxNodes - this.nodeCount);
    const drawn = fresh.slice(0, room);
    const centre = anchor && this.has(anchor) ? this.cy.getElementById(anchor).position() : this.centre();
    const ring = 70 + 9 * drawn.length;
    const added = drawn.map((n, i) => ({
      group: "nodes",
      data: { ...n, colour: colourOf(n.label) },
      classes: this.hiddenLabels.has(n.label) ? "filtered" : "",
      position: drawn.length === 1 && !this.nodeCount
        ? { ...centre }
        : {
          x: centre.x + ring * Math.cos((2 * Math.PI * i) / drawn.length),
          y: centre.y + ring * Math.sin((2 * Math.PI * i) / drawn.length),
        },
    }));
    this.cy.add(added);
    const links = edges
      .filter((e) => !this.has(e.id) && this.has(e.source) && this.has(e.target))
      .map((e) => ({ group: "edges", data: { ...e } }));
    this.cy.add(links);
    this.onChange();
    return { drawn: drawn.length, capped: fresh.length - drawn.length };
  }

  centre() {
    const ext = this.cy.extent();
    return this.nodeCount ? { x: (ext.x1 + ext.x2) / 2, y: (ext.y1 + ext.y2) / 2 } : { x: 0, y: 0 };
  }

  /** Force layout while the drawing is small enough for it; fits the view either way. */
  layout({ force = false } = {}) {
    if (!this.nodeCount) return;
    if (this.nodeCount <= COSE_UP_TO || force) {
      this.cy.layout({
        name: "cose",
        animate: false,
        randomize: false,
        fit: false,
        nodeDimensionsIncludeLabels: true,
        nodeRepulsion: () => 60000,
        idealEdgeLength: () => 110,
        edgeElasticity: () => 80,
        gravity: 0.3,
        numIter: 1000,
      }).run();
    }
    this.fit();
  }

  /** The whole drawing in view, without blowing a small one up past a readable size. */
  fit() {
    this.cy.fit(undefined, 40);
    if (this.cy.zoom() > FIT_ZOOM) {
      this.cy.zoom(FIT_ZOOM);
      this.cy.center();
    }
  }

  addClass(id, cls) {
    this.cy.getElementById(id).addClass(cls);
  }

  select(id) {
    this.cy.elements().unselect();
    this.cy.getElementById(id).select();
  }

  /** Labels drawn, with how many nodes carry each, most first. */
  labelCounts() {
    const counts = new Map();
    this.cy.nodes().forEach((n) => counts.set(n.data("label"), (counts.get(n.data("label")) || 0) + 1));
    return [...counts.entries()].sort((a, b) => b[1] - a[1] || String(a[0]).localeCompare(String(b[0])));
  }

  /** Hide or show the nodes of `label` (their relations follow them). */
  toggleLabel(label) {
    const hide = !this.hiddenLabels.has(label);
    if (hide) this.hiddenLabels.add(label);
    else this.hiddenLabels.delete(label);
    const nodes = this.cy.nodes().filter((n) => n.data("label") === label);
    if (hide) nodes.addClass("filtered");
    else nodes.removeClass("filtered");
    return !hide;
  }

  showAllLabels() {
    this.hiddenLabels.clear();
    this.cy.nodes().removeClass("filtered");
  }

  /** Nodes drawn next to `id`. */
  degree(id) {
    return this.cy.getElementById(id).connectedEdges().length;
  }
}
