// @ts-check
/**
 * What the page shows of the open conversation, drawn from the store: the transcript
 * (views/transcript.js), the title and usage line, Stop and Send, the banner and the browser tab's
 * title; and the live region that tells a screen reader user what happened (answers, failures,
 * asks). A change is drawn once per frame, and by a timer too, so a background tab catches up.
 * A lost connection (lib/connection.js) is said on the running turn and in the message box's status.
 */
import { connectionView, HELD_BACK } from "../lib/connection.js";
import { activeTurn } from "../lib/conversation.js";
import { formatTokens, usageText } from "../lib/format.js";

/** @typedef {import("../lib/conversation.js").ConversationState} ConversationState */

const APP_NAME = "Agent chat";
/** A turn in one of these has ended: its usage is as known as it will be. */
const ENDED = new Set(["completed", "failed", "cancelled"]);

/**
 * @param {{
 *   store: import("../lib/store.js").Store,
 *   transcript: ReturnType<typeof import("../views/transcript.js").createTranscriptView>,
 *   ui: {
 *     app: HTMLElement, title: HTMLElement, empty: HTMLElement, usageTotal: HTMLElement, stop: HTMLButtonElement, send: HTMLButtonElement,
 *     banner: HTMLElement, bannerText: HTMLElement, bannerClose: HTMLElement, input: HTMLTextAreaElement, announcer: HTMLElement,
 *     composerStatus: HTMLElement, interactiveNote: HTMLElement,
 *   },
 *   connection: () => { state: import("../lib/connection.js").ConnectionState, since: number },
 * }} deps  `connection`: the stream's state and since when (controllers/stream.js)
 */
export function createScreen({ store, transcript, ui, connection }) {
  let lost = false;
  /** A message was held back while the connection is lost: the status says so until it is back. */
  let heldBack = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let recheck;

  /** @param {string} text */
  function announce(text) {
    ui.announcer.textContent = "";
    setTimeout(() => (ui.announcer.textContent = text), 50);
  }

  /** What a screen reader user should hear as it happens: answers, failures, asks. */
  function announceChanges(/** @type {ConversationState} */ before, /** @type {ConversationState} */ after) {
    for (const id of after.order) {
      const now = after.turns[id];
      const was = before.turns[id];
      if (!now || was?.status === now.status) continue;
      if (now.status === "completed") {
        const text = now.blocks.flatMap((b) => (b.kind === "text" ? [b.text] : [])).join(" ");
        announce(`The agent answered: ${text.slice(0, 200)}`);
      } else if (now.status === "failed") announce("The turn failed.");
      else if (now.status === "cancelled") announce("The turn was cancelled.");
    }
    for (const ask of Object.values(after.asks)) {
      if (ask.status === "outstanding" && !before.asks[ask.id])
        announce(`The agent is waiting for you: ${ask.request.title}`);
    }
  }

  function updateTitle() {
    const conv = store.conv;
    const title = conv.title || "New conversation";
    const waiting = Object.values(conv.asks).some((a) => a.status === "outstanding");
    const active = activeTurn(conv);
    const prefix = waiting ? "Waiting for you · " : active ? "Working… · " : "";
    document.title = ui.app.hidden ? APP_NAME : `${prefix}${title} — ${APP_NAME}`;
  }

  let queued = false;
  function schedule() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(draw);
    setTimeout(draw, 100);
  }

  function draw() {
    if (!queued) return;
    queued = false;
    const conv = store.conv;
    const active = activeTurn(conv);
    const link = connectionView({ ...connection(), now: Date.now(), turnRunning: active !== null });
    clearTimeout(recheck);
    if (link.recheckInMs !== null) recheck = setTimeout(schedule, link.recheckInMs + 20);
    drawConnection(link);
    transcript.render(conv, { busy: store.busy(), editing: store.editing, connectionNotice: link.turnNotice });
    ui.title.textContent = conv.title || "New conversation";
    ui.empty.hidden = !conv.cid || conv.order.length > 0;
    ui.stop.hidden = !active || active.status === "sending";
    // During a turn, Send queues the message (./queued.js).
    ui.send.disabled = !conv.cid || conv.deleted;
    const total = conv.usageTotal;
    const parts = [];
    // No total yet once a turn has ended: none was reported, so it is unknown (not nothing, not zero).
    const ended = conv.order.some((id) => ENDED.has(conv.turns[id]?.status ?? ""));
    if (total || ended) parts.push(`Total: ${usageText(total, { floor: !total?.complete })}`);
    if (conv.budget) {
      const b = conv.budget;
      parts.push(
        `Budget ${b.complete ? "" : "at least "}${formatTokens(b.used)} of ${formatTokens(b.tokens)} tokens${spendNote(b.provenance)}${b.exceeded ? " (reached)" : ""}`,
      );
    }
    ui.usageTotal.textContent = parts.join(" · ");
    ui.interactiveNote.hidden = !conv.interactive;
    if (conv.budgetExceeded && ui.banner.dataset.kind !== "budget") {
      const stopped = conv.budgetExceeded;
      showBanner(
        `Token budget reached: the run was stopped (${stopped.scope ?? "conversation"} budget ${stopped.tokens ?? ""}${spendNote(stopped.provenance)}).`,
        "budget",
      );
    }
  }

  /** @param {import("../lib/connection.js").ConnectionView} link */
  function drawConnection(link) {
    if (link.lost !== lost) {
      lost = link.lost;
      // Stop cannot reach the server; Send stays pressable, to say why it does not send.
      ui.stop.disabled = lost;
      ui.send.setAttribute("aria-disabled", String(lost));
      if (!lost) {
        heldBack = false;
        announce("Connected to the server again.");
      }
    }
    const text = heldBack ? HELD_BACK : link.composerStatus;
    if (ui.composerStatus.textContent !== text) ui.composerStatus.textContent = text;
  }

  /** The message box did not send because the connection is lost: said again, where the user looks. */
  function holdBack() {
    heldBack = true;
    ui.composerStatus.textContent = "";
    setTimeout(() => {
      if (heldBack) ui.composerStatus.textContent = HELD_BACK;
    }, 50);
  }

  /** @param {string} text @param {string} [kind] */
  function showBanner(text, kind = "notice") {
    ui.bannerText.textContent = text;
    ui.banner.dataset.kind = kind;
    ui.banner.hidden = false;
  }

  function hideBanner() {
    ui.banner.hidden = true;
    delete ui.banner.dataset.kind;
  }

  ui.bannerClose.addEventListener("click", () => {
    hideBanner();
    ui.input.focus();
  });

  /**
   * @param {string} text
   * @param {HTMLButtonElement} button
   */
  async function copy(text, button) {
    const label = button.textContent;
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
      announce("Copied to the clipboard.");
    } catch {
      button.textContent = "Copy failed";
    }
    setTimeout(() => (button.textContent = label), 1500);
  }

  return {
    announce,
    announceChanges,
    updateTitle,
    schedule,
    showBanner,
    hideBanner,
    copy,
    holdBack,
    connectionLost: () => lost,
  };
}

/**
 * What a budget's spend is made of, when it is not all measured.
 * @param {import("../lib/conversation.js").Provenance | undefined} provenance
 */
function spendNote(provenance) {
  return provenance === "estimated"
    ? ", counting estimates"
    : provenance === "unknown"
      ? ", counting unverified figures"
      : "";
}
