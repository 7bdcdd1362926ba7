/**
 * Running turns: the turn cache decides, the provider dispatches (the control ref persisted before
 * the turn is acknowledged), one upstream reader per running execution ingests its events, and the
 * turn ends from a terminal event, from the run's result, from a budget stop or a cancellation.
 * Every write that belongs together goes through one commit (src/objects/event-log.ts).
 */
import type { Config } from "../config";
import { Refusal } from "../errors";
import { canonicalDigest, stripUndefined } from "../lib/digest";
import { turnShortfall, type Claims } from "../providers/claims";
import { ProviderError } from "../providers/errors";
import type { AgentProvider, EnvironmentRecord, ProviderEvent, ProviderResult, RunError, TerminalStatus } from "../providers/provider";
import type { TotalView, WaitingFor } from "../schemas/api";
import { AgentExactRunControlRef, type CancellationAcknowledgement } from "../schemas/contracts";
import { budgetUsage, tightestBudget, type BudgetState, type Spend } from "./budgets";
import type { Appender, EventLog } from "./event-log";
import { ingestStep } from "./ingest";
import type { InteractionDesk } from "./interaction-desk";
import { priorOperation } from "./operations";
import { providerRefusal } from "./provider-refusal";
import { runPump } from "./pump";
import { turnParts } from "./transcript";
import { NUMERIC_ID, type SessionContext, type SessionStore, type TurnRecord, type TurnRequest } from "./session-store";
import { decideTurn, executionIdFor, turnRequestDigest, turnView, type TurnView } from "./turn-cache";
import { breakSteps, emptyExecutionUsage, executionView, foldReceipt, totalOf, type ExecutionUsageState } from "./usage-fold";
import { waitingOf } from "./waiting";

/** How often a live run's watchdog alarm checks that its upstream reader is alive. */
const WATCHDOG_INTERVAL_MS = 30_000;
/** A dispatch admitted under another execution goes again under a new turn key at most this often. */
const MISMATCH_REKEYS = 1;
/** How many turn keys a dispatch follows at most (each one a run stopped earlier in place of ours). */
const MISMATCH_CHAIN = 12;
/** Upstream still busy right after our previous turn's receipt: retry this many times, backing off. */
const UPSTREAM_BUSY_ATTEMPTS = 6;
const UPSTREAM_BUSY_DELAY_MS = 100;

export type SubmitOutcome = { outcome: "accepted" | "in_progress" | "cached"; turn: TurnView };

export interface TurnRunnerDeps {
  store: () => SessionStore;
  /** The conversation this session holds, or null when it holds none (never stored, or deleted). */
  bound(): SessionContext | null;
  log: EventLog;
  desk: InteractionDesk;
  provider: () => AgentProvider;
  config: () => Config;
  alarms: { set(atMs: number): Promise<void>; clear(): Promise<void> };
  /** The user's ready environment; `staleEnvironmentId` says that one was found unusable, `claimMissing` that its claims fell short. */
  environment(context: SessionContext, staleEnvironmentId?: string, claimMissing?: boolean): Promise<EnvironmentRecord>;
  /** Tokens the user spent in their other conversations. */
  usageElsewhere(context: SessionContext): Promise<Spend>;
  /** Updates the user's conversation list. */
  touchIndex(context: SessionContext, entry: { title: string; state: "idle" | "running"; waitingFor: WaitingFor | null; lastEventId: number; usage: Spend }): Promise<void>;
}

export class TurnRunner {
  private reader: { executionId: string; abort: AbortController } | undefined;
  private readonly budgetStops = new Set<string>();
  /**
   * The text of each streaming part of the running execution, so each delta is stored and sent
   * once (src/objects/part-text.ts). Memory only: a new instance sends a part whole once, then deltas.
   */
  private partTexts: { executionId: string; texts: Map<string, string> } | undefined;
  /** Dispatches under way in this instance, to their end (a pending turn not in here was left by a crash). */
  private readonly dispatching = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: TurnRunnerDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  // ------------------------------------------------------------------ submitting

  /** The agent session upstream: the session id, or a fresh one for a conversation id used again after a delete. */
  private agentSessionId(context: SessionContext): string {
    return this.store.getMeta("agentSessionId") ?? context.sessionId;
  }

  async submit(context: SessionContext, turnId: string, request: TurnRequest): Promise<SubmitOutcome> {
    const requestDigest = await turnRequestDigest(request);
    const executionId = await executionIdFor(this.agentSessionId(context), turnId);
    // From here to the insert nothing awaits: a concurrent retry sees this turn.
    const decision = decideTurn(this.store.turn(turnId), this.store.activeTurn(), requestDigest);
    switch (decision.kind) {
      case "cached":
        return { outcome: "cached", turn: turnView(decision.turn, []) };
      case "in_progress":
        // A pending turn that nothing here dispatches was left by a crash mid-dispatch: resume it
        // (the execution id is deterministic, so a dispatch that did land is re-attached).
        if (decision.turn.status === "pending" && !this.dispatching.has(turnId)) return this.dispatchPending(context, decision.turn.turnId, executionId, request);
        return { outcome: "in_progress", turn: turnView(decision.turn, this.store.outstandingOfTurn(turnId)) };
      case "conflict":
        throw new Refusal("turn_conflict", `turn ${turnId} was already sent with different content`, { turnId });
      case "busy":
        throw new Refusal("session_busy", `turn ${decision.active.turnId} is still running in this conversation`, { activeTurnId: decision.active.turnId });
      case "new":
        break;
    }
    if (this.deps.config().TOKEN_BUDGET_PER_USER !== undefined) this.store.setMeta("userElsewhere", await this.deps.usageElsewhere(context));
    const budget = this.budget();
    if (budget?.exceeded) {
      throw new Refusal(
        "budget_exceeded",
        `the ${budget.scope} token budget of ${budget.tokens} is used up (${budget.complete ? "" : "at least "}${budget.used} tokens${PROVENANCE_NOTE[budget.provenance]})`,
        { budget },
      );
    }
    const now = Date.now();
    this.deps.log.commit(() => {
      this.store.insertPendingTurn({ turnId, requestDigest, request, executionId, now });
      if (!this.store.getMeta("title")) this.store.setMeta("title", titleFrom(request.message));
    });
    // Armed before the dispatch: an object evicted mid-dispatch must not keep a pending turn forever.
    await this.deps.alarms.set(now + WATCHDOG_INTERVAL_MS);
    return this.dispatchPending(context, turnId, executionId, request);
  }

  /** Waits for every dispatch under way here to end (accepted or refused), its bookkeeping included. */
  async quiesce(): Promise<void> {
    await Promise.allSettled([...this.dispatching.values()]);
  }

  /** Dispatches a recorded pending turn; on success the turn runs, on failure it is forgotten. */
  private dispatchPending(context: SessionContext, turnId: string, executionId: string, request: TurnRequest): Promise<SubmitOutcome> {
    const work = this.runDispatch(context, turnId, executionId, request).finally(() => this.dispatching.delete(turnId));
    this.dispatching.set(turnId, work);
    return work;
  }

  private async runDispatch(context: SessionContext, turnId: string, requestedExecutionId: string, request: TurnRequest): Promise<SubmitOutcome> {
    let dispatched: Awaited<ReturnType<TurnRunner["dispatch"]>>;
    try {
      dispatched = await this.dispatch(context, turnId, requestedExecutionId, request);
    } catch (err) {
      // Nothing was accepted: forget the pending turn so the client can retry under the same id
      // (the execution id is deterministic, so a dispatch that did land upstream is re-attached).
      this.deps.log.commit(() => this.store.deleteTurn(turnId));
      throw providerRefusal(err);
    }

    // The run's own execution (another than requested when a run admitted in its place was stopped).
    const executionId = dispatched.controlRef.executionId;
    // The control ref is persisted before the turn is acknowledged to anyone.
    this.deps.log.commit((log) => {
      const row = log.append({
        turnId,
        executionId,
        type: "turn.accepted",
        data: { turnId, executionId, message: request.message, ...(request.model ? { model: request.model } : {}) },
        now: Date.now(),
      });
      this.store.markRunning(turnId, dispatched.controlRef, row.seq, Date.now());
      if (dispatched.notice) log.append({ turnId, executionId, type: "warning", data: dispatched.notice, now: Date.now() });
      this.store.setMeta("environmentId", dispatched.controlRef.environmentId);
      this.store.setMeta("claims", dispatched.claims);
    });
    await this.deps.alarms.set(Date.now() + WATCHDOG_INTERVAL_MS);
    this.ensureReader();
    await this.touchIndex(context, "running");
    return { outcome: "accepted", turn: turnView(this.store.turn(turnId)!, this.store.outstandingOfTurn(turnId)) };
  }

  /**
   * The user's environment and what it claims for this turn; refuses what it does not claim,
   * before any upstream call. A claim that falls short is asked for again first: the capability
   * document may have changed since it was read, and is read again where the bounds allow
   * (README "Capabilities").
   */
  private async claimedEnvironment(context: SessionContext, request: TurnRequest, staleEnvironmentId?: string): Promise<{ environment: EnvironmentRecord; claims: Claims }> {
    let environment = await this.deps.environment(context, staleEnvironmentId);
    let claims = await this.deps.provider().claimsFor(environment, request.model);
    let shortfall = turnShortfall(claims, request.interactions);
    if (shortfall.missing.length > 0 || shortfall.unsupported.length > 0) {
      environment = await this.deps.environment(context, undefined, true);
      claims = await this.deps.provider().claimsFor(environment, request.model, { recheck: true });
      shortfall = turnShortfall(claims, request.interactions);
    }
    const { missing, unsupported } = shortfall;
    if (missing.length > 0) {
      throw new Refusal("capability_denied", `this agent environment does not claim ${missing.join(" and ")}, which running a turn needs`, {
        missing,
        warnings: environment.warnings,
      });
    }
    if (unsupported.length > 0) {
      throw new Refusal("interaction_kind_unsupported", `this agent environment does not offer interaction kinds: ${unsupported.join(", ")}`, { unsupported });
    }
    return { environment, claims };
  }

  private async dispatch(
    context: SessionContext,
    turnId: string,
    executionId: string,
    request: TurnRequest,
  ): Promise<{ controlRef: AgentExactRunControlRef; claims: Claims; notice?: { code: string; message: string } }> {
    let { environment, claims } = await this.claimedEnvironment(context, request);
    const previous = this.store.lastRunRef();
    const input = {
      sessionId: this.agentSessionId(context),
      turnId,
      executionId,
      message: request.message,
      model: request.model,
      interactions: request.interactions,
      ...(previous ? { previous } : {}),
    };
    let recovered = false;
    let rekeyed = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        const { controlRef, notice } = await this.deps.provider().dispatch({ ...input, environmentId: environment.environmentId });
        // The conversation's environment was replaced (gone, failed, expired): the agent starts afresh.
        const before = this.store.getMeta("environmentId");
        const replaced = before !== null && before !== controlRef.environmentId;
        const reset = notice ?? (replaced ? { code: "agent_memory_reset", message: "the agent's environment was replaced; this turn starts a new agent session, without the earlier conversation in its memory" } : undefined);
        return { controlRef, claims, ...(reset ? { notice: reset } : {}) };
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        if (!recovered && (err.code === "environment_gone" || err.code === "environment_not_running")) {
          // The environment stopped or vanished since it was last seen: resume or replace it, then retry.
          ({ environment, claims } = await this.claimedEnvironment(context, request, environment.environmentId));
          recovered = true;
          continue;
        }
        const admitted = err.code === "admission_mismatch" ? AgentExactRunControlRef.safeParse(err.options.details?.admittedRef) : null;
        if (admitted?.success && admitted.data.sessionId === input.sessionId) {
          // A run admitted in place of ours, in our session: never adopted, so it is stopped. The
          // platform ties the turn key to that run now, so the turn goes again under a key of its
          // own, derived from the run it replaces (a retry after a crash takes the same path).
          await this.deps
            .provider()
            .cancel(admitted.data, { operationId: `mismatch:${admitted.data.executionId}`, reason: "admitted in place of another execution" })
            .catch(() => undefined);
          // A run an earlier dispatch left (stopped then) only says which key comes next; a run
          // started in place of ours by this very call counts against the bound.
          if (err.options.details?.earlier !== true) rekeyed++;
          if (rekeyed > MISMATCH_REKEYS || attempt > MISMATCH_CHAIN) {
            throw new ProviderError("admission_mismatch", `${err.message}; the run admitted in its place was stopped, and the turn can be sent again`);
          }
          input.turnId = await rekeyedTurnId(turnId, admitted.data.executionId);
          input.executionId = await executionIdFor(input.sessionId, input.turnId);
          continue;
        }
        if (err.code === "session_busy" && attempt < UPSTREAM_BUSY_ATTEMPTS) {
          // Our previous turn has its result, but the platform can take a moment to release the
          // session after the receipt: wait briefly rather than refuse the user's next turn.
          await new Promise((resolve) => setTimeout(resolve, UPSTREAM_BUSY_DELAY_MS * attempt));
          continue;
        }
        throw err;
      }
    }
  }

  // ------------------------------------------------------------------ the upstream reader

  /** Starts the upstream reader for the running turn, unless one runs already in this instance. */
  ensureReader(): void {
    const turn = this.store.activeTurn();
    if (!turn || turn.status !== "running" || !turn.controlRef) return;
    if (this.reader?.executionId === turn.executionId) return;
    const abort = new AbortController();
    const ref = turn.controlRef;
    const turnId = turn.turnId;
    const reader = { executionId: turn.executionId, abort };
    this.reader = reader;
    runPump(
      this.deps.provider(),
      ref,
      {
        // A deleted conversation has nothing left to read into (and recreates nothing).
        cursor: () => (this.deps.bound() ? this.store.cursorOf(turnId, ref.executionId) : undefined),
        ingest: (event) => this.deps.bound() !== null && this.ingest(turnId, ref.executionId, event),
        isLive: () => this.deps.bound() !== null && this.store.turnStatus(turnId) === "running",
        finishFromResult: (result, reason) => this.finishFromResult(turnId, ref.executionId, result, reason),
        environmentLost: (reason) => this.failTurn(turnId, "environment_lost", `the agent's environment is gone or stopped, and the run with it: ${reason}`),
      },
      { signal: abort.signal },
    )
      .then((outcome) => {
        if (outcome === "finished") return this.afterRunEnded(ref.executionId);
        // Could not reach the run: remembered, so a turn nothing can settle ends after a bounded time.
        if (outcome === "gave_up") this.deps.log.commit(() => this.store.markLost(turnId, Date.now()));
      })
      .catch((err) => console.error(JSON.stringify({ msg: "upstream reader failed", executionId: ref.executionId, error: String(err) })))
      .finally(() => {
        if (this.reader === reader) this.reader = undefined;
      });
  }

  stopReader(): void {
    this.reader?.abort.abort();
    this.reader = undefined;
  }

  /** Persists one upstream event (de-duplicated by its upstream id) and what follows from it. */
  private ingest(turnId: string, executionId: string, event: ProviderEvent): boolean {
    const store = this.store;
    let fresh = true;
    let finished = false;
    let overBudget = false;
    let waitingChanged = false;
    if (this.partTexts?.executionId !== executionId) this.partTexts = { executionId, texts: new Map() };
    const texts = this.partTexts.texts;
    let partText = null as { partId: string; text: string } | null;
    this.deps.log.commit((log) => {
      if (event.upstreamId !== undefined) {
        // Each upstream frame counts once. Numeric ids come in order: one at or below the cursor is
        // a repeat (an inclusive replay, a repeated frame), and the cursor is the newest logged
        // event's id, so a frame costs one row. Other ids are remembered one by one.
        if (NUMERIC_ID.test(event.upstreamId)) {
          const cursor = store.cursorOf(turnId, executionId);
          if (cursor !== undefined && NUMERIC_ID.test(cursor) && Number(event.upstreamId) <= Number(cursor)) {
            fresh = false;
            return;
          }
          store.clearLost(turnId);
        } else {
          if (!store.markSeen(executionId, event.upstreamId)) {
            fresh = false;
            return;
          }
          store.setCursor(turnId, event.upstreamId);
        }
      }
      const status = store.turnStatus(turnId);
      if (!status) return;
      const now = Date.now();
      const step = ingestStep(
        {
          status,
          usage: event.kind === "usage" || event.kind === "terminal" ? (store.executionUsage(executionId) ?? emptyExecutionUsage(executionId)) : emptyExecutionUsage(executionId),
          askStatus: (id) => store.interaction(id)?.status ?? null,
          cancelRequested: event.kind === "terminal" && store.turn(turnId)?.cancelReason != null,
          partText: (id) => texts.get(id),
        },
        event,
      );
      partText = step.partText;
      if (step.shown) {
        const { type, data, usage } = step.shown;
        log.append({ turnId, executionId, upstreamId: event.upstreamId ?? null, type, data, ...(usage ? { usage, usageMode: "cumulative" as const } : {}), now });
      }
      if (step.askRequested && this.deps.desk.recordAsk(log, turnId, executionId, step.askRequested, now)) waitingChanged = true;
      if (step.askEnded && this.deps.desk.endAsk(log, step.askEnded.interactionId, step.askEnded.status, now, step.askEnded.reason)) waitingChanged = true;
      if (step.warning) log.append({ turnId, executionId, type: "warning", data: step.warning, now });
      if (step.usage) {
        this.recordUsage(log, turnId, step.usage, now);
        overBudget = status === "running" && this.budget()?.exceeded === true;
      }
      if (step.finish && status === "running") {
        this.finishTurn(log, store.turn(turnId)!, step.finish.status, step.finish.text, step.finish.error, now);
        finished = true;
      }
    });
    // Held once the event is stored: a rolled-back commit leaves the text as it was.
    if (partText) texts.set(partText.partId, partText.text);
    // The conversation list shows the turn done as soon as it is, not when the stream closes.
    if (finished) {
      this.partTexts = undefined;
      this.touchIndexLater();
    } else if (waitingChanged) this.refreshIndex();
    if (overBudget) this.stopForBudget(turnId).catch((err) => console.error(JSON.stringify({ msg: "budget stop failed", turnId, error: String(err) })));
    return fresh;
  }

  /** Stores an execution's fold and reports it; the caller holds the transaction. */
  private recordUsage(log: Appender, turnId: string, state: ExecutionUsageState, now: number): void {
    const view = executionView(state);
    this.store.putExecutionUsage(turnId, state, view);
    log.append({ turnId, executionId: state.executionId, type: "usage.updated", data: { turnId, executionId: state.executionId, usage: view, conversation: this.total() }, now });
  }

  /** Writes the turn's end and its gateway event; the caller holds the transaction. */
  private finishTurn(log: Appender, turn: TurnRecord, reported: TerminalStatus, text: string | undefined, reportedError: RunError | undefined, now: number): void {
    // A run cancelled upstream that nobody here asked to stop (a service shutting down cancels its
    // runs) is not a user's Stop: the turn failed, and says who stopped it.
    const upstreamCancelled = reported === "cancelled" && turn.cancelReason == null;
    const status: TerminalStatus = upstreamCancelled ? "failed" : reported;
    const error = upstreamCancelled ? { code: "upstream_cancelled", message: "the agent service cancelled the run by itself; the gateway did not ask it to stop" } : reportedError;
    const turnError = status === "failed" ? { code: error?.code ?? "agent_failed", message: error?.message ?? "the run failed" } : undefined;
    this.deps.desk.closeAsksOfTurn(log, turn.turnId, now);
    this.store.finishTurn(turn.turnId, { status, resultText: text, error: turnError, now });
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
        ...(turnError ? { error: turnError } : {}),
        ...(status === "cancelled" && finished.cancelReason ? { reason: finished.cancelReason } : {}),
        ...(finished.usage ? { usage: finished.usage } : {}),
      },
      now,
    });
  }

  /**
   * Ends a running turn from its run's result (the stream could not tell). A result that says the
   * run ended but not how ends the turn `failed` with `outcome_unknown`: never a success.
   */
  private finishFromResult(turnId: string, executionId: string, result: ProviderResult, reason: string): void {
    this.deps.log.commit((log) => {
      const turn = this.store.turn(turnId);
      if (!turn || turn.status !== "running") return;
      const now = Date.now();
      log.append({ turnId, executionId, type: "warning", data: { code: "stream_incomplete", message: `settled from the run's result: ${reason}` }, now });
      // Frames were missed: whatever usage they held is unknown, so no running total stands.
      const usage = this.store.executionUsage(executionId);
      const broken = usage ? breakSteps(usage) : null;
      // The result's receipt is authoritative, folded by the terminal receipt's rule.
      if (result.receipt) this.recordUsage(log, turnId, foldReceipt(broken ?? emptyExecutionUsage(executionId), result.receipt, result.receiptProvenance), now);
      else if (broken) this.store.putExecutionUsage(turnId, broken, executionView(broken));
      if (result.status === "unknown") {
        const why = result.error?.message ? ` (${result.error.message})` : "";
        this.finishTurn(log, turn, "failed", undefined, { code: "outcome_unknown", message: `the run ended upstream, but how it ended is unknown${why}` }, now);
      } else {
        this.finishTurn(log, turn, result.status, result.text, result.error, now);
      }
    });
  }

  /** Ends a running turn failed with `code`, here and now (its reader stops on its own). */
  private failTurn(turnId: string, code: string, message: string): void {
    this.deps.log.commit((log) => {
      const turn = this.store.turn(turnId);
      if (!turn || turn.status !== "running") return;
      this.finishTurn(log, turn, "failed", undefined, { code, message }, Date.now());
    });
    this.touchIndexLater();
  }

  /** Ends a running turn cancelled, here: upstream says nothing runs any more. */
  private endCancelled(turnId: string, why: string): void {
    this.deps.log.commit((log) => {
      const turn = this.store.turn(turnId);
      if (!turn || turn.status !== "running") return;
      log.append({ turnId, executionId: turn.executionId, type: "warning", data: { code: "run_not_live", message: why }, now: Date.now() });
      this.finishTurn(log, turn, "cancelled", undefined, undefined, Date.now());
    });
    this.stopReader();
    this.touchIndexLater();
  }

  /** The run's upstream stream is over: drop its de-duplication keys, trim the log, update the index. */
  private async afterRunEnded(executionId: string): Promise<void> {
    this.deps.log.commit(() => {
      const store = this.store;
      store.forgetSeen(executionId);
      const cutoff = store.trimCutoff(this.deps.config().EVENT_LOG_MAX_EVENTS);
      if (cutoff === 0) return;
      // A turn the trim cuts into keeps its whole message first: a reload shows it all.
      for (const turn of store.turnsTrimmedBy(cutoff)) {
        if (turn.status === "pending" || turn.status === "running") continue;
        store.keepParts(turn.turnId, turnParts({ events: store.eventsOfTurn(turn.turnId), interactions: store.interactionsOfTurn(turn.turnId) }));
      }
      store.trimEvents(cutoff);
    });
    if (!this.store.activeTurn()) await this.deps.alarms.clear();
    await this.touchIndex(this.deps.bound(), "idle").catch(() => undefined);
  }

  /**
   * The watchdog: after an eviction or restart, a running turn gets its reader back; a dispatch that
   * never finished is cleared; a turn past TURN_MAX_DURATION_MS is stopped and fails turn_timeout;
   * a turn whose run could not be reached for UPSTREAM_LOST_AFTER_MS fails upstream_lost.
   */
  async watchdog(): Promise<void> {
    const active = this.store.activeTurn();
    if (!active) return;
    const now = Date.now();
    const config = this.deps.config();
    if (active.status === "pending") {
      // A dispatch that never finished (the object was evicted mid-dispatch): nothing was acknowledged.
      if (now - active.updatedAt > WATCHDOG_INTERVAL_MS && !this.dispatching.has(active.turnId)) this.deps.log.commit(() => this.store.deleteTurn(active.turnId));
    } else if (now - active.createdAt >= config.TURN_MAX_DURATION_MS) {
      // The turn ends here first (what the run says after this is not its end), then the run is stopped.
      this.stopReader();
      this.failTurn(active.turnId, "turn_timeout", `the turn ran longer than ${config.TURN_MAX_DURATION_MS} ms and was stopped`);
      if (active.controlRef) await this.deps.provider().cancel(active.controlRef, { operationId: `timeout:${active.turnId}`, reason: "turn_timeout" }).catch(() => undefined);
    } else if (active.lostAt !== null && now - active.lostAt >= config.UPSTREAM_LOST_AFTER_MS) {
      this.stopReader();
      this.failTurn(active.turnId, "upstream_lost", `the run could not be reached for ${Math.round((now - active.lostAt) / 1000)} s and nothing could settle it`);
    } else {
      this.ensureReader();
    }
    const still = this.store.activeTurn();
    if (still) await this.deps.alarms.set(Math.min(Date.now() + WATCHDOG_INTERVAL_MS, still.createdAt + config.TURN_MAX_DURATION_MS));
  }

  // ------------------------------------------------------------------ usage and budgets

  /**
   * The conversation's total over every dispatched turn. A turn that reported no usage at all
   * counts as unknown, never as zero: the total is then a floor.
   */
  total(): TotalView {
    const folds = new Map(this.store.allExecutionUsage().map((state) => [state.executionId, state]));
    return totalOf(this.store.dispatchedExecutionIds().map((id) => folds.get(id) ?? emptyExecutionUsage(id)));
  }

  /** The tightest budget that applies, with what was used against it; null when none is set. */
  budget(): BudgetState | null {
    const config = this.deps.config();
    const elsewhere = this.store.getMeta("userElsewhere") ?? { used: 0, complete: true, provenance: "measured" as const };
    return tightestBudget(this.total(), elsewhere, { perConversation: config.TOKEN_BUDGET_PER_CONVERSATION, perUser: config.TOKEN_BUDGET_PER_USER });
  }

  /** The running total crossed a budget: cancel the run upstream; the turn ends cancelled, budget_exceeded. */
  private async stopForBudget(turnId: string): Promise<void> {
    if (this.budgetStops.has(turnId)) return;
    const turn = this.store.turn(turnId);
    if (!turn?.controlRef || turn.status !== "running") return;
    this.budgetStops.add(turnId);
    const budget = this.budget();
    this.deps.log.commit((log) => {
      this.store.setCancelReason(turnId, "budget_exceeded");
      log.append({ turnId, executionId: turn.executionId, type: "budget.exceeded", data: { turnId, budget }, now: Date.now() });
    });
    try {
      await this.deps.provider().cancel(turn.controlRef, { operationId: `budget:${turnId}`, reason: "budget_exceeded" });
    } catch (err) {
      // Try again at the next usage report.
      this.budgetStops.delete(turnId);
      this.deps.log.commit((log) =>
        log.append({
          turnId,
          executionId: turn.executionId,
          type: "warning",
          data: { code: "budget_cancel_failed", message: `could not cancel the run for its budget: ${err instanceof Error ? err.message : String(err)}` },
          now: Date.now(),
        }),
      );
    }
  }

  // ------------------------------------------------------------------ cancellation

  /** Cancels the conversation's run, exactly and idempotently under `operationId`. */
  async cancel(conversationId: string, operationId: string, reason?: string): Promise<CancellationAcknowledgement> {
    const store = this.store;
    const active = store.activeTurn();
    if (active && !active.controlRef) throw new Refusal("turn_not_ready", "the turn is still being dispatched; retry in a moment", { retryable: true });
    const target = active ?? store.lastTurn();
    if (!target?.controlRef) throw new Refusal("conversation_not_found", `no run in conversation ${conversationId}`);
    const run = target.controlRef;
    if (!store.getMeta("claims")?.cancelRun) {
      throw new Refusal("capability_denied", "this agent environment does not claim exact run cancellation (session.cancelRun)", { missing: ["session.cancelRun"] });
    }
    const requestDigest = await canonicalDigest(stripUndefined({ operationId, run, reason }));
    const prior = priorOperation(store.operation(operationId), "cancel", requestDigest);
    if (prior.kind === "replay") return { ...prior.ack, status: "replayed" };
    if (prior.kind === "conflict") {
      const existing = prior.recordedDigest === null ? {} : { existingRequestDigest: prior.recordedDigest as `sha256:${string}` };
      return { operationId, requestDigest, run, status: "conflict", effect: "unknown", ...existing };
    }
    let ack: CancellationAcknowledgement;
    const current = store.turn(target.turnId)!;
    if (current.status !== "running") {
      ack = { operationId, requestDigest, run, status: "accepted", effect: "not_live" };
    } else {
      this.deps.log.commit(() => store.setCancelReason(current.turnId, reason ?? "cancelled by the user"));
      try {
        const outcome = await this.deps.provider().cancel(run, { operationId, ...(reason !== undefined ? { reason } : {}) });
        ack = { operationId, requestDigest, run, status: "accepted", effect: outcome.effect };
        // Upstream runs nothing under this ref any more: the turn must not stay running here.
        if (outcome.effect === "not_live") this.endCancelled(current.turnId, `upstream says the run is not live${outcome.reason ? ` (${outcome.reason})` : ""}`);
      } catch (err) {
        // Whether the run stopped is unknown: not recorded, so the same operation can be sent again.
        const message = `the cancellation could not be confirmed: ${err instanceof Error ? err.message : String(err)}`;
        return { operationId, requestDigest, run, status: "unknown", effect: "unknown", message, retryable: false };
      }
    }
    this.deps.log.commit(() => store.putOperation(operationId, { kind: "cancel", requestDigest, ack }, Date.now()));
    return ack;
  }

  /**
   * The conversation is being deleted: once the dispatches under way here end, the running run is
   * stopped, the agent session deleted upstream and no reader runs on. The local records are the
   * caller's to wipe: a refusal here (upstream could not be told) leaves them, so a retry can
   * finish the job.
   */
  async shutdown(context: SessionContext): Promise<void> {
    await this.quiesce();
    const running = this.store.activeTurn();
    if (running?.controlRef) {
      this.stopReader();
      await this.deps
        .provider()
        .cancel(running.controlRef, { operationId: `delete:${running.turnId}`, reason: "conversation deleted" })
        .catch((err: unknown) => {
          throw providerRefusal(err);
        });
    }
    const environmentId = this.store.getMeta("environmentId");
    if (environmentId) {
      try {
        const lastRun = this.store.lastRunRef();
        await this.deps.provider().deleteSession({ environmentId, sessionId: this.agentSessionId(context), ...(lastRun ? { lastRun } : {}) });
      } catch (err) {
        throw providerRefusal(err);
      }
    }
    this.stopReader();
  }

  // ------------------------------------------------------------------ the conversation index

  private async touchIndex(context: SessionContext | null, state: "idle" | "running"): Promise<void> {
    // Only a conversation that still exists here is listed (a delete may have just removed it).
    if (!context || !this.deps.bound()) return;
    const active = state === "running" ? this.store.activeTurn() : null;
    await this.deps.touchIndex(context, {
      title: this.store.getMeta("title") ?? context.conversationId,
      state,
      waitingFor: active?.status === "running" ? (waitingOf(this.store.outstandingOfTurn(active.turnId))?.waitingFor ?? null) : null,
      lastEventId: this.store.lastSeq(),
      usage: budgetUsage(this.total()),
    });
  }

  private touchIndexLater(): void {
    this.touchIndex(this.deps.bound(), "idle").catch(() => undefined);
  }

  /** What the running turn waits for changed (an ask opened, was answered, expired): the conversation list follows. */
  refreshIndex(): void {
    this.touchIndex(this.deps.bound(), this.store.activeTurn() ? "running" : "idle").catch(() => undefined);
  }
}

/** The upstream turn key of a turn sent again after a run was admitted in its place: derived from that run. */
async function rekeyedTurnId(turnId: string, replaced: string): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`rekey/v1|${turnId.length}:${turnId}|${replaced.length}:${replaced}`)));
  return `${turnId}.r-${[...bytes.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** How a budget's spend is described after its figure. */
const PROVENANCE_NOTE: Record<BudgetState["provenance"], string> = { measured: "", estimated: ", counting estimates", unknown: ", counting figures of unknown provenance" };

function titleFrom(message: string): string {
  const line = message.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line || "New conversation";
}
