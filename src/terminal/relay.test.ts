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
  const state = {
    alive: false,
    connections: [] as FakeConnection[],
    generations: [] as (number | undefined)[],
    connectFails: false,
    /** While set, metadata reads wait for it (an attach held mid-way). */
    metadataGate: null as Promise<void> | null,
  };
  const terminals: SandboxTerminals = {
    async connect(_env, _cid, open) {
      if (state.connectFails) throw new Refusal("upstream_error", "not running");
      const conn = new FakeConnection();
      state.generations.push(open.generation);
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
      if (state.metadataGate) await state.metadataGate;
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

function relayOver(
  terminals: SandboxTerminals,
  clock = { now: 10_000, alarms: [] as number[], expiry: null as number | null },
) {
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
    expiry: { read: () => clock.expiry, write: (at: number) => (clock.expiry = at) },
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

  it("a close while an open awaits lets the opened socket go: the terminal stays closed", async () => {
    const { state, terminals } = sandbox();
    const { relay, clock } = relayOver(terminals);
    await relay.attach(spec, { cols: 80, rows: 24 });
    clock.now += 6000;
    relay.alarm(); // idle: let go
    let open!: () => void;
    state.metadataGate = new Promise((r) => (open = r));
    const viewer = new FakeViewer();
    const adding = relay.addViewer(viewer as unknown as WebSocket, spec, undefined);
    await tick();
    expect(relay.close()).toMatchObject({ status: "unknown" });
    open();
    await adding;
    expect(state.connections.at(-1)!.closedByUs).toBe(true);
    expect(relay.liveness().held).toBe(false);
    expect(viewer.closed).toBe(CLOSE.closed);
  });

  it("an attach under another generation while an open awaits ends on the new generation alone", async () => {
    const { state, terminals } = sandbox();
    const { relay, clock } = relayOver(terminals);
    const agent = { ...spec, kind: "agent" as const, generation: 1 };
    await relay.attach(agent, { cols: 80, rows: 24 });
    clock.now += 6000;
    relay.alarm();
    let open!: () => void;
    state.metadataGate = new Promise((r) => (open = r));
    const viewer = new FakeViewer();
    const adding = relay.addViewer(viewer as unknown as WebSocket, agent, undefined);
    await tick();
    const reattach = relay.attach({ ...agent, generation: 2 }, { cols: 80, rows: 24 });
    open();
    state.metadataGate = null;
    await adding;
    await reattach;
    const live = state.connections.filter((c) => !c.closedByUs);
    expect(live).toHaveLength(1);
    expect(state.generations.at(-1)).toBe(2);
    expect(relay.liveness().held).toBe(true);
  });

  it("frames a viewer sends while its terminal is reattached wait, then go in order", async () => {
    const { state, terminals } = sandbox();
    const { relay, clock } = relayOver(terminals);
    await relay.attach(spec, { cols: 80, rows: 24 });
    clock.now += 6000;
    relay.alarm();
    let open!: () => void;
    state.metadataGate = new Promise((r) => (open = r));
    const viewer = new FakeViewer();
    const adding = relay.addViewer(viewer as unknown as WebSocket, spec, undefined);
    await tick();
    relay.fromViewer(viewer as unknown as WebSocket, JSON.stringify({ type: "input", data: "l" }));
    relay.fromViewer(viewer as unknown as WebSocket, JSON.stringify({ type: "input", data: "s" }));
    open();
    await adding;
    expect(viewer.closed).toBeNull();
    expect(state.connections.at(-1)!.sent).toEqual([{ input: "l" }, { input: "s" }]);
  });

  it("lets go of a terminal nobody watches after the idle time, however much it prints", async () => {
    const { state, terminals } = sandbox();
    const { relay, clock } = relayOver(terminals);
    await relay.attach(spec, { cols: 80, rows: 24 });
    const viewer = new FakeViewer();
    await relay.addViewer(viewer as unknown as WebSocket, spec, undefined);
    relay.viewerGone(viewer as unknown as WebSocket);
    for (let i = 0; i < 6; i++) {
      clock.now += 1000;
      state.connections[0]!.emit({ type: "output", data: "tick\r\n" });
    }
    relay.alarm();
    expect(state.connections[0]!.closedByUs).toBe(true);
    expect(relay.liveness().held).toBe(false);
  });

  it("a new object knows when the PTY it let go of expires (for pruning), from its one row", async () => {
    const { terminals } = sandbox();
    const { relay, clock } = relayOver(terminals);
    await relay.attach(spec, { cols: 80, rows: 24 });
    clock.now += 6000;
    relay.alarm();
    const kept = relay.liveness().expiresAt;
    expect(kept).not.toBeNull();
    // The object starts again (its memory gone): its row still says when.
    const { relay: again } = relayOver(terminals, clock);
    expect(again.liveness()).toEqual({ held: false, expiresAt: kept });
  });
});

const tick = () => new Promise((r) => setTimeout(r, 0));
