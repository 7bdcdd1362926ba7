// @ts-check
/**
 * The sidebar: the conversation list (fetched into the store, drawn by views/sidebar.js under date
 * headings, with the open conversation as its stream has it), the search of its titles, New
 * conversation, Rename, Delete, and opening and closing it. Closed on a narrow screen, it is
 * off-screen: out of the tab order and the accessibility tree; open there, a scrim covers the page
 * behind it, and a tap on the scrim closes it (as Escape does).
 *
 * The search filters the list as loaded (the LIST_LIMIT most recent conversations; the hint says
 * so when there are more). The list is fetched again when a turn of the open conversation moves,
 * when another tab of this browser renames or deletes one, and when the tab comes back into view or
 * its window into focus (another device's renames and new conversations show then).
 */
import { LIST_LIMIT } from "../lib/api.js";
import { activeTurn } from "../lib/conversation.js";
import { searchTitles } from "../lib/conversation-list.js";
import { announceDeleted, announceRenamed } from "../lib/storage.js";
import { renderConversationList } from "../views/sidebar.js";

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { sidebar: HTMLElement, scrim: HTMLElement, toggleSidebar: HTMLElement, newConversation: HTMLElement, conversationList: HTMLElement, conversationSearch: HTMLInputElement, searchStatus: HTMLElement, input: HTMLTextAreaElement },
 *   narrow: MediaQueryList,
 *   open: (cid: string) => Promise<void>,
 *   openNew: () => Promise<void>,
 *   screen: { showBanner: (text: string, kind?: string) => void, announce: (text: string) => void, updateTitle: () => void, schedule: () => void },
 * }} deps
 */
export function createSidebar({ api, store, ui, narrow, open, openNew, screen }) {
  /** @type {Promise<void> | null} */
  let refreshing = null;
  /** The conversation whose title is in a field; the list is not redrawn under it. */
  /** @type {string | null} */
  let renaming = null;

  /** Fetches the list again (one fetch at a time: callers meanwhile share it), then draws it. */
  function refresh() {
    refreshing ??= (async () => {
      try {
        store.conversations = await api.conversations();
        store.listComplete = store.conversations.length < LIST_LIMIT;
      } catch {
        // keep what we had
      } finally {
        refreshing = null;
      }
      followTitle();
      draw();
    })();
    return refreshing;
  }

  /** The open conversation renamed elsewhere (another tab or device): its heading follows the list. */
  function followTitle() {
    const listed = store.conversations.find((c) => c.conversationId === store.conv.cid);
    if (!listed || !store.conv.title || listed.title === store.conv.title) return;
    store.replace({ ...store.conv, title: listed.title });
    screen.updateTitle();
    screen.schedule();
  }

  /** The list as loaded, the open conversation as its stream has it (the list may not have caught up with a new ask yet). */
  function entries() {
    const active = activeTurn(store.conv);
    return store.conversations.map((c) =>
      c.conversationId === store.conv.cid && active?.status === "running"
        ? { ...c, state: /** @type {const} */ ("running"), waitingFor: active.waitingFor }
        : c,
    );
  }

  function draw() {
    if (renaming !== null) return;
    const all = entries();
    const query = ui.conversationSearch.value;
    const shown = searchTitles(all, query);
    renderConversationList(ui.conversationList, shown, store.conv.cid, null, handlers);
    ui.searchStatus.textContent = searchStatus(query, shown.length, all.length, store.listComplete);
  }

  /** Puts the conversation's title in a field (views/sidebar.js): Enter saves, Escape cancels. @param {string} cid */
  function startRenaming(cid) {
    renaming = cid;
    renderConversationList(
      ui.conversationList,
      searchTitles(entries(), ui.conversationSearch.value),
      store.conv.cid,
      renaming,
      handlers,
    );
  }

  /**
   * @param {import("../views/sidebar.js").ConversationEntry} entry
   * @param {string} title
   */
  async function rename(entry, title) {
    let renamed;
    try {
      renamed = await api.rename(entry.conversationId, title);
    } catch (err) {
      stopRenaming(entry.conversationId);
      return screen.showBanner(`Could not rename: ${err instanceof Error ? err.message : String(err)}`);
    }
    store.conversations = store.conversations.map((c) =>
      c.conversationId === renamed.conversationId ? { ...c, title: renamed.title } : c,
    );
    if (entry.conversationId === store.conv.cid) {
      store.replace({ ...store.conv, title: renamed.title });
      screen.updateTitle();
      screen.schedule();
    }
    announceRenamed(entry.conversationId);
    stopRenaming(entry.conversationId);
    screen.announce(`Renamed to “${renamed.title}”.`);
  }

  /** The field goes; the focus goes back to the conversation's link. @param {string} cid */
  function stopRenaming(cid) {
    renaming = null;
    draw();
    /** @type {HTMLElement | null} */ (
      ui.conversationList.querySelector(`[data-focus-key="${CSS.escape(`open:${cid}`)}"]`)
    )?.focus();
  }

  /** @type {import("../views/sidebar.js").ListHandlers} */
  const handlers = {
    open: (cid) => open(cid),
    remove: (entry) => remove(entry),
    startRename: (entry) => startRenaming(entry.conversationId),
    rename: (entry, title) => rename(entry, title),
    cancelRename: () => renaming !== null && stopRenaming(renaming),
  };

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
  ui.conversationSearch.addEventListener("input", () => draw());
  ui.conversationSearch.addEventListener("keydown", (event) => {
    // Escape empties the search first (then, pressed again, does what it does elsewhere).
    if (event.key !== "Escape" || !ui.conversationSearch.value) return;
    event.preventDefault();
    ui.conversationSearch.value = "";
    draw();
  });
  // Back in view (or back in focus): what other devices changed (a rename, a new conversation) shows.
  const refreshIfShown = () => {
    if (document.visibilityState === "visible" && !ui.sidebar.closest("[hidden]")) refresh();
  };
  document.addEventListener("visibilitychange", refreshIfShown);
  addEventListener("focus", refreshIfShown);

  return {
    refresh,
    draw,
    close: () => set(false),
    /** Opens it (a narrow screen's drawer). */
    show: () => set(true),
    isOpen,
    dismiss,
  };
}

/**
 * What the search found, for the line under the field (a status: a screen reader hears it).
 * @param {string} query
 * @param {number} shown
 * @param {number} loaded
 * @param {boolean} complete  whether the list loaded is every conversation
 */
function searchStatus(query, shown, loaded, complete) {
  if (!query.trim()) return "";
  const scope = complete ? "" : ` (searched the ${loaded} most recent)`;
  if (shown === 0) return `No conversation title matches “${query.trim()}”${scope}.`;
  return `${shown} of ${loaded} conversation${loaded === 1 ? "" : "s"}${scope}.`;
}
