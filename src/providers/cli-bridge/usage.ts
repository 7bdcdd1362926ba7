/**
 * CLI Bridge usage as usage reports (seed 003, docs/cli-bridge-wire.md). Pure.
 *
 * - Usage chunks are deltas: they add. A counter a chunk does not carry is unknown, never zero.
 * - A cost counts only when measured (`cost_known: true`, not estimated); `cost_scope: "total"`
 *   replaces the cost so far, which the caller turns into a delta from the total it last saw.
 * - `cache_write_input_tokens` is cache creation; provenance is `estimated: true` → estimated,
 *   `estimated: false` → measured, absent → unknown.
 * - A chunk that reports no token counter at all (only `model_requests`, say) says nothing about
 *   tokens: no report.
 */
import type { Counts } from "../../schemas/common";
import type { UsageReport } from "../provider";

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
const isAmount = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

const TOKEN_FIELDS: Array<[string, keyof Counts]> = [
  ["prompt_tokens", "inputTokens"],
  ["completion_tokens", "outputTokens"],
  ["reasoning_tokens", "reasoningTokens"],
  ["cache_read_input_tokens", "cacheReadInputTokens"],
  ["cache_write_input_tokens", "cacheCreationInputTokens"],
];

/** OpenAI-style usage fields of one chunk; `costSoFar` is the measured total cost seen before it. */
export function chunkUsage(usage: Record<string, unknown>, key: string, costSoFar: number): { report: UsageReport | null; costTotal: number } {
  const provenance = usage.estimated === true ? "estimated" : usage.estimated === false ? "measured" : "unknown";
  const counts: Counts = {};
  for (const [field, counter] of TOKEN_FIELDS) {
    const value = usage[field];
    if (value === undefined || value === null) continue;
    if (!isCount(value)) return { report: { mode: "delta", key, provenance, counts: {}, problem: `usage ${key}: ${field} is not a non-negative integer` }, costTotal: costSoFar };
    counts[counter] = value;
  }
  let costTotal = costSoFar;
  if (usage.cost_known === true && usage.estimated !== true && isAmount(usage.cost)) {
    if (usage.cost_scope === "total") {
      if (usage.cost >= costSoFar) {
        counts.cost = usage.cost - costSoFar;
        costTotal = usage.cost;
      }
    } else {
      counts.cost = usage.cost;
      costTotal = costSoFar + usage.cost;
    }
  }
  if (counts.inputTokens === undefined && counts.outputTokens === undefined && Object.keys(counts).filter((c) => c !== "cost").length === 0) {
    // No token counter: nothing about tokens is said (a cost alone cannot form a report either).
    return { report: null, costTotal: costSoFar };
  }
  return { report: { mode: "delta", key, provenance, counts }, costTotal };
}

/** A retained run's `raw` usage event (camelCase counters, as Pi reports them). */
export function envelopeUsage(usage: Record<string, unknown>, key: string): UsageReport | null {
  const counts: Counts = {};
  for (const counter of ["inputTokens", "outputTokens", "reasoningTokens", "cacheReadInputTokens", "cacheCreationInputTokens"] as const) {
    const value = usage[counter];
    if (value === undefined || value === null) continue;
    if (!isCount(value)) return { mode: "delta", key, provenance: "unknown", counts: {}, problem: `usage ${key}: ${counter} is not a non-negative integer` };
    counts[counter] = value;
  }
  if (Object.keys(counts).length === 0) return null;
  const provenance = usage.estimated === true ? "estimated" : usage.estimated === false ? "measured" : "unknown";
  return { mode: "delta", key, provenance, counts };
}
