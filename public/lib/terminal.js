// @ts-check
/**
 * The Terminal tab's rules, without the DOM (pure, tested in Node by test/page/terminal.test.ts): the
 * socket's URL, the gateway's frames read and checked (docs/api.md "Terminals"), what a close means
 * (reconnect with the cursor, start from the current screen, or stop and say why), the reconnect's
 * backoff, input cut to the frame's bound, the key bar's sequences (Ctrl held for the next key, Tab,
 * Esc, the arrows), the key that leaves the terminal, the theme from the page's colours and what the
 * tab keeps in this tab's session. Imported only by the terminal's chunk (controllers/terminal.js).
 */

export const TERMINALS = "/v1/environment/terminals";

/**
 * The socket's absolute URL: the answer's `url` (a path with its token) on the gateway's origin, as
 * ws: or wss:, with `since` (exclusive) when the page already shows output up to that sequence.
 * @param {string} url  the POST's `url`
 * @param {string} base  the gateway's base (the page's origin, or an embedding host's baseUrl)
 * @param {number | null} since
 */
export function socketUrl(url, base, since) {
  const out = new URL(url, base);
  out.protocol = out.protocol === "https:" ? "wss:" : out.protocol === "http:" ? "ws:" : out.protocol;
  // The token goes as a subprotocol (tokenProtocol), never in the URL, where proxies log it.
  out.searchParams.delete("access_token");
  if (since !== null) out.searchParams.set("since", String(since));
  else out.searchParams.delete("since");
  return out.href;
}

/**
 * The socket's token as the subprotocol the gateway takes and echoes: `bearer.<base64url token>`.
 * @param {string} token
 */
export function tokenProtocol(token) {
  const bytes = new TextEncoder().encode(token);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `bearer.${btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "")}`;
}

/**
 * @typedef {{ type: "ready", restored: boolean, cols?: number, rows?: number }
 *   | { type: "output", seq: number, data: string }
 *   | { type: "resize", cols: number, rows: number }
 *   | { type: "exit", exitCode?: number, exitSignal?: string }
 *   | { type: "error", code: string, message: string }} DownFrame
 */

const isInt = (/** @type {unknown} */ n) => typeof n === "number" && Number.isInteger(n);

/**
 * A frame from the gateway, checked; null for one the page does not know (it is skipped, never
 * drawn). Only `output` carries a sequence.
 * @param {unknown} text
 * @returns {DownFrame | null}
 */
export function parseFrame(text) {
  if (typeof text !== "string") return null;
  /** @type {any} */
  let f;
  try {
    f = JSON.parse(text);
  } catch {
    return null;
  }
  if (!f || typeof f !== "object") return null;
  switch (f.type) {
    case "ready":
      return {
        type: "ready",
        restored: f.restored === true,
        ...(isInt(f.cols) && isInt(f.rows) ? { cols: f.cols, rows: f.rows } : {}),
      };
    case "output":
      return isInt(f.seq) && f.seq > 0 && typeof f.data === "string"
        ? { type: "output", seq: f.seq, data: f.data }
        : null;
    case "resize":
      return isInt(f.cols) && isInt(f.rows) ? { type: "resize", cols: f.cols, rows: f.rows } : null;
    case "exit":
      return {
        type: "exit",
        ...(isInt(f.exitCode) ? { exitCode: f.exitCode } : {}),
        ...(typeof f.exitSignal === "string" ? { exitSignal: f.exitSignal } : {}),
      };
    case "error":
      return {
        type: "error",
        code: typeof f.code === "string" ? f.code : "error",
        message: typeof f.message === "string" ? f.message : "The terminal reported an error.",
      };
    default:
      return null;
  }
}

/** How an exit reads: "exited (code 0)", "exited (signal SIGHUP)", "exited (code unknown)". @param {{ exitCode?: number, exitSignal?: string }} exit */
export function exitText(exit) {
  if (exit.exitCode !== undefined) return `exited (code ${exit.exitCode})`;
  if (exit.exitSignal) return `exited (signal ${exit.exitSignal})`;
  return "exited (code unknown)";
}

/**
 * What the page does once its socket closed (docs/api.md "Close codes"):
 * - `reconnect`: a drop (the network, the gateway restarting, a rate it went over): again, after a
 *   backoff, from its cursor (`since`): nothing twice, nothing missed;
 * - `fresh`: its cursor is no longer (or not) the gateway's: again at once without `since`, from
 *   the current screen, and the page says so;
 * - `idle`: the gateway let go of an idle terminal (4408); the shell lives on, a click reattaches;
 * - `ended`: the shell exited, or the terminal ended or was deleted: a new one is offered;
 * - `stop`: the gateway refused what the page sent (a bad frame): said, and not tried again.
 * @param {number} code  the close code
 * @param {{ exited: boolean, error: string | null }} seen  an exit frame came; the last error frame's code
 * @returns {"reconnect" | "fresh" | "idle" | "ended" | "stop"}
 */
export function afterClose(code, { exited, error }) {
  if (exited || code === 4410 || code === 4499) return "ended";
  if (code === 4409 || error === "cursor_evicted" || error === "cursor_invalid") return "fresh";
  if (code === 4408) return "idle";
  if (code === 4400) return "stop";
  // 1000 without an exit frame is not an ending the page can prove: it reattaches and sees.
  return "reconnect";
}

/** The n-th reconnect's wait (0-based): 0.5 s, doubling, at most 10 s. @param {number} attempt */
export function backoffMs(attempt) {
  return Math.min(10_000, 500 * 2 ** Math.max(0, attempt));
}

/** Input frames carry at most 64 KiB of text: at most this many UTF-16 units (3 bytes each in UTF-8 at most). */
export const INPUT_CHUNK = 16_384;

/** Input cut into frames within the bound, never between a surrogate pair's halves. @param {string} data */
export function inputChunks(data, size = INPUT_CHUNK) {
  /** @type {string[]} */
  const out = [];
  let at = 0;
  while (at < data.length) {
    let end = Math.min(data.length, at + size);
    const last = data.charCodeAt(end - 1);
    if (end < data.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    out.push(data.slice(at, end));
    at = end;
  }
  return out;
}

/** The key bar's keys: their text and name (the name holds the text a speech user says). */
export const KEYS = /** @type {const} */ ({
  Tab: { label: "Tab", name: "Tab" },
  Esc: { label: "Esc", name: "Esc" },
  Up: { label: "↑", name: "Up arrow" },
  Down: { label: "↓", name: "Down arrow" },
  Left: { label: "←", name: "Left arrow" },
  Right: { label: "→", name: "Right arrow" },
});
const ARROWS = /** @type {const} */ ({ Up: "A", Down: "B", Right: "C", Left: "D" });

/**
 * What a key of the key bar sends: Tab and Esc as themselves, an arrow as the terminal expects it
 * (`ESC [ A`, or `ESC O A` in application cursor mode), and with Ctrl held an arrow as `ESC [ 1 ; 5 A`.
 * @param {keyof typeof KEYS} key @param {{ ctrl: boolean, application: boolean }} mode
 */
export function keySequence(key, { ctrl, application }) {
  if (key === "Tab") return "\t";
  if (key === "Esc") return "\x1b";
  const final = ARROWS[key];
  if (ctrl) return `\x1b[1;5${final}`;
  return application ? `\x1bO${final}` : `\x1b[${final}`;
}

/**
 * What typed text sends with Ctrl held (the key bar's sticky Ctrl; the phone's keyboard has none):
 * a letter as its control character (Ctrl+C is 0x03), `@ [ \ ] ^ _ ?` and space as theirs; anything
 * else (more than one character, a digit) as it is.
 * @param {string} data
 */
export function withCtrl(data) {
  if (data.length !== 1) return data;
  const c = data.toUpperCase().charCodeAt(0);
  if (c >= 64 && c <= 95) return String.fromCharCode(c - 64);
  if (data === " ") return "\0";
  if (data === "?") return "\x7f";
  return data;
}

/**
 * The key that leaves the terminal (the shell takes Tab and Escape): Alt+Shift+↑. Checked on a
 * keydown; the terminal's own keys never are it.
 * @param {{ type?: string, key: string, altKey: boolean, shiftKey: boolean, ctrlKey: boolean, metaKey: boolean }} event
 */
export function isLeaveKey(event) {
  return event.key === "ArrowUp" && event.altKey && event.shiftKey && !event.ctrlKey && !event.metaKey;
}
export const LEAVE_KEY_TEXT = "Alt+Shift+↑";
export const LEAVE_KEY_ARIA = "Alt+Shift+ArrowUp";

/**
 * The terminal's colours from the page's (its CSS variables, light or dark): the background and
 * text of its code blocks, the accent for the cursor and the selection; the ANSI colours from the
 * page's own (the terminal keeps each at 4.5:1 or more against the background itself).
 * @param {(name: string) => string} cssVar  a variable's computed value (`--ink` → "#1c2230")
 */
export function themeOf(cssVar) {
  const v = (/** @type {string} */ name, /** @type {string} */ fallback) => cssVar(name).trim() || fallback;
  const background = v("--code-bg", "#f3f4f7");
  const foreground = v("--ink", "#1c2230");
  return {
    background,
    foreground,
    cursor: v("--accent", "#2f4fc9"),
    cursorAccent: background,
    selectionBackground: v("--selected", "#e9eefc"),
    selectionForeground: foreground,
    black: foreground,
    red: v("--danger", "#b42318"),
    green: v("--ok", "#1a6b3c"),
    yellow: v("--warn", "#8a5300"),
    blue: v("--hl-number", "#0550ae"),
    magenta: v("--hl-title", "#6639ba"),
    cyan: v("--hl-string", "#0a3069"),
    white: v("--muted", "#566173"),
    brightBlack: v("--muted", "#566173"),
    brightRed: v("--hl-keyword", "#b42318"),
    brightGreen: v("--ok", "#1a6b3c"),
    brightYellow: v("--hl-builtin", "#8a4600"),
    brightBlue: v("--accent", "#2f4fc9"),
    brightMagenta: v("--hl-title", "#6639ba"),
    brightCyan: v("--hl-string", "#0a3069"),
    brightWhite: foreground,
  };
}

/** What the tab keeps in this browser tab's session: the terminal it shows, so a reload reattaches it. */
export const SAVED_KEY = "gw:terminal";

/** The saved terminal, checked (anything else: none). @param {string | null} text @returns {{ terminalId: string } | null} */
export function readSaved(text) {
  if (!text) return null;
  try {
    const saved = JSON.parse(text);
    return typeof saved?.terminalId === "string" && /^[A-Za-z0-9_-]{1,64}$/.test(saved.terminalId)
      ? { terminalId: saved.terminalId }
      : null;
  } catch {
    return null;
  }
}
