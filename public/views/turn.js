// @ts-check
/**
 * One turn: the user's message (plain text, with its time, Edit, the "< n/m >" picker where
 * branches split, and Retry/Edit when it has not reached the server), then what the agent did in
 * order (markdown text, reasoning, tool cards, asks, warnings, the subagents it started:
 * views/subagents.js), the files its tools changed
 * (views/changes.js, collapsed), then a footer (status, cancel
 * reason, usage, the model asked for and the one that served it, time) with Copy, Retry and
 * Regenerate. Edit and Regenerate, on any turn, make a branch (docs/api.md#branches).
 */
import { changedFiles } from "../lib/changes.js";
import { isActive } from "../lib/conversation.js";
import { cancelReasonText, modelText, quoted, STATUS_LABEL, timeText, usageText, waitingText } from "../lib/format.js";
import { renderMarkdown } from "../lib/markdown.js";
import { createAskView } from "./ask.js";
import { createChangesView } from "./changes.js";
import { el, reconcile, timeElement } from "./dom.js";
import { createSubagentsView } from "./subagents.js";

/** @typedef {import("../lib/conversation.js").Turn} Turn */
/** @typedef {import("../lib/conversation.js").Block} Block */
/** @typedef {import("../lib/conversation.js").Ask} Ask */
/**
 * What a turn is drawn from besides itself.
 * @typedef {object} TurnProps
 * @property {Turn} turn
 * @property {Record<string, Ask>} asks
 * @property {boolean} isLast     the newest turn shown
 * @property {boolean} busy       a turn is being sent or run: nothing new can be sent
 * @property {boolean} editing    its message is being edited
 * @property {{ index: number, count: number } | null} siblings  where branches split at this message: which of how many it is
 * @property {string} connectionNotice  what a running turn says of a lost connection ("" when connected: lib/connection.js)
 */
/**
 * @typedef {object} TurnHandlers
 * @property {(turnId: string) => void} resend      the same turn again (it never reached the server)
 * @property {(turnId: string) => void} rerun       the same message as a new turn (retry a failed turn, regenerate)
 * @property {(turnId: string | null) => void} edit  start (or, with null, stop) editing a message
 * @property {(turnId: string, message: string) => void} sendEdited  the edited message, on a branch of its own
 * @property {(turnId: string) => void} regenerate  the same message answered again, on a branch of its own
 * @property {(turnId: string, delta: number) => void} pick  show the branch of the previous (-1) or next (+1) version of this message
 * @property {import("./ask.js").AnswerHandler} answer
 */

/**
 * A message this long (characters, or lines) is shown collapsed, with "Show more": taller than the
 * collapsed bubble (style.css, .bubble-user.collapsed) at any width the bubble has.
 */
const LONG_MESSAGE_CHARS = 1200;
const LONG_MESSAGE_LINES = 12;
/** @param {string} text */
const isLongMessage = (text) => text.length > LONG_MESSAGE_CHARS || text.split("\n").length > LONG_MESSAGE_LINES;

/** @param {unknown} value */
const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

/**
 * @param {Block} block
 * @param {TurnHandlers} handlers
 * @param {Record<string, Ask>} asks
 * @returns {{ node: Element, item: Block, ask?: Ask, update: (block: Block, asks: Record<string, Ask>) => void }}
 */
function blockView(block, handlers, asks) {
  switch (block.kind) {
    case "text": {
      const node = el("div", { class: "text markdown", "data-part": block.id });
      const view = {
        node,
        item: block,
        update: (/** @type {Block} */ b) => node.replaceChildren(renderMarkdown(b.kind === "text" ? b.text : "")),
      };
      view.update(block);
      return view;
    }
    case "reasoning": {
      const body = el("div", { class: "reasoning-body" });
      const node = el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }), body);
      const view = {
        node,
        item: block,
        update: (/** @type {Block} */ b) => (body.textContent = b.kind === "reasoning" ? b.text : ""),
      };
      view.update(block);
      return view;
    }
    case "tool": {
      const name = el("span", { class: "tool-name" });
      const status = el("span", { class: "tool-status" });
      const body = el("div", { class: "tool-body" });
      const node = el("details", { class: "tool", "data-part": block.id }, el("summary", {}, name, status), body);
      const view = {
        node,
        item: block,
        update: (/** @type {Block} */ b) => {
          if (b.kind !== "tool") return;
          name.textContent = b.tool;
          status.textContent = b.status;
          status.className = `tool-status ${b.status}`;
          const result = b.error ?? b.output;
          body.replaceChildren(
            ...(b.input !== undefined ? [el("strong", { text: "Input" }), el("pre", { text: pretty(b.input) })] : []),
            ...(result !== undefined
              ? [
                  el(
                    "div",
                    { class: "tool-output-head" },
                    el("strong", { text: b.error !== undefined ? "Error" : "Output" }),
                    el("button", {
                      type: "button",
                      class: "copy-button",
                      "data-action": "copy-output",
                      text: "Copy output",
                    }),
                  ),
                  el("pre", { class: "tool-output", text: pretty(result) }),
                ]
              : []),
          );
        },
      };
      view.update(block);
      return view;
    }
    case "ask": {
      const ask = asks[block.id];
      if (!ask) return { node: el("div", { hidden: true }), item: block, update: () => {} };
      const askView = createAskView(ask, { answer: handlers.answer });
      return {
        node: askView.node,
        item: block,
        ask,
        update(_b, nextAsks) {
          const next = nextAsks[block.id];
          if (next && next !== askView.item) {
            askView.item = next;
            askView.update(next);
          }
        },
      };
    }
    case "subagents": {
      const view = createSubagentsView(block.tasks);
      return { node: view.node, item: block, update: (b) => b.kind === "subagents" && view.update(b.tasks) };
    }
    case "warning": {
      const node = el("p", { class: "warning-line", text: `⚠ ${block.text}` });
      return { node, item: block, update: (b) => (node.textContent = b.kind === "warning" ? `⚠ ${b.text}` : "") };
    }
    default: {
      const node = el("p", { class: "file-line" });
      const view = {
        node,
        item: block,
        update: (/** @type {Block} */ b) => (node.textContent = b.kind === "file" ? b.label : ""),
      };
      view.update(block);
      return view;
    }
  }
}

/** The answer as written (markdown), for Copy. */
export function answerText(/** @type {Turn} */ turn) {
  return turn.blocks.flatMap((b) => (b.kind === "text" ? [b.text] : [])).join("\n\n");
}

/**
 * Redraws `container`'s children; a button of it that had the focus hands it to the new button of
 * the same action, where there is one that can be pressed (a redraw never drops the focus to the page).
 * @param {HTMLElement} container
 * @param {Array<Node>} children
 */
function replaceKeepingFocus(container, children) {
  const active = document.activeElement;
  const action = active instanceof HTMLElement && container.contains(active) ? active.dataset.action : undefined;
  container.replaceChildren(...children);
  if (!action || container.contains(active)) return;
  const again = container.querySelector(`button[data-action="${action}"]`);
  if (again instanceof HTMLButtonElement && !again.disabled) again.focus();
}

/**
 * @param {string} turnId
 * @param {TurnHandlers} handlers
 */
export function createTurnView(turnId, handlers) {
  const bubble = el("div", { class: "bubble-user", id: `message-${turnId}` });
  /** A long message starts collapsed; this button shows all of it, and collapses it again. */
  const more = el("button", {
    type: "button",
    class: "link-button show-more",
    "aria-expanded": "false",
    "aria-controls": bubble.id,
    hidden: true,
    text: "Show more",
  });
  let expanded = false;
  more.addEventListener("click", () => {
    expanded = !expanded;
    drawCollapse(bubble.textContent ?? "");
    if (!expanded) bubble.scrollIntoView({ block: "nearest" });
  });
  const meta = el("div", { class: "message-meta" });
  const sendError = el("div", { class: "send-error", role: "alert", hidden: true });
  // Each message is found by its heading (a screen reader's list of headings reads the conversation).
  const userRow = el(
    "div",
    { class: "user-row" },
    el("h3", { class: "sr-only", text: "You said" }),
    bubble,
    more,
    meta,
    sendError,
  );
  const parts = el("div", { class: "parts" });
  const typing = el("p", { class: "typing", text: "Working" });
  const lostNotice = el("p", { class: "turn-connection", hidden: true });
  const error = el("p", { class: "turn-error", role: "alert", hidden: true });
  const footer = el("div", { class: "turn-footer" });
  const changes = createChangesView();
  const agent = el(
    "div",
    { class: "agent", role: "group", "aria-label": "The agent's answer" },
    el("h3", { class: "sr-only", text: "The agent said" }),
    parts,
    changes.node,
    typing,
    lostNotice,
    error,
    footer,
  );
  const node = el("li", { class: "turn", "data-turn": turnId }, userRow, agent);
  /** @type {Map<string, ReturnType<typeof blockView>>} */
  const blocks = new Map();
  /** @type {TurnProps | null} */
  let last = null;
  /** @type {HTMLTextAreaElement | null} */
  let editor = null;
  /** The tool blocks the changed files were last computed from (text deltas leave them as they are). */
  /** @type {Block[]} */
  let toolsSeen = [];

  /** @param {string} text */
  function drawCollapse(text) {
    const long = !editor && isLongMessage(text);
    more.hidden = !long;
    bubble.classList.toggle("collapsed", long && !expanded);
    more.setAttribute("aria-expanded", String(long && expanded));
    more.textContent = expanded ? "Show less" : "Show more";
  }

  /** @param {TurnProps} props */
  function drawUser({ turn, busy, editing, siblings }) {
    if (editing) {
      if (!editor) {
        editor = el("textarea", { class: "edit-input", rows: 3, "aria-label": "Edit your message" });
        editor.value = turn.userText;
        const box = editor;
        const form = el(
          "form",
          { class: "edit-form" },
          box,
          el("p", {
            class: "hint",
            text: "Sends the edited message on a new branch; this version stays a click away (‹ ›).",
          }),
          el(
            "div",
            { class: "actions" },
            el("button", { type: "submit", class: "primary", text: "Send edited" }),
            el("button", { type: "button", text: "Cancel", onclick: () => handlers.edit(null) }),
          ),
        );
        form.addEventListener("submit", (event) => {
          event.preventDefault();
          const text = box.value.trim();
          if (text) handlers.sendEdited(turnId, text);
        });
        box.addEventListener("keydown", (event) => {
          if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
            event.preventDefault();
            form.requestSubmit();
          }
        });
        bubble.replaceWith(form);
        box.focus();
        box.setSelectionRange(box.value.length, box.value.length);
      }
    } else if (editor) {
      editor.closest("form")?.replaceWith(bubble);
      editor = null;
    }
    if (bubble.textContent !== turn.userText) bubble.textContent = turn.userText;
    drawCollapse(turn.userText);
    const canEdit = !busy && !editing && !isActive(turn.status) && turn.status !== "unsent";
    const picker = siblings
      ? el(
          "span",
          { class: "branch-picker", role: "group", "aria-label": "Versions of this message" },
          el("button", {
            type: "button",
            class: "link-button",
            "data-action": "branch-prev",
            "aria-label": "Previous version",
            text: "‹",
            disabled: busy || siblings.index === 0,
          }),
          el("span", { class: "branch-count", text: `${siblings.index + 1}/${siblings.count}` }),
          el("button", {
            type: "button",
            class: "link-button",
            "data-action": "branch-next",
            "aria-label": "Next version",
            text: "›",
            disabled: busy || siblings.index === siblings.count - 1,
          }),
        )
      : null;
    replaceKeepingFocus(
      meta,
      [
        timeElement(turn.sentAt, turn.sentAt ? timeText(turn.sentAt) : ""),
        picker,
        canEdit
          ? el("button", {
              type: "button",
              class: "link-button",
              "data-action": "edit",
              "aria-label": `Edit message ${quoted(turn.userText)}`,
              text: "Edit",
            })
          : null,
      ].filter((n) => n !== null),
    );
    if (turn.status === "unsent") {
      sendError.hidden = false;
      sendError.replaceChildren(
        el("span", { text: `Not sent: ${turn.sendError?.message ?? "could not reach the server"}.` }),
        el("button", {
          type: "button",
          "data-action": "resend",
          "aria-label": `Retry sending ${quoted(turn.userText)}`,
          text: "Retry",
          disabled: busy,
        }),
        el("button", {
          type: "button",
          "data-action": "edit-unsent",
          "aria-label": `Edit message ${quoted(turn.userText)}`,
          text: "Edit",
        }),
      );
    } else {
      sendError.hidden = true;
      sendError.replaceChildren();
    }
  }

  /** @param {TurnProps} props */
  function drawAgent({ turn, asks, busy, connectionNotice }) {
    agent.hidden = turn.status === "unsent";
    reconcile(
      parts,
      blocks,
      turn.blocks,
      (b) => b.key,
      (b) => blockView(b, handlers, asks),
      (view, b) => view.update(b, asks),
    );
    // An ask that changed while its block did not.
    for (const view of blocks.values())
      if (view.ask && asks[view.item.id] !== view.ask) {
        view.update(view.item, asks);
        view.ask = asks[view.item.id];
      }
    const tools = turn.blocks.filter((b) => b.kind === "tool");
    if (tools.length !== toolsSeen.length || tools.some((b, i) => b !== toolsSeen[i])) {
      toolsSeen = tools;
      changes.update(changedFiles(tools));
    }
    // What the turn waits for is the server's word (turn.waiting), not guessed from the cards.
    const waiting = isActive(turn.status) ? turn.waitingFor : null;
    typing.hidden = !isActive(turn.status);
    typing.textContent = turn.status === "sending" ? "Sending" : waiting ? waitingText(waiting) : "Working";
    lostNotice.hidden = !isActive(turn.status) || !connectionNotice;
    lostNotice.textContent = lostNotice.hidden ? "" : connectionNotice;
    error.hidden = turn.status !== "failed";
    error.textContent = turn.status === "failed" ? `The turn failed: ${turn.error?.message ?? "unknown error"}` : "";
    const ended = !isActive(turn.status) && turn.status !== "unsent";
    const text = answerText(turn);
    const usage = usageText(turn.usage);
    replaceKeepingFocus(
      footer,
      [
        el("span", { class: `badge ${turn.status}`, text: waiting ? "waiting for you" : STATUS_LABEL[turn.status] }),
        turn.status === "cancelled" && turn.cancelReason
          ? el("span", { class: "cancel-reason", text: cancelReasonText(turn.cancelReason) })
          : null,
        // Figures as they come; an ended turn without them says its usage is unknown (never nothing, never zero).
        turn.usage || ended
          ? el("span", { class: "usage", text: usage === "unknown" ? "usage unknown" : usage })
          : null,
        modelText(turn.model, turn.usage?.servedModels)
          ? el("span", { class: "model", text: modelText(turn.model, turn.usage?.servedModels) })
          : null,
        ended ? timeElement(turn.endedAt, turn.endedAt ? timeText(turn.endedAt) : "") : null,
        ended
          ? el(
              "span",
              { class: "turn-actions" },
              text
                ? el("button", {
                    type: "button",
                    class: "copy-button",
                    "data-action": "copy-answer",
                    "aria-label": `Copy answer to ${quoted(turn.userText)}`,
                    text: "Copy answer",
                  })
                : null,
              turn.status === "failed"
                ? el("button", {
                    type: "button",
                    "data-action": "rerun",
                    "aria-label": `Retry ${quoted(turn.userText)}`,
                    text: "Retry",
                    disabled: busy,
                  })
                : null,
              turn.status !== "failed"
                ? el("button", {
                    type: "button",
                    "data-action": "regenerate",
                    "aria-label": `Regenerate answer to ${quoted(turn.userText)}`,
                    text: "Regenerate",
                    disabled: busy,
                  })
                : null,
            )
          : null,
      ].filter((n) => n !== null),
    );
  }

  return {
    node,
    /** @param {TurnProps} props */
    render(props) {
      const same = (/** @type {TurnProps["siblings"]} */ a, /** @type {TurnProps["siblings"]} */ b) =>
        a === b || (a !== null && b !== null && a.index === b.index && a.count === b.count);
      if (
        last &&
        last.turn === props.turn &&
        last.asks === props.asks &&
        last.isLast === props.isLast &&
        last.busy === props.busy &&
        last.editing === props.editing &&
        last.connectionNotice === props.connectionNotice &&
        same(last.siblings, props.siblings)
      )
        return;
      node.dataset.status = props.turn.status;
      drawUser(props);
      drawAgent(props);
      last = props;
    },
    /** @returns {TurnProps | null} */
    get props() {
      return last;
    },
    /**
     * Focuses the version picker's `action` button, else its other one; false when neither can be pressed.
     * @param {"branch-prev" | "branch-next"} action
     */
    focusPicker(action) {
      const other = action === "branch-prev" ? "branch-next" : "branch-prev";
      for (const which of [action, other]) {
        const button = meta.querySelector(`button[data-action="${which}"]`);
        if (button instanceof HTMLButtonElement && !button.disabled) {
          button.focus();
          return true;
        }
      }
      return false;
    },
  };
}
