import { afterEach, describe, expect, it } from "vitest";
import type { EventEnvelope } from "../src/session/store/records";
import { api, collect, isTurnEnd, json, sendTurn, setFaults, tokenFor, uid } from "./helpers";

afterEach(async () => {
  await setFaults({});
});

async function turn(message: string, options: { token?: string; cid?: string } = {}) {
  const token = options.token ?? (await tokenFor(uid("user")));
  const cid = options.cid ?? uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message));
  const { events } = await collect(
    await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
    isTurnEnd,
  );
  const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
  const record = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
  return { token, cid, turnId, events, usage, record };
}

const steps = (events: EventEnvelope[]) =>
  events.filter((e) => e.type === "raw" && (e.data.event as any)?.type === "step_finish");

describe("usage before the receipt (OpenCode steps)", () => {
  it("each step carries the running cumulative total in the receipt's convention; the receipt agrees", async () => {
    const { events, usage, record } = await turn("count tokens");
    const s = steps(events);
    expect(s.map((e) => [e.usage?.inputTokens, e.usage?.outputTokens, e.usageMode])).toEqual([
      [960, 35, "cumulative"],
      [1980, 80, "cumulative"],
    ]);
    const updates = events.filter((e) => e.type === "usage.updated");
    expect(updates.map((e) => (e.data.usage as any).source)).toEqual(["running", "running", "receipt"]);
    expect(updates.at(-1)!.data.conversation as any).toMatchObject({
      inputTokens: 1980,
      outputTokens: 80,
      complete: true,
    });
    expect(usage.turns[0]).toMatchObject({
      usage: { inputTokens: 1980, outputTokens: 80, reasoningTokens: 5, source: "receipt", conflict: false },
    });
    expect(usage.total).toMatchObject({ inputTokens: 1980, outputTokens: 80, complete: true });
    expect(record.usage).toMatchObject({ inputTokens: 1980, outputTokens: 80, cost: 0.0021 });
    expect(events.at(-1)!.data.usage).toMatchObject({ inputTokens: 1980 });
  });

  it("a backend that forwards no step usage: no running total until the receipt", async () => {
    const { events, usage } = await turn("quiet [no-usage]");
    expect(steps(events)).toHaveLength(0);
    expect(events.filter((e) => e.type === "usage.updated").map((e) => (e.data.usage as any).source)).toEqual([
      "receipt",
    ]);
    expect(usage.total).toMatchObject({ inputTokens: 1980, outputTokens: 80, complete: true });
  });

  it("a step without both counts stops the running total; the receipt still settles it", async () => {
    const { events, usage } = await turn("partial step [step-partial]");
    expect(steps(events).map((e) => e.usage)).toEqual([undefined, undefined]);
    expect(usage.turns[0].usage).toMatchObject({ source: "receipt", inputTokens: 1980 });
  });

  it("an invalid step count fails the run's stream: the turn ends failed usage_invalid, nothing after the step is taken, no running total is claimed", async () => {
    const { token, cid, turnId, events, record } = await turn("bad step [bad-usage]");
    const end = events.at(-1)!;
    expect(end).toMatchObject({
      type: "turn.failed",
      turnId,
      data: {
        error: { code: "usage_invalid", message: expect.stringMatching(/not a non-negative integer.*stream failed/) },
      },
    });
    expect(record).toMatchObject({ status: "failed", error: { code: "usage_invalid" } });
    // The bad step is the run's first: its frame is there, without a total, and no frame of the run after it.
    expect(steps(events).map((e) => e.usage)).toEqual([undefined]);
    const log = (await collect(await api(`/v1/conversations/${cid}/events`, { token }), (e) => e.seq >= end.seq))
      .events;
    const failedAt = log.findIndex((e) => e.type === "turn.failed");
    expect(log.slice(failedAt + 1).filter((e) => e.turnId === turnId && e.type !== "usage.updated")).toEqual([]);
    expect(events.some((e) => e.type === "warning")).toBe(false);
  });

  it("a receipt lower than the streamed total is authoritative, and the conflict is recorded", async () => {
    const { usage } = await turn("low receipt [receipt-low]");
    expect(usage.turns[0].usage).toMatchObject({ inputTokens: 1880, source: "receipt", conflict: true });
    expect(usage.turns[0].receiptDisagreements).toEqual([{ counter: "inputTokens", streamed: 1980, receipt: 1880 }]);
    expect(usage.turns[0].conflicts).toEqual([
      { counter: "inputTokens", previous: 1980, next: 1880, source: "receipt" },
    ]);
    expect(usage.total.conflict).toBe(true);
  });

  it("a missing counter is unknown, never zero, and makes the conversation total a floor", async () => {
    const first = await turn("partial receipt [receipt-partial] [no-usage]");
    expect(first.usage.turns[0].usage).toMatchObject({ inputTokens: 1980, outputTokens: null });
    const second = await turn("full", { token: first.token, cid: first.cid });
    expect(second.usage.total).toMatchObject({ inputTokens: 3960, outputTokens: 80, complete: false });
    expect(second.usage.total.unknown).toContain("outputTokens");
    const summary = await json(await api(`/v1/conversations/${first.cid}`, { token: first.token }));
    expect(summary.usage).toMatchObject({ complete: false, inputTokens: 3960 });
  });

  it("a receipt with no usage leaves the streamed total standing as what was observed", async () => {
    const { usage } = await turn("no receipt usage [receipt-none]");
    expect(usage.turns[0].usage).toMatchObject({ inputTokens: 1980, outputTokens: 80, source: "running" });
  });

  it("a failed run keeps the usage observed before it ended", async () => {
    const { usage, record } = await turn("crash [fail]");
    expect(record.status).toBe("failed");
    expect(usage.turns[0].usage).toMatchObject({ inputTokens: 960, outputTokens: 35, source: "running" });
  });

  it("a step repeated by a reconnect counts once", async () => {
    await setFaults({ repeatFrames: true, inclusiveReplay: true, dropStreamAfterFrames: 8, dropStreams: 3 });
    const { usage, events } = await turn("repeat steps");
    expect(usage.turns[0].usage).toMatchObject({ inputTokens: 1980, outputTokens: 80, conflict: false });
    expect(steps(events)).toHaveLength(2);
  });
});
