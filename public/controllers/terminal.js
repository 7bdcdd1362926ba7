// @ts-check
/**
 * The workspace panel's Terminal tab (docs/chat-page.md "The Terminal tab"): a shell in the user's
 * sandbox through the gateway (docs/api.md "Terminals"), drawn by xterm.js. A chunk of its own with
 * xterm and its style, loaded when the tab first opens; it imports no module of the page's bundle
 * (the page's helpers are handed to it). It asks the gateway for the terminal (POST, the user's
 * token), opens its socket, draws what comes and sends what is typed; after a drop it reconnects
 * from its cursor (`since`), after a reload it reattaches the same terminal (kept in this tab's
 * session) and the gateway replays what it kept onto the empty screen. Alt+Shift+↑ leaves it (the
 * shell takes Tab and Escape); on a phone a key bar gives Ctrl, Tab, Esc and the arrows.
 */
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import {
  afterClose,
  backoffMs,
  exitText,
  INPUT_CHUNK,
  inputChunks,
  isLeaveKey,
  KEYS,
  keySequence,
  LEAVE_KEY_ARIA,
  LEAVE_KEY_TEXT,
  parseFrame,
  readSaved,
  SAVED_KEY,
  socketUrl,
  TERMINALS,
  themeOf,
  tokenProtocol,
  withCtrl,
} from "../lib/terminal.js";
import { adoptStyles } from "../views/terminal-style.js";

/** @param {unknown} err */
const why = (err) => (err instanceof Error ? err.message : String(err));
/** @param {unknown} err */
const codeOf = (err) => /** @type {{ code?: string }} */ (err)?.code;

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   el: typeof import("../views/dom.js").el,
 *   node: HTMLElement,
 *   leave: () => void,
 *   unavailable: (reason: string) => void,
 *   conversation: () => { cid: string, sent: boolean },
 * }} deps  `node`: the tab's panel, filled here; `leave`: where the leave key puts the focus (the tab);
 *   `unavailable`: the environment has no terminal (501), said by the tab; `conversation`: the open
 *   one, and whether it reached the server (its agent's UI can be opened)
 */
export function createTerminal({ api, el, node, leave, unavailable, conversation }) {
  adoptStyles();
  const status = el("p", { class: "term-status", role: "status" });
  const restart = el("button", { type: "button", text: "Start a new terminal", hidden: true, onclick: () => fresh() });
  const reconnect = el("button", {
    type: "button",
    text: "Reconnect",
    hidden: true,
    onclick: () => connect(),
  });
  // Interactive mode: the conversation's agent in its own terminal UI, instead of the shell.
  const what = el("p", { class: "term-what", text: "Shell" });
  const agentButton = el("button", { type: "button", text: "Open the agent's UI", onclick: () => showAgent() });
  const shellButton = el("button", {
    type: "button",
    text: "Back to the shell",
    hidden: true,
    onclick: () => switchTo(null),
  });
  const release = el("button", {
    type: "button",
    text: "Give back to the chat",
    hidden: true,
    onclick: () => giveBack(),
  });
  const screen = el("div", { class: "term-screen", role: "group", "aria-label": "Terminal" });
  const ctrl = el("button", { type: "button", class: "term-key", "aria-pressed": "false", text: "Ctrl" });
  const keyButtons = /** @type {(keyof typeof KEYS)[]} */ (["Tab", "Esc", "Left", "Up", "Down", "Right"]).map((key) =>
    el("button", {
      type: "button",
      class: "term-key",
      "aria-label": KEYS[key].name === KEYS[key].label ? null : KEYS[key].name,
      "data-key": key,
      text: KEYS[key].label,
    }),
  );
  const keys = el("div", { class: "term-keys", role: "group", "aria-label": "Terminal keys" }, ctrl, ...keyButtons);
  const hint = el(
    "p",
    { class: "hint term-hint", id: "term-hint" },
    el("kbd", { text: LEAVE_KEY_TEXT }),
    " leaves the terminal (Tab and Esc go to the shell).",
  );
  node.replaceChildren(
    el("div", { class: "term-head" }, what, agentButton, shellButton, release),
    el("div", { class: "term-head" }, status, reconnect, restart),
    screen,
    keys,
    hint,
  );

  const root = document.documentElement;
  const cssVar = (/** @type {string} */ name) => getComputedStyle(root).getPropertyValue(name);
  const term = new Terminal({
    theme: themeOf(cssVar),
    fontFamily: cssVar("--mono").trim() || "monospace",
    fontSize: 13,
    cursorBlink: false,
    scrollback: 2000,
    // A screen reader reads the output as it comes, and the screen as a list of its lines.
    screenReaderMode: true,
  });
  /**
   * Clears the screen in the order of what was written: a reset (RIS, `ESC c`) written after it, as
   * output is (xterm parses writes later; term.reset() would run before output still queued).
   */
  const clear = () => term.write("\x1bc");
  const fit = new FitAddon();
  term.loadAddon(fit);
  // The colours follow the page's theme (its choice, or the system's as it changes).
  const retheme = () => (term.options.theme = themeOf(cssVar));
  new MutationObserver(retheme).observe(root, { attributes: true, attributeFilter: ["data-theme"] });
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", retheme);

  /** Whether the shell's input is held for Ctrl (the key bar's sticky Ctrl): the next key goes with it. */
  let ctrlHeld = false;
  const holdCtrl = (/** @type {boolean} */ on) => {
    ctrlHeld = on;
    ctrl.setAttribute("aria-pressed", String(on));
  };
  // A tap on the bar keeps the focus (and a phone's keyboard) in the terminal.
  keys.addEventListener("pointerdown", (event) => event.preventDefault());
  ctrl.addEventListener("click", () => {
    holdCtrl(!ctrlHeld);
    term.focus();
  });
  for (const button of keyButtons)
    button.addEventListener("click", () => {
      const key = /** @type {keyof typeof KEYS} */ (button.dataset.key);
      send(keySequence(key, { ctrl: ctrlHeld, application: term.modes.applicationCursorKeysMode }));
      holdCtrl(false);
      term.focus();
    });

  let opened = false;
  let started = false;
  /** A POST under way; and a connect asked for meanwhile (run once it is in). */
  let connecting = false;
  let again = false;
  /** The shell this tab shows (kept in this tab's session: a reload reattaches it). */
  let terminalId = readSaved(sessionStorage.getItem(SAVED_KEY))?.terminalId ?? null;
  /** The conversation whose agent's UI is shown instead (interactive mode); null: the shell. @type {string | null} */
  let agentOf = null;
  /** The conversation was seen held by the agent's UI while it was shown (its release then shows the shell). */
  let heldSeen = false;
  /** Bumped when what the tab shows changes (another source, a sign-out): an answer from before is dropped. */
  let epoch = 0;
  /** The environment has no agent's UI (it answered 501): none offered. */
  let noAgent = false;
  /** The last output drawn (its sequence), in this page's life: a reconnect asks for what follows. @type {number | null} */
  let lastSeq = null;
  /** @type {WebSocket | null} */
  let socket = null;
  let attempt = 0;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** What this socket said: an exit, and its last error frame's code. */
  let exited = false;
  /** @type {string | null} */
  let lastError = null;
  /** Said once the next socket is ready (it started from the current screen). */
  let notice = "";

  const save = () =>
    agentOf || terminalId
      ? sessionStorage.setItem(SAVED_KEY, JSON.stringify({ terminalId }))
      : sessionStorage.removeItem(SAVED_KEY);
  /** @param {string} text */
  const say = (text) => {
    status.textContent = text;
  };

  /** Sends typed text (or a key's sequence), within the frame's bound; nothing while not connected. @param {string} data */
  function send(data) {
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      say("Not connected: what you type is not sent until the terminal reconnects.");
      return;
    }
    for (const chunk of inputChunks(data, INPUT_CHUNK)) socket.send(JSON.stringify({ type: "input", data: chunk }));
  }
  term.onData((data) => {
    if (ctrlHeld) {
      holdCtrl(false);
      send(withCtrl(data));
    } else send(data);
  });
  term.onResize(({ cols, rows }) => {
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "resize", cols, rows }));
  });
  term.attachCustomKeyEventHandler((event) => {
    if (!isLeaveKey(event)) return true;
    if (event.type === "keydown") {
      event.preventDefault();
      leave();
    }
    return false;
  });

  /** Fits the terminal to its box, when it has one (a hidden tab has none). */
  function refit() {
    if (!opened || !screen.clientWidth || !screen.clientHeight) return;
    fit.fit();
  }
  /** @type {number | undefined} */
  let frame;
  new ResizeObserver(() => {
    if (frame !== undefined) return;
    frame = requestAnimationFrame(() => {
      frame = undefined;
      refit();
    });
  }).observe(screen);

  /**
   * Asks the gateway for the terminal (the same one again when this tab has one: reattached) and
   * opens its socket, from the cursor when the screen already shows output (a drop), else from
   * what the gateway kept (a reload, a new terminal, a cursor no longer kept).
   */
  async function connect() {
    clearTimeout(timer);
    reconnect.hidden = true;
    restart.hidden = true;
    if (socket) return;
    // A POST under way answers for what the tab showed then: once it is in, again for what it shows now.
    if (connecting) {
      again = true;
      return;
    }
    connecting = true;
    try {
      do {
        again = false;
        await attach();
      } while (again && !socket);
    } finally {
      connecting = false;
    }
  }

  async function attach() {
    const at = epoch;
    say(attempt ? "Reconnecting…" : "Connecting…");
    /** @type {any} */
    let answer;
    const size = { cols: Math.min(term.cols, 500), rows: Math.min(term.rows, 200) };
    try {
      answer = (
        await api.request(agentOf ? `/v1/conversations/${encodeURIComponent(agentOf)}/interactive` : TERMINALS, {
          method: "POST",
          body: agentOf ? size : { ...(terminalId ? { terminalId } : {}), ...size },
        })
      ).data;
    } catch (err) {
      if (at !== epoch) return;
      const code = codeOf(err);
      if (agentOf && code === "capability_denied") {
        // No agent's UI here (501 interactiveAgent): not offered again; the shell instead, saying so.
        noAgent = true;
        agentOf = null;
        lastSeq = null;
        drawSource();
        notice = "This environment has no agent terminal UI: the shell instead.";
        return attach();
      }
      if (agentOf && !(/** @type {{ unreachable?: boolean }} */ (err)?.unreachable)) {
        // Not now (a turn runs: 409): said; the shell is a click away.
        say(`Not opened: ${why(err)}`);
        return;
      }
      if (code === "capability_denied") {
        say("This environment has no terminal.");
        unavailable("This environment has no terminal.");
        return;
      }
      if (code === "terminal_not_found" && terminalId) {
        // Not this user's any more (forgotten, expired): a new one.
        terminalId = null;
        lastSeq = null;
        save();
        return attach();
      }
      // Not reached, or the gateway failed (and may not again): again later. Refused (a limit, an ended
      // terminal) or failed for good (metadata incomplete): said.
      const failed = /** @type {{ unreachable?: boolean, body?: any }} */ (err);
      if (failed?.unreachable && failed.body?.error?.retryable !== false)
        retryLater(`The terminal could not be opened (${why(err)}).`);
      else {
        say(`No terminal: ${why(err)}`);
        reconnect.hidden = false;
        restart.hidden = !terminalId || !!agentOf;
      }
      return;
    }
    // Switched or signed out meanwhile: this answer is not for what the tab shows now.
    if (at !== epoch) return;
    if (
      !agentOf &&
      answer.status === "attached" &&
      terminalId &&
      answer.terminal?.terminalId === terminalId &&
      lastSeq !== null
    )
      notice = "A new shell: the earlier one had ended.";
    if (!agentOf) terminalId = answer.terminal?.terminalId ?? terminalId;
    save();
    // A new shell's output is not the screen's: from the start.
    const since = answer.status === "reattached" ? lastSeq : null;
    if (since === null) lastSeq = null;
    const base = new URL(api.baseUrl || "/", location.href).href;
    open(socketUrl(answer.url, base, since), since === null, answer.token);
  }

  /**
   * @param {string} url @param {boolean} fromStart the screen is drawn again from what the gateway kept
   * @param {string} token the terminal token, offered as a subprotocol (never in the URL)
   */
  function open(url, fromStart, token) {
    exited = false;
    lastError = null;
    const ws = new WebSocket(url, [tokenProtocol(token)]);
    socket = ws;
    let first = true;
    ws.onmessage = (event) => {
      if (socket !== ws) return;
      const f = parseFrame(event.data);
      if (!f) return;
      if (f.type === "ready") {
        if (first) {
          first = false;
          attempt = 0;
          if (fromStart) clear();
          // A terminal reattached keeps the size it had: this screen's goes up.
          if (f.cols !== undefined && (f.cols !== term.cols || f.rows !== term.rows))
            ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
          say(notice || "Connected.");
          notice = "";
        } else if (f.restored) {
          // The gateway reattached the sandbox's terminal: its kept screen follows, drawn afresh.
          clear();
        }
      } else if (f.type === "output") {
        if (lastSeq !== null && f.seq <= lastSeq) return;
        lastSeq = f.seq;
        term.write(f.data);
      } else if (f.type === "exit") {
        exited = true;
        say(exitText(f));
      } else if (f.type === "error") {
        lastError = f.code;
        if (f.code !== "cursor_evicted" && f.code !== "cursor_invalid") say(`The terminal said: ${f.message}`);
      }
    };
    ws.onclose = (event) => {
      if (socket !== ws) return;
      socket = null;
      const next = afterClose(event.code, { exited, error: lastError });
      if (next === "reconnect") retryLater("Connection lost: reconnecting…");
      else if (next === "fresh") {
        lastSeq = null;
        notice = "Started from the current screen: the output before it is no longer kept.";
        connect();
      } else if (next === "idle") {
        say("Disconnected: the terminal was idle. Reconnect to go on.");
        reconnect.hidden = false;
      } else if (next === "ended") {
        // Kept until a new one starts (a reload shows it ended): then the gateway forgets it too.
        if (!exited) say(event.code === 4499 ? "The terminal was closed." : "The terminal has ended.");
        restart.hidden = !!agentOf;
      } else {
        say(`The terminal closed: ${event.reason || `code ${event.code}`}.`);
        reconnect.hidden = false;
      }
    };
  }

  /** @param {string} text */
  function retryLater(text) {
    say(text);
    reconnect.hidden = false;
    timer = setTimeout(connect, backoffMs(attempt++));
  }

  /** A new shell: the ended one forgotten (the gateway too, best effort), the screen cleared. */
  async function fresh() {
    restart.hidden = true;
    const old = terminalId;
    terminalId = null;
    lastSeq = null;
    save();
    // Forgotten first (best effort), so its place under the user's bound is free for the new one.
    if (old) await api.request(`${TERMINALS}/${encodeURIComponent(old)}`, { method: "DELETE" }).catch(() => {});
    clear();
    attempt = 0;
    await connect();
  }

  /** What the head offers: the agent's UI of a conversation that reached the server, or the way back. */
  function drawSource() {
    what.textContent = agentOf ? "The agent's UI for this conversation" : "Shell";
    agentButton.hidden = !!agentOf || noAgent || !conversation().sent;
    shellButton.hidden = !agentOf;
    release.hidden = !agentOf;
  }

  /** Shows the shell (null) or a conversation's agent's UI: the other socket let go, the screen drawn afresh. @param {string | null} cid */
  function switchTo(cid) {
    if (cid === agentOf && (socket || connecting)) return;
    const ws = socket;
    socket = null;
    ws?.close(1000, "switched");
    clearTimeout(timer);
    agentOf = cid;
    epoch++;
    heldSeen = false;
    lastSeq = null;
    attempt = 0;
    notice = "";
    clear();
    drawSource();
    connect();
  }

  function showAgent() {
    const { cid, sent } = conversation();
    if (sent) switchTo(cid);
  }

  /** Gives the session back to the chat (the agent's UI is detached, not stopped), and shows the shell. */
  async function giveBack() {
    const cid = agentOf;
    switchTo(null);
    if (!cid) return;
    try {
      await api.request(`/v1/conversations/${encodeURIComponent(cid)}/interactive`, { method: "DELETE" });
    } catch (err) {
      say(`The session could not be given back: ${why(err)}`);
    }
  }

  // Signed out (the page's app hidden): the user's terminal is let go and its screen cleared, so
  // whoever signs in next in this tab sees none of it; the next showing connects afresh.
  const app = node.closest("#app");
  if (app)
    new MutationObserver(() => {
      if (!app.hasAttribute("hidden")) return;
      const ws = socket;
      socket = null;
      ws?.close(1000, "signed out");
      clearTimeout(timer);
      epoch++;
      terminalId = null;
      agentOf = null;
      lastSeq = null;
      save();
      clear();
      started = false;
      say("");
      reconnect.hidden = true;
      restart.hidden = true;
      drawSource();
    }).observe(app, { attributes: true, attributeFilter: ["hidden"] });

  return {
    /**
     * The tab is shown: drawn (the first time), fitted, and connected; with `agent`, on that
     * conversation's agent's UI (the chat's "Open in terminal").
     * @param {string | null} [agent]
     */
    show(agent = null) {
      if (!opened) {
        term.open(screen);
        opened = true;
        const input = screen.querySelector("textarea");
        input?.setAttribute("aria-describedby", "term-hint");
        input?.setAttribute("aria-keyshortcuts", LEAVE_KEY_ARIA);
      }
      refit();
      if (agent) {
        started = true;
        switchTo(agent);
      } else if (!started) {
        started = true;
        connect();
      }
      drawSource();
    },
    /** The open conversation changed (another one, its first turn, the chat given its session back). @param {boolean} interactive */
    changed(interactive) {
      // Signed in again with the tab shown: connected afresh.
      if (opened && !started && screen.clientWidth > 0) {
        started = true;
        connect();
      }
      // Released is a change from held: the event saying it was taken may come after the answer did.
      const released = heldSeen && !interactive;
      heldSeen = !!agentOf && interactive;
      if (agentOf && (agentOf !== conversation().cid || released)) switchTo(null);
      else drawSource();
    },
    focus: () => term.focus(),
  };
}

/** @typedef {ReturnType<typeof createTerminal>} TerminalTab */
