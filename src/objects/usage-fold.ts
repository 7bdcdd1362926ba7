/**
 * The usage fold (docs/contracts.md "The usage fold"; seed 000 "Usage before the terminal
 * receipt"). Pure: a per-execution state folded from usage-bearing events, and totals over
 * executions.
 *
 * - A counter never reported stays unknown (null), never 0; an observed 0 stays 0.
 * - Cumulative values replace; deltas add. A cumulative value lower than an earlier one for the
 *   same counter is a conflict: both values are kept and the execution is marked.
 * - The terminal receipt is authoritative; a disagreement with the streamed total is recorded.
 * - Delta reports (OpenCode steps, CLI Bridge usage chunks) build a running cumulative total,
 *   each counted once per key; after a delta without both totals, or an invalid one, no later
 *   running total is known. Providers convert their wire to the receipt's convention first.
 * - Totals over executions are a floor (`complete: false`) when any counter is unknown.
 */

import { z } from "zod";
import { COUNTERS, Counts, type Counter, type TokenUsage } from "../schemas/common";
import type { TotalView, UsageView } from "../schemas/api";
import type { UsageReport } from "../providers/provider";

export type { Counts };

const UsageConflictSchema = z.object({
  counter: z.enum(COUNTERS),
  previous: z.number(),
  next: z.number(),
  source: z.enum(["step", "receipt", "event"]),
});
type UsageConflict = z.infer<typeof UsageConflictSchema>;

/** One execution's fold, as stored (validated when read back). */
export const ExecutionUsageStateSchema = z.object({
  executionId: z.string(),
  /** Latest cumulative value per counter (running totals, cumulative reports and receipts). */
  cumulative: Counts,
  /** The terminal receipt, once seen: authoritative. */
  receipt: Counts.nullable(),
  /** Running total built from delta reports; null before the first one. */
  steps: Counts.nullable(),
  /** Keys of the delta reports already counted (a reconnect repeats them). */
  stepIds: z.array(z.string()),
  /** No running total is known any more (a delta lacked a total, was invalid, or frames were missed). */
  stepsBroken: z.boolean(),
  conflicts: z.array(UsageConflictSchema),
  /** Counters where the receipt disagrees with the streamed cumulative total. */
  receiptDisagreements: z.array(z.object({ counter: z.enum(COUNTERS), streamed: z.number(), receipt: z.number() })),
});
export type ExecutionUsageState = z.infer<typeof ExecutionUsageStateSchema>;

export function emptyExecutionUsage(executionId: string): ExecutionUsageState {
  return { executionId, cumulative: {}, receipt: null, steps: null, stepIds: [], stepsBroken: false, conflicts: [], receiptDisagreements: [] };
}

function observeCumulative(state: ExecutionUsageState, counts: Counts, source: UsageConflict["source"]): void {
  for (const c of COUNTERS) {
    const next = counts[c];
    if (next === undefined) continue;
    const previous = state.cumulative[c];
    if (previous !== undefined && next < previous) state.conflicts.push({ counter: c, previous, next, source });
    state.cumulative[c] = next;
  }
}

export interface UsageFoldStep {
  state: ExecutionUsageState;
  /** The running total to attach to the report's event as cumulative usage, or null when none is known. */
  running: Counts | null;
  /** The usage changed (a repeated delta changes nothing). */
  changed: boolean;
}

/**
 * Folds one usage report. A delta is counted once per key and adds to the running total; each
 * counter of the running total is the sum over every delta so far, and a counter some delta did
 * not report is unknown from then on. A delta without both input and output (or an unreadable
 * one) leaves no running total past it. A cumulative report replaces.
 */
export function foldUsage(state: ExecutionUsageState, report: UsageReport): UsageFoldStep {
  if (report.mode === "cumulative") {
    const next: ExecutionUsageState = { ...state, cumulative: { ...state.cumulative }, conflicts: [...state.conflicts] };
    observeCumulative(next, report.counts, "event");
    return { state: next, running: report.counts, changed: true };
  }
  if (report.key !== undefined && state.stepIds.includes(report.key)) return { state, running: null, changed: false };
  const next: ExecutionUsageState = { ...state, stepIds: report.key !== undefined ? [...state.stepIds, report.key] : state.stepIds };
  const counts = report.counts;
  if (next.stepsBroken) return { state: next, running: null, changed: true };
  if (report.problem !== undefined || counts.inputTokens === undefined || counts.outputTokens === undefined) {
    return { state: breakSteps(next), running: null, changed: true };
  }
  let running: Counts;
  if (next.steps === null) {
    running = { ...counts };
  } else {
    running = {};
    for (const c of COUNTERS) {
      const before = next.steps[c];
      const v = counts[c];
      if (before !== undefined && v !== undefined) running[c] = before + v;
    }
  }
  const folded: ExecutionUsageState = { ...next, steps: running, cumulative: { ...next.cumulative }, conflicts: [...next.conflicts] };
  // A counter this delta did not report is unknown from here on: it must not stand at its old value
  // (whichever order the deltas came in, the view is the same).
  if (next.steps !== null) for (const c of COUNTERS) if (next.steps[c] !== undefined && running[c] === undefined) delete folded.cumulative[c];
  observeCumulative(folded, running, "step");
  return { state: folded, running, changed: true };
}

/** Marks that no further running total is known (an invalid report, or frames that were skipped). */
export function breakSteps(state: ExecutionUsageState): ExecutionUsageState {
  return { ...state, stepsBroken: true };
}

/** Folds the terminal receipt: it becomes the execution's total; a disagreement is recorded, not hidden. */
export function foldReceipt(state: ExecutionUsageState, counts: Counts): ExecutionUsageState {
  if (state.receipt !== null) return state; // a second terminal frame repeating the receipt
  const next: ExecutionUsageState = { ...state, cumulative: { ...state.cumulative }, conflicts: [...state.conflicts], receiptDisagreements: [...state.receiptDisagreements] };
  for (const c of COUNTERS) {
    const r = counts[c];
    const s = state.cumulative[c];
    if (r !== undefined && s !== undefined && r !== s) next.receiptDisagreements.push({ counter: c, streamed: s, receipt: r });
  }
  observeCumulative(next, counts, "receipt");
  next.receipt = counts;
  return next;
}

/** Counts as a TokenUsage to attach to an event; null unless both input and output are known. */
export function toTokenUsage(counts: Counts): TokenUsage | null {
  if (counts.inputTokens === undefined || counts.outputTokens === undefined) return null;
  return { ...counts, inputTokens: counts.inputTokens, outputTokens: counts.outputTokens, totalTokens: counts.inputTokens + counts.outputTokens };
}

/** The execution's total: the receipt when there is one, else what was observed (a lower bound). */
function executionTotal(state: ExecutionUsageState): Counts {
  return state.receipt ?? state.cumulative;
}

export function executionView(state: ExecutionUsageState): UsageView {
  const total = executionTotal(state);
  const source = state.receipt !== null ? "receipt" : Object.keys(total).length > 0 ? "running" : "none";
  return {
    inputTokens: total.inputTokens ?? null,
    outputTokens: total.outputTokens ?? null,
    reasoningTokens: total.reasoningTokens ?? null,
    cacheReadInputTokens: total.cacheReadInputTokens ?? null,
    cacheCreationInputTokens: total.cacheCreationInputTokens ?? null,
    cost: total.cost ?? null,
    source,
    conflict: state.conflicts.length > 0,
  };
}

/** Totals over executions; a counter any execution left unknown makes the total a floor. */
export function totalOf(states: ExecutionUsageState[]): TotalView {
  const sums: Counts = {};
  const unknown = new Set<Counter>();
  for (const state of states) {
    const total = executionTotal(state);
    for (const c of COUNTERS) {
      const v = total[c];
      if (v === undefined) unknown.add(c);
      else sums[c] = (sums[c] ?? 0) + v;
    }
  }
  const known = (c: Counter): number | null => (states.length === 0 ? 0 : sums[c] ?? null);
  return {
    inputTokens: known("inputTokens"),
    outputTokens: known("outputTokens"),
    reasoningTokens: known("reasoningTokens"),
    cacheReadInputTokens: known("cacheReadInputTokens"),
    cacheCreationInputTokens: known("cacheCreationInputTokens"),
    cost: sums.cost === undefined ? (states.length === 0 ? 0 : null) : Math.round(sums.cost * 1e9) / 1e9,
    conflict: states.some((s) => s.conflicts.length > 0),
    // Input and output are what budgets and users count: unknown in any execution makes them a floor.
    complete: !unknown.has("inputTokens") && !unknown.has("outputTokens"),
    unknown: [...unknown],
  };
}
