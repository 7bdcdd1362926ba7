/**
 * The runner's clock: a run emits its frames on its own schedule, whatever the isolate it shares
 * with its readers is doing. Each case drives a Runner of its own over an emulator object's store,
 * with the clock it reads (Date.now) set by the test.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Runner } from "./runner";
import { EmulatorStore } from "./store";
import { StreamHub } from "./streams";

const DELAY_MS = 40;
const T0 = 1_700_000_000_000;

/** Frames a run of `words` words has stored after the runner's clock read each of `ticks` (ms after its start), a tick at each. */
async function framesAfter(ticks: number[], words = 30): Promise<number> {
  const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(`runner-clock-${crypto.randomUUID()}`));
  return runInDurableObject(stub, (_instance, state) => {
    const now = vi.spyOn(Date, "now").mockReturnValue(T0);
    const store = new EmulatorStore(state.storage.sql);
    const runner = new Runner({
      store,
      streams: new StreamHub(store),
      frameDelayMs: () => DELAY_MS,
      setAlarm: () => undefined,
    });
    try {
      const exe = runner.start({
        sandboxId: "sb",
        sessionId: "s",
        message: `answer [words:${words}]`,
        backend: "opencode",
        request: {},
      });
      for (const at of ticks) {
        now.mockReturnValue(T0 + at);
        runner.tick();
      }
      return store.lastFrameId(exe.id);
    } finally {
      runner.clear();
    }
  });
}

describe("the emulator's runs keep their own schedule", () => {
  afterEach(() => vi.restoreAllMocks());

  it("a tick that comes late emits every frame due by then, as ticks on time would have", async () => {
    const late = 20 * DELAY_MS;
    const onTime = await framesAfter(Array.from({ length: late / 10 }, (_, i) => (i + 1) * 10));
    const once = await framesAfter([late]);
    // Many frames were due: the admission and more than a few of the script's.
    expect(onTime).toBeGreaterThan(10);
    expect(once).toBe(onTime);
  });

  it("frames are not emitted before they are due", async () => {
    // Just before the first script frame's time, only the admission frame is out.
    expect(await framesAfter([1, DELAY_MS / 2])).toBe(1);
  });
});

describe("the emulator's backstop alarm", () => {
  afterEach(() => vi.restoreAllMocks());

  it("is armed between the next frame's time and a second after it, not once per tick", async () => {
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(`runner-alarm-${crypto.randomUUID()}`));
    const { armed, ticks, outOfRange } = await runInDurableObject(stub, (_instance, state) => {
      const now = vi.spyOn(Date, "now").mockReturnValue(T0);
      const store = new EmulatorStore(state.storage.sql);
      const armed: number[] = [];
      const runner = new Runner({
        store,
        streams: new StreamHub(store),
        frameDelayMs: () => DELAY_MS,
        setAlarm: (at) => armed.push(at),
      });
      let ticks = 0;
      let outOfRange = 0;
      try {
        runner.start({
          sandboxId: "sb",
          sessionId: "s",
          message: "answer [words:100]",
          backend: "opencode",
          request: {},
        });
        // A tick at each frame's time: the run's whole turn, one frame a tick.
        for (let at = DELAY_MS; at <= 100 * DELAY_MS; at += DELAY_MS) {
          now.mockReturnValue(T0 + at);
          runner.tick();
          ticks++;
          const next = store.nextDueAt();
          const alarm = armed.at(-1)!;
          if (next !== null && (alarm < next || alarm > next + 1_000)) outOfRange++;
        }
      } finally {
        runner.clear();
      }
      return { armed: armed.length, ticks, outOfRange };
    });
    // Always a backstop for the next frame, never more than a second late, and set about once a second.
    expect(outOfRange).toBe(0);
    expect(ticks).toBe(100);
    expect(armed).toBeLessThanOrEqual(Math.ceil((100 * DELAY_MS) / 1_000) + 1);
  });
});
