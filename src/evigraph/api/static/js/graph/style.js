// How the graph looks: one colour per label (stable across reloads and views) and the Cytoscape
// stylesheet both canvases use.

const PALETTE = [
  "#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2",
  "#dc2626", "#65a30d", "#c026d3", "#0d9488", "#ea580c", "#4f46e5",
];

// The labels every knowledge base has keep the same colour everywhere.
const FIXED = {
  Person: "#2563eb",
  Organization: "#059669",
  Location: "#d97706",
  Date: "#7c3aed",
  Technology: "#0891b2",
  Product: "#db2777",
  Concept: "#65a30d",
  Event: "#ea580c",
  Unknown: "#8a94a6",
  Chunk: "#94a3b8",
  Document: "#475569",
  // code (ingest_code): apart from each other and from the entity labels above
  Module: "#0d9488",
  Class: "#dc2626",
  Function: "#4f46e5",
  Repo: "#334155",
};

/** The colour of `label`: a fixed one, else one picked by a hash of the name. */
export function colourOf(label) {
  if (FIXED[label]) return FIXED[label];
  let hash = 0;
  for (const ch of String(label)) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return PALETTE[hash % PALETTE.length];
}

export const STYLESHEET = [
  {
    selector: "node",
    style: {
      "background-color": "data(colour)",
      label: "data(name)",
      width: 22,
      height: 22,
      "font-size": 11,
      "font-family": "system-ui, sans-serif",
      color: "#1d2330",
      "text-valign": "bottom",
      "text-margin-y": 4,
      "text-max-width": "140px",
      "text-wrap": "ellipsis",
      "text-background-color": "#ffffff",
      "text-background-opacity": 0.8,
      "text-background-padding": "1px",
      "border-width": 2,
      "border-color": "#ffffff",
    },
  },
  { selector: "node.seed", style: { width: 32, height: 32, "font-weight": 600 } },
  { selector: "node.expanded", style: { "border-color": "#1d2330", "border-width": 2 } },
  { selector: "node:selected", style: { "border-color": "#f59e0b", "border-width": 4 } },
  {
    selector: "edge",
    style: {
      width: 1.4,
      "line-color": "#b8c0cc",
      "target-arrow-color": "#b8c0cc",
      "target-arrow-shape": "triangle",
      "arrow-scale": 0.8,
      "curve-style": "bezier",
      label: "data(type)",
      "font-size": 8,
      color: "#8a94a6",
      "text-rotation": "autorotate",
      "text-opacity": 0,
    },
  },
  { selector: "edge:selected", style: { "line-color": "#f59e0b", "target-arrow-color": "#f59e0b", width: 3, "text-opacity": 1 } },
  { selector: ".filtered", style: { display: "none" } },
];
