/**
 * The Terminal tab's rules (public/lib/terminal.js), in Node: the socket's URL, the gateway's frames
 * read and checked, what a close means, the backoff, input cut to the frame's bound, the key bar's
 * sequences, the leave key, the theme from the page's colours and what the tab keeps in its session.
 */
import { describe, expect, it } from "vitest";
import {
  afterClose,
  backoffMs,
  exitText,
  inputChunks,
  isLeaveKey,
  keySequence,
  parseFrame,
  readSaved,
  socketUrl,
  themeOf,
  tokenProtocol,
  withCtrl,
} from "../../public/lib/terminal.js";

describe("the socket's URL", () => {
  it("is the answer's path on the gateway's origin as ws: or wss:, its token left out (it goes as a subprotocol)", () => {
    const url = "/v1/environment/terminals/t1/ws?access_token=abc";
    expect(socketUrl(url, "http://localhost:8787/", null)).toBe("ws://localhost:8787/v1/environment/terminals/t1/ws");
    expect(socketUrl(url, "https://chat.example/", null)).toBe("wss://chat.example/v1/environment/terminals/t1/ws");
  });

  it("offers the token as the subprotocol bearer.<base64url>, which decodes to the token", () => {
    const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.sig-_~";
    const protocol = tokenProtocol(token);
    expect(protocol).toMatch(/^bearer\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(protocol.slice("bearer.".length), "base64url").toString()).toBe(token);
  });

  it("asks for what follows the last output drawn (since, exclusive), and for everything kept without one", () => {
    const url = "/v1/environment/terminals/t1/ws?access_token=abc&since=3";
    expect(socketUrl(url, "https://chat.example/", 41)).toBe(
      "wss://chat.example/v1/environment/terminals/t1/ws?since=41",
    );
    expect(socketUrl(url, "https://chat.example/", 0)).toContain("since=0");
    expect(socketUrl(url, "https://chat.example/", null)).not.toContain("since");
  });
});

describe("the gateway's frames", () => {
  it("reads each kind the gateway sends", () => {
    expect(parseFrame('{"type":"ready","terminalId":"t","status":"attached","cols":80,"rows":24}')).toEqual({
      type: "ready",
      restored: false,
      cols: 80,
      rows: 24,
    });
    expect(parseFrame('{"type":"ready","restored":true}')).toEqual({ type: "ready", restored: true });
    expect(parseFrame('{"type":"output","seq":7,"data":"hi\\r\\n"}')).toEqual({
      type: "output",
      seq: 7,
      data: "hi\r\n",
    });
    expect(parseFrame('{"type":"resize","cols":100,"rows":30}')).toEqual({ type: "resize", cols: 100, rows: 30 });
    expect(parseFrame('{"type":"exit","exitCode":0}')).toEqual({ type: "exit", exitCode: 0 });
    expect(parseFrame('{"type":"exit","exitSignal":"SIGHUP"}')).toEqual({ type: "exit", exitSignal: "SIGHUP" });
    expect(parseFrame('{"type":"error","code":"cursor_evicted","message":"gone","details":{}}')).toEqual({
      type: "error",
      code: "cursor_evicted",
      message: "gone",
    });
  });

  it("skips what it cannot trust: not JSON, binary, an unknown type, output without a sequence or text", () => {
    expect(parseFrame("not json")).toBeNull();
    expect(parseFrame(new ArrayBuffer(2))).toBeNull();
    expect(parseFrame("null")).toBeNull();
    expect(parseFrame('{"type":"bell"}')).toBeNull();
    expect(parseFrame('{"type":"output","data":"x"}')).toBeNull();
    expect(parseFrame('{"type":"output","seq":1.5,"data":"x"}')).toBeNull();
    expect(parseFrame('{"type":"output","seq":0,"data":"x"}')).toBeNull();
    expect(parseFrame('{"type":"output","seq":1,"data":5}')).toBeNull();
    expect(parseFrame('{"type":"resize","cols":"80","rows":24}')).toBeNull();
  });

  it("says an exit by its code, its signal, or that neither is known", () => {
    expect(exitText({ exitCode: 3 })).toBe("exited (code 3)");
    expect(exitText({ exitSignal: "SIGKILL" })).toBe("exited (signal SIGKILL)");
    expect(exitText({})).toBe("exited (code unknown)");
  });
});

describe("what a close means", () => {
  const seen = { exited: false, error: null };
  it("an exit, an ended or a deleted terminal: ended, a new one offered", () => {
    expect(afterClose(1000, { exited: true, error: null })).toBe("ended");
    expect(afterClose(4410, seen)).toBe("ended");
    expect(afterClose(4499, seen)).toBe("ended");
  });

  it("a cursor the gateway no longer (or never) holds: again at once from the current screen", () => {
    expect(afterClose(4409, seen)).toBe("fresh");
    expect(afterClose(4400, { exited: false, error: "cursor_invalid" })).toBe("fresh");
    expect(afterClose(1006, { exited: false, error: "cursor_evicted" })).toBe("fresh");
  });

  it("idle is the user's to resume; a frame refused is said, not sent again", () => {
    expect(afterClose(4408, seen)).toBe("idle");
    expect(afterClose(4400, seen)).toBe("stop");
  });

  it("a drop (the network, a restart, a rate, 1000 without an exit) reconnects from the cursor", () => {
    for (const code of [1000, 1001, 1006, 1011, 1012, 4000, 4413, 4429])
      expect(afterClose(code, seen)).toBe("reconnect");
  });

  it("backs off from half a second, doubling, to ten seconds at most", () => {
    expect([0, 1, 2, 3, 4, 5, 9].map(backoffMs)).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
  });
});

describe("input", () => {
  it("goes in frames within the bound, never splitting a surrogate pair", () => {
    expect(inputChunks("")).toEqual([]);
    expect(inputChunks("ls\r")).toEqual(["ls\r"]);
    expect(inputChunks("abcdefg", 3)).toEqual(["abc", "def", "g"]);
    const emoji = "ab😀cd"; // the emoji is two UTF-16 units, at 2 and 3
    const chunks = inputChunks(emoji, 3);
    expect(chunks.join("")).toBe(emoji);
    expect(chunks).toEqual(["ab", "😀c", "d"]);
    const big = "x".repeat(40_000);
    expect(inputChunks(big).every((c) => new TextEncoder().encode(c).length <= 64 * 1024)).toBe(true);
  });

  it("the key bar sends Tab, Esc and the arrows as the terminal's mode expects them", () => {
    const normal = { ctrl: false, application: false };
    expect(keySequence("Tab", normal)).toBe("\t");
    expect(keySequence("Esc", normal)).toBe("\x1b");
    expect(["Up", "Down", "Right", "Left"].map((k) => keySequence(k as "Up", normal))).toEqual([
      "\x1b[A",
      "\x1b[B",
      "\x1b[C",
      "\x1b[D",
    ]);
    expect(keySequence("Up", { ctrl: false, application: true })).toBe("\x1bOA");
    expect(keySequence("Left", { ctrl: true, application: false })).toBe("\x1b[1;5D");
  });

  it("Ctrl held makes the next key its control character", () => {
    expect(withCtrl("c")).toBe("\x03");
    expect(withCtrl("C")).toBe("\x03");
    expect(withCtrl("a")).toBe("\x01");
    expect(withCtrl("[")).toBe("\x1b");
    expect(withCtrl("\\")).toBe("\x1c");
    expect(withCtrl(" ")).toBe("\0");
    expect(withCtrl("?")).toBe("\x7f");
    expect(withCtrl("1")).toBe("1");
    expect(withCtrl("ls")).toBe("ls");
  });

  it("Alt+Shift+↑ leaves the terminal; the shell's keys (Escape, Tab, ↑, Shift+↑, Ctrl+Alt+Shift+↑) do not", () => {
    const key = (key: string, mods: Partial<Record<"altKey" | "shiftKey" | "ctrlKey" | "metaKey", boolean>> = {}) => ({
      key,
      altKey: false,
      shiftKey: false,
      ctrlKey: false,
      metaKey: false,
      ...mods,
    });
    expect(isLeaveKey(key("ArrowUp", { altKey: true, shiftKey: true }))).toBe(true);
    expect(isLeaveKey(key("Escape"))).toBe(false);
    expect(isLeaveKey(key("Tab"))).toBe(false);
    expect(isLeaveKey(key("ArrowUp"))).toBe(false);
    expect(isLeaveKey(key("ArrowUp", { shiftKey: true }))).toBe(false);
    expect(isLeaveKey(key("ArrowUp", { altKey: true }))).toBe(false);
    expect(isLeaveKey(key("ArrowUp", { altKey: true, shiftKey: true, ctrlKey: true }))).toBe(false);
  });
});

describe("the theme and the session", () => {
  it("takes the page's colours, whichever theme is on", () => {
    const dark: Record<string, string> = { "--code-bg": " #0f1218", "--ink": "#e6e9ef", "--accent": "#93abff" };
    const theme = themeOf((name) => dark[name] ?? "");
    expect(theme.background).toBe("#0f1218");
    expect(theme.foreground).toBe("#e6e9ef");
    expect(theme.cursor).toBe("#93abff");
    // A variable the page lacks: the light page's colour.
    expect(themeOf(() => "").background).toBe("#f3f4f7");
  });

  it("keeps the terminal's id, and reads back only a well-formed one", () => {
    expect(readSaved('{"terminalId":"t-1_x"}')).toEqual({ terminalId: "t-1_x" });
    expect(readSaved(null)).toBeNull();
    expect(readSaved("{")).toBeNull();
    expect(readSaved('{"terminalId":"../x"}')).toBeNull();
    expect(readSaved('{"terminalId":""}')).toBeNull();
    expect(readSaved(`{"terminalId":"${"a".repeat(65)}"}`)).toBeNull();
  });
});
