/**
 * Runs whose turn the gateway ended while they may still run upstream
 * (docs/guarantees.md#never-stuck-never-a-guessed-success): the sandbox stopped or went away mid-turn, the turn ran
 * past its time, its run could not be reached. Ending the turn here does not end the run: left alone, a run in a
 * stopped sandbox that is resumed would hold the agent session (the next turn refused as busy) and spend tokens nobody
 * counts. So each such run is remembered with the turn it belongs to, in the commit that ends the turn, and settled:
 * cancelled upstream by its exact ref, then its result read, and the usage that result reports folded into that turn (a
 * `usage.updated` of the ended turn).
 *
 * Settling is tried at once, before the conversation's next dispatch (its environment resumed
 * first, so a run a stopped sandbox kept can be reached), and on the alarm for a bounded number of
 * tries. A run whose environment was replaced went with it; one nothing can settle within
 * ABANDONED_RUN_MAX_AGE_MS is let go, its usage left as far as it was seen (unknown beyond). The
 * decision is pure (`settleVerdict`); `AbandonedRuns` applies it.
 */
import type { AgentProvider, ProviderResult } from "../providers/provider";
import type { AgentExactRunControlRef } from "../schemas/contracts";
import type { EventLog } from "./event-log";
import type { TurnRecord } from "./store/records";
import type { SessionStore } from "./store/store";
import { type BudgetReading, recordResultUsage } from "./turn-usage";

/** How long a run is followed after its turn ended here, at most. */
export const ABANDONED_RUN_MAX_AGE_MS = 24 * 60 * 60 * 1000;
/** How many settlements the alarm tries for a run (later ones come with the conversation's next dispatch). */
export const ABANDONED_RUN_ALARM_TRIES = 20;
/** How many runs are followed at once; an older one is let go first. */
const MAX_FOLLOWED = 8;

export interface AbandonedRun {
  turnId: string;
  ref: AgentExactRunControlRef;
  since: number;
  attempts: number;
}

/** What to do with a remembered run before asking upstream about it. */
export type SettleVerdict =
  /** The conversation's environment is another now: the run went with the one it ran in. */
  | { kind: "drop"; why: "environment_replaced" | "too_old" }
  /** Cancel it and read its result. */
  | { kind: "try" };

export function settleVerdict(run: AbandonedRun, now: number, environmentId?: string): SettleVerdict {
  if (environmentId !== undefined && run.ref.environmentId !== environmentId)
    return { kind: "drop", why: "environment_replaced" };
  if (now - run.since > ABANDONED_RUN_MAX_AGE_MS) return { kind: "drop", why: "too_old" };
  return { kind: "try" };
}

/** Whether the alarm should come back for the runs still followed. */
export function alarmWanted(runs: readonly AbandonedRun[]): boolean {
  return runs.some((run) => run.attempts < ABANDONED_RUN_ALARM_TRIES);
}

export interface AbandonedRunsDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => Pick<AgentProvider, "cancel" | "result">;
  /** The budget as it stands, reported with the usage a result folds in (./turn-usage.ts). */
  budget: BudgetReading;
}

export class AbandonedRuns {
  private settling: Promise<void> | undefined;

  constructor(private readonly deps: AbandonedRunsDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /** The runs still followed. */
  followed(): AbandonedRun[] {
    return this.store.getMeta("abandonedRuns") ?? [];
  }

  /** Remembers the run of a turn ended here; the caller holds the transaction that ends the turn. */
  remember(turn: TurnRecord, now: number): void {
    if (!turn.controlRef) return;
    const runs = this.followed().filter((run) => run.ref.executionId !== turn.controlRef!.executionId);
    runs.push({ turnId: turn.turnId, ref: turn.controlRef, since: now, attempts: 0 });
    this.store.setMeta("abandonedRuns", runs.slice(-MAX_FOLLOWED));
  }

  /**
   * Cancels each followed run and folds its result's usage into its turn once upstream reports
   * its end. `environmentId`: the conversation's environment now (runs of another are let go).
   * One settlement at a time; a caller arriving during one waits for it.
   */
  settle(environmentId?: string): Promise<void> {
    if (this.followed().length === 0) return Promise.resolve();
    this.settling ??= this.settleAll(environmentId).finally(() => (this.settling = undefined));
    return this.settling;
  }

  private async settleAll(environmentId?: string): Promise<void> {
    const ended = new Set<string>();
    const tried = new Set<string>();
    for (const run of this.followed()) {
      const verdict = settleVerdict(run, Date.now(), environmentId);
      if (verdict.kind === "drop") {
        ended.add(run.ref.executionId);
        continue;
      }
      tried.add(run.ref.executionId);
      const result = await this.cancelAndRead(run.ref);
      if (result) {
        this.fold(run, result);
        ended.add(run.ref.executionId);
      }
    }
    // Written against what is stored now: a run remembered meanwhile is kept.
    this.deps.log.commit(() => {
      const left = this.followed()
        .filter((run) => !ended.has(run.ref.executionId))
        .map((run) => (tried.has(run.ref.executionId) ? { ...run, attempts: run.attempts + 1 } : run));
      this.store.setMeta("abandonedRuns", left);
    });
  }

  /** Asks upstream to stop the run, then for its end; null while it cannot say (still running, unreachable). */
  private async cancelAndRead(ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
    const provider = this.deps.provider();
    try {
      await provider.cancel(ref, {
        operationId: `abandoned:${ref.executionId}`,
        reason: "the gateway ended this run's turn",
      });
      return await provider.result(ref);
    } catch {
      return null;
    }
  }

  /** The run's reported usage, folded into the turn it belongs to (that turn ended already; its status stays). */
  private fold(run: AbandonedRun, result: ProviderResult): void {
    this.deps.log.commit((log) => {
      const store = this.store;
      if (!store.turn(run.turnId)) return;
      recordResultUsage(store, log, run.turnId, run.ref.executionId, result, Date.now(), this.deps.budget);
    });
  }
}
