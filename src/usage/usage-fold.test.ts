import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { UsageReport } from "../providers/provider";
import type { Provenance } from "../schemas/common";
import { breakSteps, emptyExecutionUsage, executionView, foldReceipt, foldUsage, totalOf } from "./usage-fold";

const delta = (
  key: string,
  inputTokens: number | undefined,
  outputTokens: number | undefined,
  extra: Partial<UsageReport> = {},
): UsageReport => ({
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
const cumulative = (inputTokens: number, outputTokens: number): UsageReport => ({
  mode: "cumulative",
  provenance: "measured",
  counts: { inputTokens, outputTokens },
});

describe("the usage fold", () => {
  it("builds a running cumulative total from deltas, counting a repeated key once", () => {
    let s = emptyExecutionUsage("e");
    const a = foldUsage(s, delta("p1", 111, 22));
    expect(a.running).toMatchObject({ inputTokens: 111, outputTokens: 22, reasoningTokens: 2 });
    s = a.state;
    const b = foldUsage(s, delta("p2", 61, 12));
    expect(b.running).toMatchObject({
      inputTokens: 172,
      outputTokens: 34,
      reasoningTokens: 4,
      cacheReadInputTokens: 20,
    });
    s = b.state;
    const repeat = foldUsage(s, delta("p1", 111, 22));
    expect(repeat.changed).toBe(false);
    expect(repeat.running).toBeNull();
    expect(repeat.state).toBe(s);
    expect(executionView(repeat.state)).toMatchObject({ inputTokens: 172, outputTokens: 34, source: "running" });
  });

  it("a counter one delta did not report is unknown in the running total from then on", () => {
    const first = foldUsage(emptyExecutionUsage("e"), delta("p1", 10, 1)).state;
    const second = foldUsage(first, {
      mode: "delta",
      provenance: "measured",
      key: "p2",
      counts: { inputTokens: 5, outputTokens: 1 },
    });
    expect(second.running).toEqual({ inputTokens: 15, outputTokens: 2 });
  });

  it("unknown stays unknown (null), never 0; an observed 0 stays 0", () => {
    expect(executionView(emptyExecutionUsage("e"))).toMatchObject({
      inputTokens: null,
      outputTokens: null,
      cost: null,
      source: "none",
    });
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
    const bad = foldUsage(emptyExecutionUsage("e"), {
      mode: "delta",
      provenance: "measured",
      key: "p1",
      counts: {},
      problem: "negative",
    });
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
    expect(totalOf([known, nothing])).toMatchObject({
      inputTokens: 100,
      outputTokens: 10,
      reasoningTokens: null,
      complete: false,
    });
    expect(totalOf([known])).toMatchObject({ reasoningTokens: null, cacheReadInputTokens: null, complete: true });
  });
});

describe("usage fold properties (fast-check)", () => {
  const OPTIONAL = ["reasoningTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "cost"] as const;
  const tokens = fc.integer({ min: 0, max: 1_000_000 });
  /** Well-formed deltas, distinct keys; each reports input and output and the optional counters in `shape`. */
  const deltas = (shape: fc.Arbitrary<ReadonlyArray<(typeof OPTIONAL)[number]>>) =>
    fc
      .tuple(shape, fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 }))
      .chain(([counters, keys]) =>
        fc.tuple(
          ...keys.map((key) =>
            fc
              .record({ inputTokens: tokens, outputTokens: tokens, extra: fc.tuple(...counters.map(() => tokens)) })
              .map(
                ({ inputTokens, outputTokens, extra }): UsageReport => ({
                  mode: "delta",
                  provenance: "measured",
                  key,
                  counts: {
                    inputTokens,
                    outputTokens,
                    ...Object.fromEntries(counters.map((c, i) => [c, c === "cost" ? extra[i]! / 1000 : extra[i]!])),
                  },
                }),
              ),
          ),
        ),
      );
  const fold = (reports: UsageReport[]) => reports.reduce((s, r) => foldUsage(s, r).state, emptyExecutionUsage("e"));
  /** A permutation of `items` chosen by `order` (any array of numbers). */
  const permute = <T>(items: T[], order: number[]) =>
    items
      .map((item, i) => ({ item, k: order[i % Math.max(order.length, 1)] ?? i, i }))
      .sort((a, b) => a.k - b.k || a.i - b.i)
      .map((x) => x.item);
  const viewOf = (s: ReturnType<typeof fold>) => ({
    ...executionView(s),
    cost: executionView(s).cost === null ? null : Math.round(executionView(s).cost! * 1e6),
  });

  it("the order in which a backend's deltas arrive does not change the usage", () => {
    fc.assert(
      fc.property(deltas(fc.subarray([...OPTIONAL])), fc.array(fc.integer()), (reports, order) => {
        const inOrder = fold(reports);
        const shuffled = fold(permute(reports, order));
        expect(viewOf(shuffled)).toEqual(viewOf(inOrder));
        expect(totalOf([shuffled])).toMatchObject({
          inputTokens: totalOf([inOrder]).inputTokens,
          outputTokens: totalOf([inOrder]).outputTokens,
          complete: true,
        });
      }),
      { numRuns: 400 },
    );
  });

  it("input and output totals, what budgets count, do not depend on order even when deltas report different counters", () => {
    fc.assert(
      fc.property(
        deltas(fc.constant([])),
        fc.array(fc.subarray([...OPTIONAL])),
        fc.array(fc.integer()),
        (reports, shapes, order) => {
          // Give each delta its own set of optional counters.
          const mixed = reports.map((r, i) => ({
            ...r,
            counts: { ...r.counts, ...Object.fromEntries((shapes[i] ?? []).map((c) => [c, 7])) },
          }));
          const a = executionView(fold(mixed));
          const b = executionView(fold(permute(mixed, order)));
          expect([b.inputTokens, b.outputTokens]).toEqual([a.inputTokens, a.outputTokens]);
        },
      ),
      { numRuns: 300 },
    );
  });

  // Found by the property above widened to every counter (not one of issue 10's numbered defects):
  // when deltas disagree on which optional counters they report, the running total drops the
  // counter (unknown from then on) but the execution's view keeps the last value it saw, so the
  // view shows a known, too-low cost (or reasoning, cache) in one arrival order and null in the
  // other, and the conversation total adds it as if complete. Left to the owner of usage-fold.ts;
  // flip to it() when the view marks such a counter unknown.
  it("the whole view does not depend on order when deltas report different optional counters (a dropped counter is unknown, not stale)", () => {
    const withCost: UsageReport = {
      mode: "delta",
      provenance: "measured",
      key: "a",
      counts: { inputTokens: 1, outputTokens: 1, cost: 0.5 },
    };
    const withoutCost: UsageReport = {
      mode: "delta",
      provenance: "measured",
      key: "b",
      counts: { inputTokens: 1, outputTokens: 1 },
    };
    expect(executionView(fold([withCost, withoutCost]))).toEqual(executionView(fold([withoutCost, withCost])));
  });

  it("a prefix replayed after a reconnect changes nothing, however often", () => {
    fc.assert(
      fc.property(
        deltas(fc.subarray([...OPTIONAL])),
        fc.nat(),
        fc.integer({ min: 1, max: 3 }),
        (reports, cut, times) => {
          const once = fold(reports);
          const prefix = reports.slice(0, cut % (reports.length + 1));
          let replayed = once;
          for (let t = 0; t < times; t++) {
            for (const r of prefix) {
              const step = foldUsage(replayed, r);
              expect(step.changed).toBe(false);
              replayed = step.state;
            }
          }
          expect(replayed).toEqual(once);
          // Interleaved with the rest (a reconnect mid-run replays what came before) it is the same.
          const interleaved = fold([...prefix, ...prefix, ...reports.slice(prefix.length), ...prefix]);
          expect(viewOf(interleaved)).toEqual(viewOf(once));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("the running total is the sum of the deltas, and the receipt, when it comes, is the total", () => {
    fc.assert(
      fc.property(
        deltas(fc.constant([])),
        fc.option(fc.record({ inputTokens: tokens, outputTokens: tokens })),
        (reports, receipt) => {
          let s = fold(reports);
          const sum = (k: "inputTokens" | "outputTokens") => reports.reduce((n, r) => n + r.counts![k]!, 0);
          expect(executionView(s)).toMatchObject({
            inputTokens: sum("inputTokens"),
            outputTokens: sum("outputTokens"),
            source: "running",
          });
          if (receipt) {
            s = foldReceipt(s, receipt);
            expect(executionView(s)).toMatchObject({ ...receipt, source: "receipt" });
            expect(totalOf([s])).toMatchObject({ ...receipt, complete: true });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("conversation totals do not depend on the order of executions, and are never 0 where every execution is silent", () => {
    const execution = fc.oneof(
      deltas(fc.subarray([...OPTIONAL])).map(fold),
      fc
        .record({
          inputTokens: fc.option(tokens, { nil: undefined }),
          outputTokens: fc.option(tokens, { nil: undefined }),
        })
        .map((r) =>
          foldReceipt(
            emptyExecutionUsage("r"),
            Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)),
          ),
        ),
      fc.constant(emptyExecutionUsage("silent")),
    );
    fc.assert(
      fc.property(fc.array(execution, { minLength: 1, maxLength: 5 }), fc.array(fc.integer()), (states, order) => {
        const sorted = (t: ReturnType<typeof totalOf>) => ({ ...t, unknown: [...t.unknown].sort() });
        const total = totalOf(states);
        expect(sorted(totalOf(permute(states, order)))).toEqual(sorted(total));
        for (const c of ["inputTokens", "outputTokens"] as const) {
          const known = states.filter((s) => executionView(s)[c] !== null);
          if (known.length === 0) expect(total[c]).toBeNull();
          if (known.length < states.length) expect(total.complete).toBe(false);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe("usage provenance (agent-provider-cli-bridge, usage provenance; agent-interface, 'partial accounting supports a floor')", () => {
  it("each counter keeps its provenance; a running total is as weak as its weakest delta", () => {
    let s = foldUsage(
      emptyExecutionUsage("e"),
      delta("p1", 10, 1, { costProvenance: "unknown", counts: { inputTokens: 10, outputTokens: 1, cost: 0.1 } }),
    ).state;
    expect(executionView(s).provenance).toEqual({
      inputTokens: "measured",
      outputTokens: "measured",
      reasoningTokens: null,
      cacheReadInputTokens: null,
      cacheCreationInputTokens: null,
      cost: "unknown",
    });
    s = foldUsage(
      s,
      delta("p2", 5, 1, {
        provenance: "estimated",
        costProvenance: "measured",
        counts: { inputTokens: 5, outputTokens: 1, cost: 0.1 },
      }),
    ).state;
    // 15 tokens, 5 of them estimated: the figure is an estimate; the cost stays as weak as its weakest part.
    expect(executionView(s)).toMatchObject({
      inputTokens: 15,
      provenance: { inputTokens: "estimated", outputTokens: "estimated", cost: "unknown" },
    });
    s = foldUsage(s, delta("p3", 1, 1)).state;
    expect(executionView(s).provenance.inputTokens).toBe("estimated");
  });

  it("the receipt's provenance is the figure's; a receipt whose provenance is not given is unknown, never measured", () => {
    const streamed = foldUsage(emptyExecutionUsage("e"), delta("p1", 10, 1, { provenance: "estimated" })).state;
    expect(
      executionView(foldReceipt(streamed, { inputTokens: 12, outputTokens: 2 }, { provenance: "measured" })).provenance
        .inputTokens,
    ).toBe("measured");
    expect(executionView(foldReceipt(streamed, { inputTokens: 12, outputTokens: 2 })).provenance).toMatchObject({
      inputTokens: "unknown",
      outputTokens: "unknown",
      reasoningTokens: null,
    });
    const split = foldReceipt(
      emptyExecutionUsage("e"),
      { inputTokens: 12, outputTokens: 2, cost: 0.3 },
      { provenance: "measured", costProvenance: "unknown" },
    );
    expect(executionView(split).provenance).toMatchObject({
      inputTokens: "measured",
      outputTokens: "measured",
      cost: "unknown",
    });
  });

  it("a cumulative report replaces the figure and its provenance", () => {
    let s = foldUsage(emptyExecutionUsage("e"), { ...cumulative(10, 1), provenance: "estimated" }).state;
    expect(executionView(s).provenance.inputTokens).toBe("estimated");
    s = foldUsage(s, cumulative(12, 2)).state;
    expect(executionView(s).provenance.inputTokens).toBe("measured");
  });

  it("a total over estimates is an estimate; over figures of unknown provenance it is unknown; only measured parts make a measured total", () => {
    const measured = foldReceipt(
      emptyExecutionUsage("a"),
      { inputTokens: 100, outputTokens: 10 },
      { provenance: "measured" },
    );
    const estimated = foldReceipt(
      emptyExecutionUsage("b"),
      { inputTokens: 5, outputTokens: 5 },
      { provenance: "estimated" },
    );
    const unknown = foldReceipt(
      emptyExecutionUsage("c"),
      { inputTokens: 5, outputTokens: 5 },
      { provenance: "unknown" },
    );
    expect(totalOf([measured, estimated])).toMatchObject({
      inputTokens: 105,
      complete: true,
      provenance: { inputTokens: "estimated", outputTokens: "estimated" },
    });
    expect(totalOf([measured, unknown]).provenance.inputTokens).toBe("unknown");
    expect(totalOf([unknown, estimated, measured]).provenance.inputTokens).toBe("estimated");
    expect(totalOf([measured, measured]).provenance.inputTokens).toBe("measured");
    // A counter nobody knows has no provenance; a floor's provenance is that of what it counts.
    expect(totalOf([measured, emptyExecutionUsage("d")])).toMatchObject({
      inputTokens: 100,
      complete: false,
      provenance: { inputTokens: "measured", cost: null },
    });
  });

  it("request counts: deltas add, a repeat counts once, an unusable count makes the run's count unknown; they never touch the tokens", () => {
    let s = foldUsage(emptyExecutionUsage("e"), delta("p1", 4, 5)).state;
    const requests = (key: string, modelRequests: number | null): UsageReport => ({
      mode: "delta",
      key,
      provenance: "unknown",
      counts: null,
      modelRequests,
    });
    const one = foldUsage(s, requests("r1", 1));
    expect(one).toMatchObject({ changed: true, running: null });
    s = one.state;
    expect(foldUsage(s, requests("r1", 1)).changed).toBe(false);
    s = foldUsage(s, requests("r2", 2)).state;
    // The running total is still standing: a report without counts is not a delta without totals.
    expect(foldUsage(s, delta("p2", 1, 1)).running).toMatchObject({ inputTokens: 5, outputTokens: 6 });
    expect(executionView(s)).toMatchObject({ modelRequests: 3, inputTokens: 4, outputTokens: 5, source: "running" });
    expect(executionView(foldUsage(s, requests("r3", null)).state).modelRequests).toBeNull();
    expect(executionView(emptyExecutionUsage("e")).modelRequests).toBeNull();
  });

  it("served models: distinct, in the order seen; none reported or refused evidence is unknown (null)", () => {
    const served = (key: string, servedModels: string[] | null): UsageReport => ({
      mode: "delta",
      key,
      provenance: "unknown",
      counts: null,
      servedModels,
    });
    let s = foldUsage(emptyExecutionUsage("e"), served("a", ["gpt-5.4"])).state;
    s = foldUsage(s, served("b", ["gpt-5.4", "gpt-5.4-mini"])).state;
    expect(executionView(s).servedModels).toEqual(["gpt-5.4", "gpt-5.4-mini"]);
    expect(executionView(emptyExecutionUsage("e")).servedModels).toBeNull();
    expect(executionView(foldUsage(s, served("c", null)).state).servedModels).toBeNull();
    const many = Array.from({ length: 17 }, (_, i) => `m${i}`);
    expect(executionView(foldUsage(emptyExecutionUsage("e"), served("a", many)).state).servedModels).toBeNull();
  });
});

describe("usage provenance properties (fast-check)", () => {
  const tokens = fc.integer({ min: 0, max: 100_000 });
  const provenance = fc.constantFrom<Provenance>("measured", "estimated", "unknown");
  /** The rule, stated on its own: an estimate anywhere makes an estimate; else an unknown part makes it unknown. */
  const expectedOf = (parts: Provenance[]): Provenance =>
    parts.includes("estimated") ? "estimated" : parts.includes("unknown") ? "unknown" : "measured";
  const reports = fc
    .uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 })
    .chain((keys) =>
      fc.tuple(
        ...keys.map((key) =>
          fc
            .record({
              inputTokens: tokens,
              outputTokens: tokens,
              cost: tokens,
              provenance,
              costProvenance: fc.option(provenance, { nil: undefined }),
            })
            .map(
              ({ inputTokens, outputTokens, cost, provenance, costProvenance }): UsageReport => ({
                mode: "delta",
                key,
                provenance,
                ...(costProvenance ? { costProvenance } : {}),
                counts: { inputTokens, outputTokens, cost: cost / 1000 },
              }),
            ),
        ),
      ),
    );
  const fold = (rs: UsageReport[]) => rs.reduce((s, r) => foldUsage(s, r).state, emptyExecutionUsage("e"));

  it("a figure is measured only when every report behind it was, in any order; a conversation total too", () => {
    fc.assert(
      fc.property(reports, fc.array(fc.integer()), provenance, (rs, order, receiptKind) => {
        const tokenParts = rs.map((r) => r.provenance);
        const costParts = rs.map((r) => r.costProvenance ?? r.provenance);
        const shuffled = rs
          .map((r, i) => ({ r, k: order[i] ?? i }))
          .sort((a, b) => a.k - b.k)
          .map((x) => x.r);
        for (const s of [fold(rs), fold(shuffled)]) {
          const view = executionView(s);
          expect(view.provenance).toMatchObject({
            inputTokens: expectedOf(tokenParts),
            outputTokens: expectedOf(tokenParts),
            cost: expectedOf(costParts),
          });
          // Beside another turn whose receipt has its own provenance, the total is as weak as both.
          const other = foldReceipt(
            emptyExecutionUsage("o"),
            { inputTokens: 1, outputTokens: 1 },
            { provenance: receiptKind },
          );
          const total = totalOf([s, other]);
          expect(total.provenance.inputTokens).toBe(expectedOf([...tokenParts, receiptKind]));
          expect(total.provenance.inputTokens === "measured").toBe(
            [...tokenParts, receiptKind].every((p) => p === "measured"),
          );
        }
      }),
      { numRuns: 400 },
    );
  });
});
