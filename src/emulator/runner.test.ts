/**
 * The runner's clock: a run emits its frames on its own schedule, whatever the isolate it shares
 * with its readers is doing. Each case drives a Runner of its own over an emulator object's store,
 * with the clock it reads (Date.now) set by the test.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FRAMES_PER_TICK, Runner } from "./runner";
import { EmulatorStore } from "./store";
import { StreamHub } from "./streams";

const DELAY_MS = 40;
const T0 = 1_700_000_000_000;

/**
 * A Runner over an emulator object's store whose SQL counts the queries matching `counted`, and a run
 * of a 100-word answer started on it at T0 (the clock, Date.now, set by the test).
 */
function countingRun(sql: SqlStorage, counted: RegExp) {
  let count = 0;
  const countingSql = new Proxy(sql, {
    get(target, key) {
      if (key !== "exec") return Reflect.get(target, key);
      return (query: string, ...bindings: unknown[]) => {
        if (counted.test(query)) count++;
        return target.exec(query, ...bindings);
      };
    },
  });
  const store = new EmulatorStore(countingSql);
  const runner = new Runner({
    store,
    streams: new StreamHub(store),
    frameDelayMs: () => DELAY_MS,
    setAlarm: () => undefined,
  });
  const exe = runner.start({
    sandboxId: "sb",
    sessionId: "s",
    message: "answer [words:100]",
    backend: "opencode",
    request: {},
  });
  return { store, runner, exe, count: () => count };
}

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

describe("the emulator's work per tick", () => {
  afterEach(() => vi.restoreAllMocks());

  it("is bounded: an unpaced run emits about FRAMES_PER_TICK frames a tick, the rest in the ticks after, each once; a paced run beside it keeps its schedule", async () => {
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(`runner-budget-${crypto.randomUUID()}`));
    const { perTick, pacedLate, total, status } = await runInDurableObject(stub, (_instance, state) => {
      const now = vi.spyOn(Date, "now").mockReturnValue(T0);
      const store = new EmulatorStore(state.storage.sql);
      let delay = DELAY_MS;
      const runner = new Runner({
        store,
        streams: new StreamHub(store),
        frameDelayMs: () => delay,
        setAlarm: () => undefined,
      });
      const perTick: number[] = [];
      let pacedLate = 0;
      const run = (message: string) =>
        runner.start({ sandboxId: "sb", sessionId: `s-${message}`, message, backend: "opencode", request: {} });
      try {
        const paced = run("paced [words:300]");
        delay = 0;
        const burst = run("burst [words:300]");
        // The clock moves one frame delay a tick: the paced run has one frame due each, the burst all of its own.
        for (let k = 1, last = store.lastFrameId(burst.id); store.execution(burst.id)!.status === "running"; k++) {
          now.mockReturnValue(T0 + k * DELAY_MS);
          const pacedBefore = store.lastFrameId(paced.id);
          runner.tick();
          if (store.lastFrameId(paced.id) === pacedBefore) pacedLate++;
          const emitted = store.lastFrameId(burst.id);
          perTick.push(emitted - last);
          last = emitted;
          if (k > 100) break;
        }
        return { perTick, pacedLate, total: store.lastFrameId(burst.id), status: store.execution(burst.id)!.status };
      } finally {
        runner.clear();
      }
    });
    expect(status).toBe("completed");
    expect(total).toBeGreaterThan(300);
    // Two runs due: each a half of the tick's frames; every frame of the burst once.
    expect(Math.max(...perTick)).toBe(FRAMES_PER_TICK / 2);
    expect(perTick.reduce((a, b) => a + b, 0)).toBe(total - 1);
    expect(perTick.length).toBe(Math.ceil((total - 1) / (FRAMES_PER_TICK / 2)));
    // The paced run emitted its frame at every tick, on time.
    expect(pacedLate).toBe(0);
  });
});

describe("the emulator's frame numbers", () => {
  afterEach(() => vi.restoreAllMocks());

  it("are held in memory: a run's frames cost no query of the last id each, and still number from 1 without a gap", async () => {
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(`runner-ids-${crypto.randomUUID()}`));
    const { lookups, ids } = await runInDurableObject(stub, (_instance, state) => {
      const now = vi.spyOn(Date, "now").mockReturnValue(T0);
      const { store, runner, exe, count } = countingRun(state.storage.sql, /SELECT MAX\(id\)/i);
      try {
        for (
          let at = DELAY_MS;
          store.execution(exe.id)!.status === "running" && at < 1_000 * DELAY_MS;
          at += DELAY_MS
        ) {
          now.mockReturnValue(T0 + at);
          runner.tick();
        }
        return { lookups: count(), ids: store.framesFrom(exe.id, 0).map((f) => f.id) };
      } finally {
        runner.clear();
      }
    });
    expect(ids.length).toBeGreaterThan(100);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    // The run's first frame reads it once; none after.
    expect(lookups).toBeLessThanOrEqual(1);
  });

  it("a tick that sends many frames of a run writes where the run is once, not once a frame", async () => {
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(`runner-progress-${crypto.randomUUID()}`));
    const { writes, sent, step } = await runInDurableObject(stub, (_instance, state) => {
      const now = vi.spyOn(Date, "now").mockReturnValue(T0);
      const { store, runner, exe, count } = countingRun(state.storage.sql, /UPDATE executions SET step/i);
      try {
        // Late: a few dozen frames due at once.
        now.mockReturnValue(T0 + 30 * DELAY_MS);
        runner.tick();
        return { writes: count(), sent: store.lastFrameId(exe.id), step: store.execution(exe.id)!.step };
      } finally {
        runner.clear();
      }
    });
    expect(sent).toBeGreaterThan(20);
    // The admission frame is not a script step: every frame after it is one.
    expect(step).toBe(sent - 1);
    expect(writes).toBe(1);
  });
});
