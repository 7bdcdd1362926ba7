// @ts-check
/**
 * Sending: the message box (Enter sends, Shift+Enter adds a line; during a turn, Enter queues the
 * message behind it: ./queued.js), the example prompts of an empty conversation, and the turn's own
 * buttons (resend, rerun, edit). A message shows at once; its
 * turn id makes delivery safe to repeat (a turn runs once), so one that did not reach the server
 * is retried once, then kept in this browser, unsent, for Retry. Stop cancels the running turn,
 * or, while the turn is still being dispatched, as soon as it runs. While the connection is lost
 * (lib/connection.js) nothing is sent: the message stays in the box and the box's status says why.
 */
import { ApiError } from "../lib/api.js";
import { activeTurn } from "../lib/conversation.js";
import { unsentStore } from "../lib/storage.js";
import { el } from "../views/dom.js";

/** @typedef {import("../lib/agents.js").TurnAgentFields} AgentFields */

const SEND_RETRY_DELAY_MS = 800;
/** The message box's placeholder: a narrow screen gets the short one, which fits beside Stop and Send. */
const PLACEHOLDER = {
  wide: "Message the agent — Enter sends, Shift+Enter for a new line",
  narrow: "Message the agent",
};

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { composer: HTMLFormElement, input: HTMLTextAreaElement, stop: HTMLButtonElement, examples: HTMLElement },
 *   narrow: MediaQueryList,
 *   refreshList: () => Promise<void>,
 *   queue: (message: string, agent: AgentFields) => Promise<void>,
 *   agent: { forTurn: () => AgentFields, accepted: (cid: string) => void },
 *   follow: () => void,
 *   screen: { showBanner: (text: string, kind?: string) => void, hideBanner: () => void, schedule: () => void, connectionLost: () => boolean, holdBack: () => void },
 * }} deps  `follow`: the transcript follows the newest content again; `queue`: sends a message to wait behind the
 *   running turn; `agent`: the picker's (./agent-picker.js) model and backend for the turn about to be sent
 */
export function createComposer({ api, store, ui, narrow, refreshList, queue, agent, follow, screen }) {
  const placeholder = () => (ui.input.placeholder = narrow.matches ? PLACEHOLDER.narrow : PLACEHOLDER.wide);
  narrow.addEventListener("change", placeholder);
  placeholder();
  /** A stop asked for while the message was still being sent: done once the turn runs. */
  let stopWhenRunning = /** @type {string | null} */ (null);
  /** The delivery under way (settled once answered): a queued message is sent after it. */
  let delivering = /** @type {Promise<void>} */ (Promise.resolve());

  /**
   * Sends a message as a new turn; the message shows at once.
   * @param {string} message
   */
  function send(message) {
    if (store.busy()) return;
    if (screen.connectionLost()) return screen.holdBack();
    const turnId = `t-${crypto.randomUUID()}`;
    const fields = agent.forTurn();
    store.editing = null;
    store.dispatch({ type: "send", turnId, message, at: new Date().toISOString() });
    follow();
    screen.hideBanner();
    delivering = deliver(turnId, message, fields);
  }

  /**
   * Delivers a turn to the server. The turn id makes this safe to repeat: a turn runs once (sent
   * again with the same agent fields, which are part of the turn).
   * @param {string} turnId
   * @param {string} message
   * @param {AgentFields} fields
   */
  async function deliver(turnId, message, fields) {
    const generation = store.generation;
    const cid = store.conv.cid;
    const at = store.conv.turns[turnId]?.sentAt ?? new Date().toISOString();
    for (let attempt = 0; ; attempt++) {
      try {
        const answer = await api.send(cid, turnId, message, fields);
        unsentStore.remove(cid, turnId);
        if (generation !== store.generation) return;
        agent.accepted(cid);
        // A send without whenBusy is never queued: it runs, or was refused.
        store.dispatch({ type: "sent", turnId, status: answer.status === "queued" ? "pending" : answer.status });
        refreshList();
        return;
      } catch (err) {
        const error = err instanceof ApiError ? err : new ApiError(0, "unreachable", String(err));
        if (!error.unreachable) {
          // Refused (too large, a budget, another turn running, an agent the deployment does not
          // run): nothing was stored; the text goes back, and the picker keeps what was picked.
          if (generation !== store.generation) return;
          store.dispatch({ type: "sendRefused", turnId });
          if (!ui.input.value.trim()) ui.input.value = message;
          ui.input.focus();
          screen.showBanner(
            error.code === "budget_exceeded" ? `Token budget reached: ${error.message}` : error.message,
          );
          return;
        }
        if (attempt === 0) {
          await new Promise((resolve) => setTimeout(resolve, SEND_RETRY_DELAY_MS));
          if (generation !== store.generation) return;
          continue;
        }
        // Kept in this browser, with its turn id: Retry (even after a reload) is the same turn.
        const reason = { message: error.status === 0 ? "could not reach the server" : error.message };
        unsentStore.put(cid, { turnId, message, at, error: reason, agent: fields });
        if (generation === store.generation) store.dispatch({ type: "sendFailed", turnId, error: reason });
        return;
      }
    }
  }

  /** @type {Omit<import("../views/turn.js").TurnHandlers, "answer" | "regenerate" | "pick">} */
  const handlers = {
    resend(turnId) {
      const turn = store.conv.turns[turnId];
      if (!turn || store.busy()) return;
      store.dispatch({ type: "send", turnId, message: turn.userText, at: turn.sentAt ?? new Date().toISOString() });
      follow();
      // The same turn: with the agent it was first sent with.
      const kept = unsentStore.list(store.conv.cid).find((t) => t.turnId === turnId);
      deliver(turnId, turn.userText, kept?.agent ?? {});
    },
    rerun(turnId) {
      const turn = store.conv.turns[turnId];
      if (turn) send(turn.userText);
      ui.input.focus();
    },
    edit(turnId) {
      const turn = turnId ? store.conv.turns[turnId] : null;
      if (turn?.status === "unsent") {
        // An unsent message goes back to the composer; it is not kept twice.
        unsentStore.remove(store.conv.cid, turn.turnId);
        store.dispatch({ type: "sendRefused", turnId: turn.turnId });
        ui.input.value = turn.userText;
        ui.input.focus();
        return;
      }
      store.editing = turnId;
      screen.schedule();
      if (!turnId) ui.input.focus();
    },
    sendEdited(_turnId, message) {
      send(message);
      ui.input.focus();
    },
  };

  /** The turn whose stop is being sent: pressing again waits for it; the next turn's Stop does not. @type {string | null} */
  let stopping = null;

  async function stop() {
    const active = activeTurn(store.conv);
    if (!active || screen.connectionLost() || stopping === active.turnId) return;
    if (active.status !== "running") {
      // The server cannot cancel a turn it is still dispatching: cancel it as soon as it runs.
      stopWhenRunning = active.turnId;
      return;
    }
    stopWhenRunning = null;
    // Focus stays in the composer, not on a button about to disappear.
    ui.input.focus();
    stopping = active.turnId;
    ui.stop.disabled = true;
    const cid = store.conv.cid;
    const operationId = crypto.randomUUID();
    try {
      let res = await api.cancel(cid, operationId, "stopped by the user");
      // Still being dispatched on the server (nothing recorded): the same stop, again in a moment.
      const refusal = () => (res.data && "error" in res.data ? res.data.error : null);
      for (let tries = 0; refusal()?.code === "turn_not_ready" && tries < 20; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        res = await api.cancel(cid, operationId, "stopped by the user");
      }
      if (res.status >= 400)
        screen.showBanner(
          refusal()?.message ??
            ("message" in res.data ? res.data.message : undefined) ??
            "Could not confirm the run stopped.",
        );
    } catch (err) {
      screen.showBanner(`Could not stop the run: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      if (stopping === active.turnId) stopping = null;
      ui.stop.disabled = screen.connectionLost();
    }
  }

  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ui.composer.requestSubmit();
    }
  });

  ui.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const message = ui.input.value.trim();
    if (!message) return;
    // Not connected: the message stays in the box, and the box says why (not a silent no-op).
    if (screen.connectionLost()) return screen.holdBack();
    // During a turn the message waits its turn on the server, listed under the running one.
    if (store.conv.cid && !store.conv.deleted && activeTurn(store.conv)) {
      ui.input.value = "";
      screen.hideBanner();
      queue(message, agent.forTurn());
      return;
    }
    if (store.busy()) return;
    ui.input.value = "";
    send(message);
  });

  ui.stop.addEventListener("click", stop);

  /**
   * Sends an example prompt. The examples go once the message shows: the focus goes to the message
   * box, not to the page.
   * @param {string} prompt
   */
  function sendExample(prompt) {
    send(prompt);
    ui.input.focus();
  }

  /**
   * Example prompts for an empty conversation; the emulator's markers show what each script does.
   * @param {string} provider  the server's provider (GET /healthz)
   */
  function showExamples(provider) {
    const examples =
      provider === "emulator"
        ? [
            ["Explain the README", "What does the README say?"],
            ["Answer a few questions first", "Set up the test runner [ask]"],
            ["Ask before running a command", "Run the test suite [permission]"],
            ["Propose a plan to approve", "Add a parser test, with a plan first [plan]"],
            ["Change a few files", "Add a greeting to the server [edits]"],
            ["A long, streamed answer", "Explain how this project fits together [long]"],
            ["Markdown as agents write it", "Look into the duplicated tool card [markdown]"],
            ["A run that fails", "Try something that breaks [fail]"],
          ]
        : [
            ["Explain the project", "Explain what this repository does and how it is organised."],
            ["Find a bug", "Run the tests and explain any failure."],
            ["Write a test", "Add a test for the most important function that has none."],
            ["Review recent changes", "Summarize the most recent changes and anything risky in them."],
          ];
    ui.examples.replaceChildren(
      ...examples.map(([label, prompt]) =>
        el(
          "li",
          {},
          el(
            "button",
            { type: "button", class: "example", onclick: () => sendExample(/** @type {string} */ (prompt)) },
            el("strong", { text: label }),
            el("span", { text: prompt }),
          ),
        ),
      ),
    );
  }

  return {
    handlers,
    stop,
    showExamples,
    /** Settles once the message being sent, if any, has its answer. */
    sent: () => delivering,
    /** A stop asked for while the turn was being dispatched is sent once the turn runs. */
    stopIfNowRunning() {
      if (stopWhenRunning && store.conv.turns[stopWhenRunning]?.status === "running") stop();
    },
  };
}
