/**
 * Every way a turn ends, read in one place. A running turn ends:
 *  - from its run's terminal event (`finish`, applied by the upstream reader, ./upstream-reader.ts);
 *  - from its run's result, when the stream cannot tell (`fromResult`: cursor gone, reader gave up);
 *    a result that says the run ended but not how is `failed` `outcome_unknown`, never a success;
 *  - failed here and now (`fail`: the environment is gone, the turn ran too long, its run could
 *    not be reached);
 *  - cancelled here, when upstream says nothing runs any more after a Stop (`cancelled`);
 *  - by the watchdog (`watchdog`): a turn past TURN_MAX_DURATION_MS fails `turn_timeout`, one
 *    whose run could not be reached for UPSTREAM_LOST_AFTER_MS fails `upstream_lost`, a dispatch
 *    that never finished is forgotten, and a running turn gets its reader back after an eviction.
 * A budget stop and a user's Stop only ask the run to stop: its end then comes from the run, and
 * reads `cancelled` with the recorded reason. A run cancelled upstream that nobody here asked to
 * stop fails `upstream_cancelled`. The decisions are pure functions (`endingOf`, `resultEnding`,
 * `watchdogVerdict`; the usage a result reports is ./turn-usage.ts `usageFromResult`); the class
 * applies them, each end in one commit. The ended turn's events are compacted (./compaction.ts) in
 * the commit right after its end's, which marks its row compacted: a crash between the two leaves
 * a correct, merely uncompacted log, and a turn ended and unmarked, compacted at the next start or
 * end. A result that is the message's text is then held once, in the parts (`markCompacted`).
 */
import type { Config } from "../config";
import type { ProviderResult, RunError, TerminalStatus } from "../providers/provider";
import { type AbandonedRuns, alarmWanted } from "./abandoned-runs";
import { mayRepeatAnswer, planCompaction } from "./compaction";
import type { Appender, EventLog } from "./event-log";
import type { InteractionDesk } from "./interaction-desk";
import type { ChunkReads } from "./store/log-chunks";
import { TERMINAL_TURN_STATUSES, type TurnError, type TurnRecord } from "./store/records";
import type { SessionStore } from "./store/store";
import { messageText, turnParts } from "./transcript";
import { type BudgetReading, recordResultUsage } from "./turn-usage";

/** How often a live run's watchdog alarm checks that its upstream reader is alive. */
export const WATCHDOG_INTERVAL_MS = 30_000;

// ------------------------------------------------------------------ the decisions (pure)

/**
 * The status and error a turn ends with, from what its run reported and whether anyone here asked
 * to stop it (`cancelReason`). A run cancelled upstream that nobody here asked to stop (a service
 * shutting down cancels its runs) is not a user's Stop: the turn failed, and says who stopped it.
 * A failed turn always says why.
 */
export function endingOf(
  cancelReason: string | null,
  reported: TerminalStatus,
  reportedError?: RunError,
): { status: TerminalStatus; error?: TurnError } {
  const upstreamCancelled = reported === "cancelled" && cancelReason == null;
  const status: TerminalStatus = upstreamCancelled ? "failed" : reported;
  const error = upstreamCancelled
    ? {
        code: "upstream_cancelled",
        message: "the agent service cancelled the run by itself; the gateway did not ask it to stop",
      }
    : reportedError;
  return status === "failed"
    ? { status, error: { code: error?.code ?? "agent_failed", message: error?.message ?? "the run failed" } }
    : { status };
}

/** What a run's result reports of its end; one that does not say how the run ended is a failure, `outcome_unknown`. */
export function resultEnding(result: ProviderResult): { status: TerminalStatus; text?: string; error?: RunError } {
  if (result.status === "unknown") {
    const why = result.error?.message ? ` (${result.error.message})` : "";
    return {
      status: "failed",
      error: { code: "outcome_unknown", message: `the run ended upstream, but how it ended is unknown${why}` },
    };
  }
  return {
    status: result.status,
    ...(result.text !== undefined ? { text: result.text } : {}),
    ...(result.error ? { error: result.error } : {}),
  };
}

export type WatchdogVerdict =
  /** A dispatch that never finished (the object was evicted mid-dispatch): nothing was acknowledged, the turn is forgotten. */
  | { kind: "forget_pending" }
  /** A dispatch still under way, or too recent to call abandoned. */
  | { kind: "wait" }
  /** The turn ends here failed, with `code` (its reader stopped first). */
  | { kind: "fail"; code: "turn_timeout" | "upstream_lost"; message: string }
  /** The turn runs: its reader is started again if it is not running in this instance. */
  | { kind: "resume" };

/** What the watchdog does with the conversation's active turn at `now`. */
export function watchdogVerdict(
  active: Pick<TurnRecord, "status" | "startedAt" | "updatedAt" | "lostAt">,
  now: number,
  limits: Pick<Config, "TURN_MAX_DURATION_MS" | "UPSTREAM_LOST_AFTER_MS">,
  dispatching: boolean,
): WatchdogVerdict {
  if (active.status === "pending")
    return now - active.updatedAt > WATCHDOG_INTERVAL_MS && !dispatching
      ? { kind: "forget_pending" }
      : { kind: "wait" };
  // Its time limit counts from its start (a turn that waited in the queue was not running meanwhile).
  if (now - active.startedAt >= limits.TURN_MAX_DURATION_MS) {
    return {
      kind: "fail",
      code: "turn_timeout",
      message: `the turn ran longer than ${limits.TURN_MAX_DURATION_MS} ms and was stopped`,
    };
  }
  if (active.lostAt !== null && now - active.lostAt >= limits.UPSTREAM_LOST_AFTER_MS) {
    return {
      kind: "fail",
      code: "upstream_lost",
      message: `the run could not be reached for ${Math.round((now - active.lostAt) / 1000)} s and nothing could settle it`,
    };
  }
  return { kind: "resume" };
}

/** When the watchdog looks again at a turn still active: its next interval, or the turn's time limit if sooner. */
export function nextWatchdogAt(active: Pick<TurnRecord, "startedAt">, now: number, maxDurationMs: number): number {
  return Math.min(now + WATCHDOG_INTERVAL_MS, active.startedAt + maxDurationMs);
}

// ------------------------------------------------------------------ applying them

/**
 * Compacts one ended turn's events (./compaction.ts) and marks its row compacted: its result, when it
 * is exactly its message's text, is then dropped from the row (the parts hold it; ./transcript.ts
 * withAnswer reads it back). A turn the trim cut into keeps its events as they are (its parts are
 * kept on it). Idempotent: a compacted turn plans nothing and its mark is written once.
 */
export function compactTurn(
  store: Pick<
    SessionStore,
    "turn" | "eventsOfTurn" | "storedEvent" | "otherEventSeqs" | "applyCompaction" | "markCompacted"
  >,
  turnId: string,
): void {
  const turn = store.turn(turnId);
  if (!turn || !TERMINAL_TURN_STATUSES.has(turn.status)) return;
  let parts = turn.parts;
  if (parts === null) {
    // The turn's chunks are read (parsed and checked) once, for its events and for their compaction.
    const reads: ChunkReads = new Map();
    // An event rewritten less its copy of the answer keeps every other field as stored.
    const events = store
      .eventsOfTurn(turnId, reads)
      .map((e) => (mayRepeatAnswer(e.type) ? (store.storedEvent(e.seq) ?? e) : e));
    if (events.length >= 2) {
      const plan = planCompaction(events, store.otherEventSeqs(turnId, events[0]!.seq, events.at(-1)!.seq));
      if (plan.length > 0) store.applyCompaction(plan, reads);
    }
    parts = turnParts({ events, interactions: [] });
  }
  const text = messageText(parts);
  store.markCompacted(turnId, turn.answerInParts || (text !== "" && turn.resultText === text));
}

export interface TurnEndDeps {
  store: () => SessionStore;
  log: EventLog;
  desk: Pick<InteractionDesk, "closeAsksOfTurn">;
  config: () => Pick<Config, "TURN_MAX_DURATION_MS" | "UPSTREAM_LOST_AFTER_MS" | "EVENT_LOG_MAX_EVENTS">;
  alarms: { set(atMs: number): Promise<void>; clear(): Promise<void> };
  /** The running turn's upstream reader: stopped when the turn ends here, started again by the watchdog. */
  reader: { ensure(): void; stop(): void };
  /** Whether a dispatch of this turn is under way in this instance. */
  dispatching(turnId: string): boolean;
  /** The conversation list shows the conversation idle (never rejects). */
  showIdle(): Promise<void>;
  /** Runs whose turn ended here while they may still run upstream (./abandoned-runs.ts). */
  abandoned: Pick<AbandonedRuns, "remember" | "settle" | "followed">;
  /** The budget as it stands, reported with the usage a result settles (./turn-usage.ts). */
  budget: BudgetReading;
}

export class TurnEnd {
  private compactionQueued = false;

  constructor(private readonly deps: TurnEndDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /** Writes the turn's end and its gateway event (its open asks closed first); the caller holds the transaction. */
  finish(
    log: Appender,
    turn: TurnRecord,
    reported: TerminalStatus,
    text: string | undefined,
    reportedError: RunError | undefined,
    now: number,
  ): void {
    const { status, error } = endingOf(turn.cancelReason, reported, reportedError);
    this.deps.desk.closeAsksOfTurn(log, turn.turnId, now);
    this.store.finishTurn(turn.turnId, { status, resultText: text, error, now });
    // Compacted in the commit after this one (the end's own events stored first); until then its
    // row says it is not, so a crash between the two compacts it at the next start.
    this.compactSoon();
    const finished = this.store.turn(turn.turnId)!;
    const type = status === "completed" ? "turn.completed" : status === "cancelled" ? "turn.cancelled" : "turn.failed";
    log.append({
      turnId: turn.turnId,
      executionId: turn.executionId,
      type,
      data: {
        turnId: turn.turnId,
        status,
        ...(text !== undefined ? { result: { text } } : {}),
        ...(error ? { error } : {}),
        ...(status === "cancelled" && finished.cancelReason ? { reason: finished.cancelReason } : {}),
        ...(finished.usage ? { usage: finished.usage } : {}),
      },
      now,
    });
  }

  /** Compaction once the current commit is over (`finish` runs inside its caller's transaction). */
  private compactSoon(): void {
    if (this.compactionQueued) return;
    this.compactionQueued = true;
    queueMicrotask(() => {
      this.compactionQueued = false;
      this.compactEnded();
    });
  }

  /**
   * Compacts every ended turn not marked compacted, in one commit that marks them: after a turn's
   * end, and at start for a turn a crash left uncompacted. Idempotent. A failure leaves them
   * unmarked (and the log correct) for the next try; it never fails the caller.
   */
  compactEnded(): void {
    try {
      const store = this.store;
      const pending = store.endedUncompacted();
      if (pending.length === 0) return;
      const before = store.rowsWritten;
      this.deps.log.commit(() => {
        for (const turnId of pending) compactTurn(store, turnId);
      });
      store.compactionRowsWritten += store.rowsWritten - before;
    } catch (err) {
      console.error(JSON.stringify({ msg: "compacting ended turns failed", error: String(err) }));
    }
  }

  /** Ends a running turn from its run's result (the stream could not tell), its receipt folded. */
  fromResult(turnId: string, executionId: string, result: ProviderResult, reason: string): void {
    this.deps.log.commit((log) => {
      const turn = this.store.turn(turnId);
      if (turn?.status !== "running") return;
      const now = Date.now();
      log.append({
        turnId,
        executionId,
        type: "warning",
        data: { code: "stream_incomplete", message: `settled from the run's result: ${reason}` },
        now,
      });
      recordResultUsage(this.store, log, turnId, executionId, result, now, this.deps.budget);
      const ending = resultEnding(result);
      this.finish(log, turn, ending.status, ending.text, ending.error, now);
    });
  }

  /**
   * Ends a running turn failed with `code`, here and now (its reader stops on its own). Its run may
   * still go on upstream: it is remembered in the same commit and settled (cancelled, its later
   * usage folded into this turn) by ./abandoned-runs.ts, first at once.
   */
  fail(turnId: string, code: string, message: string): void {
    let ended = false;
    this.deps.log.commit((log) => {
      const turn = this.store.turn(turnId);
      if (turn?.status !== "running") return;
      this.failWithin(log, turn, { code, message }, Date.now());
      ended = true;
    });
    this.afterFail(turnId, ended);
  }

  /** `fail`'s writes, in the caller's transaction: the turn ends failed, its run remembered as abandoned. Then `afterFail`. */
  failWithin(log: Appender, turn: TurnRecord, error: TurnError, now: number): void {
    this.finish(log, turn, "failed", undefined, error, now);
    this.deps.abandoned.remember(turn, now);
  }

  /** After a commit that failed a turn here (`ended`): the list shows it idle, and its run is settled upstream. */
  afterFail(turnId: string, ended: boolean): void {
    void this.deps.showIdle();
    if (ended) {
      this.deps.abandoned
        .settle()
        .catch((err) =>
          console.error(JSON.stringify({ msg: "settling an abandoned run failed", turnId, error: String(err) })),
        );
      void this.armForAbandoned();
    }
  }

  /** With no turn active, the alarm comes back only while a followed run has alarm tries left. */
  private async armForAbandoned(): Promise<void> {
    if (this.store.activeTurn()) return;
    if (alarmWanted(this.deps.abandoned.followed())) await this.deps.alarms.set(Date.now() + WATCHDOG_INTERVAL_MS);
  }

  /** Ends a running turn cancelled, here: upstream says nothing runs any more. */
  cancelled(turnId: string, why: string): void {
    this.deps.log.commit((log) => {
      const turn = this.store.turn(turnId);
      if (turn?.status !== "running") return;
      log.append({
        turnId,
        executionId: turn.executionId,
        type: "warning",
        data: { code: "run_not_live", message: why },
        now: Date.now(),
      });
      this.finish(log, turn, "cancelled", undefined, undefined, Date.now());
    });
    this.deps.reader.stop();
    void this.deps.showIdle();
  }

  /** The run's upstream stream is over: its de-duplication keys dropped, the log trimmed, the alarm cleared when nothing is active, the index updated. */
  async afterRun(executionId: string): Promise<void> {
    this.deps.log.commit(() => {
      const store = this.store;
      store.forgetSeen(executionId);
      const cutoff = store.trimCutoff(this.deps.config().EVENT_LOG_MAX_EVENTS);
      if (cutoff === 0) return;
      // A turn the trim cuts into keeps its whole message first: a reload shows it all.
      for (const turn of store.turnsTrimmedBy(cutoff)) {
        if (turn.status === "pending" || turn.status === "running") continue;
        store.keepParts(
          turn.turnId,
          turnParts({ events: store.eventsOfTurn(turn.turnId), interactions: store.interactionsOfTurn(turn.turnId) }),
        );
      }
      store.trimEvents(cutoff);
    });
    // Turns still queued keep the alarm: it wakes an object evicted before the next one started.
    if (
      !this.store.activeTurn() &&
      this.store.waitingTurns().length === 0 &&
      !alarmWanted(this.deps.abandoned.followed())
    )
      await this.deps.alarms.clear();
    await this.deps.showIdle();
  }

  /** The alarm's check of the active turn (`watchdogVerdict`), then the next alarm while a turn is still active. */
  async watchdog(): Promise<void> {
    await this.deps.abandoned.settle().catch(() => undefined);
    const active = this.store.activeTurn();
    if (!active) return this.armForAbandoned();
    const config = this.deps.config();
    const verdict = watchdogVerdict(active, Date.now(), config, this.deps.dispatching(active.turnId));
    switch (verdict.kind) {
      case "forget_pending":
        this.deps.log.commit(() => this.store.deleteTurn(active.turnId));
        break;
      case "wait":
        break;
      case "fail":
        // The turn ends here first (what the run says after this is not its end); its run is then
        // stopped upstream by the settlement of abandoned runs that `fail` starts.
        this.deps.reader.stop();
        this.fail(active.turnId, verdict.code, verdict.message);
        break;
      case "resume":
        this.deps.reader.ensure();
        break;
    }
    const still = this.store.activeTurn();
    if (still) await this.deps.alarms.set(nextWatchdogAt(still, Date.now(), config.TURN_MAX_DURATION_MS));
  }
}
