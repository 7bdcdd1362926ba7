/**
 * CLI Bridge usage as usage reports (agent-provider-cli-bridge, docs/cli-bridge-wire.md). Pure.
 *
 * - Usage chunks are deltas: they add. A counter a chunk does not carry is unknown, never zero.
 * - A cost counts only when measured (`cost_known: true`, not estimated); `cost_scope: "total"`
 *   replaces the cost so far, which the caller turns into a delta from the total it last saw. Its
 *   provenance is measured when the bridge names a provider or billing receipt, else unknown.
 * - `cache_write_input_tokens` is cache creation; provenance is `estimated: true` → estimated,
 *   `estimated: false` → measured, absent → unknown.
 * - `model_requests` counts only as an exact non-negative integer that is not estimated; a
 *   malformed or estimated one makes the run's request count unknown (agent-provider-cli-bridge, "Usage events … include modelRequests only when the bridge measured an exact … count").
 * - A chunk that reports no token counter (only `model_requests`, say) says nothing about tokens:
 *   its report has no counts, and none at all when it carries nothing else.
 * - A retained run's usage is a native record inside a `raw` event: it cannot certify itself as
 *   measured (agent-provider-cli-bridge: "nested native or application records cannot assert host
 *   observation authority"), so its
 *   counts are of unknown provenance unless it says they are estimated.
 * - Served models are the bridge's explicit provider-response observations (`provider_models`,
 *   or `provider_model` for one) in an event's own data; the chunk's `model` is the compatibility
 *   echo of the route and proves nothing (agent-provider-cli-bridge: "metadata.model and event
 *   data.model … do not prove which model served a request"). Malformed or overflowing evidence is refused.
 */
import type { Counts, Provenance } from "../../schemas/common";
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

/** Cost provenances that mean a receipt backs the figure (docs/cli-bridge-wire.md). */
const RECEIPT_COSTS = new Set(["provider-receipt", "billing-receipt"]);
const MAX_MODELS = 16;
const MAX_MODEL_CHARS = 256;

function provenanceOf(usage: Record<string, unknown>): Provenance {
  return usage.estimated === true ? "estimated" : usage.estimated === false ? "measured" : "unknown";
}

/** OpenAI-style usage fields of one chunk; `costSoFar` is the measured total cost seen before it. */
export function chunkUsage(
  usage: Record<string, unknown>,
  key: string,
  costSoFar: number,
): { report: UsageReport | null; costTotal: number } {
  const provenance = provenanceOf(usage);
  const requests = requestsOf(usage);
  const counts: Counts = {};
  for (const [field, counter] of TOKEN_FIELDS) {
    const value = usage[field];
    if (value === undefined || value === null) continue;
    if (!isCount(value))
      return {
        report: {
          mode: "delta",
          key,
          provenance,
          counts: {},
          problem: `usage ${key}: ${field} is not a non-negative integer`,
          ...requests,
        },
        costTotal: costSoFar,
      };
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
  if (
    counts.inputTokens === undefined &&
    counts.outputTokens === undefined &&
    Object.keys(counts).filter((c) => c !== "cost").length === 0
  ) {
    // No token counter: nothing about tokens is said (a cost alone cannot form a report either).
    return {
      report:
        requests.modelRequests !== undefined ? { mode: "delta", key, provenance, counts: null, ...requests } : null,
      costTotal: costSoFar,
    };
  }
  const costProvenance: Provenance =
    typeof usage.cost_provenance === "string" && RECEIPT_COSTS.has(usage.cost_provenance) ? "measured" : "unknown";
  return {
    report: {
      mode: "delta",
      key,
      provenance,
      ...(counts.cost !== undefined ? { costProvenance } : {}),
      counts,
      ...requests,
    },
    costTotal,
  };
}

/** `model_requests`: counted when exact and not estimated; null (unknown) when reported otherwise. */
function requestsOf(usage: Record<string, unknown>): { modelRequests?: number | null } {
  const value = usage.model_requests;
  if (value === undefined || value === null) return {};
  return { modelRequests: isCount(value) && usage.estimated !== true ? value : null };
}

/** A retained run's `raw` usage event (camelCase counters, as Pi reports them). */
export function envelopeUsage(usage: Record<string, unknown>, key: string): UsageReport | null {
  // A native record can say its counts are estimates, never that they are measured.
  const provenance: Provenance = usage.estimated === true ? "estimated" : "unknown";
  const counts: Counts = {};
  for (const counter of [
    "inputTokens",
    "outputTokens",
    "reasoningTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
  ] as const) {
    const value = usage[counter];
    if (value === undefined || value === null) continue;
    if (!isCount(value))
      return {
        mode: "delta",
        key,
        provenance,
        counts: {},
        problem: `usage ${key}: ${counter} is not a non-negative integer`,
      };
    counts[counter] = value;
  }
  if (Object.keys(counts).length === 0) return null;
  return { mode: "delta", key, provenance, counts };
}

/**
 * The served models an event's own data reports: undefined when it reports none, null when what
 * it reports is not a list of model names (or too many of them).
 */
export function servedModelsOf(data: Record<string, unknown>): string[] | null | undefined {
  const many = data.provider_models;
  const one = data.provider_model;
  if (many === undefined && one === undefined) return undefined;
  const models = [
    ...(many === undefined ? [] : Array.isArray(many) ? many : [null]),
    ...(one === undefined ? [] : [one]),
  ];
  const named = (m: unknown): m is string => typeof m === "string" && m.trim() !== "" && m.length <= MAX_MODEL_CHARS;
  if (models.length === 0) return undefined;
  if (models.length > MAX_MODELS || !models.every(named)) return null;
  return [...new Set(models)];
}
