/**
 * Sending a turn, as the send's decision says (./send-decision.ts): a turn it knows is answered
 * (its result, or it runs); a new one (`dispatchNew`, once the budget admitted it: ./budget-stop.ts)
 * is recorded pending and dispatched: the user's environment and what it claims (a turn is refused
 * before any upstream call for what it does not claim), then the provider's dispatch, retried where
 * upstream's answer says a retry can succeed (`retryStep`, pure). The control ref is persisted with
 * `turn.accepted` before the turn is acknowledged to anyone; a dispatch nothing accepted forgets its
 * pending turn, so the client can retry under the same id. A pending turn that nothing here
 * dispatches was left by a crash mid-dispatch and is dispatched again (the execution id is
 * deterministic, so a dispatch that did land is re-attached).
 */
import { Refusal } from "../errors";
import { type Claims, turnShortfall } from "../providers/claims";
import { ProviderError } from "../providers/errors";
import type { AgentProvider, EnvironmentRecord } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import { AgentExactRunControlRef } from "../schemas/contracts";
import type { AbandonedRuns } from "./abandoned-runs";
import { agentSessionOf, branchSessionId, previousRun } from "./branches";
import type { BudgetStop } from "./budget-stop";
import type { EventLog } from "./event-log";
import type { SessionContext, StoredBranch, TurnRecord, TurnRequest } from "./store/records";
import type { SessionStore } from "./store/store";
import { withAnswer } from "./transcript";
import { executionIdFor, type TurnView, turnView } from "./turn-cache";
import { WATCHDOG_INTERVAL_MS } from "./turn-end";
import { type Placement, place } from "./turn-tree";

/** A dispatch admitted under another execution goes again under a new turn key at most this often. */
const MISMATCH_REKEYS = 1;
/** How many turn keys a dispatch follows at most (each one a run stopped earlier in place of ours). */
const MISMATCH_CHAIN = 12;
/** Upstream still busy right after our previous turn's receipt: retry this many times, backing off. */
const UPSTREAM_BUSY_ATTEMPTS = 6;
const UPSTREAM_BUSY_DELAY_MS = 100;

export type SubmitOutcome = { outcome: "accepted" | "in_progress" | "cached"; turn: TurnView };

/** A send, named once: its turn id, what it asks, the digest of that, and the execution its run is named by. */
export interface Send {
  turnId: string;
  request: TurnRequest;
  requestDigest: string;
  executionId: string;
}

/** How far a dispatch has got: its attempt (from 1), whether its environment was recovered, how many runs admitted in its place counted. */
export interface DispatchTries {
  attempt: number;
  recovered: boolean;
  rekeyed: number;
}

export type RetryStep =
  /** The environment stopped or vanished since it was last seen: resume or replace it, then again. */
  | { kind: "recover" }
  /**
   * A run admitted in place of ours, in our session: never adopted, so it is stopped, and the turn
   * goes again under a key of its own unless the bound is `exhausted`. `rekeyed`: the count after it.
   */
  | { kind: "replaced"; admitted: AgentExactRunControlRef; rekeyed: number; exhausted: boolean }
  /** Our previous turn has its result, but the platform can take a moment to release the session after the receipt. */
  | { kind: "wait"; delayMs: number }
  /** No retry can succeed: the error stands. */
  | { kind: "refuse" };

/** What a dispatch does after the provider refused it with `err`. */
export function retryStep(err: ProviderError, tries: DispatchTries, sessionId: string): RetryStep {
  if (!tries.recovered && (err.code === "environment_gone" || err.code === "environment_not_running"))
    return { kind: "recover" };
  const admitted =
    err.code === "admission_mismatch" ? AgentExactRunControlRef.safeParse(err.options.details?.admittedRef) : null;
  if (admitted?.success && admitted.data.sessionId === sessionId) {
    // The platform ties the turn key to that run now. A run an earlier dispatch left (stopped then)
    // only says which key comes next; a run started in place of ours by this very call counts
    // against the bound.
    const rekeyed = err.options.details?.earlier !== true ? tries.rekeyed + 1 : tries.rekeyed;
    return {
      kind: "replaced",
      admitted: admitted.data,
      rekeyed,
      exhausted: rekeyed > MISMATCH_REKEYS || tries.attempt > MISMATCH_CHAIN,
    };
  }
  if (err.code === "session_busy" && tries.attempt < UPSTREAM_BUSY_ATTEMPTS)
    return { kind: "wait", delayMs: UPSTREAM_BUSY_DELAY_MS * tries.attempt };
  return { kind: "refuse" };
}

/** The upstream turn key of a turn sent again after a run was admitted in its place: derived from that run (a retry after a crash takes the same path). */
export async function rekeyedTurnId(turnId: string, replaced: string): Promise<string> {
  const bytes = new Uint8Array(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(`rekey/v1|${turnId.length}:${turnId}|${replaced.length}:${replaced}`),
    ),
  );
  return `${turnId}.r-${[...bytes.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** A conversation's title from its first message: one line, at most 80 characters. */
export function titleFrom(message: string): string {
  const line = message.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line || "New conversation";
}

/** An edit of an earlier message where the environment cannot fork (docs/api.md#branches). */
function forkRefusal(): Refusal {
  return new Refusal(
    "capability_denied",
    "this agent environment cannot fork an agent session (session.fork), which a turn after an earlier message needs; continue the latest message, or send the first one again",
    { missing: ["session.fork"] },
  );
}

export interface DispatchDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => Pick<AgentProvider, "claimsFor" | "dispatch" | "cancel" | "fork">;
  alarms: { set(atMs: number): Promise<void> };
  /** The user's ready environment; `staleEnvironmentId` says that one was found unusable, `claimMissing` that its claims fell short. */
  environment(context: SessionContext, staleEnvironmentId?: string, claimMissing?: boolean): Promise<EnvironmentRecord>;
  budgets: Pick<BudgetStop, "admit">;
  /** Runs an earlier turn left going upstream: settled before this one is sent (./abandoned-runs.ts). */
  abandoned: Pick<AbandonedRuns, "settle">;
  /** The turn was accepted and runs: its upstream reader starts. */
  startReader(): void;
  /** The conversation list shows the conversation running. */
  showRunning(context: SessionContext): Promise<void>;
}

type Notice = { code: string; message: string };
/** `afresh`: the turn starts its branch's agent session with nothing copied into it (the session it would fork is gone). */
type Dispatched = { controlRef: AgentExactRunControlRef; claims: Claims; notice?: Notice; afresh?: true };

/** The agent session a branch would fork is gone with its sandbox: the branch starts afresh, and says so (docs/api.md#branches). */
const FORK_SOURCE_GONE: Notice = {
  code: "agent_memory_reset",
  message:
    "the agent session this message was answered in is gone (its sandbox was replaced, or no longer holds it); this turn starts a new agent session, without the earlier conversation in its memory",
};

export class Dispatcher {
  /** Dispatches under way in this instance, to their end (a pending turn not in here was left by a crash). */
  private readonly dispatching = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: DispatchDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /** Whether a dispatch of this turn is under way in this instance. */
  isDispatching(turnId: string): boolean {
    return this.dispatching.has(turnId);
  }

  /** Waits for every dispatch under way here to end (accepted or refused), its bookkeeping included. */
  async quiesce(): Promise<void> {
    await Promise.allSettled([...this.dispatching.values()]);
  }

  /** The agent session upstream: the session id, or a fresh one for a conversation id used again after a delete. */
  agentSessionId(context: SessionContext): string {
    return this.store.getMeta("agentSessionId") ?? context.sessionId;
  }

  /** A turn this send's id names, with the same content: its result once it ended, else it runs (a pending one nothing here dispatches is resumed). */
  known(
    context: SessionContext,
    send: Send,
    decision: { kind: "cached"; turn: TurnRecord } | { kind: "in_progress"; turn: TurnRecord; resume: boolean },
  ): Promise<SubmitOutcome> | SubmitOutcome {
    if (decision.kind === "cached")
      return { outcome: "cached", turn: turnView(withAnswer(this.store, decision.turn), []) };
    // A pending turn that nothing here dispatches was left by a crash mid-dispatch: resume it.
    if (decision.resume) return this.dispatchPending(context, send.turnId, send.executionId, send.request);
    return { outcome: "in_progress", turn: turnView(decision.turn, this.store.outstandingOfTurn(send.turnId)) };
  }

  /**
   * A new turn, admitted: recorded pending at its place in the tree, then dispatched. Nothing
   * awaits before its record is written, so a concurrent send sees this turn.
   */
  async dispatchNew(context: SessionContext, send: Send): Promise<SubmitOutcome> {
    const placement = this.placement(send.request);
    const now = Date.now();
    this.deps.log.commit(() => this.recordPending(context, placement, { ...send, now }));
    // Armed before the dispatch: an object evicted mid-dispatch must not keep a pending turn forever.
    await this.deps.alarms.set(now + WATCHDOG_INTERVAL_MS);
    return this.dispatchPending(context, send.turnId, send.executionId, send.request);
  }

  /**
   * Where a new turn goes in the conversation's tree (./turn-tree.ts): after the turn it names, or
   * the active branch's tip; a turn already followed starts a branch. Refused when it names a turn
   * the conversation does not hold.
   */
  placement(request: TurnRequest): Exclude<Placement, { kind: "unknown_parent" }> {
    const placement = place(
      this.store.treeTurns(),
      this.store.branches(),
      this.store.getMeta("activeBranch") ?? 0,
      request.parentTurnId,
    );
    if (placement.kind === "unknown_parent")
      throw new Refusal(
        "turn_not_found",
        `parentTurnId names no turn of this conversation (${placement.parentTurnId})`,
        { parentTurnId: placement.parentTurnId },
      );
    return placement;
  }

  /** Records a new turn pending at its place (and the branch it starts), started `now` (sent at `sentAt`, if earlier): inside the caller's commit. */
  recordPending(
    context: SessionContext,
    placement: Exclude<Placement, { kind: "unknown_parent" }>,
    turn: {
      turnId: string;
      requestDigest: string;
      request: TurnRequest;
      executionId: string;
      now: number;
      sentAt?: number;
    },
  ): void {
    if (placement.kind === "branch" && !placement.reused) {
      this.store.insertBranch({
        branch: placement.branch,
        forkOf: placement.forkOf,
        at: placement.parentTurnId,
        agentSessionId: branchSessionId(this.agentSessionId(context), placement.branch),
        createdAt: turn.now,
      });
    }
    this.store.insertPendingTurn({ ...turn, parentTurnId: placement.parentTurnId, branch: placement.branch });
    if (!this.store.getMeta("title")) this.store.setMeta("title", titleFrom(turn.request.message));
  }

  /**
   * Dispatches a turn the queue has just recorded pending (./queue-runner.ts), or recorded and left
   * undispatched (a new instance): the budget is checked now, at its start, not when it was queued.
   * Nothing accepted (the budget refused it, or the dispatch failed): the pending turn is gone and
   * the refusal is the queue's to record.
   */
  startQueued(
    context: SessionContext,
    turnId: string,
    executionId: string,
    request: TurnRequest,
  ): Promise<SubmitOutcome> {
    const work = (async () => {
      try {
        await this.deps.budgets.admit(context);
      } catch (err) {
        this.deps.log.commit(() => this.store.deleteTurn(turnId));
        throw err;
      }
      return this.runDispatch(context, turnId, executionId, request);
    })().finally(() => this.dispatching.delete(turnId));
    this.dispatching.set(turnId, work);
    return work;
  }

  /** Dispatches a recorded pending turn; on success the turn runs, on failure it is forgotten. */
  private dispatchPending(
    context: SessionContext,
    turnId: string,
    executionId: string,
    request: TurnRequest,
  ): Promise<SubmitOutcome> {
    const work = this.runDispatch(context, turnId, executionId, request).finally(() => this.dispatching.delete(turnId));
    this.dispatching.set(turnId, work);
    return work;
  }

  private async runDispatch(
    context: SessionContext,
    turnId: string,
    requestedExecutionId: string,
    request: TurnRequest,
  ): Promise<SubmitOutcome> {
    let dispatched: Dispatched;
    try {
      dispatched = await this.dispatch(context, turnId, requestedExecutionId, request);
    } catch (err) {
      // Nothing was accepted: forget the pending turn so the client can retry under the same id.
      this.deps.log.commit(() => this.store.deleteTurn(turnId));
      throw providerRefusal(err);
    }

    // The run's own execution (another than requested when a run admitted in its place was stopped).
    const executionId = dispatched.controlRef.executionId;
    const placed = this.store.turn(turnId)!;
    // The control ref is persisted before the turn is acknowledged to anyone.
    this.deps.log.commit((log) => {
      const row = log.append({
        turnId,
        executionId,
        type: "turn.accepted",
        data: {
          turnId,
          executionId,
          message: request.message,
          ...(request.model ? { model: request.model } : {}),
          parentTurnId: placed.parentTurnId,
          branch: placed.branch,
        },
        now: Date.now(),
      });
      // A branch started afresh exists upstream once its first run does, under the id it was sent with.
      const origin = this.store.branches().find((b) => b.branch === placed.branch);
      if (origin && !origin.forked) {
        if (dispatched.afresh) this.store.markStartedAfresh(origin.branch);
        else this.store.markForked(origin.branch, origin.agentSessionId);
      }
      // The conversation shows the branch it was last sent on (every tab hears of the switch).
      const shown = this.store.getMeta("activeBranch") ?? 0;
      if (shown !== placed.branch) {
        this.store.setMeta("activeBranch", placed.branch);
        log.append({
          turnId,
          executionId,
          type: "branch.switched",
          data: { branch: placed.branch, previous: shown, tipTurnId: turnId, by: "turn" },
          now: Date.now(),
        });
      }
      this.store.markRunning(turnId, dispatched.controlRef, row.seq, Date.now());
      if (dispatched.notice)
        log.append({ turnId, executionId, type: "warning", data: dispatched.notice, now: Date.now() });
      this.store.setMeta("environmentId", dispatched.controlRef.environmentId);
      this.store.setMeta("claims", dispatched.claims);
    });
    await this.deps.alarms.set(Date.now() + WATCHDOG_INTERVAL_MS);
    this.deps.startReader();
    await this.deps.showRunning(context);
    return { outcome: "accepted", turn: turnView(this.store.turn(turnId)!, this.store.outstandingOfTurn(turnId)) };
  }

  /**
   * The user's environment and what it claims for this turn; refuses what it does not claim,
   * before any upstream call. A claim that falls short is asked for again first: the capability
   * document may have changed since it was read, and is read again where the bounds allow
   * (docs/api.md#capabilities).
   */
  private async claimedEnvironment(
    context: SessionContext,
    request: TurnRequest,
    staleEnvironmentId?: string,
  ): Promise<{ environment: EnvironmentRecord; claims: Claims }> {
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
      throw new Refusal(
        "capability_denied",
        `this agent environment does not claim ${missing.join(" and ")}, which running a turn needs`,
        {
          missing,
          warnings: environment.warnings,
        },
      );
    }
    if (unsupported.length > 0) {
      throw new Refusal(
        "interaction_kind_unsupported",
        `this agent environment does not offer interaction kinds: ${unsupported.join(", ")}`,
        { unsupported },
      );
    }
    return { environment, claims };
  }

  /**
   * Copies the agent session of the branch forked from, up to the fork point, into the branch's
   * own session; refused before any upstream call where the environment claims no fork (or its
   * fork route proved missing). Recorded once made, so no retry forks twice. A fork that finds
   * the environment stopped or gone resumes or replaces it first, once, as a dispatch does. Where
   * the session to copy is gone (its sandbox replaced since that turn ran, or upstream no longer
   * holds it), nothing is copied: the branch starts afresh (`afresh`), and the turn says so.
   */
  private async fork(
    context: SessionContext,
    request: TurnRequest,
    claimed: { environment: EnvironmentRecord; claims: Claims },
    branch: StoredBranch,
  ): Promise<{ environment: EnvironmentRecord; claims: Claims; afresh?: true }> {
    let { environment, claims } = claimed;
    const at = branch.at === null ? null : this.store.turn(branch.at);
    if (!at?.controlRef)
      throw new Refusal("turn_not_ready", `turn ${branch.at} has not run yet; a branch after it waits for it`, {
        retryable: true,
      });
    for (let recovered = false; ; recovered = true) {
      const unavailable = this.store.getMeta("forkUnavailable");
      if (!claims.fork || unavailable?.environmentId === environment.environmentId) throw forkRefusal();
      // Agent sessions live in their sandbox: one made in a sandbox since replaced went with it.
      if (at.controlRef.environmentId !== environment.environmentId) return { environment, claims, afresh: true };
      try {
        const { sessionId } = await this.deps.provider().fork({
          environmentId: environment.environmentId,
          sessionId: at.controlRef.sessionId,
          at: at.controlRef,
          newSessionId: branch.agentSessionId,
        });
        this.deps.log.commit(() => this.store.markForked(branch.branch, sessionId));
        return { environment, claims };
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        if (err.code === "capability_denied") {
          this.deps.log.commit(() =>
            this.store.setMeta("forkUnavailable", { environmentId: environment.environmentId, since: Date.now() }),
          );
          throw forkRefusal();
        }
        if (err.code === "not_found") return { environment, claims, afresh: true };
        if (recovered || (err.code !== "environment_gone" && err.code !== "environment_not_running")) throw err;
        ({ environment, claims } = await this.claimedEnvironment(context, request, environment.environmentId));
        await this.deps.abandoned.settle(environment.environmentId);
      }
    }
  }

  /** The provider's dispatch of the turn, retried as `retryStep` says. */
  private async dispatch(
    context: SessionContext,
    turnId: string,
    executionId: string,
    request: TurnRequest,
  ): Promise<Dispatched> {
    const turn = this.store.turn(turnId)!;
    const origin = this.store.branches().find((b) => b.branch === turn.branch);
    const needsFork = origin !== undefined && !origin.forked && origin.forkOf !== null;
    // What the conversation's environment is known not to do is refused before any call: its
    // stored claims say no fork, or its fork route proved missing.
    if (
      needsFork &&
      (this.store.getMeta("claims")?.fork === false ||
        this.store.getMeta("forkUnavailable")?.environmentId === this.store.getMeta("environmentId"))
    )
      throw forkRefusal();
    let { environment, claims } = await this.claimedEnvironment(context, request);
    // A run an earlier turn left going (its sandbox stopped mid-turn, then resumed just now) would
    // hold the agent session: it is stopped first, and its usage folded into its own turn.
    await this.deps.abandoned.settle(environment.environmentId);
    // A branch forked at an earlier turn: its agent session is copied up to that turn, once.
    let afresh = false;
    if (needsFork) {
      const forked = await this.fork(context, request, { environment, claims }, origin);
      ({ environment, claims } = forked);
      afresh = forked.afresh === true;
    }
    const previous = previousRun(this.store, turn.parentTurnId);
    const input = {
      sessionId: agentSessionOf(this.store, this.agentSessionId(context), turn.branch),
      turnId,
      executionId,
      message: request.message,
      model: request.model,
      interactions: request.interactions,
      ...(previous ? { previous } : {}),
      sessions: this.store.upstreamRuns().map((run) => run.ref),
    };
    const tries: DispatchTries = { attempt: 1, recovered: false, rekeyed: 0 };
    for (; ; tries.attempt++) {
      try {
        const { controlRef, notice } = await this.deps
          .provider()
          .dispatch({ ...input, environmentId: environment.environmentId });
        // The conversation's environment was replaced (gone, failed, expired): the agent starts afresh.
        const before = this.store.getMeta("environmentId");
        const replaced = before !== null && before !== controlRef.environmentId;
        const reset =
          notice ??
          (afresh ? FORK_SOURCE_GONE : undefined) ??
          (replaced
            ? {
                code: "agent_memory_reset",
                message:
                  "the agent's environment was replaced; this turn starts a new agent session, without the earlier conversation in its memory",
              }
            : undefined);
        return {
          controlRef,
          claims,
          ...(reset ? { notice: reset } : {}),
          ...(afresh ? { afresh: true as const } : {}),
        };
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        const step = retryStep(err, tries, input.sessionId);
        if (step.kind === "refuse") throw err;
        if (step.kind === "recover") {
          ({ environment, claims } = await this.claimedEnvironment(context, request, environment.environmentId));
          await this.deps.abandoned.settle(environment.environmentId);
          tries.recovered = true;
        } else if (step.kind === "replaced") {
          await this.deps
            .provider()
            .cancel(step.admitted, {
              operationId: `mismatch:${step.admitted.executionId}`,
              reason: "admitted in place of another execution",
            })
            .catch(() => undefined);
          tries.rekeyed = step.rekeyed;
          if (step.exhausted) {
            throw new ProviderError(
              "admission_mismatch",
              `${err.message}; the run admitted in its place was stopped, and the turn can be sent again`,
            );
          }
          input.turnId = await rekeyedTurnId(turnId, step.admitted.executionId);
          input.executionId = await executionIdFor(input.sessionId, input.turnId);
        } else {
          await new Promise((resolve) => setTimeout(resolve, step.delayMs));
        }
      }
    }
  }
}
