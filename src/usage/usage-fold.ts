/**
 * The usage fold (docs/contracts.md "The usage fold"; agent-provider-tangle "Usage before the terminal
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
 * - Provenance (agent-provider-cli-bridge, "Measured usage requires explicit estimated: false";
 *   agent-interface, "partial accounting supports a floor"): each
 *   counter keeps whether its value was measured, estimated or reported without saying which. A
 *   value built from several reports (a running total, a conversation total) is as weak as its
 *   weakest part: an estimate anywhere makes it an estimate, and it is never shown as measured.
 * - Request counts and served models are kept as the provider reported them (never derived from
 *   the request): a count that was not exact, or evidence that was malformed, makes them unknown.
 */

import { z } from "zod";
import type { ReceiptProvenance, UsageReport } from "../providers/provider";
import type { TotalView, UsageView } from "../schemas/api";
import { COUNTERS, type Counter, CounterProvenance, Counts, type Provenance, type TokenUsage } from "../schemas/common";

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
  /** The provenance of each value in `cumulative`, as the report, running total or receipt that set it had it. */
  provenance: CounterProvenance,
  /** The running total's provenance per counter: the weakest of the deltas that built it. */
  stepsProvenance: CounterProvenance,
  /** The receipt's provenance per counter (empty before the receipt). */
  receiptProvenance: CounterProvenance,
  /** Model requests the provider reported so far; null while it reported none. */
  modelRequests: z.number().int().nonnegative().nullable(),
  /** A reported request count was not exact (malformed or estimated): the run's count is unknown. */
  modelRequestsUnknown: z.boolean(),
  /** The distinct models the provider reported serving, in the order first seen. */
  servedModels: z.array(z.string()),
  /** Served-model evidence was malformed or overflowed: no served model is stated for the run. */
  servedModelsRefused: z.boolean(),
});
export type ExecutionUsageState = z.infer<typeof ExecutionUsageStateSchema>;

export function emptyExecutionUsage(executionId: string): ExecutionUsageState {
  return {
    executionId,
    cumulative: {},
    receipt: null,
    steps: null,
    stepIds: [],
    stepsBroken: false,
    conflicts: [],
    receiptDisagreements: [],
    provenance: {},
    stepsProvenance: {},
    receiptProvenance: {},
    modelRequests: null,
    modelRequestsUnknown: false,
    servedModels: [],
    servedModelsRefused: false,
  };
}

/** More distinct served models than this in one run is evidence this gateway refuses (agent-provider-cli-bridge: "overflow or malformed evidence refuses certification"). */
const MAX_SERVED_MODELS = 16;

/** From weakest to strongest: an estimate is surely not a measurement; an unknown provenance may be either. */
const STRENGTH: Record<Provenance, number> = { estimated: 0, unknown: 1, measured: 2 };

/** The weaker of two provenances (an absent one does not count). */
export function weakest(a: Provenance | undefined, b: Provenance | undefined): Provenance | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return STRENGTH[a] <= STRENGTH[b] ? a : b;
}

/** The provenance a report gives one of its counters. */
function provenanceOf(report: ReceiptProvenance, counter: Counter): Provenance {
  return counter === "cost" ? (report.costProvenance ?? report.provenance) : report.provenance;
}

function observeCumulative(
  state: ExecutionUsageState,
  counts: Counts,
  source: UsageConflict["source"],
  provenance: (c: Counter) => Provenance,
): void {
  for (const c of COUNTERS) {
    const next = counts[c];
    if (next === undefined) continue;
    const previous = state.cumulative[c];
    if (previous !== undefined && next < previous) state.conflicts.push({ counter: c, previous, next, source });
    state.cumulative[c] = next;
    state.provenance[c] = provenance(c);
  }
}

/** Folds a report's request count and served models (a repeated delta never reaches here). */
function withObservations(state: ExecutionUsageState, report: UsageReport): ExecutionUsageState {
  let next = state;
  const requests = report.modelRequests;
  if (requests === null) next = { ...next, modelRequestsUnknown: true };
  else if (requests !== undefined) {
    next =
      report.mode === "cumulative"
        ? { ...next, modelRequests: requests, modelRequestsUnknown: false }
        : { ...next, modelRequests: (next.modelRequests ?? 0) + requests };
  }
  const served = report.servedModels;
  if (served === null) next = { ...next, servedModelsRefused: true };
  else if (served !== undefined) {
    const models = [...new Set([...next.servedModels, ...served])];
    next =
      models.length > MAX_SERVED_MODELS ? { ...next, servedModelsRefused: true } : { ...next, servedModels: models };
  }
  return next;
}

/** The request count and served models changed between two states. */
function observationsChanged(a: ExecutionUsageState, b: ExecutionUsageState): boolean {
  return (
    a.modelRequests !== b.modelRequests ||
    a.modelRequestsUnknown !== b.modelRequestsUnknown ||
    a.servedModels.length !== b.servedModels.length ||
    a.servedModelsRefused !== b.servedModelsRefused
  );
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
 * one) leaves no running total past it. A cumulative report replaces. A report without token
 * counts (`counts: null`) leaves the token fold as it was. The running total's provenance per
 * counter is the weakest of the deltas it adds.
 */
export function foldUsage(state: ExecutionUsageState, report: UsageReport): UsageFoldStep {
  const counts = report.counts;
  if (report.mode === "cumulative") {
    const next: ExecutionUsageState = withObservations(
      {
        ...state,
        cumulative: { ...state.cumulative },
        provenance: { ...state.provenance },
        conflicts: [...state.conflicts],
      },
      report,
    );
    if (counts === null) return { state: next, running: null, changed: observationsChanged(state, next) };
    observeCumulative(next, counts, "event", (c) => provenanceOf(report, c));
    return { state: next, running: counts, changed: true };
  }
  if (report.key !== undefined && state.stepIds.includes(report.key)) return { state, running: null, changed: false };
  const next: ExecutionUsageState = withObservations(
    { ...state, stepIds: report.key !== undefined ? [...state.stepIds, report.key] : state.stepIds },
    report,
  );
  if (counts === null) return { state: next, running: null, changed: observationsChanged(state, next) };
  if (next.stepsBroken) return { state: next, running: null, changed: true };
  if (report.problem !== undefined || counts.inputTokens === undefined || counts.outputTokens === undefined) {
    return { state: breakSteps(next), running: null, changed: true };
  }
  let running: Counts;
  const runningProvenance: CounterProvenance = {};
  if (next.steps === null) {
    running = { ...counts };
    for (const c of COUNTERS) if (running[c] !== undefined) runningProvenance[c] = provenanceOf(report, c);
  } else {
    running = {};
    for (const c of COUNTERS) {
      const before = next.steps[c];
      const v = counts[c];
      if (before !== undefined && v !== undefined) running[c] = before + v;
      if (running[c] !== undefined)
        runningProvenance[c] = weakest(next.stepsProvenance[c] ?? "unknown", provenanceOf(report, c));
    }
  }
  const folded: ExecutionUsageState = {
    ...next,
    steps: running,
    stepsProvenance: runningProvenance,
    cumulative: { ...next.cumulative },
    provenance: { ...next.provenance },
    conflicts: [...next.conflicts],
  };
  // A counter this delta did not report is unknown from here on: it must not stand at its old value
  // (whichever order the deltas came in, the view is the same).
  if (next.steps !== null) {
    for (const c of COUNTERS) {
      if (next.steps[c] !== undefined && running[c] === undefined) {
        delete folded.cumulative[c];
        delete folded.provenance[c];
      }
    }
  }
  observeCumulative(folded, running, "step", (c) => runningProvenance[c] ?? "unknown");
  return { state: folded, running, changed: true };
}

/** Marks that no further running total is known (an invalid report, or frames that were skipped). */
export function breakSteps(state: ExecutionUsageState): ExecutionUsageState {
  return { ...state, stepsBroken: true };
}

/**
 * Folds the terminal receipt: it becomes the execution's total; a disagreement is recorded, not
 * hidden. A receipt whose provenance is not given is of unknown provenance.
 */
export function foldReceipt(
  state: ExecutionUsageState,
  counts: Counts,
  provenance: ReceiptProvenance = { provenance: "unknown" },
): ExecutionUsageState {
  if (state.receipt !== null) return state; // a second terminal frame repeating the receipt
  const next: ExecutionUsageState = {
    ...state,
    cumulative: { ...state.cumulative },
    provenance: { ...state.provenance },
    conflicts: [...state.conflicts],
    receiptDisagreements: [...state.receiptDisagreements],
  };
  for (const c of COUNTERS) {
    const r = counts[c];
    const s = state.cumulative[c];
    if (r !== undefined && s !== undefined && r !== s)
      next.receiptDisagreements.push({ counter: c, streamed: s, receipt: r });
  }
  observeCumulative(next, counts, "receipt", (c) => provenanceOf(provenance, c));
  next.receipt = counts;
  next.receiptProvenance = {};
  for (const c of COUNTERS) if (counts[c] !== undefined) next.receiptProvenance[c] = provenanceOf(provenance, c);
  return next;
}

/** Counts as a TokenUsage to attach to an event; null unless both input and output are known. */
export function toTokenUsage(counts: Counts): TokenUsage | null {
  if (counts.inputTokens === undefined || counts.outputTokens === undefined) return null;
  return {
    ...counts,
    inputTokens: counts.inputTokens,
    outputTokens: counts.outputTokens,
    totalTokens: counts.inputTokens + counts.outputTokens,
  };
}

/** The execution's total: the receipt when there is one, else what was observed (a lower bound). */
function executionTotal(state: ExecutionUsageState): Counts {
  return state.receipt ?? state.cumulative;
}

/** The provenance of each counter of the execution's total (absent where the counter is unknown). */
function executionProvenance(state: ExecutionUsageState): CounterProvenance {
  const total = executionTotal(state);
  const of = state.receipt !== null ? state.receiptProvenance : state.provenance;
  const out: CounterProvenance = {};
  for (const c of COUNTERS) if (total[c] !== undefined) out[c] = of[c] ?? "unknown";
  return out;
}

/** Every counter, null where `values` does not know it (a view never leaves a counter out). */
function everyCounter<T>(values: Partial<Record<Counter, T>>): Record<Counter, T | null> {
  return Object.fromEntries(COUNTERS.map((c) => [c, values[c] ?? null])) as Record<Counter, T | null>;
}

export function executionView(state: ExecutionUsageState): UsageView {
  const total = executionTotal(state);
  const source = state.receipt !== null ? "receipt" : Object.keys(total).length > 0 ? "running" : "none";
  return {
    ...everyCounter(total),
    provenance: everyCounter(executionProvenance(state)),
    source,
    conflict: state.conflicts.length > 0,
    modelRequests: state.modelRequestsUnknown ? null : state.modelRequests,
    servedModels: state.servedModelsRefused || state.servedModels.length === 0 ? null : [...state.servedModels],
  };
}

/**
 * Totals over executions; a counter any execution left unknown makes the total a floor. Each
 * counter's provenance is the weakest over the executions that know it (an empty conversation's
 * zero is exact).
 */
export function totalOf(states: ExecutionUsageState[]): TotalView {
  const sums: Counts = {};
  const unknown = new Set<Counter>();
  const provenance: CounterProvenance = {};
  for (const state of states) {
    const total = executionTotal(state);
    const of = executionProvenance(state);
    for (const c of COUNTERS) {
      const v = total[c];
      if (v === undefined) unknown.add(c);
      else {
        sums[c] = (sums[c] ?? 0) + v;
        provenance[c] = weakest(provenance[c], of[c]);
      }
    }
  }
  const known = (c: Counter): number | null => (states.length === 0 ? 0 : (sums[c] ?? null));
  if (states.length === 0) for (const c of COUNTERS) provenance[c] = "measured";
  return {
    inputTokens: known("inputTokens"),
    outputTokens: known("outputTokens"),
    reasoningTokens: known("reasoningTokens"),
    cacheReadInputTokens: known("cacheReadInputTokens"),
    cacheCreationInputTokens: known("cacheCreationInputTokens"),
    cost: sums.cost === undefined ? (states.length === 0 ? 0 : null) : Math.round(sums.cost * 1e9) / 1e9,
    provenance: everyCounter(provenance),
    conflict: states.some((s) => s.conflicts.length > 0),
    // Input and output are what budgets and users count: unknown in any execution makes them a floor.
    complete: !unknown.has("inputTokens") && !unknown.has("outputTokens"),
    unknown: [...unknown],
  };
}
