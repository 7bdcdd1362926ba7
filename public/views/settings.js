// @ts-check
/**
 * The settings view's lists (controllers/settings.js fills them): the user's model keys and MCP
 * servers, each row its name, what the API says of it (never a key or an auth value: no answer
 * carries one) and its actions. Delete asks again in the row before anything is sent.
 */
import { credentialLine, serverLine } from "../lib/settings.js";

/**
 * The page's own DOM helpers, given by its caller: this view is loaded with the settings view, at
 * its first opening, and shares no module with the page's bundle (app.js).
 * @typedef {{
 *   el: typeof import("./dom.js").el,
 *   timeElement: typeof import("./dom.js").timeElement,
 *   timeText: typeof import("../lib/format.js").timeText,
 * }} PageDom
 */

/** @typedef {import("../lib/wire").CredentialView} CredentialView */
/** @typedef {import("../lib/wire").McpServerView} McpServerView */
/**
 * @typedef {{
 *   confirming: string | null,
 *   ask: (name: string | null) => void,
 *   remove: (name: string) => void,
 * }} RowDeletion  `confirming`: the row whose deletion is being asked for
 */

/**
 * The settings view's lists, drawn with the page's DOM helpers.
 * @param {PageDom} dom
 */
export function settingsViews({ el, timeElement, timeText }) {
  /**
   * A row's name, its line and its time, then its buttons (or the question Delete asks).
   * @param {string} name @param {string} line @param {string} updatedAt @param {Node[]} actions
   * @param {RowDeletion} deletion @param {string} what  "key", "MCP server"
   */
  function row(name, line, updatedAt, actions, deletion, what) {
    const asking = deletion.confirming === name;
    return el(
      "li",
      { class: "settings-item", "data-name": name },
      el(
        "div",
        { class: "settings-item-text" },
        el("span", { class: "settings-item-name", text: name }),
        el("span", { class: "settings-item-line", text: line }),
        el("span", { class: "hint" }, "Updated ", timeElement(updatedAt, timeText(updatedAt))),
      ),
      asking
        ? el(
            "div",
            { class: "settings-confirm", role: "group", "aria-label": `Delete the ${what} ${name}?` },
            el("span", { text: `Delete “${name}”?` }),
            el("button", {
              type: "button",
              class: "danger",
              "data-focus": "yes",
              onclick: () => deletion.remove(name),
              text: "Yes, delete",
            }),
            el("button", { type: "button", onclick: () => deletion.ask(null), text: "Cancel" }),
          )
        : el(
            "div",
            { class: "settings-actions" },
            ...actions,
            el("button", {
              type: "button",
              class: "danger",
              "data-focus": "delete",
              "aria-label": `Delete the ${what} ${name}`,
              onclick: () => deletion.ask(name),
              text: "Delete",
            }),
          ),
    );
  }

  /**
   * @param {HTMLElement} list
   * @param {CredentialView[]} credentials
   * @param {{ replace: (c: CredentialView) => void } & RowDeletion} handlers
   */
  function renderCredentials(list, credentials, handlers) {
    list.replaceChildren(
      ...credentials.map((c) =>
        row(
          c.name,
          credentialLine(c),
          c.updatedAt,
          [
            el("button", {
              type: "button",
              "aria-label": `Replace key of ${c.name}`,
              onclick: () => handlers.replace(c),
              text: "Replace key",
            }),
          ],
          handlers,
          "key",
        ),
      ),
    );
  }

  /**
   * @param {HTMLElement} list
   * @param {McpServerView[]} servers
   * @param {{ edit: (s: McpServerView) => void, toggle: (s: McpServerView) => void } & RowDeletion} handlers
   */
  function renderServers(list, servers, handlers) {
    list.replaceChildren(
      ...servers.map((s) =>
        row(
          s.name,
          `${s.enabled ? "Enabled" : "Disabled"} · ${serverLine(s)}`,
          s.updatedAt,
          [
            el("button", {
              type: "button",
              "aria-label": `Edit the MCP server ${s.name}`,
              onclick: () => handlers.edit(s),
              text: "Edit",
            }),
            el("button", {
              type: "button",
              "aria-label": `${s.enabled ? "Disable" : "Enable"} the MCP server ${s.name}`,
              "data-focus": "toggle",
              onclick: () => handlers.toggle(s),
              text: s.enabled ? "Disable" : "Enable",
            }),
          ],
          handlers,
          "MCP server",
        ),
      ),
    );
  }

  return { renderCredentials, renderServers };
}
