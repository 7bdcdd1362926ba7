/**
 * Which events carry usage, and how each is folded. Pure: an execution's fold state and one
 * provider event in; the new state, the usage to attach to the event, and what to report out.
 */
import type { ProviderEvent } from "../providers/provider";
import type { TokenUsage } from "../schemas/common";
import {
  breakSteps,
  countsFrom,
  foldReceipt,
  foldStep,
  InvalidUsageError,
  type Counts,
  type ExecutionUsageState,
} from "./usage-fold";

export interface UsageStep {
  state: ExecutionUsageState;
  /** Cumulative usage to attach to the event, when a total is known at this point. */
  attach: TokenUsage | null;
  /** The execution's usage changed: report it (usage.updated). */
  changed: boolean;
  /** A usage problem to report as a warning (an invalid step count). */
  warning?: string;
}

/** An OpenCode step, as a `raw` step_finish frame or a `step-finish` part: its part id and part. */
export function stepOf(event: ProviderEvent): { partId: string; part: unknown } | null {
  if (event.type === "raw") {
    const inner = event.data.event as { type?: unknown; part?: { id?: unknown } } | undefined;
    if (inner?.type === "step_finish" && typeof inner.part?.id === "string") return { partId: inner.part.id, part: inner.part };
    return null;
  }
  if (event.type === "message.part.updated") {
    const part = event.data.part as { id?: unknown; type?: unknown; tokens?: unknown } | undefined;
    if (part?.type === "step-finish" && typeof part.id === "string" && part.tokens !== undefined) return { partId: part.id, part };
  }
  return null;
}

export function toTokenUsage(counts: Counts): TokenUsage | null {
  if (counts.inputTokens === undefined || counts.outputTokens === undefined) return null;
  return {
    inputTokens: counts.inputTokens,
    outputTokens: counts.outputTokens,
    totalTokens: counts.inputTokens + counts.outputTokens,
    ...(counts.reasoningTokens !== undefined ? { reasoningTokens: counts.reasoningTokens } : {}),
    ...(counts.cacheReadInputTokens !== undefined ? { cacheReadInputTokens: counts.cacheReadInputTokens } : {}),
    ...(counts.cacheCreationInputTokens !== undefined ? { cacheCreationInputTokens: counts.cacheCreationInputTokens } : {}),
    ...(counts.cost !== undefined ? { cost: counts.cost } : {}),
  };
}

/** Whether an event can change the usage fold (the hot path skips the rest). */
export function carriesUsage(event: ProviderEvent): boolean {
  return event.type === "result" || event.type === "done" || stepOf(event) !== null;
}

export function foldUsageEvent(state: ExecutionUsageState, event: ProviderEvent): UsageStep {
  const step = stepOf(event);
  if (step) {
    try {
      const result = foldStep(state, step.partId, step.part);
      return { state: result.state, attach: result.running ? toTokenUsage(result.running) : null, changed: !result.repeated };
    } catch (err) {
      if (!(err instanceof InvalidUsageError)) throw err;
      return { state: breakSteps(state), attach: null, changed: true, warning: `step ${step.partId}: ${err.message}; no running total is known past it` };
    }
  }
  if (event.type === "result" || event.type === "done") {
    const counts = countsFrom(event.data.tokenUsage, event.data.totalCostUsd);
    // A receipt that reports no counter says nothing about usage; one that reports some is authoritative.
    if (Object.keys(counts).length === 0 || state.receipt !== null) return { state, attach: null, changed: false };
    return { state: foldReceipt(state, counts), attach: toTokenUsage(counts), changed: true };
  }
  return { state, attach: null, changed: false };
}
