// Small DOM helpers. Text always goes in as text nodes (never innerHTML), since everything shown
// comes from documents and queries: stored text must not become markup.

/**
 * Build an element: h("a", {href: "x", class: "y", onclick: fn}, "text", child, [more]).
 * Attributes starting with "on" become listeners; null, undefined and false children are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style" && typeof value === "object") Object.assign(node.style, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

/** Replace a node's content. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** The evidence number badge: [n] as an agent cites it, or a dash for what is not evidence. */
export function cite(n) {
  return n ? h("span", { class: "cite", title: "evidence number in this session" }, `[${n}]`)
    : h("span", { class: "cite none", title: "not numbered evidence" }, "–");
}

/** An error from the server (or the network) with its hint, in `box`. */
export function showError(box, err) {
  fill(box, h("div", { class: "message" }, err.message || String(err)), err.hint ? h("div", { class: "hint" }, err.hint) : null);
  box.hidden = false;
}

export function hideError(box) {
  box.hidden = true;
  box.replaceChildren();
}

/** Definition list of [label, value, {mono}] rows, skipping empty values. */
export function props(rows) {
  const dl = h("dl", { class: "props" });
  for (const [label, value, opts] of rows) {
    if (value === null || value === undefined || value === "") continue;
    dl.append(h("dt", {}, label), h("dd", { class: opts?.mono ? "mono" : null }, value));
  }
  return dl;
}

export function plural(count, word, many = `${word}s`) {
  return `${count.toLocaleString()} ${count === 1 ? word : many}`;
}

/** A table with a header row; `cells(row)` returns the row's cells (nodes or text). */
export function table(columns, rows, cells, { onRow, numeric = [] } = {}) {
  const head = h("tr", {}, columns.map((c) => h("th", {}, c)));
  const body = rows.map((row) => {
    const tr = h("tr", { class: onRow ? "clickable" : null },
      cells(row).map((cell, i) => h("td", { class: numeric.includes(i) ? "num" : null }, cell)));
    if (onRow) tr.addEventListener("click", () => onRow(row, tr));
    return tr;
  });
  return h("table", {}, h("thead", {}, head), h("tbody", {}, body));
}
