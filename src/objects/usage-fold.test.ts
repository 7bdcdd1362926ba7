import { describe, expect, it } from "vitest";
import {
  breakSteps,
  countsFrom,
  emptyExecutionUsage,
  executionView,
  foldEventUsage,
  foldReceipt,
  foldStep,
  InvalidUsageError,
  stepCounts,
  totalOf,
} from "./usage-fold";

const step = (input: number, output: number, extra: Record<string, unknown> = {}) => ({
  tokens: { input, output, reasoning: 2, cache: { read: 10, write: 1 }, ...extra },
});

describe("the usage fold", () => {
  it("converts an OpenCode step to the receipt's convention (input + cache, output + reasoning)", () => {
    expect(stepCounts(step(100, 20))).toEqual({ inputTokens: 111, outputTokens: 22, reasoningTokens: 2, cacheReadInputTokens: 10, cacheCreationInputTokens: 1 });
  });

  it("builds a running cumulative total from steps, counting a repeated step once", () => {
    let s = emptyExecutionUsage("e");
    const a = foldStep(s, "p1", step(100, 20));
    expect(a.running).toMatchObject({ inputTokens: 111, outputTokens: 22 });
    s = a.state;
    const b = foldStep(s, "p2", step(50, 10));
    expect(b.running).toMatchObject({ inputTokens: 172, outputTokens: 34 });
    s = b.state;
    const repeat = foldStep(s, "p1", step(100, 20));
    expect(repeat.repeated).toBe(true);
    expect(repeat.running).toBeNull();
    expect(executionView(repeat.state)).toMatchObject({ inputTokens: 172, outputTokens: 34, source: "running" });
  });

  it("unknown stays unknown (null), never 0; an observed 0 stays 0", () => {
    expect(executionView(emptyExecutionUsage("e"))).toMatchObject({ inputTokens: null, outputTokens: null, cost: null, source: "none" });
    const zero = foldReceipt(emptyExecutionUsage("e"), countsFrom({ inputTokens: 0, outputTokens: 0 }));
    expect(executionView(zero)).toMatchObject({ inputTokens: 0, outputTokens: 0, cost: null, reasoningTokens: null });
  });

  it("after a step without both totals, later steps carry no running total", () => {
    let s = foldStep(emptyExecutionUsage("e"), "p1", step(100, 20)).state;
    const missing = foldStep(s, "p2", { tokens: { output: 5 } });
    expect(missing.running).toBeNull();
    s = missing.state;
    expect(foldStep(s, "p3", step(1, 1)).running).toBeNull();
  });

  it("an invalid count is an error; the caller breaks the running total", () => {
    expect(() => foldStep(emptyExecutionUsage("e"), "p1", step(-1, 2))).toThrow(InvalidUsageError);
    expect(() => foldStep(emptyExecutionUsage("e"), "p1", step(1.5, 2))).toThrow(InvalidUsageError);
    expect(foldStep(breakSteps(emptyExecutionUsage("e")), "p1", step(1, 1)).running).toBeNull();
  });

  it("a falling cumulative total is a recorded conflict; both values are kept", () => {
    let s = foldEventUsage(emptyExecutionUsage("e"), { inputTokens: 100, outputTokens: 10 }, "cumulative");
    s = foldEventUsage(s, { inputTokens: 90, outputTokens: 12 }, "cumulative");
    expect(s.conflicts).toEqual([{ counter: "inputTokens", previous: 100, next: 90, source: "event" }]);
    expect(executionView(s)).toMatchObject({ inputTokens: 90, conflict: true });
  });

  it("repeated cumulative totals add no spend; deltas add", () => {
    let s = foldEventUsage(emptyExecutionUsage("e"), { inputTokens: 100, outputTokens: 10 }, "cumulative");
    s = foldEventUsage(s, { inputTokens: 100, outputTokens: 10 }, "cumulative");
    expect(executionView(s)).toMatchObject({ inputTokens: 100, outputTokens: 10 });
    let d = foldEventUsage(emptyExecutionUsage("e"), { inputTokens: 5, outputTokens: 1 }, "delta");
    d = foldEventUsage(d, { inputTokens: 5, outputTokens: 1 }, "delta");
    expect(executionView(d)).toMatchObject({ inputTokens: 10, outputTokens: 2 });
  });

  it("the receipt is authoritative even when it is lower than the streamed total; the disagreement is recorded", () => {
    let s = foldStep(emptyExecutionUsage("e"), "p1", step(100, 20)).state;
    s = foldReceipt(s, { inputTokens: 100, outputTokens: 22 });
    expect(executionView(s)).toMatchObject({ inputTokens: 100, outputTokens: 22, source: "receipt", conflict: true });
    expect(s.receiptDisagreements).toEqual([{ counter: "inputTokens", streamed: 111, receipt: 100 }]);
    expect(s.conflicts[0]).toMatchObject({ counter: "inputTokens", previous: 111, next: 100, source: "receipt" });
    // A second receipt (done after result) changes nothing.
    expect(foldReceipt(s, { inputTokens: 1, outputTokens: 1 })).toBe(s);
  });

  it("a failed or cancelled execution keeps what was observed", () => {
    const s = foldStep(emptyExecutionUsage("e"), "p1", step(100, 20)).state;
    expect(totalOf([s])).toMatchObject({ inputTokens: 111, outputTokens: 22, complete: true });
  });

  it("totals over executions are a floor when any execution left a counter unknown", () => {
    const known = foldReceipt(emptyExecutionUsage("a"), { inputTokens: 100, outputTokens: 10, cost: 0.5 });
    const missingOutput = foldReceipt(emptyExecutionUsage("b"), countsFrom({ inputTokens: 40 }));
    const total = totalOf([known, missingOutput]);
    expect(total).toMatchObject({ inputTokens: 140, outputTokens: 10, complete: false, cost: 0.5 });
    expect(total.unknown).toEqual(expect.arrayContaining(["outputTokens", "cost"]));
    expect(totalOf([known])).toMatchObject({ complete: true, inputTokens: 100 });
    expect(totalOf([])).toMatchObject({ complete: true, inputTokens: 0, outputTokens: 0 });
  });

  it("reads wire usage, dropping invalid counters", () => {
    expect(countsFrom({ inputTokens: 5, outputTokens: -1, cost: 0.1 }, 0.2)).toEqual({ inputTokens: 5, cost: 0.2 });
  });
});
