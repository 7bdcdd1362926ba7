// @ts-check
/**
 * The workspace panel's tabs (controllers/workspace.js): a tablist whose tabs each show their panel,
 * as the WAI-ARIA tabs pattern has them: one Tab stop (the selected tab), ← → Home End move between
 * the tabs shown and select (lib/workspace.js `tabKey`). A hidden tab is skipped and never selected.
 */
import { tabKey } from "../lib/workspace.js";

/**
 * @param {{
 *   el: typeof import("./dom.js").el,
 *   label: string,
 *   tabs: Array<{ id: string, text: string, panel: HTMLElement }>,
 *   picked: (id: string) => void,
 * }} options  `picked`: a tab was selected (by a click, a key or `pick`)
 */
export function createTabs({ el, label, tabs, picked }) {
  const buttons = tabs.map(({ id, text, panel }) => {
    panel.setAttribute("role", "tabpanel");
    panel.setAttribute("aria-labelledby", id);
    return el("button", { type: "button", role: "tab", id, "aria-controls": panel.id, text, onclick: () => pick(id) });
  });
  const node = el("div", { class: "ws-tabs", role: "tablist", "aria-label": label }, ...buttons);
  let current = /** @type {HTMLButtonElement} */ (buttons[0]);

  /** Selects a tab (the first when it is hidden), shows its panel; `focus` puts the focus on it. @param {string} id */
  function pick(id, focus = false) {
    current = buttons.find((b) => b.id === id && !b.hidden) ?? /** @type {HTMLButtonElement} */ (buttons[0]);
    buttons.forEach((button, i) => {
      const on = button === current;
      button.setAttribute("aria-selected", String(on));
      button.tabIndex = on ? 0 : -1;
      /** @type {HTMLElement} */ (tabs[i]?.panel).hidden = !on;
    });
    if (focus) current.focus();
    picked(current.id);
  }

  node.addEventListener("keydown", (event) => {
    const shown = buttons.filter((b) => !b.hidden);
    const to = tabKey(event.key, shown.indexOf(/** @type {HTMLButtonElement} */ (event.target)), shown.length);
    if (to === null) return;
    event.preventDefault();
    pick(/** @type {HTMLButtonElement} */ (shown[to]).id, true);
  });

  return {
    node,
    pick,
    /** The selected tab's id. */
    current: () => current.id,
    /** A tab's button. @param {string} id */
    tab: (id) => /** @type {HTMLButtonElement} */ (buttons.find((b) => b.id === id)),
  };
}
