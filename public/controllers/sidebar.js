// @ts-check
/**
 * The sidebar: the conversation list (fetched into the store, drawn by views/sidebar.js, with the
 * open conversation as its stream has it), New conversation, Delete, and opening and closing it.
 * Closed on a narrow screen, it is off-screen: out of the tab order and the accessibility tree;
 * open there, a scrim covers the page behind it, and a tap on the scrim closes it (as Escape does).
 */
import { activeTurn } from "../lib/reducer.js";
import { announceDeleted } from "../lib/storage.js";
import { renderConversationList } from "../views/sidebar.js";

const LIST_LIMIT = 100;

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { sidebar: HTMLElement, scrim: HTMLElement, toggleSidebar: HTMLElement, newConversation: HTMLElement, conversationList: HTMLElement, input: HTMLTextAreaElement },
 *   narrow: MediaQueryList,
 *   open: (cid: string) => Promise<void>,
 *   openNew: () => Promise<void>,
 *   screen: { showBanner: (text: string, kind?: string) => void, announce: (text: string) => void },
 * }} deps
 */
export function createSidebar({ api, store, ui, narrow, open, openNew, screen }) {
  /** @type {Promise<void> | null} */
  let refreshing = null;

  /** Fetches the list again (one fetch at a time: callers meanwhile share it), then draws it. */
  function refresh() {
    refreshing ??= (async () => {
      try {
        store.conversations = await api.conversations(LIST_LIMIT);
        store.listComplete = store.conversations.length < LIST_LIMIT;
      } catch {
        // keep what we had
      } finally {
        refreshing = null;
      }
      draw();
    })();
    return refreshing;
  }

  function draw() {
    // The open conversation as its stream has it: the list may not have caught up with a new ask yet.
    const active = activeTurn(store.conv);
    const entries = store.conversations.map((c) =>
      c.conversationId === store.conv.cid && active?.status === "running" ? { ...c, state: /** @type {const} */ ("running"), waitingFor: active.waitingFor } : c,
    );
    renderConversationList(ui.conversationList, entries, store.conv.cid, { open: (cid) => open(cid), remove });
  }

  /** @param {{ conversationId: string, title: string }} entry */
  async function remove(entry) {
    if (!confirm(`Delete “${entry.title}”? This removes it everywhere.`)) return;
    try {
      await api.remove(entry.conversationId);
    } catch (err) {
      return screen.showBanner(`Could not delete: ${err instanceof Error ? err.message : String(err)}`);
    }
    announceDeleted(entry.conversationId);
    await refresh();
    if (entry.conversationId === store.conv.cid) await openNew();
    else ui.input.focus();
    screen.announce(`Deleted “${entry.title}”.`);
  }

  /** @param {boolean} isOpen */
  function set(isOpen) {
    ui.sidebar.classList.toggle("open", isOpen);
    ui.toggleSidebar.setAttribute("aria-expanded", String(isOpen));
    ui.sidebar.inert = narrow.matches && !isOpen;
    ui.scrim.hidden = !(narrow.matches && isOpen);
  }

  const isOpen = () => ui.sidebar.classList.contains("open");

  /** Closes it and gives the focus back to the button that opens it (Escape, a tap on the scrim). */
  function dismiss() {
    set(false);
    ui.toggleSidebar.focus();
  }

  ui.newConversation.addEventListener("click", () => openNew());
  ui.toggleSidebar.addEventListener("click", () => {
    const opening = !isOpen();
    set(opening);
    if (opening) ui.newConversation.focus();
  });
  narrow.addEventListener("change", () => set(false));
  ui.scrim.addEventListener("click", () => dismiss());
  set(false);

  return {
    refresh,
    draw,
    close: () => set(false),
    isOpen,
    dismiss,
  };
}
