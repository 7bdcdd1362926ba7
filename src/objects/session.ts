/**
 * One Durable Object per conversation session. It owns the turn cache, the retained control ref of
 * the running execution, the event log and its fan-out to browsers, and the one upstream reader.
 * The logic lives in the modules beside it; this class wires them to storage and the runtime.
 */
import { DurableObject } from "cloudflare:workers";
import { hmacKey } from "../auth/ids";
import { readConfig, type Config } from "../config";
import { ApiError, captureRpc, unwrapRpc, type RpcResult } from "../http/errors";
import { UpstreamError } from "../providers/errors";
import { createProvider } from "../providers";
import type { AgentProvider, EnvironmentRecord, ProviderEvent, ProviderResult } from "../providers/provider";
import type { AgentExactRunControlRef } from "../schemas/contracts";
import { claimsOf, unsupportedKinds, type Claims } from "../providers/capabilities";
import { EventFanout } from "./fanout";
import { runPump } from "./pump";
import {
  SessionStore,
  type EventEnvelope,
  type EventRow,
  type InteractionRecord,
  type InteractionStatus,
  type TurnRecord,
  type TurnRequest,
} from "./session-store";
import { buildTranscript, type TranscriptMessage } from "./transcript";
import { decideTurn, executionIdFor, turnRequestDigest, turnView, type TurnView } from "./turn-cache";
import { upstreamToApi } from "./upstream-errors";
import { carriesUsage, foldUsageEvent } from "./usage-events";
import { breakSteps, budgetUsage, emptyExecutionUsage, executionView, totalOf, type ExecutionUsageState, type TotalView } from "./usage-fold";
import { canonicalDigest, canonicalJson, stripUndefined, toHex } from "../lib/digest";
import { answerProblems, type Outcome } from "./interaction-answers";
import { InteractionRequest, type CancellationAcknowledgement, type InteractionAcknowledgement } from "../schemas/contracts";
import type { z } from "zod";
import type { ConversationUsageSchema } from "../schemas/api";

export type ConversationUsage = z.infer<typeof ConversationUsageSchema>;

/** How often a live run's watchdog alarm checks that its upstream reader is alive. */
const WATCHDOG_INTERVAL_MS = 30_000;
/** Upstream still busy right after our previous turn's receipt: retry this many times, backing off. */
const UPSTREAM_BUSY_ATTEMPTS = 6;
const UPSTREAM_BUSY_DELAY_MS = 100;

export interface SessionContext {
  sessionId: string;
  conversationId: string;
  ownerKey: string;
}

export type SubmitAnswer = { status: 200 | 202; body: TurnView & { cached?: boolean } };

export interface ConversationSummary {
  conversationId: string;
  state: "idle" | "running";
  title: string | null;
  activeTurn: TurnView | null;
  lastTurn: TurnView | null;
  turnCount: number;
  lastEventId: number;
  interactions: unknown[];
  usage: TotalView;
  createdAt: string | null;
  updatedAt: string | null;
}

export class SessionObject extends DurableObject<Env> {
  private store: SessionStore;
  private fanoutInstance: EventFanout | undefined;
  private providerInstance: AgentProvider | undefined;
  private pump: { executionId: string; abort: AbortController; done: Promise<unknown> } | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SessionStore(ctx.storage.sql);
  }

  private get config(): Config {
    return readConfig(this.env);
  }

  private get provider(): AgentProvider {
    return (this.providerInstance ??= createProvider(this.config, this.env));
  }

  private get fanout(): EventFanout {
    return (this.fanoutInstance ??= new EventFanout({
      readPage: (after, limit) => this.store.eventsAfter(after, limit),
      lastSeq: () => this.store.lastSeq(),
      firstRetainedSeq: () => this.store.firstRetainedSeq(),
      pingIntervalMs: this.config.SSE_PING_INTERVAL_MS,
      maxPendingBytes: this.config.SSE_MAX_PENDING_BYTES,
    }));
  }

  // ------------------------------------------------------------------ binding

  /** Records who this session belongs to on first use; a later call must name the same session. */
  private bind(context: SessionContext): void {
    const stored = this.store.getMeta("session");
    if (!stored) {
      this.ctx.storage.transactionSync(() => {
        this.store.setMeta("session", JSON.stringify(context));
        this.store.setMeta("createdAt", String(Date.now()));
      });
      return;
    }
    const known = JSON.parse(stored) as SessionContext;
    if (known.sessionId !== context.sessionId || known.ownerKey !== context.ownerKey) {
      throw new ApiError(500, "session_binding_mismatch", "this session object belongs to another session");
    }
  }

  private context(): SessionContext | null {
    const stored = this.store.getMeta("session");
    return stored ? (JSON.parse(stored) as SessionContext) : null;
  }

  private userStub(ownerKey: string) {
    return this.env.USERS.get(this.env.USERS.idFromName(ownerKey));
  }

  // ------------------------------------------------------------------ turns

  async submitTurn(context: SessionContext, turnId: string, request: TurnRequest): Promise<RpcResult<SubmitAnswer>> {
    return captureRpc(async () => {
      this.bind(context);
      this.ensurePump();
      const requestDigest = await turnRequestDigest(request);
      const executionId = await executionIdFor(context.sessionId, turnId);
      // From here to the insert nothing awaits: a concurrent retry sees this turn.
      const decision = decideTurn(this.store.turn(turnId), this.store.activeTurn(), requestDigest);
      switch (decision.kind) {
        case "cached":
          return { status: 200, body: { ...turnView(decision.turn), cached: true } };
        case "in_progress":
          return { status: 202, body: turnView(decision.turn) };
        case "conflict":
          throw new ApiError(409, "turn_conflict", `turn ${turnId} was already sent with different content`, { turnId });
        case "busy":
          throw new ApiError(409, "session_busy", `turn ${decision.active.turnId} is still running in this conversation`, {
            activeTurnId: decision.active.turnId,
          });
        case "new":
          break;
      }
      await this.refreshUserUsage(context);
      const budget = this.budgetState();
      if (budget?.exceeded) {
        throw new ApiError(
          429,
          "budget_exceeded",
          `the ${budget.scope} token budget of ${budget.tokens} is used up (${budget.complete ? "" : "at least "}${budget.used} tokens)`,
          { budget },
        );
      }
      const now = Date.now();
      this.ctx.storage.transactionSync(() => {
        this.store.insertPendingTurn({ turnId, requestDigest, request, executionId, now });
        if (!this.store.getMeta("title")) this.store.setMeta("title", titleFrom(request.message));
      });
      // Armed before the dispatch: an object evicted mid-dispatch must not keep a pending turn forever.
      await this.ctx.storage.setAlarm(now + WATCHDOG_INTERVAL_MS);

      let controlRef: AgentExactRunControlRef;
      let dispatchedCapabilities: Record<string, unknown> | null = null;
      try {
        ({ controlRef, capabilities: dispatchedCapabilities } = await this.dispatch(context, turnId, executionId, request));
      } catch (err) {
        // Nothing was accepted: forget the pending turn so the client can retry under the same id
        // (the execution id is deterministic, so a dispatch that did land upstream is re-attached).
        this.ctx.storage.transactionSync(() => this.store.deleteTurn(turnId));
        throw upstreamToApi(err);
      }

      // The control ref is persisted before the turn is acknowledged to anyone.
      let accepted: EventRow | undefined;
      this.ctx.storage.transactionSync(() => {
        const { row } = this.store.appendEvent({
          turnId,
          executionId,
          type: "turn.accepted",
          data: { turnId, executionId, message: request.message, ...(request.model ? { model: request.model } : {}) },
          now: Date.now(),
        });
        accepted = row;
        this.store.markRunning(turnId, controlRef, row.seq, Date.now());
        this.store.setMeta("environmentId", controlRef.environmentId);
        this.store.setMeta("capabilities", JSON.stringify(dispatchedCapabilities ?? null));
      });
      this.fanout.publish(accepted!);
      await this.ctx.storage.setAlarm(Date.now() + WATCHDOG_INTERVAL_MS);
      this.ensurePump();
      await this.touchIndex(context, "running");
      return { status: 202, body: turnView(this.store.turn(turnId)!) };
    });
  }

  private async ensureEnvironment(context: SessionContext, staleEnvironmentId?: string): Promise<EnvironmentRecord> {
    return unwrapRpc(await this.userStub(context.ownerKey).ensureEnvironment(context.ownerKey, staleEnvironmentId));
  }

  /** Refuses what the environment's capability document does not claim, before any upstream call. */
  private requireClaims(environment: EnvironmentRecord, request: TurnRequest): void {
    const claims = claimsOf(environment.capabilities);
    if (!claims.detach || !claims.replay) {
      const missing = [!claims.detach && "streaming.detach", !claims.replay && "streaming.replay"].filter(Boolean);
      throw new ApiError(501, "capability_denied", `this agent environment does not claim ${missing.join(" and ")}, which running a turn needs`, {
        missing,
        warnings: environment.warnings,
      });
    }
    const unsupported = request.interactions ? unsupportedKinds(request.interactions, claims) : [];
    if (unsupported.length > 0) {
      throw new ApiError(400, "interaction_kind_unsupported", `this agent environment does not offer interaction kinds: ${unsupported.join(", ")}`, {
        unsupported,
      });
    }
  }

  private claims(): Claims {
    const stored = this.store.getMeta("capabilities");
    return claimsOf(stored ? (JSON.parse(stored) as Record<string, unknown> | null) : null);
  }

  private async dispatch(
    context: SessionContext,
    turnId: string,
    executionId: string,
    request: TurnRequest,
  ): Promise<{ controlRef: AgentExactRunControlRef; capabilities: Record<string, unknown> | null }> {
    let environment = await this.ensureEnvironment(context);
    this.requireClaims(environment, request);
    const input = { sessionId: context.sessionId, turnId, executionId, message: request.message, model: request.model, interactions: request.interactions };
    let recovered = false;
    for (let attempt = 1; ; attempt++) {
      try {
        const { controlRef } = await this.provider.dispatch({ ...input, environmentId: environment.environmentId });
        return { controlRef, capabilities: environment.capabilities };
      } catch (err) {
        if (!(err instanceof UpstreamError)) throw err;
        if (!recovered && (err.code === "environment_gone" || err.code === "environment_not_running")) {
          // The sandbox stopped or vanished since it was last seen: resume or replace it, then retry.
          environment = await this.ensureEnvironment(context, environment.environmentId);
          this.requireClaims(environment, request);
          recovered = true;
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

  async getTurn(turnId: string): Promise<RpcResult<TurnView>> {
    return captureRpc(() => {
      this.ensurePump();
      const turn = this.store.turn(turnId);
      if (!turn) throw new ApiError(404, "turn_not_found", `no turn ${turnId} in this conversation`);
      return turnView(turn);
    });
  }

  // ------------------------------------------------------------------ upstream reader

  /** Starts the upstream reader for the running turn if none runs in this instance. */
  private ensurePump(): void {
    const turn = this.store.activeTurn();
    if (!turn || turn.status !== "running" || !turn.controlRef) return;
    if (this.pump?.executionId === turn.executionId) return;
    const abort = new AbortController();
    const ref = turn.controlRef;
    const turnId = turn.turnId;
    const done = runPump(
      this.provider,
      ref,
      {
        cursor: () => this.store.turn(turnId)?.upstreamCursor ?? undefined,
        ingest: (event) => this.ingest(turnId, ref.executionId, event),
        isLive: () => this.store.turnStatus(turnId) === "running",
        finishFromResult: (result, reason) => this.finishFromResult(turnId, ref.executionId, result, reason),
      },
      { signal: abort.signal },
    )
      .then((outcome) => {
        if (outcome === "finished") return this.afterRunEnded(ref.executionId);
      })
      .catch((err) => console.error(JSON.stringify({ msg: "upstream reader failed", executionId: ref.executionId, error: String(err) })))
      .finally(() => {
        if (this.pump?.abort === abort) this.pump = undefined;
      });
    this.pump = { executionId: turn.executionId, abort, done };
  }

  /** Persists one upstream event (de-duplicated by its upstream id), folds its usage, and fans it out. */
  private ingest(turnId: string, executionId: string, event: ProviderEvent): boolean {
    const appended: EventRow[] = [];
    let fresh = true;
    let overBudget = false;
    let finishedNow = false;
    this.ctx.storage.transactionSync(() => {
      if (event.upstreamId !== undefined) {
        if (!this.store.markSeen(executionId, event.upstreamId)) {
          fresh = false;
          return;
        }
        this.store.setCursor(turnId, event.upstreamId);
      }
      const status = this.store.turnStatus(turnId);
      if (!status) return;
      const now = Date.now();
      const usage = carriesUsage(event)
        ? foldUsageEvent(this.store.executionUsage(executionId) ?? emptyExecutionUsage(executionId), event)
        : { state: null, attach: null, changed: false, warning: undefined };
      // `done` after a `result` repeats the receipt the browser already has: keep it out of the log.
      const redundant = event.type === "done" && status !== "running";
      if (!event.private && !redundant) {
        appended.push(
          this.store.appendEvent({
            turnId,
            executionId,
            upstreamId: event.upstreamId ?? null,
            type: event.type,
            data: event.data,
            ...(usage.attach ? { usage: usage.attach, usageMode: "cumulative" as const } : {}),
            now,
          }).row,
        );
      }
      appended.push(...this.trackInteractions(turnId, executionId, event, now));
      if (usage.warning) {
        appended.push(this.store.appendEvent({ turnId, executionId, type: "warning", data: { code: "usage_invalid", message: usage.warning }, now }).row);
      }
      if (usage.changed && usage.state) {
        appended.push(...this.recordUsage(turnId, usage.state, now));
        overBudget = status === "running" && this.budgetState()?.exceeded === true;
      }
      if (event.terminal && status === "running") {
        appended.push(...this.finishTurn(this.store.turn(turnId)!, event.terminal.status, event.terminal.text, event.terminal.error, now));
        finishedNow = true;
      }
    });
    for (const row of appended) this.fanout.publish(row);
    if (event.terminal && finishedNow) {
      // The conversation list shows the turn done as soon as it is, not when the stream closes.
      const context = this.context();
      if (context) this.touchIndex(context, "idle").catch(() => undefined);
    }
    if (overBudget) this.stopForBudget(turnId).catch((err) => console.error(JSON.stringify({ msg: "budget stop failed", turnId, error: String(err) })));
    return fresh;
  }

  /** Stores an execution's fold and reports it; the caller holds the transaction. */
  private recordUsage(turnId: string, state: ExecutionUsageState, now: number): EventRow[] {
    const view = executionView(state);
    this.store.putExecutionUsage(turnId, state, view);
    const { row } = this.store.appendEvent({
      turnId,
      executionId: state.executionId,
      type: "usage.updated",
      data: { turnId, executionId: state.executionId, usage: view, conversation: this.usageTotal() },
      now,
    });
    return [row];
  }

  private usageTotal(): TotalView {
    return totalOf(this.store.allExecutionUsage().map((u) => u.state));
  }

  /** Writes the turn's end and its gateway event; the caller holds the transaction. */
  private finishTurn(
    turn: TurnRecord,
    status: "completed" | "failed" | "cancelled",
    text: string | undefined,
    error: { code?: string; message: string } | undefined,
    now: number,
  ): EventRow[] {
    const turnError = status === "failed" ? { code: error?.code ?? "agent_failed", message: error?.message ?? "the run failed" } : undefined;
    const closed: EventRow[] = [];
    for (const ask of this.store.outstandingOfTurn(turn.turnId)) {
      // The run ended: nobody waits for these answers any more.
      this.store.resolveInteraction(ask.interactionId, { status: "cancelled", now });
      closed.push(this.interactionResolved(ask, "cancelled", now, "the run ended"));
    }
    this.store.finishTurn(turn.turnId, { status, resultText: text, error: turnError, now });
    const finished = this.store.turn(turn.turnId)!;
    const type = status === "completed" ? "turn.completed" : status === "cancelled" ? "turn.cancelled" : "turn.failed";
    const { row } = this.store.appendEvent({
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
    return [...closed, row];
  }

  private finishFromResult(turnId: string, executionId: string, result: ProviderResult, reason: string): void {
    const appended: EventRow[] = [];
    this.ctx.storage.transactionSync(() => {
      const turn = this.store.turn(turnId);
      if (!turn || turn.status !== "running") return;
      const now = Date.now();
      appended.push(
        this.store.appendEvent({ turnId, executionId, type: "warning", data: { code: "stream_incomplete", message: `settled from the run's result: ${reason}` }, now }).row,
      );
      // Frames were missed: whatever steps they held are unknown, so no running total stands.
      const usage = this.store.executionUsage(executionId);
      if (usage) this.store.putExecutionUsage(turnId, breakSteps(usage), executionView(usage));
      appended.push(...this.finishTurn(turn, result.status, result.text, result.error, now));
    });
    for (const row of appended) this.fanout.publish(row);
  }

  /** The run's upstream stream is over: drop its de-duplication keys, trim the log, update the index. */
  private async afterRunEnded(executionId: string): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      this.store.forgetSeen(executionId);
      this.store.trimEvents(this.config.EVENT_LOG_MAX_EVENTS);
    });
    if (!this.store.activeTurn()) await this.ctx.storage.deleteAlarm();
    const context = this.context();
    if (context) await this.touchIndex(context, "idle").catch(() => undefined);
  }

  // ------------------------------------------------------------------ interactions

  /** Records asks and their ends from the event stream; the caller holds the transaction. */
  private trackInteractions(turnId: string, executionId: string, event: ProviderEvent, now: number): EventRow[] {
    if (event.type === "interaction") {
      const request = InteractionRequest.parse(event.data.request);
      if (!this.store.addInteraction({ interactionId: request.id, turnId, executionId, request, now })) return [];
      return [this.store.appendEvent({ turnId, executionId, type: "interaction.requested", data: { turnId, interaction: request }, now }).row];
    }
    if (event.type === "interaction.cancel") {
      const ask = this.store.interaction(String(event.data.id));
      if (!ask || ask.status !== "outstanding") return [];
      const status = event.data.reason === "timeout" ? "expired" : "cancelled";
      this.store.resolveInteraction(ask.interactionId, { status, now });
      return [this.interactionResolved(ask, status, now, typeof event.data.reason === "string" ? event.data.reason : undefined)];
    }
    return [];
  }

  private interactionResolved(ask: InteractionRecord, status: InteractionStatus, now: number, reason?: string, outcome?: string): EventRow {
    return this.store.appendEvent({
      turnId: ask.turnId,
      executionId: ask.executionId,
      type: "interaction.resolved",
      // Never the answer itself: another device learns that it was answered, and how, not what.
      data: { turnId: ask.turnId, interactionId: ask.interactionId, status, ...(outcome ? { outcome } : {}), ...(reason ? { reason } : {}) },
      now,
    }).row;
  }

  private readonly answerQueues = new Map<string, Promise<unknown>>();

  /** Answers one ask, once, whatever the retries and however many devices answer at once. */
  async answer(
    conversationId: string,
    interactionId: string,
    command: { operationId: string; outcome: Outcome; data?: Record<string, unknown> },
  ): Promise<RpcResult<{ status: number; ack: InteractionAcknowledgement }>> {
    return captureRpc(async () => {
      const context = this.context();
      if (!context) throw new ApiError(404, "conversation_not_found", `no conversation ${conversationId}`);
      if (!this.claims().interactions) {
        throw new ApiError(501, "capability_denied", "this agent environment does not claim interactions (it does not record answers)", {
          missing: ["interactions.responseDedupe"],
        });
      }
      // One answer at a time per ask: a second device waits for the first, then sees it resolved.
      const previous = this.answerQueues.get(interactionId) ?? Promise.resolve();
      const run = previous.then(() => this.answerOnce(context, interactionId, command));
      const queued = run.catch(() => undefined);
      this.answerQueues.set(interactionId, queued);
      try {
        return await run;
      } finally {
        if (this.answerQueues.get(interactionId) === queued) this.answerQueues.delete(interactionId);
      }
    });
  }

  private async answerOnce(
    context: SessionContext,
    interactionId: string,
    command: { operationId: string; outcome: Outcome; data?: Record<string, unknown> },
  ): Promise<{ status: number; ack: InteractionAcknowledgement }> {
    const ask = this.store.interaction(interactionId);
    const turn = ask ? this.store.turn(ask.turnId) : null;
    const binding = {
      runId: ask?.executionId ?? "unknown",
      provider: turn?.controlRef?.provider ?? this.provider.name,
      environmentId: turn?.controlRef?.environmentId ?? this.store.getMeta("environmentId") ?? "unknown",
      sessionId: context.sessionId,
      executionId: ask?.executionId ?? "unknown",
      interactionId,
    };
    const commandDigest = await canonicalDigest({ operationId: command.operationId, binding, outcome: command.outcome });
    const answerHmac = await answerKey(this.config.SESSION_ID_SECRET, interactionId, command.outcome, command.data);
    const ack = (status: InteractionAcknowledgement["status"], extra: { message?: string; retryable?: boolean } = {}): InteractionAcknowledgement => ({
      operationId: command.operationId,
      binding,
      commandDigest,
      status,
      ...extra,
    });
    const answerWith = (a: InteractionAcknowledgement) => ({ status: ACK_HTTP_STATUS[a.status], ack: a });

    const recorded = this.store.operation(command.operationId);
    if (recorded) {
      if (recorded.kind === "answer" && recorded.requestDigest === answerHmac) return answerWith(recorded.ack as InteractionAcknowledgement);
      return answerWith(ack("already_resolved_different", { message: "this operationId was used for a different command" }));
    }
    if (!ask || !turn?.controlRef) return answerWith(ack("unknown_interaction", { message: `no interaction ${interactionId} in this conversation` }));
    const ref = turn.controlRef;
    const b = ask.request.binding;
    if (b && (b.sessionId !== ref.sessionId || b.executionId !== ref.executionId || b.environmentId !== ref.environmentId || b.provider !== ref.provider)) {
      return answerWith(ack("binding_mismatch", { message: "the interaction is bound to another run, environment or session" }));
    }
    if (ask.status === "expired") return answerWith(ack("expired", { message: "the interaction expired before it was answered" }));
    if (ask.status === "cancelled") return answerWith(ack("cancelled", { message: "the run no longer waits for this answer" }));
    if (ask.status === "answered") {
      return answerWith(
        ask.answerHmac === answerHmac
          ? ack("already_resolved_same")
          : ack("already_resolved_different", { message: `a different answer was recorded (operation ${ask.operationId ?? "unknown"})` }),
      );
    }
    const problems = answerProblems(ask.request, command.outcome, command.data);
    if (problems.length > 0) return answerWith(ack("invalid_response", { message: problems.join("; ") }));

    let result: InteractionAcknowledgement;
    try {
      await this.provider.respondToInteraction(ref, { id: interactionId, outcome: command.outcome, ...(command.data ? { data: command.data } : {}) });
      result = ack("accepted");
    } catch (err) {
      if (err instanceof UpstreamError && err.status === 409) result = ack("already_resolved_different", { message: "the deployment already holds a different answer" });
      else if (err instanceof UpstreamError && err.status === 404 && err.code === "session_not_found") {
        result = ack("unknown_run", { message: "the deployment no longer knows this session" });
      } else if (err instanceof UpstreamError && err.status === 404) result = ack("unknown_interaction", { message: "the deployment no longer knows this interaction" });
      else if (err instanceof UpstreamError && err.status === 400) result = ack("invalid_response", { message: err.message });
      else {
        // Delivery is unconfirmed: never `accepted`. Not recorded, so the same operation retries
        // it (the deployment records answers, so a repeat cannot answer twice).
        return answerWith(ack("transport_failure", { message: `delivery could not be confirmed: ${err instanceof Error ? err.message : String(err)}`, retryable: true }));
      }
    }
    let row: EventRow | undefined;
    this.ctx.storage.transactionSync(() => {
      const now = Date.now();
      if (result.status === "accepted") {
        this.store.resolveInteraction(interactionId, { status: "answered", outcome: command.outcome, answerHmac, operationId: command.operationId, now });
        row = this.interactionResolved(ask, "answered", now, undefined, command.outcome);
      }
      if (result.status !== "invalid_response") this.store.putOperation(command.operationId, "answer", answerHmac, result, now);
    });
    if (row) this.fanout.publish(row);
    return answerWith(result);
  }

  // ------------------------------------------------------------------ budgets

  /** Tokens the user spent in their other conversations, read when a turn starts. */
  private userElsewhere: { used: number; complete: boolean } | null = null;

  private async refreshUserUsage(context: SessionContext): Promise<void> {
    if (this.config.TOKEN_BUDGET_PER_USER === undefined) return;
    const totals = await this.userStub(context.ownerKey).usageElsewhere(context.conversationId);
    this.userElsewhere = totals;
    this.store.setMeta("userElsewhere", JSON.stringify(totals));
  }

  /** The tightest budget that applies, with what was used against it; null when none is set. */
  private budgetState(): { scope: "conversation" | "user"; tokens: number; used: number; complete: boolean; exceeded: boolean } | null {
    const total = this.usageTotal();
    const used = (total.inputTokens ?? 0) + (total.outputTokens ?? 0);
    const candidates: Array<{ scope: "conversation" | "user"; tokens: number; used: number; complete: boolean }> = [];
    const perConversation = this.config.TOKEN_BUDGET_PER_CONVERSATION;
    if (perConversation !== undefined) candidates.push({ scope: "conversation", tokens: perConversation, used, complete: total.complete });
    const perUser = this.config.TOKEN_BUDGET_PER_USER;
    if (perUser !== undefined) {
      const stored = this.store.getMeta("userElsewhere");
      const elsewhere = this.userElsewhere ?? (stored ? (JSON.parse(stored) as { used: number; complete: boolean }) : { used: 0, complete: true });
      candidates.push({ scope: "user", tokens: perUser, used: used + elsewhere.used, complete: total.complete && elsewhere.complete });
    }
    if (candidates.length === 0) return null;
    const ranked = candidates.map((c) => ({ ...c, exceeded: c.used >= c.tokens })).sort((a, b) => b.used / b.tokens - a.used / a.tokens);
    return ranked[0]!;
  }

  private readonly budgetStops = new Set<string>();

  /** The running total crossed a budget: cancel the run upstream; the turn ends cancelled, budget_exceeded. */
  private async stopForBudget(turnId: string): Promise<void> {
    if (this.budgetStops.has(turnId)) return;
    const turn = this.store.turn(turnId);
    if (!turn?.controlRef || turn.status !== "running") return;
    this.budgetStops.add(turnId);
    const budget = this.budgetState();
    let row: EventRow | undefined;
    this.ctx.storage.transactionSync(() => {
      this.store.setCancelReason(turnId, "budget_exceeded");
      row = this.store.appendEvent({ turnId, executionId: turn.executionId, type: "budget.exceeded", data: { turnId, budget }, now: Date.now() }).row;
    });
    this.fanout.publish(row!);
    try {
      await this.provider.cancel(turn.controlRef, "budget_exceeded");
    } catch (err) {
      // Try again at the next usage report.
      this.budgetStops.delete(turnId);
      const warning = this.ctx.storage.transactionSync(
        () =>
          this.store.appendEvent({
            turnId,
            executionId: turn.executionId,
            type: "warning",
            data: { code: "budget_cancel_failed", message: `could not cancel the run for its budget: ${err instanceof Error ? err.message : String(err)}` },
            now: Date.now(),
          }).row,
      );
      this.fanout.publish(warning);
    }
  }

  // ------------------------------------------------------------------ cancellation

  async cancel(conversationId: string, operationId: string, reason?: string): Promise<RpcResult<{ status: 200 | 409 | 502; ack: CancellationAcknowledgement }>> {
    return captureRpc(async () => {
      if (!this.context()) throw new ApiError(404, "conversation_not_found", `no conversation ${conversationId}`);
      const active = this.store.activeTurn();
      if (active && !active.controlRef) throw new ApiError(409, "turn_not_ready", "the turn is still being dispatched; retry in a moment", { retryable: true });
      const target = active ?? this.store.lastTurn();
      if (!target?.controlRef) throw new ApiError(404, "conversation_not_found", `no run in conversation ${conversationId}`);
      const run = target.controlRef;
      if (!this.claims().cancelRun) {
        throw new ApiError(501, "capability_denied", "this agent environment does not claim exact run cancellation (session.cancelRun)", {
          missing: ["session.cancelRun"],
        });
      }
      const requestDigest = await canonicalDigest(stripUndefined({ operationId, run, reason }));
      const previous = this.store.operation(operationId);
      if (previous) {
        if (previous.kind === "cancel" && previous.requestDigest === requestDigest) {
          return { status: 200, ack: { ...(previous.ack as CancellationAcknowledgement), status: "replayed" } };
        }
        return {
          status: 409,
          ack: { operationId, requestDigest, run, status: "conflict", effect: "unknown", existingRequestDigest: previous.requestDigest as `sha256:${string}` },
        };
      }
      let ack: CancellationAcknowledgement;
      const current = this.store.turn(target.turnId)!;
      if (current.status !== "running") {
        ack = { operationId, requestDigest, run, status: "accepted", effect: "not_live" };
      } else {
        this.ctx.storage.transactionSync(() => this.store.setCancelReason(current.turnId, reason ?? "cancelled by the user"));
        try {
          const outcome = await this.provider.cancel(run, reason);
          ack = { operationId, requestDigest, run, status: "accepted", effect: outcome.cancelled ? "cancelled" : "not_live" };
        } catch (err) {
          // Whether the run stopped is unknown: not recorded, so the same operation can be sent again.
          const message = `the cancellation could not be confirmed: ${err instanceof Error ? err.message : String(err)}`;
          return { status: 502, ack: { operationId, requestDigest, run, status: "unknown", effect: "unknown", message, retryable: false } };
        }
      }
      this.ctx.storage.transactionSync(() => this.store.putOperation(operationId, "cancel", requestDigest, ack, Date.now()));
      return { status: 200, ack };
    });
  }

  async usage(conversationId: string): Promise<RpcResult<ConversationUsage>> {
    return captureRpc(() => {
      if (!this.context()) throw new ApiError(404, "conversation_not_found", `no conversation ${conversationId}`);
      const byExecution = new Map(this.store.allExecutionUsage().map((u) => [u.state.executionId, u.state]));
      const turns = this.store.turns().map((turn) => {
        const state = byExecution.get(turn.executionId) ?? emptyExecutionUsage(turn.executionId);
        return {
          turnId: turn.turnId,
          executionId: turn.executionId,
          status: turn.status,
          usage: executionView(state),
          conflicts: state.conflicts,
          receiptDisagreements: state.receiptDisagreements,
        };
      });
      const budget = this.budgetState();
      return {
        conversationId,
        total: this.usageTotal(),
        turns,
        budget: budget ? { tokens: budget.tokens, used: budget.used, complete: budget.complete, exceeded: budget.exceeded, scope: budget.scope } : null,
      };
    });
  }

  override async alarm(): Promise<void> {
    // Wakes after an eviction or restart while a run is live, and brings its reader back.
    const active = this.store.activeTurn();
    if (!active) return;
    if (active.status === "pending") {
      // A dispatch that never finished (the object was evicted mid-dispatch): nothing was acknowledged.
      if (Date.now() - active.updatedAt > WATCHDOG_INTERVAL_MS) this.ctx.storage.transactionSync(() => this.store.deleteTurn(active.turnId));
    } else {
      this.ensurePump();
    }
    if (this.store.activeTurn()) await this.ctx.storage.setAlarm(Date.now() + WATCHDOG_INTERVAL_MS);
  }

  // ------------------------------------------------------------------ reads

  /**
   * The session's events as an SSE byte stream, strictly after `cursor`, then live. Returned over
   * RPC (a stream, not a fetch), so the Worker adds the response headers.
   */
  async events(cursor: number): Promise<ReadableStream<Uint8Array>> {
    this.ensurePump();
    // Handed over through a native pipe: when the browser goes away the pipe's rejection is
    // ours to absorb, instead of surfacing as an unhandled rejection inside the RPC stream.
    const { readable, writable } = new IdentityTransformStream();
    this.fanout.open(cursor).pipeTo(writable).catch(() => {});
    return readable;
  }

  /** Closes every browser stream (local development: the page must reconnect by itself). */
  async dropReaders(): Promise<number> {
    const n = this.fanoutInstance?.size ?? 0;
    this.fanoutInstance?.closeAll();
    return n;
  }

  async summary(conversationId: string): Promise<RpcResult<ConversationSummary>> {
    return captureRpc(() => {
      this.ensurePump();
      const context = this.context();
      if (!context) throw new ApiError(404, "conversation_not_found", `no conversation ${conversationId}`);
      const active = this.store.activeTurn();
      const last = this.store.lastTurn();
      return {
        conversationId: context.conversationId,
        state: active ? "running" : "idle",
        title: this.store.getMeta("title"),
        activeTurn: active ? turnView(active) : null,
        lastTurn: last ? turnView(last) : null,
        turnCount: this.store.turnCount(),
        lastEventId: this.store.lastSeq(),
        interactions: this.store.outstandingInteractions().map((i) => ({ turnId: i.turnId, ...i.request })),
        usage: this.usageTotal(),
        createdAt: isoFromMs(this.store.getMeta("createdAt")),
        updatedAt: last ? new Date(last.updatedAt).toISOString() : null,
      };
    });
  }

  async messages(conversationId: string): Promise<RpcResult<{ conversationId: string; lastEventId: number; messages: TranscriptMessage[] }>> {
    return captureRpc(() => {
      if (!this.context()) throw new ApiError(404, "conversation_not_found", `no conversation ${conversationId}`);
      const lastEventId = this.store.lastSeq();
      const turns = this.store.turns().map((turn) => ({
        turn,
        events: this.store.eventsOfTurn(turn.turnId).map((row) => JSON.parse(row.envelope) as EventEnvelope),
      }));
      return { conversationId, lastEventId, messages: buildTranscript(turns) };
    });
  }

  /** Deletes the session upstream, then every local record of it. */
  async deleteConversation(conversationId: string): Promise<RpcResult<{ deleted: true }>> {
    return captureRpc(async () => {
      const context = this.context();
      if (!context) throw new ApiError(404, "conversation_not_found", `no conversation ${conversationId}`);
      const environmentId = this.store.getMeta("environmentId");
      if (environmentId) {
        try {
          await this.provider.deleteSession(environmentId, context.sessionId);
        } catch (err) {
          // Local records stay until the upstream session is gone: a retry can finish the job.
          throw upstreamToApi(err);
        }
      }
      this.pump?.abort.abort();
      this.pump = undefined;
      this.fanout.closeAll();
      await this.ctx.storage.deleteAlarm();
      await this.ctx.storage.deleteAll();
      // A fresh store re-creates the (now empty) schema for any later use of this id.
      this.store = new SessionStore(this.ctx.storage.sql);
      await this.userStub(context.ownerKey).removeConversation(context.conversationId);
      return { deleted: true as const };
    });
  }

  private async touchIndex(context: SessionContext, state: "idle" | "running"): Promise<void> {
    await this.userStub(context.ownerKey).touchConversation({
      conversationId: context.conversationId,
      title: this.store.getMeta("title") ?? context.conversationId,
      state,
      lastEventId: this.store.lastSeq(),
      updatedAt: Date.now(),
      usage: budgetUsage(this.usageTotal()),
    });
  }
}

/** HTTP status of each acknowledgement; the body is the acknowledgement either way. */
const ACK_HTTP_STATUS: Record<InteractionAcknowledgement["status"], number> = {
  accepted: 200,
  already_resolved_same: 200,
  already_resolved_different: 409,
  expired: 410,
  cancelled: 409,
  unknown_interaction: 404,
  unknown_run: 404,
  binding_mismatch: 409,
  invalid_response: 422,
  transport_failure: 502,
};

/** A keyed hash of an answer: tells the same answer from another without storing it. */
async function answerKey(secret: string, interactionId: string, outcome: string, data: Record<string, unknown> | undefined): Promise<string> {
  const key = await hmacKey(secret);
  const message = canonicalJson(stripUndefined({ kind: "interaction-answer/v1", interactionId, outcome, data }));
  return toHex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
}

function titleFrom(message: string): string {
  const line = message.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line || "New conversation";
}

function isoFromMs(value: string | null): string | null {
  return value === null ? null : new Date(Number(value)).toISOString();
}
