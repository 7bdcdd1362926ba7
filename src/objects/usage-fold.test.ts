import { describe, expect, it } from "vitest";
import type { UsageReport } from "../providers/provider";
import { breakSteps, emptyExecutionUsage, executionView, foldReceipt, foldUsage, totalOf } from "./usage-fold";

const delta = (key: string, inputTokens: number | undefined, outputTokens: number | undefined, extra: Partial<UsageReport> = {}): UsageReport => ({
  mode: "delta",
  provenance: "measured",
  key,
  counts: {
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
    reasoningTokens: 2,
    cacheReadInputTokens: 10,
  },
  ...extra,
});
const cumulative = (inputTokens: number, outputTokens: number): UsageReport => ({ mode: "cumulative", provenance: "measured", counts: { inputTokens, outputTokens } });

describe("the usage fold", () => {
  it("builds a running cumulative total from deltas, counting a repeated key once", () => {
    let s = emptyExecutionUsage("e");
    const a = foldUsage(s, delta("p1", 111, 22));
    expect(a.running).toMatchObject({ inputTokens: 111, outputTokens: 22, reasoningTokens: 2 });
    s = a.state;
    const b = foldUsage(s, delta("p2", 61, 12));
    expect(b.running).toMatchObject({ inputTokens: 172, outputTokens: 34, reasoningTokens: 4, cacheReadInputTokens: 20 });
    s = b.state;
    const repeat = foldUsage(s, delta("p1", 111, 22));
    expect(repeat.changed).toBe(false);
    expect(repeat.running).toBeNull();
    expect(repeat.state).toBe(s);
    expect(executionView(repeat.state)).toMatchObject({ inputTokens: 172, outputTokens: 34, source: "running" });
  });

  it("a counter one delta did not report is unknown in the running total from then on", () => {
    const first = foldUsage(emptyExecutionUsage("e"), delta("p1", 10, 1)).state;
    const second = foldUsage(first, { mode: "delta", provenance: "measured", key: "p2", counts: { inputTokens: 5, outputTokens: 1 } });
    expect(second.running).toEqual({ inputTokens: 15, outputTokens: 2 });
  });

  it("unknown stays unknown (null), never 0; an observed 0 stays 0", () => {
    expect(executionView(emptyExecutionUsage("e"))).toMatchObject({ inputTokens: null, outputTokens: null, cost: null, source: "none" });
    const zero = foldReceipt(emptyExecutionUsage("e"), { inputTokens: 0, outputTokens: 0 });
    expect(executionView(zero)).toMatchObject({ inputTokens: 0, outputTokens: 0, cost: null, reasoningTokens: null });
  });

  it("after a delta without both totals, later deltas carry no running total", () => {
    let s = foldUsage(emptyExecutionUsage("e"), delta("p1", 111, 22)).state;
    const missing = foldUsage(s, delta("p2", undefined, 5));
    expect(missing.running).toBeNull();
    expect(missing.changed).toBe(true);
    s = missing.state;
    expect(foldUsage(s, delta("p3", 1, 1)).running).toBeNull();
  });

  it("an unreadable delta breaks the running total; so does breakSteps", () => {
    const bad = foldUsage(emptyExecutionUsage("e"), { mode: "delta", provenance: "measured", key: "p1", counts: {}, problem: "negative" });
    expect(bad.state.stepsBroken).toBe(true);
    expect(foldUsage(bad.state, delta("p2", 1, 1)).running).toBeNull();
    expect(foldUsage(breakSteps(emptyExecutionUsage("e")), delta("p1", 1, 1)).running).toBeNull();
  });

  it("a falling cumulative total is a recorded conflict; both values are kept", () => {
    let s = foldUsage(emptyExecutionUsage("e"), cumulative(100, 10)).state;
    s = foldUsage(s, cumulative(90, 12)).state;
    expect(s.conflicts).toEqual([{ counter: "inputTokens", previous: 100, next: 90, source: "event" }]);
    expect(executionView(s)).toMatchObject({ inputTokens: 90, conflict: true });
  });

  it("repeated cumulative totals add no spend; deltas add", () => {
    let s = foldUsage(emptyExecutionUsage("e"), cumulative(100, 10)).state;
    s = foldUsage(s, cumulative(100, 10)).state;
    expect(executionView(s)).toMatchObject({ inputTokens: 100, outputTokens: 10 });
    let d = foldUsage(emptyExecutionUsage("e"), delta("a", 5, 1)).state;
    d = foldUsage(d, delta("b", 5, 1)).state;
    expect(executionView(d)).toMatchObject({ inputTokens: 10, outputTokens: 2 });
  });

  it("a cumulative total that repeats or grows is no conflict; only a fall is", () => {
    let s = foldUsage(emptyExecutionUsage("e"), cumulative(100, 10)).state;
    s = foldUsage(s, cumulative(100, 10)).state;
    s = foldUsage(s, cumulative(120, 10)).state;
    expect(s.conflicts).toEqual([]);
    expect(executionView(s).conflict).toBe(false);
    expect(foldReceipt(s, { inputTokens: 120, outputTokens: 10 }).conflicts).toEqual([]);
  });

  it("the receipt is authoritative even when it is lower than the streamed total; the disagreement is recorded", () => {
    let s = foldUsage(emptyExecutionUsage("e"), delta("p1", 111, 22)).state;
    s = foldReceipt(s, { inputTokens: 100, outputTokens: 22 });
    expect(executionView(s)).toMatchObject({ inputTokens: 100, outputTokens: 22, source: "receipt", conflict: true });
    expect(s.receiptDisagreements).toEqual([{ counter: "inputTokens", streamed: 111, receipt: 100 }]);
    expect(s.conflicts[0]).toMatchObject({ counter: "inputTokens", previous: 111, next: 100, source: "receipt" });
    // A second receipt (done after result) changes nothing.
    expect(foldReceipt(s, { inputTokens: 1, outputTokens: 1 })).toBe(s);
  });

  it("a failed or cancelled execution keeps what was observed", () => {
    const s = foldUsage(emptyExecutionUsage("e"), delta("p1", 111, 22)).state;
    expect(totalOf([s])).toMatchObject({ inputTokens: 111, outputTokens: 22, complete: true });
  });

  it("totals over executions are a floor when any execution left a counter unknown", () => {
    const known = foldReceipt(emptyExecutionUsage("a"), { inputTokens: 100, outputTokens: 10, cost: 0.5 });
    const missingOutput = foldReceipt(emptyExecutionUsage("b"), { inputTokens: 40 });
    const total = totalOf([known, missingOutput]);
    expect(total).toMatchObject({ inputTokens: 140, outputTokens: 10, complete: false, cost: 0.5 });
    expect(total.unknown).toEqual(expect.arrayContaining(["outputTokens", "cost"]));
    expect(totalOf([known])).toMatchObject({ complete: true, inputTokens: 100 });
    expect(totalOf([])).toMatchObject({ complete: true, inputTokens: 0, outputTokens: 0 });
  });

  it("a counter no execution reported is unknown (null) in the total, never 0, and the total says so", () => {
    // Issue 10: a conversation total turned an unknown counter into 0 and called itself complete.
    const nothing = emptyExecutionUsage("a");
    expect(totalOf([nothing])).toMatchObject({ inputTokens: null, outputTokens: null, cost: null, complete: false });
    expect(totalOf([nothing]).unknown).toEqual(expect.arrayContaining(["inputTokens", "outputTokens", "cost"]));
    const known = foldReceipt(emptyExecutionUsage("b"), { inputTokens: 100, outputTokens: 10 });
    // Known input and output elsewhere still leave the reasoning counter unknown, not 0.
    expect(totalOf([known, nothing])).toMatchObject({ inputTokens: 100, outputTokens: 10, reasoningTokens: null, complete: false });
    expect(totalOf([known])).toMatchObject({ reasoningTokens: null, cacheReadInputTokens: null, complete: true });
  });
});

