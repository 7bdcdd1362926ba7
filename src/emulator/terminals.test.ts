/**
 * The terminal as the emulator serves it (docs/sandbox-wire.md §12), over its own `fetch`: the
 * socket's frames, the shell, a PTY's life (reattach, eviction, detach, the sandbox's end), its
 * metadata, and the terminal's variants and fault.
 */
import { describe, expect, it } from "vitest";
import { openTerm, socketPath, type Term } from "./terminal-support";
import { type Emu, fastSandbox, json } from "./test-support";

const ready = (t: Term) => t.frames.find((f) => f.type === "ready");
const ptys = async (emu: Emu, id: string) =>
  (await json(await emu.control(`/_emulator/sandboxes/${id}/terminals`))).terminals as Array<Record<string, unknown>>;
/** Opens a socket and waits for its prompt. */
const shellOn = async (emu: Emu, id: string, cid: string, query = "") => {
  const t = await openTerm(emu, id, cid, query);
  await t.untilOutput("$ ");
  return t;
};

describe("the emulator's terminal socket", () => {
  it("says ready first, echoes typing, runs echo, cat, ls and pwd, in \\r\\n lines", async () => {
    const { emu, id } = await fastSandbox("term-shell");
    await emu.control(`/_emulator/sandboxes/${id}/files`, { path: "notes/todo.txt", content: "one\ntwo\n" });
    const t = await shellOn(emu, id, "c1");
    expect(t.frames[0]).toEqual({
      type: "ready",
      connectionId: "c1",
      sessionId: expect.stringMatching(/^term_/),
      restored: false,
      detachTimeoutMs: 60_000,
    });
    t.type("echo hi");
    await t.untilOutput("$ echo hi");
    t.type("\r");
    await t.untilOutput("echo hi\r\nhi\r\n$ ");
    t.type("cat notes/todo.txt\r");
    await t.untilOutput("cat notes/todo.txt\r\none\r\ntwo\r\n$ ");
    t.type("ls\r");
    await t.untilOutput("ls\r\nassets/\r\nnotes/\r\npackage.json\r\nREADME.md\r\nsrc/\r\n$ ");
    t.type("pwd\r");
    await t.untilOutput("pwd\r\n/home/agent\r\n$ ");
    t.type("nope\r");
    await t.untilOutput("sh: nope: command not found\r\n");
    // Binary messages are input too.
    t.ws.send(new TextEncoder().encode("echo bytes\r"));
    await t.untilOutput("\r\nbytes\r\n");
    const [pty] = await ptys(emu, id);
    expect(pty).toMatchObject({ connectionId: "c1", sockets: 1, alive: true });
    expect(pty!.outputBytes).toBe(new TextEncoder().encode(t.output()).length);
    t.ws.close(1000);
  });

  it("ends with an exit frame and a 1000 close on exit N", async () => {
    const { emu, id } = await fastSandbox("term-exit");
    const t = await shellOn(emu, id, "c1");
    t.type("exit 3\r");
    expect(await t.untilClosed()).toEqual({ code: 1000, reason: "exited" });
    expect(t.frames.at(-1)).toEqual({ type: "exit", exitCode: 3 });
    const meta = await emu.api("GET", `/v1/sidecar-proxy/${id}/terminals/${ready(t)!.sessionId}`);
    expect((await json(meta)).data).toMatchObject({ isRunning: false, exitCode: 3 });
    // The id starts a new shell now.
    const again = await shellOn(emu, id, "c1");
    expect(ready(again)!.restored).toBe(false);
    again.ws.close(1000);
  });

  it("resizes without an echo (stty size), and refuses a frame it does not know with an error frame", async () => {
    const { emu, id } = await fastSandbox("term-resize");
    const t = await shellOn(emu, id, "c1", "?cols=100&rows=30");
    t.type("stty size\r");
    await t.untilOutput("stty size\r\n30 100\r\n$ ");
    const before = t.outputMessages;
    t.send({ type: "resize", cols: 132, rows: 43 });
    t.send({ type: "paste", data: "x" });
    await t.until((x) => x.frames.some((f) => f.type === "error"));
    expect(t.frames.find((f) => f.type === "error")!.message).toContain("unknown frame type");
    expect(t.outputMessages).toBe(before);
    t.send({ type: "resize", cols: 0, rows: 10 });
    await t.until((x) => x.frames.filter((f) => f.type === "error").length === 2);
    t.type("stty size\r");
    await t.untilOutput("43 132\r\n");
    const meta = await json(await emu.api("GET", `/v1/sidecar-proxy/${id}/terminals/${ready(t)!.sessionId}`));
    expect(meta.data).toMatchObject({ cols: 132, rows: 43 });
    t.ws.close(1000);
  });

  it("reattaches a live PTY with restored: true and its retained output; a second socket replaces the first (4000)", async () => {
    const { emu, id } = await fastSandbox("term-reattach");
    const first = await shellOn(emu, id, "c1");
    first.type("echo before\r");
    await first.untilOutput("before\r\n$ ");
    const second = await openTerm(emu, id, "c1");
    expect(await first.untilClosed()).toEqual({ code: 4000, reason: "replaced" });
    await second.untilOutput("echo before\r\nbefore\r\n$ ");
    expect(second.frames[0]).toMatchObject({ type: "ready", restored: true, sessionId: ready(first)!.sessionId });
    expect(second.output()).toBe(first.output());
    second.type("echo live\r");
    await second.untilOutput("live\r\n$ ");
    expect((await ptys(emu, id))[0]).toMatchObject({ sockets: 1, alive: true });
    second.ws.close(1000);
  });

  it("replays the newest 64 KiB by default", async () => {
    const { emu, id } = await fastSandbox("term-retained-default");
    const first = await shellOn(emu, id, "c1");
    first.type("seq 20000\r");
    await first.untilOutput("20000\r\n$ ");
    first.ws.close(1000);
    const again = await openTerm(emu, id, "c1");
    await again.untilOutput("20000\r\n$ ");
    const all = first.output();
    expect(all.length).toBeGreaterThan(65_536);
    expect(again.output()).toBe(all.slice(all.length - 65_536));
    again.ws.close(1000);
  });

  it("keeps the newest retained bytes only (variant terminalRetainedBytes; seq overflows it)", async () => {
    const { emu, id } = await fastSandbox("term-retained");
    await emu.control("/_emulator/variants", { terminalRetainedBytes: 1000 });
    const first = await shellOn(emu, id, "c1");
    first.type("seq 2000\r");
    await first.untilOutput("2000\r\n$ ");
    first.ws.close(1000);
    const again = await openTerm(emu, id, "c1");
    await again.untilOutput("2000\r\n$ ");
    expect(ready(again)!.restored).toBe(true);
    const all = first.output();
    expect(again.output()).toBe(all.slice(all.length - 1000));
    again.ws.close(1000);
  });

  it("after the last socket closes, the PTY lives its detach window; ended at once, the id starts a new shell", async () => {
    const { emu, id } = await fastSandbox("term-detach");
    await emu.control("/_emulator/variants", { terminalDetachMs: 600_000 });
    const t = await shellOn(emu, id, "c1");
    expect(ready(t)!.detachTimeoutMs).toBe(600_000);
    t.ws.close(1000);
    await t.untilClosed();
    // Held: the detach window is ten minutes, so the PTY is there, detached.
    const detached = async () => (await ptys(emu, id))[0]?.sockets === 0;
    while (!(await detached())) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await ptys(emu, id))[0]).toMatchObject({ alive: true, sockets: 0 });
    expect(await json(await emu.control(`/_emulator/sandboxes/${id}/terminals/expire`, {}))).toEqual({ expired: 1 });
    expect(await ptys(emu, id)).toEqual([]);
    const meta = await emu.api("GET", `/v1/sidecar-proxy/${id}/terminals/${ready(t)!.sessionId}`);
    expect(meta.status).toBe(404);
    const fresh = await shellOn(emu, id, "c1");
    expect(ready(fresh)!.restored).toBe(false);
    expect(fresh.output()).toBe("$ ");
    fresh.ws.close(1000);
  });

  it("a detach window of 0 ends the PTY when its socket closes", async () => {
    const { emu, id } = await fastSandbox("term-detach-0");
    await emu.control("/_emulator/variants", { terminalDetachMs: 0 });
    const t = await shellOn(emu, id, "c1");
    t.ws.close(1000);
    await t.untilClosed();
    while ((await ptys(emu, id)).length > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(ready(await shellOn(emu, id, "c1"))!.restored).toBe(false);
  });

  it("a stopped or deleted sandbox ends its PTYs: 1001, no exit frame", async () => {
    const { emu, id } = await fastSandbox("term-ended");
    const a = await shellOn(emu, id, "a");
    await emu.api("POST", `/v1/sandboxes/${id}/stop`);
    expect((await a.untilClosed()).code).toBe(1001);
    expect(a.frames.some((f) => f.type === "exit")).toBe(false);
    expect(await ptys(emu, id)).toEqual([]);
    const refused = await emu.fetch(socketPath(id, "a"), {
      headers: { upgrade: "websocket", authorization: "Bearer k" },
    });
    expect(refused.status).toBe(409);
    expect((await json(refused)).error.code).toBe("SANDBOX_NOT_RUNNING");

    const other = await fastSandbox("term-deleted");
    const b = await shellOn(other.emu, other.id, "b");
    await other.emu.api("DELETE", `/v1/sandboxes/${other.id}`);
    expect((await b.untilClosed()).code).toBe(1001);
  });

  it("a sandbox its idle timeout stops ends its PTYs too (1001)", async () => {
    const { emu } = await fastSandbox("term-idle");
    const id = (await json(await emu.api("POST", "/v1/sandboxes", { idleTimeoutSeconds: 60 }))).id as string;
    while ((await json(await emu.api("GET", `/v1/sandboxes/${id}`))).filesystemIncarnationReadiness !== "ready")
      await new Promise((resolve) => setTimeout(resolve, 5));
    const t = await shellOn(emu, id, "c1");
    await emu.control(`/_emulator/sandboxes/${id}/clock`, { advanceSeconds: 120 });
    expect((await json(await emu.api("GET", `/v1/sandboxes/${id}`))).status).toBe("stopped");
    expect((await t.untilClosed()).code).toBe(1001);
    expect(t.frames.some((f) => f.type === "exit")).toBe(false);
  });

  it("refuses before the upgrade: 401 without a bearer, 404 an unknown sandbox, 400 a bad id or size; /runtime/terminals is 500", async () => {
    const { emu, id } = await fastSandbox("term-refused");
    const up = { upgrade: "websocket" };
    expect((await emu.fetch(socketPath(id, "c1"), { headers: up })).status).toBe(401);
    const auth = { ...up, authorization: "Bearer k" };
    const unknown = await emu.fetch(socketPath("sbx_none", "c1"), { headers: auth });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe("SANDBOX_NOT_FOUND");
    expect((await emu.fetch(socketPath(id, "a%20b"), { headers: auth })).status).toBe(400);
    expect((await emu.fetch(socketPath(id, "c1", "?cols=0"), { headers: auth })).status).toBe(400);
    expect((await emu.fetch(socketPath(id, "c1"), { headers: { authorization: "Bearer k" } })).status).toBe(426);
    const runtime = await emu.fetch(`/v1/sandboxes/${id}/runtime/terminals/c1/ws`, { headers: auth });
    expect(runtime.status).toBe(500);
    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters).toMatchObject({ "requests.terminals.socket": 4, "requests.runtime.terminals": 1 });
  });
});

describe("the terminal's metadata", () => {
  it("answers { success, data } for a session, 404 TERMINAL_NOT_FOUND for none", async () => {
    const { emu, id } = await fastSandbox("term-meta");
    const t = await shellOn(emu, id, "c1");
    const sessionId = ready(t)!.sessionId as string;
    const res = await emu.api("GET", `/v1/sidecar-proxy/${id}/terminals/${sessionId}`);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toEqual({
      success: true,
      data: {
        sessionId,
        connectionId: "c1",
        name: "sh",
        shell: "/bin/sh",
        cwd: "/home/agent",
        cols: 80,
        rows: 24,
        createdAt: expect.any(String),
        lastActivityAt: expect.any(String),
        isRunning: true,
      },
    });
    const none = await emu.api("GET", `/v1/sidecar-proxy/${id}/terminals/term_none`);
    expect(none.status).toBe(404);
    expect((await json(none)).error.code).toBe("TERMINAL_NOT_FOUND");
    t.ws.close(1000);
  });
});

describe("the terminal's variants and fault", () => {
  it("terminalRoutes: missing answers 404 NOT_FOUND on the socket and the metadata", async () => {
    const { emu, id } = await fastSandbox("term-missing");
    await emu.control("/_emulator/variants", { terminalRoutes: "missing" });
    const auth = { upgrade: "websocket", authorization: "Bearer k" };
    const socket = await emu.fetch(socketPath(id, "c1"), { headers: auth });
    expect(socket.status).toBe(404);
    expect((await json(socket)).error.code).toBe("NOT_FOUND");
    const meta = await emu.api("GET", `/v1/sidecar-proxy/${id}/terminals/term_x`);
    expect((await json(meta)).error.code).toBe("NOT_FOUND");
  });

  it("terminalFrames: json sends output as { type: output, data } text frames, a reattach's replay too", async () => {
    const { emu, id } = await fastSandbox("term-json");
    await emu.control("/_emulator/variants", { terminalFrames: "json" });
    const t = await shellOn(emu, id, "c1");
    t.type("echo é\r");
    await t.untilOutput("é\r\n$ ");
    expect(
      t.frames
        .filter((f) => f.type === "output")
        .map((f) => f.data)
        .join(""),
    ).toBe(t.output());
    t.ws.close(1000);
    const again = await openTerm(emu, id, "c1");
    await again.untilOutput("é\r\n$ ");
    expect(again.output()).toBe(t.output());
    again.ws.close(1000);
  });

  it("terminalMetadata: no-<field> leaves that field out", async () => {
    const { emu, id } = await fastSandbox("term-meta-variant");
    await emu.control("/_emulator/variants", { terminalMetadata: "no-lastActivityAt" });
    const t = await shellOn(emu, id, "c1");
    const data = (await json(await emu.api("GET", `/v1/sidecar-proxy/${id}/terminals/${ready(t)!.sessionId}`))).data;
    expect(data).not.toHaveProperty("lastActivityAt");
    expect(data).toHaveProperty("createdAt");
    t.ws.close(1000);
  });

  it("terminalReady: no-detach-window leaves detachTimeoutMs out; silent sends nothing", async () => {
    const { emu, id } = await fastSandbox("term-ready");
    await emu.control("/_emulator/variants", { terminalReady: "no-detach-window" });
    const t = await shellOn(emu, id, "c1");
    expect(t.frames[0]).toEqual({ type: "ready", connectionId: "c1", sessionId: expect.any(String), restored: false });
    t.ws.close(1000);

    await emu.control("/_emulator/variants", { terminalReady: "silent" });
    const silent = await openTerm(emu, id, "c2");
    silent.type("echo hi\r");
    // The emulator holds no PTY behind it: nothing will ever come.
    expect(await ptys(emu, id)).not.toContainEqual(expect.objectContaining({ connectionId: "c2" }));
    expect(silent.frames).toEqual([]);
    expect(silent.output()).toBe("");
    silent.ws.close(1000);
  });

  it("fault terminalDrop closes the next socket 1011 after N output messages, no exit; the PTY lives on", async () => {
    const { emu, id } = await fastSandbox("term-drop");
    await emu.control("/_emulator/faults", { frameDelayMs: 0, terminalDrop: 2 });
    const t = await shellOn(emu, id, "c1");
    t.type("e");
    expect(await t.untilClosed()).toEqual({ code: 1011, reason: "dropped" });
    expect(t.outputMessages).toBe(2);
    expect(t.frames.some((f) => f.type === "exit")).toBe(false);
    expect((await json(await emu.control("/_emulator/faults"))).faults.terminalDrop).toBeUndefined();
    const again = await openTerm(emu, id, "c1");
    await again.untilOutput("$ e");
    expect(ready(again)!.restored).toBe(true);
    again.type("cho ok\r");
    await again.untilOutput("ok\r\n$ ");
    again.ws.close(1000);
  });
});
