/**
 * Token budgets (input + output tokens), per conversation and per user. Pure: totals in, the
 * tightest budget that applies out. A total that is a floor (some usage unknown) still counts what
 * is known, and says so (`complete: false`).
 */
import type { TotalView } from "../schemas/api";

export interface BudgetLimits {
  perConversation?: number;
  perUser?: number;
}

export interface BudgetState {
  scope: "conversation" | "user";
  tokens: number;
  used: number;
  complete: boolean;
  exceeded: boolean;
}

/** Tokens that count against a budget (input + output), as a floor, with whether it is complete. */
export function budgetUsage(total: TotalView): { used: number; complete: boolean } {
  return { used: (total.inputTokens ?? 0) + (total.outputTokens ?? 0), complete: total.complete };
}

/** The tightest budget that applies, with what was used against it; null when none is set. */
export function tightestBudget(conversation: TotalView, elsewhere: { used: number; complete: boolean }, limits: BudgetLimits): BudgetState | null {
  const own = budgetUsage(conversation);
  const candidates: Array<Omit<BudgetState, "exceeded">> = [];
  if (limits.perConversation !== undefined) candidates.push({ scope: "conversation", tokens: limits.perConversation, ...own });
  if (limits.perUser !== undefined) {
    candidates.push({ scope: "user", tokens: limits.perUser, used: own.used + elsewhere.used, complete: own.complete && elsewhere.complete });
  }
  if (candidates.length === 0) return null;
  const ranked = candidates.map((c) => ({ ...c, exceeded: c.used >= c.tokens })).sort((a, b) => b.used / b.tokens - a.used / a.tokens);
  return ranked[0]!;
}
