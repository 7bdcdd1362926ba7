// @ts-check
/**
 * The workspace panel's Terminal tab as the panel holds it (controllers/workspace.js, in its chunk):
 * whether the environment has terminals (asked once, at the panel's first opening: a 501 hides the
 * tab), the terminal itself (controllers/terminal.js, a chunk of its own with xterm) loaded when the
 * tab first shows, and what it is told: shown, the open conversation changed, the chat's "Open in
 * terminal" (the conversation's agent's UI).
 */

const TERMINALS = "/v1/environment/terminals";
/** @param {unknown} err */
const why = (err) => (err instanceof Error ? err.message : String(err));

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   el: typeof import("../views/dom.js").el,
 *   store: import("../lib/store.js").Store,
 *   tab: HTMLButtonElement,
 *   panel: HTMLElement,
 *   sent: () => boolean,
 *   hide: () => void,
 * }} deps  `tab`, `panel`: the Terminal tab and its panel; `sent`: the open conversation reached the
 *   server; `hide`: the environment has no terminal: the tab is hidden, the panel shows another
 */
export function createTerminalTab({ api, el, store, tab, panel, sent, hide }) {
  /** The terminal's chunk, loading or loaded. @type {Promise<import("./terminal.js").TerminalTab> | null} */
  let terminal = null;
  /** The same, once loaded. @type {import("./terminal.js").TerminalTab | null} */
  let view = null;
  /** A conversation whose agent's UI the tab is to show when it next shows. @type {string | null} */
  let wantAgent = null;
  let probed = false;

  /** The tab is shown (the panel open): the terminal drawn and connected, loaded first if need be. */
  function show() {
    terminal ??= import("./terminal.js").then(({ createTerminal }) =>
      createTerminal({
        api,
        el,
        node: panel,
        leave: () => tab.focus(),
        unavailable: (reason) => {
          tab.setAttribute("aria-disabled", "true");
          tab.title = reason;
        },
        conversation: () => ({ cid: store.conv.cid, sent: sent() }),
      }),
    );
    terminal.catch((err) => {
      terminal = null;
      panel.replaceChildren(el("p", { class: "hint", text: `The terminal could not be loaded: ${why(err)}` }));
    });
    terminal.then((t) => {
      view = t;
      if (panel.hidden) return;
      t.show(wantAgent);
      wantAgent = null;
    });
  }

  /** Asks once whether the environment serves terminals; none (501 capability_denied): no tab. */
  function probe() {
    if (probed) return;
    probed = true;
    api.request(TERMINALS).catch((err) => {
      if (/** @type {{ code?: string }} */ (err)?.code !== "capability_denied") return;
      tab.hidden = true;
      hide();
    });
  }

  return {
    show,
    probe,
    /** The next showing opens the open conversation's agent's UI (interactive mode). */
    openAgent: () => {
      wantAgent = store.conv.cid;
    },
    /** The open conversation changed (another one, a turn, interactive mode taken or given back). */
    changed: () => view?.changed(!!store.conv.interactive),
  };
}
