// @ts-check
/**
 * Queued messages: a message sent while a turn runs waits on the server (docs/api.md#queued-turns)
 * and is listed under the running turn, with Edit and Remove, until it starts (it then shows in
 * the transcript as any turn) or leaves the queue. The list is the server's: read from the
 * summary's `queue` when the conversation loads (its stream's snapshot) and again whenever the stream says the queue moved
 * (`turn.queued`, `turn.queue_edited`, `turn.dequeued`, a turn's start or end), so every tab shows
 * the same queue. A queued send is retried once under its turn id (the same queued turn).
 *
 * The server queues turns in the order their sends reach it, so queued messages are sent one at a
 * time, each once the one before it is answered: they wait in the order they were typed. A read of
 * the queue under way while this page changed the list (queued, edited, removed a message) may
 * predate the change: it is not shown, and the queue is read again. The message being edited keeps
 * what was typed in it, and the focus, whenever the list is drawn again; its editor saves on Enter
 * (Shift+Enter adds a line), as every editor of the page does. A message that starts (or is removed
 * elsewhere) while it is being edited says so, and an edit that did not reach it goes to the message box.
 */
import { ApiError } from "../lib/api.js";
import { GATEWAY_EVENT as E } from "../lib/events.js";
import { el } from "../views/dom.js";

/** Events after which the queue may look different. */
const MOVES = new Set(
  /** @type {string[]} */ ([
    E.turnQueued,
    E.turnQueueEdited,
    E.turnDequeued,
    E.turnAccepted,
    E.turnCompleted,
    E.turnFailed,
    E.turnCancelled,
  ]),
);
const SEND_RETRY_DELAY_MS = 800;

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { queued: HTMLElement, queuedList: HTMLElement, input: HTMLTextAreaElement },
 *   sent: () => Promise<unknown>,
 *   accepted: (cid: string) => void,
 *   screen: { showBanner: (text: string, kind?: string) => void, announce: (text: string) => void },
 * }} deps  `sent`: settles once the message being sent (if any) has its answer, so a queued one never overtakes it;
 *   `accepted`: a message was taken (the agent picker's one-message model goes back: ./agent-picker.js)
 */
export function createQueued({ api, store, ui, sent, accepted, screen }) {
  /** @type {Array<{ turnId: string, message: string }>} the queue, in order */
  let items = [];
  /** @type {string | null} the queued turn whose text is being edited */
  let editing = null;
  /** @type {Promise<void> | null} */
  let loading = null;
  let again = false;
  /** Counts this page's own changes to the list: a read that began at another count may predate one. */
  let changes = 0;
  /** @type {Promise<void>} the queued send under way, if any: the next waits for its answer */
  let sending = Promise.resolve();

  /** Reads the queue again (one read at a time; asked meanwhile, once more after it). */
  function refresh() {
    if (loading) {
      again = true;
      return loading;
    }
    loading = (async () => {
      do {
        again = false;
        await load();
      } while (again);
    })().finally(() => {
      loading = null;
    });
    return loading;
  }

  async function load() {
    const { cid, deleted } = store.conv;
    const generation = store.generation;
    if (!cid || deleted) return show([]);
    const seen = changes;
    try {
      const summary = await api.summary(cid);
      if (generation !== store.generation) return;
      if (seen !== changes) {
        again = true;
        return;
      }
      // A turn that left the queue and is the summary's active or last one has started.
      const started = (/** @type {string} */ turnId) =>
        summary.activeTurn?.turnId === turnId || summary.lastTurn?.turnId === turnId || turnId in store.conv.turns;
      show(
        summary.queue.map((t) => ({ turnId: t.turnId, message: t.message })),
        started,
      );
    } catch (err) {
      // A conversation the server does not have yet has no queue; otherwise the list stays as it was.
      if (err instanceof ApiError && err.status === 404 && generation === store.generation) show([]);
    }
  }

  /**
   * @param {Array<{ turnId: string, message: string }>} next
   * @param {(turnId: string) => boolean} [started]  read from the server: whether a turn no longer queued has started
   */
  function show(next, started) {
    const gone = editing && !next.some((i) => i.turnId === editing) ? editing : null;
    const original = items.find((i) => i.turnId === gone)?.message ?? "";
    const box = /** @type {HTMLTextAreaElement | null} */ (
      ui.queuedList.querySelector(".queued-item.editing textarea")
    );
    const typed = box?.value.trim() ?? "";
    items = next;
    if (gone) {
      editing = null;
      // Only what the server read says is news; leaving the conversation is not.
      if (started) editLost(original, typed, started(gone));
    }
    draw();
  }

  /**
   * The message being edited left the queue before the edit was saved: it started (as it was), or
   * was removed elsewhere. Said so; what was typed, if it differs, goes to the message box.
   * @param {string} original @param {string} typed @param {boolean} started
   */
  function editLost(original, typed, started) {
    const changed = typed !== "" && typed !== original;
    if (changed) {
      const held = ui.input.value.trim();
      ui.input.value = held ? `${held}\n\n${typed}` : typed;
    }
    const what = started
      ? "The queued message started before your edit was saved: it was sent as it was."
      : "The queued message was removed (in another tab or on another device) before your edit was saved.";
    screen.showBanner(changed ? `${what} Your edited text is in the message box.` : what);
    if (ui.queuedList.contains(document.activeElement) || document.activeElement === document.body) ui.input.focus();
  }

  /** This page's own change to the list, shown at once. @param {Array<{ turnId: string, message: string }>} next */
  function change(next) {
    changes++;
    show(next);
  }

  function draw() {
    ui.queued.hidden = items.length === 0;
    // The open editor is never taken out of the list (that would lose its focus), nor drawn anew
    // (that would lose what was typed in it): the other items are put around it.
    const open = /** @type {HTMLElement | null} */ (ui.queuedList.querySelector(".queued-item.editing"));
    const kept = open && open.dataset.turn === editing && items.some((i) => i.turnId === editing) ? open : null;
    const nodes = items.map((item) => (item.turnId === editing ? (kept ?? editor(item)) : entry(item)));
    if (!kept) return ui.queuedList.replaceChildren(...nodes);
    for (const child of [...ui.queuedList.children]) if (child !== kept) child.remove();
    const at = nodes.indexOf(kept);
    kept.before(...nodes.slice(0, at));
    kept.after(...nodes.slice(at + 1));
  }

  /** @param {{ turnId: string, message: string }} item */
  function entry(item) {
    return el(
      "li",
      { class: "queued-item", "data-turn": item.turnId },
      el("span", { class: "queued-text", text: item.message }),
      el(
        "span",
        { class: "queued-actions" },
        el("button", { type: "button", text: "Edit", onclick: () => startEditing(item.turnId) }),
        el("button", { type: "button", text: "Remove", onclick: () => remove(item.turnId) }),
      ),
    );
  }

  /** @param {{ turnId: string, message: string }} item */
  function editor(item) {
    const box = el("textarea", { class: "queued-edit", rows: 2, "aria-label": "Edit queued message" });
    box.value = item.message;
    const form = el(
      "form",
      {
        class: "queued-form",
        onsubmit: (/** @type {SubmitEvent} */ event) => {
          event.preventDefault();
          save(item.turnId, box.value.trim());
        },
      },
      box,
      el(
        "span",
        { class: "queued-actions" },
        el("button", { type: "submit", class: "primary", text: "Save" }),
        el("button", {
          type: "button",
          text: "Cancel",
          onclick: () => {
            editing = null;
            draw();
          },
        }),
      ),
    );
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      } else if (event.key === "Escape") {
        event.stopPropagation();
        editing = null;
        draw();
      }
    });
    queueMicrotask(() => box.focus());
    return el("li", { class: "queued-item editing", "data-turn": item.turnId }, form);
  }

  /** @param {string} turnId */
  function startEditing(turnId) {
    editing = turnId;
    draw();
  }

  /** @param {unknown} err @param {string} what */
  function refused(err, what) {
    const error = err instanceof ApiError ? err : null;
    screen.showBanner(
      error?.code === "turn_not_queued"
        ? `That message has started; it can no longer be ${what}.`
        : `Could not ${what === "edited" ? "edit" : "remove"} the queued message: ${error?.message ?? String(err)}`,
    );
    refresh();
  }

  /** @param {string} turnId @param {string} message */
  async function save(turnId, message) {
    if (!message) return;
    editing = null;
    const original = items.find((i) => i.turnId === turnId)?.message ?? "";
    try {
      const turn = await api.editQueued(store.conv.cid, turnId, message);
      change(items.map((i) => (i.turnId === turnId ? { ...i, message: turn.message } : i)));
    } catch (err) {
      // It started (or left the queue) first: the edit is not lost.
      if (err instanceof ApiError && (err.code === "turn_not_queued" || err.code === "turn_not_found")) {
        // Its status when it left the queue: a turn's (it started) or "cancelled" (removed).
        const status = /** @type {{ error?: { details?: { status?: unknown } } } | undefined} */ (err.body)?.error
          ?.details?.status;
        editLost(
          original,
          message,
          turnId in store.conv.turns || (typeof status === "string" && status !== "cancelled"),
        );
        refresh();
      } else refused(err, "edited");
    }
    ui.input.focus();
  }

  /** @param {string} turnId */
  async function remove(turnId) {
    try {
      await api.removeQueued(store.conv.cid, turnId);
      change(items.filter((i) => i.turnId !== turnId));
      screen.announce("Queued message removed.");
    } catch (err) {
      refused(err, "removed");
    }
    ui.input.focus();
  }

  /**
   * Sends a message to wait behind the running turn (it starts at once if that turn has ended),
   * once the queued sends before it have their answers.
   * @param {string} message
   * @param {import("../lib/agents.js").TurnAgentFields} [agent]  its model (and backend), as the picker says
   */
  function add(message, agent = {}) {
    const generation = store.generation;
    const cid = store.conv.cid;
    const turnId = `t-${crypto.randomUUID()}`;
    const done = sending.then(() => deliver(generation, cid, turnId, message, agent));
    sending = done.catch(() => undefined);
    return done;
  }

  /**
   * @param {number} generation @param {string} cid @param {string} turnId @param {string} message
   * @param {import("../lib/agents.js").TurnAgentFields} agent
   */
  async function deliver(generation, cid, turnId, message, agent) {
    await sent().catch(() => undefined);
    for (let attempt = 0; ; attempt++) {
      try {
        const turn = await api.queue(cid, turnId, message, agent);
        if (generation !== store.generation) return;
        accepted(cid);
        if (turn.status === "queued" && !items.some((i) => i.turnId === turnId))
          change([...items, { turnId, message: turn.message }]);
        screen.announce(
          turn.status === "queued" ? "Message queued: it is sent when the running turn ends." : "Message sent.",
        );
        return;
      } catch (err) {
        const error = err instanceof ApiError ? err : new ApiError(0, "unreachable", String(err));
        if (error.unreachable && attempt === 0) {
          await new Promise((resolve) => setTimeout(resolve, SEND_RETRY_DELAY_MS));
          continue;
        }
        // Refused (the queue is full, a budget) or unreachable twice: the text goes back.
        if (generation !== store.generation) return;
        if (!ui.input.value.trim()) ui.input.value = message;
        screen.showBanner(error.code === "queue_full" ? `The queue is full: ${error.message}` : error.message);
        return;
      }
    }
  }

  store.subscribe((before, after, action) => {
    if (action.type === "loaded" || action.type === "deleted") {
      if (before.cid !== after.cid || action.type === "deleted") show([]);
      // A conversation without turns has no queue (and may not exist on the server yet: nothing to ask);
      // one loaded from its snapshot has the queue of the same read (its turns are not in the queue).
      if (action.type === "loaded" && after.order.length > 0) {
        if (action.queue) show(action.queue.map((t) => ({ turnId: t.turnId, message: t.message })));
        else refresh();
      }
    } else if (action.type === "event" && MOVES.has(action.event.type)) refresh();
  });

  return { add };
}
