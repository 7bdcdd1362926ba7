// @ts-check
/**
 * The page's one shortcut: Escape closes what is open, nearest first — the sidebar, then a message
 * being edited — and otherwise stops the running turn. (Enter and Shift+Enter belong to the
 * message box: controllers/composer.js.)
 */
import { activeTurn } from "../lib/reducer.js";

/**
 * @param {{
 *   store: import("../lib/store.js").Store,
 *   ui: { app: HTMLElement },
 *   sidebar: { isOpen: () => boolean, dismiss: () => void },
 *   stopEditing: () => void,
 *   stop: () => void,
 * }} deps
 */
export function listenForKeys({ store, ui, sidebar, stopEditing, stop }) {
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.defaultPrevented || ui.app.hidden) return;
    if (sidebar.isOpen()) {
      sidebar.dismiss();
    } else if (store.editing) {
      stopEditing();
    } else if (activeTurn(store.conv)) {
      event.preventDefault();
      stop();
    }
  });
}
