// The legend of a canvas: every label drawn, its colour and count; clicking one hides or shows
// its nodes, so a crowded neighbourhood can be read one kind at a time.

import { fill, h } from "../dom.js";
import { colourOf } from "./style.js";

export class Legend {
  constructor(container, canvas) {
    this.container = container;
    this.canvas = canvas;
  }

  render() {
    const labels = this.canvas.labelCounts();
    if (!labels.length) {
      fill(this.container);
      return;
    }
    const entries = labels.map(([label, count]) =>
      h("button", {
        type: "button",
        "aria-pressed": String(!this.canvas.hiddenLabels.has(label)),
        title: `hide or show ${label}`,
        dataset: { label },
        onclick: () => {
          this.canvas.toggleLabel(label);
          this.render();
        },
      },
      h("span", { class: "swatch", style: { background: colourOf(label) } }),
      label,
      h("span", { class: "n" }, count.toLocaleString())));
    const reset = this.canvas.hiddenLabels.size
      ? h("button", { type: "button", class: "link", onclick: () => { this.canvas.showAllLabels(); this.render(); } }, "show all")
      : null;
    fill(this.container, h("div", { class: "legend-title" }, "Labels"), entries, reset);
  }
}
