// @ts-check
/**
 * The conversation list: newest first under date headings (lib/conversation-list.js), the open
 * one marked, each with Rename and Delete; the one being renamed shows its title in a field.
 */
import { groupByDate } from "../lib/conversation-list.js";
import { timeText } from "../lib/format.js";
import { el } from "./dom.js";

/**
 * A listed conversation (GET /v1/conversations), the open one as its stream has it: what it waits
 * for as the stream said, whatever kind (a kind newer than the list's schema too).
 * @typedef {Omit<import("../lib/api.js").ConversationEntry, "waitingFor"> & { waitingFor: string | null }} ConversationEntry
 */

/**
 * @typedef {{
 *   open: (cid: string) => void,
 *   remove: (entry: ConversationEntry) => void,
 *   startRename: (entry: ConversationEntry) => void,
 *   rename: (entry: ConversationEntry, title: string) => void,
 *   cancelRename: () => void,
 * }} ListHandlers
 */

/**
 * @param {HTMLElement} list
 * @param {ConversationEntry[]} conversations
 * @param {string | null} current
 * @param {string | null} renaming  the conversation whose title is being edited
 * @param {ListHandlers} handlers
 * @param {Date} [now]
 */
export function renderConversationList(list, conversations, current, renaming, handlers, now = new Date()) {
  const focused =
    document.activeElement instanceof HTMLElement && list.contains(document.activeElement)
      ? document.activeElement.dataset.focusKey
      : undefined;
  list.replaceChildren(
    ...groupByDate(conversations, now).map((group, i) =>
      // A heading and the list it names (not a labelled section: that would be a landmark per group).
      el(
        "div",
        { class: "list-group" },
        el("h2", { class: "list-heading", id: `list-group-${i}`, text: group.label }),
        el(
          "ul",
          { "aria-labelledby": `list-group-${i}` },
          ...group.entries.map((c) =>
            entryView(c, c.conversationId === current, c.conversationId === renaming, handlers),
          ),
        ),
      ),
    ),
  );
  const field = /** @type {HTMLInputElement | null} */ (list.querySelector(".rename-form input"));
  if (field) {
    field.focus();
    field.select();
  } else if (focused) {
    // Redrawing the list keeps keyboard focus where it was.
    /** @type {HTMLElement | null} */ (list.querySelector(`[data-focus-key="${CSS.escape(focused)}"]`))?.focus();
  }
}

/**
 * @param {ConversationEntry} c
 * @param {boolean} isCurrent
 * @param {boolean} isRenaming
 * @param {ListHandlers} handlers
 */
function entryView(c, isCurrent, isRenaming, handlers) {
  return el(
    "li",
    { "aria-current": isCurrent ? "page" : undefined },
    isRenaming ? renameForm(c, handlers) : linkTo(c, handlers),
    isRenaming
      ? null
      : el("button", {
          type: "button",
          class: "row-action rename",
          title: `Rename “${c.title}”`,
          "aria-label": `Rename conversation ${c.title}`,
          "data-focus-key": `rename:${c.conversationId}`,
          onclick: () => handlers.startRename(c),
          text: "✎",
        }),
    isRenaming
      ? null
      : el("button", {
          type: "button",
          class: "row-action delete",
          title: `Delete “${c.title}”`,
          "aria-label": `Delete conversation ${c.title}`,
          "data-focus-key": `delete:${c.conversationId}`,
          onclick: () => handlers.remove(c),
          text: "✕",
        }),
  );
}

/** @param {ConversationEntry} c @param {ListHandlers} handlers */
function linkTo(c, handlers) {
  return el(
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
    el("span", {
      class: "meta",
      text: `${c.state === "running" ? (c.waitingFor ? "waiting for you" : "working…") : timeText(c.updatedAt)}${picked(c)}`,
    }),
  );
}

/** The model its first turn picked, after the time (nothing for a conversation on the deployment's default). @param {ConversationEntry} c */
const picked = (c) => (c.agent?.chosen === "first-turn" && c.agent.model ? ` · ${c.agent.model}` : "");

/** The title in a field: Enter saves, Escape (or leaving it unchanged) cancels. @param {ConversationEntry} c @param {ListHandlers} handlers */
function renameForm(c, handlers) {
  const field = /** @type {HTMLInputElement} */ (
    el("input", {
      type: "text",
      maxlength: 200,
      required: true,
      "aria-label": `New title for ${c.title}`,
      autocomplete: "off",
      spellcheck: "false",
    })
  );
  field.value = c.title;
  let done = false;
  const finish = (/** @type {boolean} */ save) => {
    if (done) return;
    done = true;
    const title = field.value.trim();
    if (save && title && title !== c.title) handlers.rename(c, title);
    else handlers.cancelRename();
  };
  const form = el("form", { class: "rename-form" }, field);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    finish(true);
  });
  field.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    event.preventDefault(); // not the page's Escape (closing the sidebar, stopping a turn)
    finish(false);
  });
  // Leaving the field saves what it holds, as chat products do.
  field.addEventListener("blur", () => finish(true));
  return form;
}
