/**
 * The usage fold (docs/contracts.md "The usage fold"; seed 000 "Usage before the terminal
 * receipt"). Pure: a per-execution state folded from usage-bearing events, and totals over
 * executions.
 *
 * - A counter never reported stays unknown (null), never 0; an observed 0 stays 0.
 * - Cumulative values replace; deltas add. A cumulative value lower than an earlier one for the
 *   same counter is a conflict: both values are kept and the execution is marked.
 * - The terminal receipt is authoritative; a disagreement with the streamed total is recorded.
 * - OpenCode steps (`raw` step_finish) become a running cumulative total, converted to the
 *   receipt's convention, counted once per part id; after a step without both totals, or an
 *   invalid one, no later running total is known.
 * - Totals over executions are a floor (`complete: false`) when any counter is unknown.
 */

export const COUNTERS = ["inputTokens", "outputTokens", "reasoningTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "cost"] as const;
export type Counter = (typeof COUNTERS)[number];
export type Counts = Partial<Record<Counter, number>>;

export interface UsageConflict {
  counter: Counter;
  previous: number;
  next: number;
  source: "step" | "receipt" | "event";
}

export interface ExecutionUsageState {
  executionId: string;
  /** Latest cumulative value per counter (running totals and receipts). */
  cumulative: Counts;
  /** Sum of delta contributions per counter. */
  deltas: Counts;
  /** The terminal receipt, once seen: authoritative. */
  receipt: Counts | null;
  /** Running total built from OpenCode steps; null before the first step. */
  steps: Counts | null;
  /** Step part ids already counted (a reconnect repeats them). */
  stepIds: string[];
  /** No running total is known any more (a step lacked a total, was invalid, or frames were missed). */
  stepsBroken: boolean;
  conflicts: UsageConflict[];
  /** Counters where the receipt disagrees with the streamed cumulative total. */
  receiptDisagreements: Array<{ counter: Counter; streamed: number; receipt: number }>;
}

export interface UsageView {
  inputTokens: number | null;
  outputTokens: number | null;
  reasoningTokens: number | null;
  cacheReadInputTokens: number | null;
  cacheCreationInputTokens: number | null;
  cost: number | null;
  /** Where the figures come from: the authoritative receipt, the running total, or nothing yet. */
  source: "receipt" | "running" | "none";
  conflict: boolean;
}

export interface TotalView extends Omit<UsageView, "source"> {
  /** False when any execution left a counter unknown: every figure is then "at least". */
  complete: boolean;
  /** Counters at least one execution did not report. */
  unknown: Counter[];
}

export function emptyExecutionUsage(executionId: string): ExecutionUsageState {
  return { executionId, cumulative: {}, deltas: {}, receipt: null, steps: null, stepIds: [], stepsBroken: false, conflicts: [], receiptDisagreements: [] };
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
const isCost = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

export class InvalidUsageError extends Error {
  override name = "InvalidUsageError";
}

/**
 * One OpenCode step's counts in the receipt's convention: input includes cache reads and writes,
 * output includes reasoning. Answers null when the step lacks input or output (unknown);
 * throws InvalidUsageError on a negative or non-integer count.
 */
export function stepCounts(part: unknown): Counts | null {
  const tokens = (part as { tokens?: unknown } | null)?.tokens;
  if (typeof tokens !== "object" || tokens === null) return null;
  const t = tokens as { input?: unknown; output?: unknown; reasoning?: unknown; cache?: { read?: unknown; write?: unknown } };
  const cache = (typeof t.cache === "object" && t.cache !== null ? t.cache : {}) as { read?: unknown; write?: unknown };
  for (const [name, value] of [["input", t.input], ["output", t.output], ["reasoning", t.reasoning], ["cache.read", cache.read], ["cache.write", cache.write]] as const) {
    if (value !== undefined && !isCount(value)) throw new InvalidUsageError(`step token count ${name} is not a non-negative integer`);
  }
  const cost = (part as { cost?: unknown }).cost;
  if (cost !== undefined && !isCost(cost)) throw new InvalidUsageError("step cost is not a finite non-negative number");
  if (t.input === undefined || t.output === undefined) return null;
  const reasoning = (t.reasoning as number | undefined) ?? 0;
  const read = (cache.read as number | undefined) ?? 0;
  const write = (cache.write as number | undefined) ?? 0;
  const counts: Counts = {
    inputTokens: (t.input as number) + read + write,
    outputTokens: (t.output as number) + reasoning,
  };
  if (t.reasoning !== undefined) counts.reasoningTokens = reasoning;
  if (cache.read !== undefined) counts.cacheReadInputTokens = read;
  if (cache.write !== undefined) counts.cacheCreationInputTokens = write;
  if (cost !== undefined) counts.cost = cost as number;
  return counts;
}

/** A wire TokenUsage (receipt or event usage) as counts; only valid counters are kept. */
export function countsFrom(usage: unknown, totalCostUsd?: unknown): Counts {
  const out: Counts = {};
  if (typeof usage === "object" && usage !== null) {
    const u = usage as Record<string, unknown>;
    for (const c of COUNTERS) {
      if (c === "cost") continue;
      if (isCount(u[c])) out[c] = u[c] as number;
    }
    if (isCost(u.cost)) out.cost = u.cost as number;
  }
  if (isCost(totalCostUsd)) out.cost = totalCostUsd as number;
  return out;
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

export interface StepResult {
  state: ExecutionUsageState;
  /** The running total to attach to the step event as cumulative usage, or null when none is known. */
  running: Counts | null;
  /** True when this step had been counted before (a repeat). */
  repeated: boolean;
}

/** Folds one OpenCode step. Throws InvalidUsageError on an invalid count (the state is then marked broken by the caller). */
export function foldStep(state: ExecutionUsageState, partId: string, part: unknown): StepResult {
  if (state.stepIds.includes(partId)) return { state, running: null, repeated: true };
  const next: ExecutionUsageState = { ...state, stepIds: [...state.stepIds, partId] };
  if (next.stepsBroken) return { state: next, running: null, repeated: false };
  const counts = stepCounts(part);
  if (counts === null) return { state: { ...next, stepsBroken: true }, running: null, repeated: false };
  // Each counter of the running total is the sum over every step so far; a counter some step did
  // not report is unknown in the total from then on.
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
  observeCumulative(folded, running, "step");
  return { state: folded, running, repeated: false };
}

/** Marks that no further running total is known (an invalid step, or frames that were skipped). */
export function breakSteps(state: ExecutionUsageState): ExecutionUsageState {
  return { ...state, stepsBroken: true };
}

/** Folds usage carried by an event with a declared mode (providers that report it themselves). */
export function foldEventUsage(state: ExecutionUsageState, counts: Counts, mode: "delta" | "cumulative"): ExecutionUsageState {
  const next: ExecutionUsageState = { ...state, cumulative: { ...state.cumulative }, deltas: { ...state.deltas }, conflicts: [...state.conflicts] };
  if (mode === "cumulative") observeCumulative(next, counts, "event");
  else for (const c of COUNTERS) if (counts[c] !== undefined) next.deltas[c] = (next.deltas[c] ?? 0) + counts[c]!;
  return next;
}

/** Folds the terminal receipt: it becomes the execution's total; a disagreement is recorded, not hidden. */
export function foldReceipt(state: ExecutionUsageState, counts: Counts): ExecutionUsageState {
  if (state.receipt !== null) return state; // `done` repeating the `result` receipt
  const next: ExecutionUsageState = { ...state, cumulative: { ...state.cumulative }, conflicts: [...state.conflicts], receiptDisagreements: [...state.receiptDisagreements] };
  const streamed = streamedTotal(state);
  for (const c of COUNTERS) {
    const r = counts[c];
    const s = streamed[c];
    if (r !== undefined && s !== undefined && r !== s) next.receiptDisagreements.push({ counter: c, streamed: s, receipt: r });
  }
  observeCumulative(next, counts, "receipt");
  next.receipt = counts;
  return next;
}

function streamedTotal(state: ExecutionUsageState): Counts {
  const out: Counts = {};
  for (const c of COUNTERS) {
    const cum = state.cumulative[c];
    const delta = state.deltas[c];
    if (cum !== undefined || delta !== undefined) out[c] = (cum ?? 0) + (delta ?? 0);
  }
  return out;
}

/** The execution's total: the receipt when there is one, else what was observed (a lower bound). */
export function executionTotal(state: ExecutionUsageState): Counts {
  return state.receipt ?? streamedTotal(state);
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

/** Tokens that count against a budget (input + output), as a floor, with whether it is complete. */
export function budgetUsage(total: TotalView): { used: number; complete: boolean } {
  return { used: (total.inputTokens ?? 0) + (total.outputTokens ?? 0), complete: total.complete };
}
