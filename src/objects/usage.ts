/**
 * Token usage read from the wire. A usage record counts only when both input and output were
 * measured; a missing count is unknown (null), never zero (docs/sandbox-wire.md §4).
 */
import { TokenUsage } from "../schemas/common";

/** The terminal receipt's `tokenUsage` (+ `totalCostUsd`) as a TokenUsage, or null when not measured. */
export function receiptUsage(tokenUsage: unknown, totalCostUsd?: unknown): TokenUsage | null {
  if (typeof tokenUsage !== "object" || tokenUsage === null) return null;
  const wire = tokenUsage as Record<string, unknown>;
  const candidate: Record<string, unknown> = {
    inputTokens: wire.inputTokens,
    outputTokens: wire.outputTokens,
  };
  for (const key of ["cacheReadInputTokens", "cacheCreationInputTokens", "reasoningTokens"] as const) {
    if (wire[key] !== undefined) candidate[key] = wire[key];
  }
  const cost = typeof totalCostUsd === "number" ? totalCostUsd : wire.cost;
  if (cost !== undefined) candidate.cost = cost;
  if (typeof candidate.inputTokens === "number" && typeof candidate.outputTokens === "number") {
    candidate.totalTokens = candidate.inputTokens + candidate.outputTokens;
  }
  const parsed = TokenUsage.safeParse(candidate);
  return parsed.success ? parsed.data : null;
}
