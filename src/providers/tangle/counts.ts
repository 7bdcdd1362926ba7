/** Reading a Sandbox usage record's counters (docs/sandbox-wire.md "Token usage on the wire"). Pure. */
import { COUNTERS, type Counts } from "../../schemas/common";

export const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
export const isCost = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/** A wire TokenUsage (receipt) as counts; only valid counters are kept. */
export function receiptCounts(usage: unknown, totalCostUsd?: unknown): Counts {
  const out: Counts = {};
  if (typeof usage === "object" && usage !== null) {
    const u = usage as Record<string, unknown>;
    for (const c of COUNTERS) {
      if (c !== "cost" && isCount(u[c])) out[c] = u[c];
    }
    if (isCost(u.cost)) out.cost = u.cost;
  }
  if (isCost(totalCostUsd)) out.cost = totalCostUsd;
  return out;
}
