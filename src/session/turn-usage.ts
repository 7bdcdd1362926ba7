/**
 * A turn's usage as the conversation sees it: an execution's fold stored (its view on the turn
 * record once the turn ends) and reported as `usage.updated` (with the conversation's new total and
 * the budget that applies, as GET …/usage answers them, so a client keeps both current from the
 * stream), and the conversation's total over every dispatched turn. Two helpers over a minimal view
 * of the store, shared by the upstream reader, the turn's end and the budget stop, so the total is
 * computed one way. The fold's rules are ../usage/usage-fold.ts.
 */

import type { ProviderResult } from "../providers/provider";
import type { TotalView } from "../schemas/api";
import type { BudgetState } from "../usage/budgets";
import {
  breakSteps,
  type ExecutionUsageState,
  emptyExecutionUsage,
  executionView,
  foldReceipt,
  totalOf,
} from "../usage/usage-fold";
import type { Appender } from "./event-log";
import type { SessionStore } from "./store/store";

type TotalStore = Pick<SessionStore, "allExecutionUsage" | "dispatchedExecutionIds">;

/**
 * The conversation's total over every dispatched turn. A turn that reported no usage at all
 * counts as unknown, never as zero: the total is then a floor.
 */
export function conversationTotal(store: TotalStore): TotalView {
  const folds = new Map(store.allExecutionUsage().map((state) => [state.executionId, state]));
  return totalOf(store.dispatchedExecutionIds().map((id) => folds.get(id) ?? emptyExecutionUsage(id)));
}

/** The tightest budget that applies over the store as it is now (./budget-stop.ts); null when none is set. */
export type BudgetReading = () => BudgetState | null;

/**
 * Stores an execution's fold and reports it with the conversation's new total and the budget as it
 * now stands, which it answers (read once: the caller checks it); the caller holds the transaction.
 */
export function recordUsage(
  store: TotalStore & Pick<SessionStore, "putExecutionUsage">,
  log: Appender,
  turnId: string,
  state: ExecutionUsageState,
  now: number,
  budget: BudgetReading,
): BudgetState | null {
  const view = executionView(state);
  store.putExecutionUsage(turnId, state);
  const standing = budget();
  const data = {
    turnId,
    executionId: state.executionId,
    usage: view,
    conversation: conversationTotal(store),
    budget: standing,
  };
  log.append({ turnId, executionId: state.executionId, type: "usage.updated", data, now });
  return standing;
}

/**
 * The execution's usage once it is settled from its result: frames were missed, so whatever usage
 * they held is unknown and no running total stands; the result's receipt is authoritative, folded
 * by the terminal receipt's rule. `report`: the fold is announced (`usage.updated`) as well as
 * stored. Null: nothing to store.
 */
export function usageFromResult(
  stored: ExecutionUsageState | null,
  executionId: string,
  result: ProviderResult,
): { state: ExecutionUsageState; report: boolean } | null {
  const broken = stored ? breakSteps(stored) : null;
  if (result.receipt)
    return {
      state: foldReceipt(broken ?? emptyExecutionUsage(executionId), result.receipt, result.receiptProvenance),
      report: true,
    };
  return broken ? { state: broken, report: false } : null;
}

/** Stores (and, with a receipt, reports) the usage a run's result gives its turn; the caller holds the transaction. */
export function recordResultUsage(
  store: TotalStore & Pick<SessionStore, "putExecutionUsage" | "executionUsage">,
  log: Appender,
  turnId: string,
  executionId: string,
  result: ProviderResult,
  now: number,
  budget: BudgetReading,
): void {
  const usage = usageFromResult(store.executionUsage(executionId), executionId, result);
  if (usage?.report) recordUsage(store, log, turnId, usage.state, now, budget);
  else if (usage) store.putExecutionUsage(turnId, usage.state);
}
