// Which knowledge base the page reads, when the server serves a folder of them (--db-dir).
// The choice is the page's ?db= (so a link names it), else the tab's last choice, else the
// server's default; changing it reloads the page, since every view and the evidence numbers
// belong to one knowledge base.

import { api } from "./api.js";
import { byId, h } from "./dom.js";

const DB_KEY = "evigraph.db";

/** Lists the served knowledge bases, picks one for `api`, and shows the picker when there are several. */
export async function pickDatabase() {
  const listing = await api.dbs();
  const names = listing.dbs.map((d) => d.name);
  const wanted = new URLSearchParams(location.search).get("db") || sessionStorage.getItem(DB_KEY);
  const chosen = names.includes(wanted) ? wanted : listing.default || names[0] || null;
  api.db = names.length > 1 ? chosen : null; // one knowledge base needs no header
  if (chosen) sessionStorage.setItem(DB_KEY, chosen);
  if (names.length > 1) {
    const select = byId("db-select");
    select.replaceChildren(...names.map((n) => h("option", { value: n, selected: n === chosen }, n)));
    select.addEventListener("change", () => {
      sessionStorage.setItem(DB_KEY, select.value);
      const url = new URL(location.href);
      url.searchParams.set("db", select.value);
      location.assign(url);
    });
    byId("db-picker").hidden = false;
  }
  return chosen;
}
