// @ts-check
/**
 * The conversation's turns as a list, redrawn from state (only what changed), and the scroll rule:
 * the list follows the newest content until the reader scrolls up; then a "Jump to latest" button
 * appears, and sending (or the button) follows again. Buttons inside turns are handled here, by
 * delegation, because markdown and tool bodies are redrawn as they stream.
 */
import { answerText, createTurnView } from "./turn.js";

/** @typedef {import("../lib/conversation.js").ConversationState} ConversationState */

/** Within this distance of the bottom, the reader is at the bottom. */
const AT_BOTTOM_PX = 48;

/**
 * @param {{
 *   list: HTMLElement,
 *   jump: HTMLButtonElement,
 *   handlers: import("./turn.js").TurnHandlers,
 *   copy: (text: string, button: HTMLButtonElement) => void,
 *   siblings: (turnId: string) => import("./turn.js").TurnProps["siblings"],
 * }} options  `siblings`: where branches split at a message (the "< n/m >" picker)
 */
export function createTranscriptView({ list, jump, handlers, copy, siblings }) {
  /** @type {Map<string, ReturnType<typeof createTurnView>>} */
  const views = new Map();
  let following = true;
  let cid = "";
  /** A picker to focus once its turn is drawn (a version switch replaces the turn whose button was pressed). */
  /** @type {{ turnId: string, action: "branch-prev" | "branch-next" } | null} */
  let pickerFocus = null;

  const distanceFromBottom = () => list.scrollHeight - list.scrollTop - list.clientHeight;
  const toBottom = () => {
    list.scrollTop = list.scrollHeight;
  };

  list.addEventListener("scroll", () => {
    following = distanceFromBottom() < AT_BOTTOM_PX;
    jump.hidden = following;
  });
  jump.addEventListener("click", () => {
    follow();
    // The newest content has the reader's attention; the composer stays the place to type.
    /** @type {HTMLElement | null} */ (document.getElementById("composer-input"))?.focus();
  });

  list.addEventListener("click", (event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button[data-action]");
    const item = button?.closest("li.turn");
    if (!(button instanceof HTMLButtonElement) || !(item instanceof HTMLElement)) return;
    const turnId = item.dataset.turn ?? "";
    const turn = views.get(turnId)?.props?.turn;
    switch (button.dataset.action) {
      case "copy-code":
        return copy(button.closest(".code-block")?.querySelector("pre")?.textContent ?? "", button);
      case "copy-output":
        return copy(button.closest(".tool-body")?.querySelector("pre.tool-output")?.textContent ?? "", button);
      case "copy-answer":
        return turn && copy(answerText(turn), button);
      case "resend":
        return handlers.resend(turnId);
      case "rerun":
        return handlers.rerun(turnId);
      case "regenerate":
        return handlers.regenerate(turnId);
      case "branch-prev":
        return handlers.pick(turnId, -1);
      case "branch-next":
        return handlers.pick(turnId, 1);
      case "edit":
      case "edit-unsent":
        return handlers.edit(turnId);
    }
  });

  /** Follows the newest content again, from now. */
  function follow() {
    following = true;
    jump.hidden = true;
    toBottom();
  }

  return {
    follow,
    /**
     * Focuses the picker of `turnId` once it is drawn: its `action` button, else the other one.
     * @param {string} turnId @param {"branch-prev" | "branch-next"} action
     */
    focusPicker(turnId, action) {
      pickerFocus = { turnId, action };
    },
    /**
     * @param {ConversationState} state
     * @param {{ busy: boolean, editing: string | null, connectionNotice: string }} context  `connectionNotice`: what a running turn says of a lost connection
     */
    render(state, { busy, editing, connectionNotice }) {
      if (state.cid !== cid) {
        // Another conversation: nothing of the last one's views is reused.
        cid = state.cid;
        pickerFocus = null;
        views.clear();
        list.replaceChildren();
        following = true;
        jump.hidden = true;
      }
      const lastId = state.order.at(-1);
      for (const turnId of state.order) {
        const turn = state.turns[turnId];
        if (!turn) continue;
        let view = views.get(turnId);
        if (!view) {
          view = createTurnView(turnId, handlers);
          views.set(turnId, view);
          list.append(view.node);
        }
        view.render({
          turn,
          asks: state.asks,
          isLast: turnId === lastId,
          busy,
          editing: editing === turnId,
          siblings: siblings(turnId),
          connectionNotice,
        });
      }
      for (const [turnId, view] of views) {
        if (!state.turns[turnId]) {
          view.node.remove();
          views.delete(turnId);
        }
      }
      if (pickerFocus && views.get(pickerFocus.turnId)?.focusPicker(pickerFocus.action)) pickerFocus = null;
      if (following) toBottom();
      else jump.hidden = distanceFromBottom() < AT_BOTTOM_PX;
    },
  };
}
