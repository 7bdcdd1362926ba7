import { describe, expect, it } from "vitest";
import { Refusal } from "../errors";
import type { SandboxTerminals, TerminalConnection, UpstreamTerminalFrame } from "../providers/provider";
import { CLOSE, TerminalRelay, type TerminalSpec } from "./relay";

/** A PTY's socket as the relay sees it, driven by the test. */
class FakeConnection implements TerminalConnection {
  readonly sent: unknown[] = [];
  closedByUs = false;
  private frameListeners: ((f: UpstreamTerminalFrame) => void)[] = [];
  private early: UpstreamTerminalFrame[] = [];
  private closeListeners: ((code: number, reason: string) => void)[] = [];
  onFrame(l: (f: UpstreamTerminalFrame) => void) {
    this.frameListeners.push(l);
    for (const f of this.early.splice(0)) l(f);
  }
  onClose(l: (code: number, reason: string) => void) {
    this.closeListeners.push(l);
  }
  input(data: string) {
    this.sent.push({ input: data });
  }
  resize(cols: number, rows: number) {
    this.sent.push({ resize: [cols, rows] });
  }
  close() {
    this.closedByUs = true;
    this.drop(1000);
  }
  emit(frame: UpstreamTerminalFrame) {
    if (this.frameListeners.length === 0) this.early.push(frame);
    for (const l of this.frameListeners) l(frame);
  }
  drop(code = 1011) {
    const listeners = this.closeListeners;
    this.closeListeners = [];
    for (const l of listeners) l(code, "");
  }
}

const META = {
  name: "t",
  shell: "/bin/sh",
  cwd: "/home/agent",
  cols: 80,
  rows: 24,
  createdAt: new Date(0).toISOString(),
  lastActivityAt: new Date(0).toISOString(),
  isRunning: true,
};

/** A sandbox whose PTY lives while `alive`: each connect answers ready (restored when it lived) and the replay. */
function sandbox() {
  const state = { alive: false, connections: [] as FakeConnection[], connectFails: false };
  const terminals: SandboxTerminals = {
    async connect() {
      if (state.connectFails) throw new Refusal("upstream_error", "not running");
      const conn = new FakeConnection();
      const restored = state.alive;
      state.alive = true;
      state.connections.push(conn);
      queueMicrotask(() => {
        conn.emit({ type: "ready", sessionId: "pty-1", restored, detachTimeoutMs: 1000 });
        if (restored) conn.emit({ type: "output", data: "[retained screen]" });
      });
      return conn;
    },
    async metadata() {
      return META;
    },
  };
  return { state, terminals };
}

class FakeViewer {
  frames: any[] = [];
  closed: number | null = null;
  send(data: string) {
    this.frames.push(JSON.parse(data));
  }
  close(code: number) {
    this.closed = code;
  }
}

const spec: TerminalSpec = { terminalId: "t1", kind: "shell", environmentId: "sbx", connectionId: "c1" };

function relayOver(terminals: SandboxTerminals) {
  const clock = { now: 10_000, alarms: [] as number[] };
  let reserved = 0;
  const relay = new TerminalRelay({
    terminals,
    now: () => clock.now,
    readyTimeoutMs: 1000,
    idleMs: 5000,
    setAlarm: (at) => clock.alarms.push(at),
    firstSeq: () => reserved + 1,
    reserveThrough: (seq) => {
      reserved = Math.max(reserved, seq);
    },
  });
  return { relay, clock };
}

describe("TerminalRelay", () => {
  it("after an idle close, a reconnect whose PTY expired (a new shell) is refused, never handed over", async () => {
    const { state, terminals } = sandbox();
    const { relay, clock } = relayOver(terminals);
    expect(await relay.attach(spec, { cols: 80, rows: 24 })).toEqual({ status: "attached" });
    const viewer = new FakeViewer();
    await relay.addViewer(viewer as unknown as WebSocket, spec, undefined);
    state.connections[0]!.emit({ type: "output", data: "$ " });
    clock.now += 6000;
    relay.alarm();
    expect(viewer.closed).toBe(CLOSE.idle);
    expect(viewer.frames.at(-1)).toMatchObject({ type: "error", code: "terminal_idle" });
    expect(state.connections[0]!.closedByUs).toBe(true);

    // The detach window passed: the sandbox starts a new shell for the id.
    state.alive = false;
    const back = new FakeViewer();
    await relay.addViewer(back as unknown as WebSocket, spec, undefined);
    expect(back.closed).toBe(CLOSE.ended);
    expect(back.frames.find((f) => f.type === "error")).toMatchObject({ code: "terminal_ended" });
    expect(state.connections[1]!.closedByUs).toBe(true);
  });

  it("after an idle close, a reconnect within the window reattaches and replays the retained screen", async () => {
    const { state, terminals } = sandbox();
    const { relay, clock } = relayOver(terminals);
    await relay.attach(spec, { cols: 80, rows: 24 });
    clock.now += 6000;
    relay.alarm();
    const back = new FakeViewer();
    await relay.addViewer(back as unknown as WebSocket, spec, undefined);
    expect(back.closed).toBeNull();
    await new Promise((r) => setTimeout(r, 0));
    expect(back.frames.map((f) => f.type)).toEqual(["ready", "ready", "output"]);
    expect(back.frames[1]).toEqual({ type: "ready", restored: true });
    expect(state.connections).toHaveLength(2);
  });

  it("a dropped socket whose PTY is gone ends the terminal; input then is refused", async () => {
    const { state, terminals } = sandbox();
    const { relay } = relayOver(terminals);
    await relay.attach(spec, { cols: 80, rows: 24 });
    const viewer = new FakeViewer();
    await relay.addViewer(viewer as unknown as WebSocket, spec, undefined);
    state.alive = false;
    state.connections[0]!.drop();
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setTimeout(r, 0));
    expect(viewer.closed).toBe(CLOSE.ended);
    expect((await relay.ref(spec)).isRunning).toBe(false);
    expect(relay.close()).toMatchObject({ status: "unknown" });
  });

  it("does not re-arm past a few drops in a row with no output between them", async () => {
    const { state, terminals } = sandbox();
    const { relay } = relayOver(terminals);
    await relay.attach(spec, { cols: 80, rows: 24 });
    const viewer = new FakeViewer();
    await relay.addViewer(viewer as unknown as WebSocket, spec, undefined);
    for (let i = 0; i < 5; i++) {
      state.connections.at(-1)!.drop();
      for (let k = 0; k < 4; k++) await new Promise((r) => setTimeout(r, 0));
    }
    expect(state.connections.length).toBeLessThanOrEqual(4);
    expect(viewer.closed).toBe(CLOSE.ended);
  });
});
