import { describe, expect, it } from "vitest";
import { ProviderError } from "../providers/errors";
import type { AgentProvider, ProviderEvent, ProviderResult } from "../providers/provider";
import { backoffMs, runPump } from "./pump";

const ref = { runId: "e1", provider: "p", environmentId: "env", sessionId: "s", executionId: "e1", requestDigest: `sha256:${"0".repeat(64)}` } as const;
const ev = (id: string, terminal?: "completed" | "failed"): ProviderEvent =>
  terminal ? { kind: "terminal", upstreamId: id, status: terminal } : { kind: "part", upstreamId: id, part: { id: "p", type: "text" } };

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

function host() {
  const seen = new Set<string>();
  const log: string[] = [];
  let cursor: string | undefined;
  let live = true;
  let settled: string | undefined;
  let lost: string | undefined;
  return {
    log,
    get settled() {
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
    ingest(event: ProviderEvent) {
      if (event.upstreamId !== undefined) {
        if (seen.has(event.upstreamId)) return false;
        seen.add(event.upstreamId);
        cursor = event.upstreamId;
      }
      log.push(event.upstreamId!);
      if (event.kind === "terminal") live = false;
      return true;
    },
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
    const { provider, cursors } = scripted([[ev("1"), ev("2")], [ev("2"), ev("3")], [ev("4", "completed"), ev("5", "completed")]]);
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(cursors).toEqual([undefined, "2", "3"]);
    // What follows the terminal event on the same stream repeats what the session has: not read.
    expect(h.log).toEqual(["1", "2", "3", "4"]);
  });

  it("gives up after maxAttempts reconnects without progress, once the result cannot settle it", async () => {
    const { provider, cursors } = scripted([[ev("1")], [], [], []]);
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep, maxAttempts: 3 })).toBe("gave_up");
    expect(cursors).toHaveLength(4);
  });

  it("settles from the run's result when upstream no longer holds the cursor", async () => {
    const { provider } = scripted([[ev("1")], new ProviderError("cursor_expired", "cursor gone")], { status: "completed", text: "done" });
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(h.settled).toContain("completed");
  });

  it("a stream that ends cleanly with nothing new settles from the result at once, without backing off", async () => {
    let sleeps = 0;
    const { provider } = scripted([[ev("1")], []], { status: "completed" });
    const h = host();
    const outcome = await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: async () => void sleeps++ });
    expect(outcome).toBe("finished");
    expect(h.settled).toBe("completed: the stream ended without a terminal frame");
    expect(sleeps).toBe(1);
  });

  it("an environment that is gone or stopped ends the run at once, without reconnecting", async () => {
    for (const code of ["environment_gone", "environment_not_running"] as const) {
      const { provider, cursors } = scripted([[ev("1")], new ProviderError(code, "the sandbox is gone")]);
      const h = host();
      expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
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

  it("backs off exponentially up to a cap", () => {
    expect([0, 1, 2, 3, 10].map((a) => backoffMs(a, 100, 1000))).toEqual([0, 100, 200, 400, 1000]);
  });
});
