/**
 * Token budgets (input + output tokens), per conversation and per user. Pure: totals in, the
 * tightest budget that applies out. A total that is a floor (some usage unknown) still counts what
 * is known, and says so (`complete: false`); spend that is in part an estimate says so too
 * (`provenance`: the weakest of what it counts), so a stop on estimated spend is never reported
 * as a stop on measured spend. Enforced (a new turn refused, a running one stopped) by ../session/budget-stop.ts.
 */
import type { TotalView } from "../schemas/api";
import type { Provenance } from "../schemas/common";
import { weakest } from "./usage-fold";

export interface BudgetLimits {
  perConversation?: number;
  perUser?: number;
}

/** Tokens spent, as a floor, whether that floor is the whole of it, and where the figure comes from. */
export interface Spend {
  used: number;
  complete: boolean;
  provenance: Provenance;
}

export interface BudgetState extends Spend {
  scope: "conversation" | "user";
  tokens: number;
  exceeded: boolean;
}

/** Tokens that count against a budget (input + output), as a floor, with whether it is complete and its weakest provenance. */
export function budgetUsage(total: TotalView): Spend {
  const provenance =
    weakest(total.provenance.inputTokens ?? undefined, total.provenance.outputTokens ?? undefined) ?? "measured";
  return { used: (total.inputTokens ?? 0) + (total.outputTokens ?? 0), complete: total.complete, provenance };
}

/** The tightest budget that applies, with what was used against it; null when none is set. */
export function tightestBudget(conversation: TotalView, elsewhere: Spend, limits: BudgetLimits): BudgetState | null {
  const own = budgetUsage(conversation);
  const candidates: Array<Omit<BudgetState, "exceeded">> = [];
  if (limits.perConversation !== undefined)
    candidates.push({ scope: "conversation", tokens: limits.perConversation, ...own });
  if (limits.perUser !== undefined) {
    candidates.push({
      scope: "user",
      tokens: limits.perUser,
      used: own.used + elsewhere.used,
      complete: own.complete && elsewhere.complete,
      provenance:
        elsewhere.used > 0 ? (weakest(own.provenance, elsewhere.provenance) ?? own.provenance) : own.provenance,
    });
  }
  if (candidates.length === 0) return null;
  const ranked = candidates
    .map((c) => ({ ...c, exceeded: c.used >= c.tokens }))
    .sort((a, b) => b.used / b.tokens - a.used / a.tokens);
  return ranked[0]!;
}
