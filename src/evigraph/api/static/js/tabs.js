// The view tabs. The open view is kept in the address (#graph, #search, ...), so a reload or a
// shared link opens the same one.

export class Tabs {
  /** `onOpen(view)` runs each time a view is shown. */
  constructor(nav, onOpen) {
    this.buttons = [...nav.querySelectorAll("[data-view]")];
    this.onOpen = onOpen;
    for (const button of this.buttons) button.addEventListener("click", () => this.show(button.dataset.view));
    window.addEventListener("hashchange", () => this.show(this.fromHash(), false));
  }

  fromHash() {
    const view = location.hash.slice(1);
    const button = this.buttons.find((b) => b.dataset.view === view && !b.hidden);
    return button ? view : "graph";
  }

  show(view, remember = true) {
    for (const button of this.buttons) {
      const open = button.dataset.view === view;
      button.setAttribute("aria-selected", String(open));
      document.getElementById(`view-${button.dataset.view}`).hidden = !open;
    }
    if (remember && location.hash !== `#${view}`) history.replaceState(null, "", `#${view}`);
    this.current = view;
    this.onOpen(view);
  }
}
