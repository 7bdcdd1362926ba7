import { describe, expect, it } from "vitest";
import { ProviderError } from "../providers/errors";
import type { AgentProvider, ProviderEvent, ProviderResult } from "../providers/provider";
import { IngestQueue } from "./ingest-queue";
import { INGEST_EVENTS_PER_TASK, runPump } from "./pump";

const ref = {
  runId: "e1",
  provider: "p",
  environmentId: "env",
  sessionId: "s",
  executionId: "e1",
  requestDigest: `sha256:${"0".repeat(64)}`,
} as const;
const ev = (id: string, terminal?: "completed" | "failed"): ProviderEvent =>
  terminal
    ? { kind: "terminal", upstreamId: id, status: terminal }
    : { kind: "part", upstreamId: id, part: { id: "p", type: "text" } };

/** A provider whose streams are scripted: each call to events() plays the next script. */
function scripted(streams: Array<ProviderEvent[] | Error>, result: ProviderResult | null = null) {
  const cursors: Array<string | undefined> = [];
  const provider = {
    name: "fake",
    async *events(_ref: unknown, options: { after?: string }) {
      cursors.push(options.after);
      const next = streams.shift();
      if (!next) throw new ProviderError("unavailable", "gone", { retryable: true });
      if (next instanceof Error) throw next;
      for (const e of next) yield e;
    },
    async result() {
      return result;
    },
  } as unknown as AgentProvider;
  return { provider, cursors };
}

/**
 * A host over a real ingest queue whose commits are instant; `commits` holds each batch's ids.
 * `durable` resolves on a later macrotask, as the output gate does, so frames that arrive meanwhile
 * wait for the next batch.
 */
function host(options: { failOn?: string; failTimes?: number; alwaysFailOn?: string } = {}) {
  const seen = new Set<string>();
  const log: string[] = [];
  const commits: string[][] = [];
  let cursor: string | undefined;
  let live = true;
  let settled: string | undefined;
  let lost: string | undefined;
  let failOn = options.failOn;
  let failTimes = options.failTimes ?? 1;
  const queue = new IngestQueue<ProviderEvent>({
    apply(batch) {
      // One transaction: a failure keeps nothing of the batch.
      const before = { seen: new Set(seen), log: log.length, cursor, live };
      let fresh = 0;
      try {
        for (const event of batch) {
          if (event.upstreamId === failOn) {
            if (--failTimes <= 0) failOn = undefined;
            throw new Error("the commit failed");
          }
          if (event.upstreamId === options.alwaysFailOn) throw new Error("this frame always fails");
          if (event.upstreamId !== undefined) {
            if (seen.has(event.upstreamId)) continue;
            seen.add(event.upstreamId);
            cursor = event.upstreamId;
          }
          fresh++;
          log.push(event.upstreamId!);
          if (event.kind === "terminal") live = false;
        }
      } catch (err) {
        seen.clear();
        for (const id of before.seen) seen.add(id);
        log.length = before.log;
        cursor = before.cursor;
        live = before.live;
        throw err;
      }
      commits.push(batch.map((e) => e.upstreamId!));
      return { admitted: fresh, committed: true };
    },
    durable: () => new Promise((resolve) => setTimeout(resolve, 0)),
  });
  return {
    log,
    commits,
    get settledWith() {
      return settled;
    },
    get lost() {
      return lost;
    },
    environmentLost(reason: string) {
      lost = reason;
      live = false;
    },
    cursor: () => cursor,
    ingest: (event: ProviderEvent) => queue.push(event),
    settled: () => queue.settled(),
    admitted: () => queue.admitted,
    backlogged: () => queue.backlogged(),
    onFailure: (listener: () => void) => queue.onFailure(listener),
    isLive: () => live,
    finishFromResult(result: ProviderResult, reason: string) {
      settled = `${result.status}: ${reason}`;
      live = false;
    },
  };
}

const noSleep = async () => {};

describe("the upstream reader", () => {
  it("reconnects from the last stored id after a severed stream and reads to the terminal event", async () => {
    const { provider, cursors } = scripted([
      [ev("1"), ev("2")],
      [ev("2"), ev("3")],
      [ev("4", "completed"), ev("5", "completed")],
    ]);
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(cursors).toEqual([undefined, "2", "3"]);
    // What follows the terminal event on the same stream repeats what the session has: not read.
    expect(h.log).toEqual(["1", "2", "3", "4"]);
  });

  it("gives up after maxAttempts reconnects without progress, once the result cannot settle it", async () => {
    const { provider, cursors } = scripted([[ev("1")], [], [], []]);
    const h = host();
    expect(
      await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep, maxAttempts: 3 }),
    ).toBe("gave_up");
    expect(cursors).toHaveLength(4);
  });

  it("settles from the run's result when upstream no longer holds the cursor", async () => {
    const { provider } = scripted([[ev("1")], new ProviderError("cursor_expired", "cursor gone")], {
      status: "completed",
      text: "done",
    });
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(h.settledWith).toContain("completed");
  });

  it("a stream that ends cleanly with nothing new settles from the result at once, without backing off", async () => {
    let sleeps = 0;
    const { provider } = scripted([[ev("1")], []], { status: "completed" });
    const h = host();
    const outcome = await runPump(provider, ref, h, {
      signal: new AbortController().signal,
      sleep: async () => void sleeps++,
    });
    expect(outcome).toBe("finished");
    expect(h.settledWith).toBe("completed: the stream ended without a terminal frame");
    expect(sleeps).toBe(1);
  });

  it("an environment that is gone or stopped ends the run at once, without reconnecting", async () => {
    for (const code of ["environment_gone", "environment_not_running"] as const) {
      const { provider, cursors } = scripted([[ev("1")], new ProviderError(code, "the sandbox is gone")]);
      const h = host();
      expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe(
        "finished",
      );
      expect(h.lost).toBe("the sandbox is gone");
      expect(cursors).toEqual([undefined, "1"]);
    }
  });

  it("stops when aborted", async () => {
    const abort = new AbortController();
    abort.abort();
    const { provider } = scripted([[ev("1")]]);
    expect(await runPump(provider, ref, host(), { signal: abort.signal, sleep: noSleep })).toBe("aborted");
  });

  it("frames that arrive while a commit is in flight go in the next commit together; the first goes at once", async () => {
    const { provider } = scripted([[ev("1"), ev("2"), ev("3"), ev("4"), ev("5", "completed")]]);
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(h.log).toEqual(["1", "2", "3", "4", "5"]);
    // One stream chunk: the first frame is committed alone and at once, the rest wait for its durability together.
    expect(h.commits).toEqual([["1"], ["2", "3", "4", "5"]]);
  });

  it("a commit that fails keeps nothing of its batch: its halves are applied again, and the reader reconnects from the last committed id", async () => {
    const { provider, cursors } = scripted([
      [ev("1"), ev("2"), ev("3")],
      [ev("2"), ev("3"), ev("4", "completed")],
    ]);
    // 3 fails twice: in the batch [2, 3], then alone; 2 commits on its own in between.
    const h = host({ failOn: "3", failTimes: 2 });
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(h.commits.slice(0, 2)).toEqual([["1"], ["2"]]);
    expect(cursors).toEqual([undefined, "2"]);
    expect(h.log).toEqual(["1", "2", "3", "4"]);
  });

  it("a commit that fails once is applied again in halves at once: nothing is read twice", async () => {
    const { provider, cursors } = scripted([[ev("1"), ev("2"), ev("3"), ev("4", "completed")]]);
    const h = host({ failOn: "3" });
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(cursors).toEqual([undefined]);
    expect(h.log).toEqual(["1", "2", "3", "4"]);
  });

  it("a commit that fails while the stream waits for its next frame drops that stream at once and reads it again", async () => {
    const cursors: Array<string | undefined> = [];
    let call = 0;
    const provider = {
      name: "fake",
      async *events(_ref: unknown, options: { after?: string; signal: AbortSignal }) {
        cursors.push(options.after);
        if (call++ === 0) {
          yield ev("1");
          yield ev("2");
          // Then nothing, for as long as the stream is open (a run waiting for an answer).
          await new Promise((_resolve, reject) =>
            options.signal.addEventListener("abort", () => reject(options.signal.reason)),
          );
        }
        yield ev("2");
        yield ev("3", "completed");
      },
      async result() {
        return null;
      },
    } as unknown as AgentProvider;
    const h = host({ failOn: "2" });
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(cursors).toEqual([undefined, "1"]);
    expect(h.log).toEqual(["1", "2", "3"]);
  });

  it("a frame whose commit always fails is isolated: the frames before it commit in the first pass, not one per pass", async () => {
    const h = host({ alwaysFailOn: "50" });
    const passes: Array<{ after: string | undefined; committed: number }> = [];
    const provider = {
      name: "fake",
      // Replays every frame after the cursor at once (a resumed reader at wire speed); the run goes on.
      async *events(_ref: unknown, options: { after?: string }) {
        passes.push({ after: options.after, committed: h.log.length });
        for (let id = Number(options.after ?? 0) + 1; id <= 60; id++) yield ev(String(id));
      },
      async result() {
        return null;
      },
    } as unknown as AgentProvider;
    const outcome = await runPump(provider, ref, h, {
      signal: new AbortController().signal,
      sleep: noSleep,
      maxAttempts: 3,
    });
    expect(outcome).toBe("gave_up");
    expect(h.log).toEqual(Array.from({ length: 49 }, (_, i) => String(i + 1)));
    // 1..49 committed by the end of the first pass; every later pass starts at the bad frame and
    // fails on it alone, without progress, until the reader gives up.
    expect(passes.map((p) => p.committed)).toEqual([0, 49, 49, 49]);
    expect(passes.slice(1).every((p) => p.after === "49")).toBe(true);
  });
});

describe("the upstream reader's work per task", () => {
  it("yields to the event loop after every INGEST_EVENTS_PER_TASK events of a burst read at once", async () => {
    const burst = Array.from({ length: 3 * INGEST_EVENTS_PER_TASK + 10 }, (_, i) => ev(String(i + 1)));
    const { provider } = scripted([[...burst, ev(String(burst.length + 1), "completed")]]);
    const h = host();
    let handedOver = 0;
    const atYields: number[] = [];
    const counted = { ...h, ingest: (event: ProviderEvent) => (handedOver++, h.ingest(event)) };
    const outcome = await runPump(provider, ref, counted, {
      signal: new AbortController().signal,
      sleep: noSleep,
      yieldTask: async () => void atYields.push(handedOver),
    });
    expect(outcome).toBe("finished");
    expect(h.log).toHaveLength(burst.length + 1);
    // Every INGEST_EVENTS_PER_TASK events handed over, one yield: never more in one task.
    expect(atYields).toEqual([1, 2, 3].map((k) => k * INGEST_EVENTS_PER_TASK));
  });
});
