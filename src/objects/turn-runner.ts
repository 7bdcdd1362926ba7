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
import type { AgentProvider, EnvironmentRecord } from "../providers/provider";
import type { TotalView, WaitingFor } from "../schemas/api";
import { AgentExactRunControlRef, type CancellationAcknowledgement } from "../schemas/contracts";
import { BudgetStop } from "./budget-stop";
import { budgetUsage, type BudgetState, type Spend } from "./budgets";
import type { EventLog } from "./event-log";
import type { InteractionDesk } from "./interaction-desk";
import { providerRefusal } from "./provider-refusal";
import type { SessionContext, SessionStore, TurnRequest } from "./session-store";
import { TurnEnd, WATCHDOG_INTERVAL_MS } from "./turn-end";
import { decideTurn, executionIdFor, turnRequestDigest, turnView, type TurnView } from "./turn-cache";
import { conversationTotal } from "./turn-usage";
import { UpstreamReader } from "./upstream-reader";
import { waitingOf } from "./waiting";

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
  private readonly budgets: BudgetStop;
  private readonly end: TurnEnd;
  private readonly reader: UpstreamReader;
  /** Dispatches under way in this instance, to their end (a pending turn not in here was left by a crash). */
  private readonly dispatching = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: TurnRunnerDeps) {
    this.budgets = new BudgetStop({ store: deps.store, log: deps.log, provider: deps.provider, config: deps.config, usageElsewhere: (context) => deps.usageElsewhere(context) });
    this.end = new TurnEnd({
      store: deps.store,
      log: deps.log,
      desk: deps.desk,
      provider: deps.provider,
      config: deps.config,
      alarms: deps.alarms,
      reader: { ensure: () => this.reader.ensure(), stop: () => this.reader.stop() },
      dispatching: (turnId) => this.dispatching.has(turnId),
      showIdle: () => this.showIdle(),
    });
    this.reader = new UpstreamReader({
      store: deps.store,
      exists: () => deps.bound() !== null,
      log: deps.log,
      desk: deps.desk,
      provider: deps.provider,
      end: this.end,
      budgets: this.budgets,
      showIdle: () => this.showIdle(),
      waitingChanged: () => this.refreshIndex(),
    });
  }

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
    await this.budgets.admit(context);
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
    this.reader.ensure();
  }

  stopReader(): void {
    this.reader.stop();
  }

  /** The alarm: the watchdog of ./turn-end.ts. */
  watchdog(): Promise<void> {
    return this.end.watchdog();
  }

  // ------------------------------------------------------------------ usage and budgets

  /** The conversation's total over every dispatched turn (a turn that reported nothing makes it a floor). */
  total(): TotalView {
    return conversationTotal(this.store);
  }

  /** The tightest budget that applies, with what was used against it; null when none is set. */
  budget(): BudgetState | null {
    return this.budgets.budget();
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
    const previous = store.operation(operationId);
    if (previous) {
      if (previous.kind === "cancel" && previous.requestDigest === requestDigest) return { ...previous.ack, status: "replayed" };
      return { operationId, requestDigest, run, status: "conflict", effect: "unknown", existingRequestDigest: previous.requestDigest as `sha256:${string}` };
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
        if (outcome.effect === "not_live") this.end.cancelled(current.turnId, `upstream says the run is not live${outcome.reason ? ` (${outcome.reason})` : ""}`);
      } catch (err) {
        // Whether the run stopped is unknown: not recorded, so the same operation can be sent again.
        const message = `the cancellation could not be confirmed: ${err instanceof Error ? err.message : String(err)}`;
        return { operationId, requestDigest, run, status: "unknown", effect: "unknown", message, retryable: false };
      }
    }
    this.deps.log.commit(() => store.putOperation(operationId, { kind: "cancel", requestDigest, ack }, Date.now()));
    return ack;
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

  /** The conversation list shows the conversation idle; never rejects. */
  private showIdle(): Promise<void> {
    return this.touchIndex(this.deps.bound(), "idle").catch(() => undefined);
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

function titleFrom(message: string): string {
  const line = message.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line || "New conversation";
}
