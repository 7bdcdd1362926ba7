/**
 * Token budgets enforced on a conversation (the budgets themselves: ../usage/budgets.ts, pure). At the
 * door, a new turn is refused once a budget is used up (`budgetRefusal`, pure: the refusal says
 * whether the spend is a floor and whether it counts estimates). Mid-run, a running turn whose total
 * crossed a budget is cancelled upstream once (`BudgetStop.stop`); its stop is recorded as the
 * turn's cancel reason, so the run's end reads `cancelled`, `budget_exceeded` (./turn-end.ts). A
 * cancel that fails is tried again at the next usage report.
 */
import type { Config } from "../config";
import { Refusal } from "../errors";
import type { AgentProvider } from "../providers/provider";
import { type BudgetState, type Spend, tightestBudget } from "../usage/budgets";
import type { EventLog } from "./event-log";
import type { SessionContext } from "./store/records";
import type { SessionStore } from "./store/store";
import { conversationTotal } from "./turn-usage";

/** How a budget's spend is described after its figure. */
const PROVENANCE_NOTE: Record<BudgetState["provenance"], string> = {
  measured: "",
  estimated: ", counting estimates",
  unknown: ", counting figures of unknown provenance",
};

/** The refusal of a new turn under `budget`, or null when no budget is used up. */
export function budgetRefusal(budget: BudgetState | null): Refusal | null {
  if (!budget?.exceeded) return null;
  return new Refusal(
    "budget_exceeded",
    `the ${budget.scope} token budget of ${budget.tokens} is used up (${budget.complete ? "" : "at least "}${budget.used} tokens${PROVENANCE_NOTE[budget.provenance]})`,
    { budget },
  );
}

export interface BudgetStopDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => Pick<AgentProvider, "cancel">;
  config: () => Pick<Config, "TOKEN_BUDGET_PER_CONVERSATION" | "TOKEN_BUDGET_PER_USER">;
  /** Tokens the user spent in their other conversations. */
  usageElsewhere(context: SessionContext): Promise<Spend>;
}

export class BudgetStop {
  /** Turns whose budget cancel is under way or done in this instance: each is stopped once. */
  private readonly stopping = new Set<string>();

  constructor(private readonly deps: BudgetStopDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /** The tightest budget that applies, with what was used against it; null when none is set. */
  budget(): BudgetState | null {
    const config = this.deps.config();
    const elsewhere = this.store.getMeta("userElsewhere") ?? {
      used: 0,
      complete: true,
      provenance: "measured" as const,
    };
    return tightestBudget(conversationTotal(this.store), elsewhere, {
      perConversation: config.TOKEN_BUDGET_PER_CONVERSATION,
      perUser: config.TOKEN_BUDGET_PER_USER,
    });
  }

  /** Before a new turn: what the user spent elsewhere is read (when a user budget is set), and a budget used up refuses the turn. */
  async admit(context: SessionContext): Promise<void> {
    if (this.deps.config().TOKEN_BUDGET_PER_USER !== undefined)
      this.store.setMeta("userElsewhere", await this.deps.usageElsewhere(context));
    const refusal = budgetRefusal(this.budget());
    if (refusal) throw refusal;
  }

  /** The running total crossed a budget (after the commit that recorded it): the run is cancelled upstream. */
  stop(turnId: string): void {
    this.cancelRun(turnId).catch((err) =>
      console.error(JSON.stringify({ msg: "budget stop failed", turnId, error: String(err) })),
    );
  }

  private async cancelRun(turnId: string): Promise<void> {
    if (this.stopping.has(turnId)) return;
    const turn = this.store.turn(turnId);
    if (!turn?.controlRef || turn.status !== "running") return;
    this.stopping.add(turnId);
    const budget = this.budget();
    this.deps.log.commit((log) => {
      this.store.setCancelReason(turnId, "budget_exceeded");
      log.append({
        turnId,
        executionId: turn.executionId,
        type: "budget.exceeded",
        data: { turnId, budget },
        now: Date.now(),
      });
    });
    try {
      await this.deps
        .provider()
        .cancel(turn.controlRef, { operationId: `budget:${turnId}`, reason: "budget_exceeded" });
    } catch (err) {
      // Try again at the next usage report.
      this.stopping.delete(turnId);
      this.deps.log.commit((log) =>
        log.append({
          turnId,
          executionId: turn.executionId,
          type: "warning",
          data: {
            code: "budget_cancel_failed",
            message: `could not cancel the run for its budget: ${err instanceof Error ? err.message : String(err)}`,
          },
          now: Date.now(),
        }),
      );
    }
  }
}
