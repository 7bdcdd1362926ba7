// @ts-check
/** The conversation list: newest first, the open one marked, each with its delete button. */
import { timeText } from "../lib/format.js";
import { el } from "./dom.js";

/**
 * A listed conversation (GET /v1/conversations), the open one as its stream has it: what it waits
 * for as the stream said, whatever kind (a kind newer than the list's schema too).
 * @typedef {Omit<import("../lib/api.js").ConversationEntry, "waitingFor"> & { waitingFor: string | null }} ConversationEntry
 */

/**
 * @param {HTMLElement} list
 * @param {ConversationEntry[]} conversations
 * @param {string | null} current
 * @param {{ open: (cid: string) => void, remove: (entry: ConversationEntry) => void }} handlers
 */
export function renderConversationList(list, conversations, current, handlers) {
  const focused = document.activeElement instanceof HTMLElement && list.contains(document.activeElement) ? document.activeElement.dataset.focusKey : undefined;
  list.replaceChildren(
    ...conversations.map((c) =>
      el(
        "li",
        { "aria-current": c.conversationId === current ? "page" : undefined },
        el(
          "a",
          {
            href: `?c=${encodeURIComponent(c.conversationId)}`,
            "data-focus-key": `open:${c.conversationId}`,
            onclick: (/** @type {MouseEvent} */ event) => {
              if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return; // a new tab: the browser's job
              event.preventDefault();
              handlers.open(c.conversationId);
            },
          },
          el("span", { class: "title", text: c.title }),
          el("span", { class: "meta", text: c.state === "running" ? (c.waitingFor ? "waiting for you" : "working…") : timeText(c.updatedAt) }),
        ),
        el("button", {
          type: "button",
          class: "delete",
          title: `Delete “${c.title}”`,
          "aria-label": `Delete conversation ${c.title}`,
          "data-focus-key": `delete:${c.conversationId}`,
          onclick: () => handlers.remove(c),
          text: "✕",
        }),
      ),
    ),
  );
  // Redrawing the list keeps keyboard focus where it was.
  if (focused) /** @type {HTMLElement | null} */ (list.querySelector(`[data-focus-key="${CSS.escape(focused)}"]`))?.focus();
}
