import { describe, expect, it } from "vitest";
import { UpstreamError } from "../providers/errors";
import type { AgentProvider, ProviderEvent, ProviderResult } from "../providers/provider";
import { backoffMs, runPump } from "./pump";

const ref = { runId: "e1", provider: "p", environmentId: "env", sessionId: "s", executionId: "e1", requestDigest: `sha256:${"0".repeat(64)}` } as const;
const ev = (id: string, type = "message.part.updated", terminal?: ProviderEvent["terminal"]): ProviderEvent => ({ upstreamId: id, type, data: {}, ...(terminal ? { terminal } : {}) });

/** A provider whose streams are scripted: each call to events() plays the next script. */
function scripted(streams: Array<ProviderEvent[] | Error>, result: ProviderResult | null = null) {
  const cursors: Array<string | undefined> = [];
  const provider = {
    name: "fake",
    async *events(_ref: unknown, options: { after?: string }) {
      cursors.push(options.after);
      const next = streams.shift();
      if (!next) throw new UpstreamError(0, "upstream_unreachable", "gone", true);
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
  return {
    log,
    get settled() {
      return settled;
    },
    cursor: () => cursor,
    ingest(event: ProviderEvent) {
      if (event.upstreamId !== undefined) {
        if (seen.has(event.upstreamId)) return false;
        seen.add(event.upstreamId);
        cursor = event.upstreamId;
      }
      log.push(event.upstreamId!);
      if (event.terminal) live = false;
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
  it("reconnects from the last stored id after a severed stream and reads to the end", async () => {
    const { provider, cursors } = scripted([[ev("1"), ev("2")], [ev("2"), ev("3")], [ev("4", "result", { status: "completed" }), ev("5", "done")]]);
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(cursors).toEqual([undefined, "2", "3"]);
    expect(h.log).toEqual(["1", "2", "3", "4", "5"]);
  });

  it("gives up after maxAttempts reconnects without progress, once the result cannot settle it", async () => {
    const { provider, cursors } = scripted([[ev("1")], [], [], []]);
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep, maxAttempts: 3 })).toBe("gave_up");
    expect(cursors).toHaveLength(4);
  });

  it("settles from the run's result when upstream no longer holds the cursor", async () => {
    const { provider } = scripted([[ev("1")], new UpstreamError(409, "invalid_cursor", "cursor gone", false)], { status: "completed", text: "done" });
    const h = host();
    expect(await runPump(provider, ref, h, { signal: new AbortController().signal, sleep: noSleep })).toBe("finished");
    expect(h.settled).toContain("completed");
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
