/**
 * A turn's usage as the conversation sees it: an execution's fold stored with its view on the turn
 * and reported as `usage.updated`, and the conversation's total over every dispatched turn. Two
 * helpers over a minimal view of the store, shared by the upstream reader, the turn's end and the
 * budget stop, so the total is computed one way. The fold's rules are ./usage-fold.ts.
 */
import type { TotalView } from "../schemas/api";
import type { Appender } from "./event-log";
import type { SessionStore } from "./session-store";
import { emptyExecutionUsage, executionView, totalOf, type ExecutionUsageState } from "./usage-fold";

type TotalStore = Pick<SessionStore, "allExecutionUsage" | "dispatchedExecutionIds">;

/**
 * The conversation's total over every dispatched turn. A turn that reported no usage at all
 * counts as unknown, never as zero: the total is then a floor.
 */
export function conversationTotal(store: TotalStore): TotalView {
  const folds = new Map(store.allExecutionUsage().map((state) => [state.executionId, state]));
  return totalOf(store.dispatchedExecutionIds().map((id) => folds.get(id) ?? emptyExecutionUsage(id)));
}

/** Stores an execution's fold and reports it with the conversation's new total; the caller holds the transaction. */
export function recordUsage(store: TotalStore & Pick<SessionStore, "putExecutionUsage">, log: Appender, turnId: string, state: ExecutionUsageState, now: number): void {
  const view = executionView(state);
  store.putExecutionUsage(turnId, state, view);
  log.append({ turnId, executionId: state.executionId, type: "usage.updated", data: { turnId, executionId: state.executionId, usage: view, conversation: conversationTotal(store) }, now });
}
