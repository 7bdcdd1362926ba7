import { describe, expect, it } from "vitest";
import { ProviderError } from "../providers/errors";
import type { AgentProvider } from "../providers/provider";
import type { SessionStore } from "./store/store";
import { UpstreamReader, type UpstreamReaderDeps } from "./upstream-reader";

const ref = {
  runId: "e1",
  provider: "p",
  environmentId: "env",
  sessionId: "s",
  executionId: "e1",
  requestDigest: `sha256:${"0".repeat(64)}`,
} as const;

/** A reader over a fake store whose running turn is `t` (execution e1); `released` lists the held cursors let go. */
function reader(events: AgentProvider["events"], exists = true) {
  const released: string[] = [];
  const store = {
    activeTurn: () => ({ turnId: "t", executionId: "e1", status: "running", controlRef: ref }),
    cursorOf: () => undefined,
    turnStatus: () => "running",
    releaseHeld: (executionId: string) => void released.push(executionId),
  } as unknown as SessionStore;
  let stopped!: () => void;
  const done = new Promise<void>((resolve) => (stopped = resolve));
  const deps = {
    store: () => store,
    exists: () => exists,
    log: { commit: (fn: (log: unknown) => unknown) => fn({}) },
    desk: {},
    provider: () => ({ name: "fake", events, result: async () => null }) as unknown as AgentProvider,
    end: {
      fail: () => undefined,
      fromResult: () => undefined,
      finish: () => undefined,
      afterRun: async () => undefined,
    },
    budgets: {},
    showIdle: async () => undefined,
    waitingChanged: () => undefined,
    stopped: () => stopped(),
    durable: async () => undefined,
  } as unknown as UpstreamReaderDeps;
  return {
    reader: new UpstreamReader(deps),
    released,
    done,
  };
}

/** A stream that sends nothing until it is dropped (a run waiting). */
async function* quiet(_ref: unknown, options: { signal: AbortSignal }) {
  await new Promise((_resolve, reject) =>
    options.signal.addEventListener("abort", () => reject(options.signal.reason)),
  );
  yield* [];
}

describe("the upstream reader's held cursor", () => {
  it("is let go when the reader is stopped (a cancel, the watchdog's fail, a shutdown)", async () => {
    const r = reader(quiet as unknown as AgentProvider["events"]);
    r.reader.ensure();
    expect(r.reader.reading()).toBe(true);
    r.reader.stop();
    expect(r.released).toContain("e1");
    await r.done;
    expect(r.reader.reading()).toBe(false);
  });

  it("is let go when the reader stops by itself (here: the run's environment is gone)", async () => {
    const r = reader(async function* () {
      yield* [];
      throw new ProviderError("environment_gone", "the sandbox is gone");
    } as unknown as AgentProvider["events"]);
    r.reader.ensure();
    await r.done;
    expect(r.released).toEqual(["e1"]);
  });

  it("a deleted conversation gets no store back to let go of anything", async () => {
    const r = reader(quiet as unknown as AgentProvider["events"], false);
    r.reader.ensure();
    r.reader.stop();
    await r.done;
    expect(r.released).toEqual([]);
  });
});
