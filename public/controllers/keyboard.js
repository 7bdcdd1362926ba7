// @ts-check
/**
 * The page's shortcuts, and the sheet that lists them (a modal <dialog>: focus stays in it, Escape
 * or Close closes it and gives the focus back). Escape closes what is open, nearest first — the
 * sidebar, then a message being edited — and otherwise stops the running turn. (Enter and
 * Shift+Enter belong to the message box: controllers/composer.js; Escape in the search field
 * empties it: controllers/sidebar.js.) "Mod" is ⌘ on a Mac and Ctrl elsewhere.
 */
import { activeTurn } from "../lib/conversation.js";

const MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
const MOD = MAC ? "⌘" : "Ctrl";

/** Every shortcut, as the sheet lists it. */
const SHORTCUTS = [
  { keys: [MOD, "Shift", "O"], does: "New conversation" },
  { keys: [MOD, "K"], does: "Search conversations" },
  { keys: ["Shift", "Esc"], does: "Focus the message box" },
  { keys: ["Esc"], does: "Stop the running turn (or close the sidebar, the files panel, or an edit)" },
  { keys: ["Enter"], does: "Send the message" },
  { keys: ["Shift", "Enter"], does: "New line in the message" },
  { keys: [MOD, "/"], does: "Show these shortcuts" },
  { keys: ["Alt", "Shift", "↑"], does: "Leave the terminal (Tab and Esc go to the shell)" },
];

/**
 * @param {{
 *   store: import("../lib/store.js").Store,
 *   ui: { app: HTMLElement, input: HTMLTextAreaElement, conversationSearch: HTMLInputElement, shortcuts: HTMLDialogElement, shortcutList: HTMLElement, shortcutsClose: HTMLElement, shortcutsButton: HTMLElement },
 *   sidebar: { isOpen: () => boolean, dismiss: () => void, show: () => void },
 *   narrow: MediaQueryList,
 *   openNew: () => void,
 *   stopEditing: () => void,
 *   stop: () => void,
 * }} deps
 */
export function listenForKeys({ store, ui, sidebar, narrow, openNew, stopEditing, stop }) {
  ui.shortcutList.replaceChildren(
    ...SHORTCUTS.flatMap(({ keys, does }) => {
      const dt = document.createElement("dt");
      keys.forEach((key, i) => {
        if (i > 0) dt.append(" + ");
        const kbd = document.createElement("kbd");
        kbd.textContent = key;
        dt.append(kbd);
      });
      const dd = document.createElement("dd");
      dd.textContent = does;
      return [dt, dd];
    }),
  );
  /** @type {Element | null} */
  let returnFocus = null;
  const showSheet = () => {
    if (ui.shortcuts.open) return;
    returnFocus = document.activeElement;
    ui.shortcuts.showModal();
    ui.shortcutsClose.focus();
  };
  /** Gives the focus back to where it was when the sheet opened, unless it has moved on since. */
  const giveFocusBack = () => {
    const target = returnFocus;
    returnFocus = null;
    const now = document.activeElement;
    const unmoved = !now || now === document.body || ui.shortcuts.contains(now);
    if (unmoved && target instanceof HTMLElement && target.isConnected) target.focus();
  };
  ui.shortcutsButton.addEventListener("click", showSheet);
  ui.shortcutsClose.addEventListener("click", () => {
    ui.shortcuts.close();
    giveFocusBack();
  });
  // Escape closes it too (the dialog's own cancel). The close event comes a task later: by then a
  // shortcut pressed at once may have moved the focus, and it stays where that put it.
  ui.shortcuts.addEventListener("close", giveFocusBack);

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || ui.app.hidden || event.isComposing) return;
    // An open sheet (these shortcuts, the settings) is the dialog's: Escape closes it (its own
    // cancel), nothing else runs under it.
    if (document.querySelector("dialog[open]")) return;
    const mod = MAC ? event.metaKey : event.ctrlKey;
    const key = event.key.toLowerCase();
    if (mod && event.shiftKey && !event.altKey && key === "o") {
      event.preventDefault();
      openNew();
    } else if (mod && !event.shiftKey && !event.altKey && key === "k") {
      event.preventDefault();
      if (narrow.matches && !sidebar.isOpen()) sidebar.show();
      ui.conversationSearch.focus();
      ui.conversationSearch.select();
    } else if (mod && !event.altKey && (key === "/" || event.code === "Slash")) {
      event.preventDefault();
      showSheet();
    } else if (event.key === "Escape" && event.shiftKey) {
      event.preventDefault();
      if (sidebar.isOpen()) sidebar.dismiss();
      ui.input.focus();
    } else if (event.key === "Escape") {
      if (sidebar.isOpen()) {
        sidebar.dismiss();
      } else if (store.editing) {
        stopEditing();
      } else if (activeTurn(store.conv)) {
        event.preventDefault();
        stop();
      }
    }
  });
}
