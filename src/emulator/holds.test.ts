/**
 * Held runs (./holds.ts): `[hold]` stops a run after its first step whatever the clock says, until
 * the release route lets it go on. The runner's cases drive a Runner of their own with the clock
 * (Date.now) set by the test; the routes' cases talk to an emulator object of their own.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Runner } from "./runner";
import { EmulatorStore } from "./store";
import { StreamHub } from "./streams";
import { dispatch, emulator, json, readRaw, runningSandbox } from "./test-support";

const T0 = 1_700_000_000_000;
const LATER = 10_000_000;

describe("a held run", () => {
  afterEach(() => vi.restoreAllMocks());

  it("stops after its first step however late the clock is, and goes on to its end once released", async () => {
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(`holds-${crypto.randomUUID()}`));
    const seen = await runInDurableObject(stub, (_instance, state) => {
      const now = vi.spyOn(Date, "now").mockReturnValue(T0);
      const store = new EmulatorStore(state.storage.sql);
      const runner = new Runner({
        store,
        streams: new StreamHub(store),
        frameDelayMs: () => 40,
        setAlarm: () => undefined,
      });
      try {
        const exe = runner.start({
          sandboxId: "sb",
          sessionId: "s",
          message: "answer [long] [hold]",
          backend: "opencode",
          request: {},
        });
        now.mockReturnValue(T0 + LATER);
        runner.tick();
        const held = store.execution(exe.id)!;
        const lastWhileHeld = store.framesOfType(exe.id, "raw").map((f) => f.data);
        const framesWhileHeld = store.lastFrameId(exe.id);
        now.mockReturnValue(T0 + 2 * LATER);
        runner.tick();
        const stillHeld = store.lastFrameId(exe.id);
        const heldThen = runner.held(store.execution(exe.id)!);
        runner.release(store.execution(exe.id)!);
        now.mockReturnValue(T0 + 3 * LATER);
        // Every frame after the hold is due: as many ticks as that takes (FRAMES_PER_TICK frames a tick).
        for (let ticks = 0; store.execution(exe.id)!.status === "running" && ticks < 100; ticks++) runner.tick();
        return {
          heldThen,
          status: held.status,
          lastWhileHeld,
          framesWhileHeld,
          stillHeld,
          end: store.execution(exe.id)!.status,
          releasedHeld: runner.held(store.execution(exe.id)!),
          frames: store.lastFrameId(exe.id),
        };
      } finally {
        runner.clear();
      }
    });
    expect(seen.status).toBe("running");
    expect(seen.heldThen).toBe(true);
    // Its last frame while held is the first step's end; the clock moving on sends nothing more.
    expect(seen.lastWhileHeld.map((d) => JSON.parse(d).event.part.id)).toEqual([
      expect.stringMatching(/:step-finish-1$/),
    ]);
    expect(seen.stillHeld).toBe(seen.framesWhileHeld);
    expect(seen.end).toBe("completed");
    expect(seen.releasedHeld).toBe(false);
    expect(seen.frames).toBeGreaterThan(seen.framesWhileHeld + 50);
  });

  it("the routes: held is shown, a release lets the run end; releasing one not held, or unknown, or with a body, is refused", async () => {
    const emu = emulator("holds");
    const sandboxId = await runningSandbox(emu);
    const stream = await dispatch(emu, sandboxId, { executionId: "exe-h", turnId: "t1", message: "hello [hold]" });
    const head = await readRaw(stream, (text) => text.includes("step-finish-1"));
    expect(head).not.toContain("event: done");
    expect(await json(await emu.control("/_emulator/executions/exe-h/hold"))).toEqual({
      held: true,
      status: "running",
    });
    expect((await emu.control("/_emulator/executions/exe-h/release", { now: true })).status).toBe(400);
    expect((await emu.control("/_emulator/executions/nope/release", {})).status).toBe(404);
    const released = await emu.control("/_emulator/executions/exe-h/release", {});
    expect(await json(released)).toEqual({ ok: true });
    // The rest, from the frame after the hold to the end.
    const rest = await readRaw(await emu.control("/_emulator/executions/exe-h/stream?after=0"), (text) =>
      text.includes("event: done"),
    );
    expect(rest).toContain("event: done");
    expect((await json(await emu.control("/_emulator/executions/exe-h"))).status).toBe("completed");
    const again = await emu.control("/_emulator/executions/exe-h/release", {});
    expect(again.status).toBe(409);
    expect((await json(again)).error.code).toBe("EXECUTION_NOT_HELD");
    expect(await json(await emu.control("/_emulator/executions/exe-h/hold"))).toEqual({
      held: false,
      status: "completed",
    });
  });
});
