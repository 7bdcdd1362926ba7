/**
 * Sending a turn, as the send's decision says (./send-decision.ts): a turn it knows is answered
 * (its result, or it runs); a new one (`dispatchNew`, once the budget admitted it: ./budget-stop.ts)
 * is recorded pending at its place in the tree (./turn-tree.ts) and dispatched: the user's
 * environment and what it claims (./turn-claims.ts: a turn is refused before any upstream call for
 * what it does not claim), a new branch's agent session forked (./branch-fork.ts), then the
 * provider's dispatch, retried where upstream's answer says a retry can succeed
 * (./dispatch-retry.ts, pure). The control ref is persisted with `turn.accepted` before the turn
 * is acknowledged to anyone; a dispatch nothing accepted forgets its pending turn, so the client
 * can retry under the same id. A pending turn that nothing here dispatches was left by a crash
 * mid-dispatch and is dispatched again (the execution id is deterministic, so a dispatch that did
 * land is re-attached).
 */
import { Refusal } from "../errors";
import type { Claims } from "../providers/claims";
import { ProviderError } from "../providers/errors";
import type { AgentProvider } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import type { AgentExactRunControlRef } from "../schemas/contracts";
import type { AbandonedRuns } from "./abandoned-runs";
import { agentOfTurn, chosenAgent, overridesModel } from "./agent-choice";
import type { AgentInputs } from "./agent-inputs";
import { FORK_SOURCE_GONE, forkBranch, forkKnownUnavailable, forkRefusal } from "./branch-fork";
import type { BranchWorkspaces } from "./branch-workspace";
import { agentSessionOf, branchSessionId, previousRun } from "./branches";
import type { BudgetStop } from "./budget-stop";
import { type DispatchTries, rekeyedTurnId, retryStep } from "./dispatch-retry";
import type { EventLog } from "./event-log";
import type { SessionContext, TurnRecord, TurnRequest } from "./store/records";
import type { SessionStore } from "./store/store";
import { withAnswer } from "./transcript";
import { executionIdFor, type TurnView, turnView } from "./turn-cache";
import { claimedEnvironment, type TurnClaimsDeps } from "./turn-claims";
import { WATCHDOG_INTERVAL_MS } from "./turn-end";
import { type Placement, place } from "./turn-tree";
import type { Workspace } from "./workspace";

export type SubmitOutcome = { outcome: "accepted" | "in_progress" | "cached"; turn: TurnView };

/** A send, named once: its turn id, what it asks, the digest of that, and the execution its run is named by. */
export interface Send {
  turnId: string;
  request: TurnRequest;
  requestDigest: string;
  executionId: string;
}

/** A conversation's title from its first message: one line, at most 80 characters. */
export function titleFrom(message: string): string {
  const line = message.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line || "New conversation";
}

export interface DispatchDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => Pick<AgentProvider, "claimsFor" | "dispatch" | "cancel" | "fork">;
  alarms: { set(atMs: number): Promise<void> };
  /** The user's ready environment, as ./turn-claims.ts asks for it. */
  environment: TurnClaimsDeps["environment"];
  budgets: Pick<BudgetStop, "admit">;
  /** Runs an earlier turn left going upstream: settled before this one is sent (./abandoned-runs.ts). */
  abandoned: Pick<AbandonedRuns, "settle">;
  /** The turn was accepted and runs: its upstream reader starts. */
  startReader(): void;
  /** The conversation list shows the conversation running. */
  showRunning(context: SessionContext): Promise<void>;
  /** What the turn's dispatch carries besides its message, checked and opened (./agent-inputs.ts). */
  agentInputs(context: SessionContext, request: TurnRequest, modelOverride: boolean): Promise<AgentInputs>;
  /** The checkpoint before the turn (./workspace.ts). */
  workspace: Pick<Workspace, "before">;
  /** The branch's own sandbox, where it has one (./branch-workspace.ts). */
  branches: Pick<BranchWorkspaces, "branchEnvironment" | "carryAttachments">;
}

type Notice = { code: string; message: string };
/** `afresh`: the turn starts its branch's agent session with nothing copied into it (the session it would fork is gone). */
type Dispatched = {
  controlRef: AgentExactRunControlRef;
  claims: Claims;
  notice?: Notice;
  afresh?: true;
  /** What the turn's workspace says: its checkpoint could not be taken, its branch shares the files. */
  workspaceNotices: Notice[];
  /** It ran in its branch's own sandbox, not the conversation's. */
  own: boolean;
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
      // The conversation's first turn chooses its agent for the turns after it.
      if (this.store.turnCount() === 1 && this.store.getMeta("agent") === null)
        this.store.setMeta("agent", chosenAgent(request));
      if (dispatched.notice)
        log.append({ turnId, executionId, type: "warning", data: dispatched.notice, now: Date.now() });
      for (const notice of dispatched.workspaceNotices)
        log.append({ turnId, executionId, type: "warning", data: notice, now: Date.now() });
      // The conversation's environment (a branch's own sandbox is the workspace's record).
      if (!dispatched.own) this.store.setMeta("environmentId", dispatched.controlRef.environmentId);
      this.store.setMeta("claims", dispatched.claims);
    });
    await this.deps.alarms.set(Date.now() + WATCHDOG_INTERVAL_MS);
    this.deps.startReader();
    await this.deps.showRunning(context);
    return { outcome: "accepted", turn: turnView(this.store.turn(turnId)!, this.store.outstandingOfTurn(turnId)) };
  }

  /** The provider's dispatch of the turn, retried as `retryStep` says. */
  private async dispatch(
    context: SessionContext,
    turnId: string,
    executionId: string,
    request: TurnRequest,
  ): Promise<Dispatched> {
    const turn = this.store.turn(turnId)!;
    // The turn runs on its own model where it names one, else on the conversation's (./agent-choice.ts).
    const conversation = this.store.getMeta("agent");
    const modelOverride = overridesModel(request, conversation);
    request = { ...request, ...agentOfTurn(request, conversation) };
    // Checked against the catalog and the user's settings before any sandbox work.
    const extras = await this.deps.agentInputs(context, request, modelOverride);
    const origin = this.store.branches().find((b) => b.branch === turn.branch);
    const needsFork = origin !== undefined && !origin.forked && origin.forkOf !== null;
    // What the conversation's environment is known not to do is refused before any call: its
    // stored claims say no fork, or its fork route proved missing.
    if (needsFork && forkKnownUnavailable(this.store)) throw forkRefusal();
    let { environment, claims } = await claimedEnvironment(this.deps, context, request);
    // A run an earlier turn left going (its sandbox stopped mid-turn, then resumed just now) would
    // hold the agent session: it is stopped first, and its usage folded into its own turn.
    await this.deps.abandoned.settle(environment.environmentId);
    // A branch from an earlier turn runs on the files as they were there: in a sandbox of its own.
    const conversationEnvironmentId = environment.environmentId;
    const placed = await this.deps.branches.branchEnvironment(context, turn, origin, { environment, claims });
    ({ environment, claims } = placed);
    // The files it names are where it runs (an upload wrote each where the active branch ran then).
    await this.deps.branches.carryAttachments(
      environment.environmentId,
      conversationEnvironmentId,
      this.store.attachments.byIds(request.attachments ?? []),
    );
    const workspaceNotices: Notice[] = placed.notice ? [placed.notice] : [];
    // A branch forked at an earlier turn: its agent session is copied up to that turn, once.
    let afresh = false;
    if (needsFork) {
      const forked = await forkBranch(
        this.deps,
        context,
        request,
        { environment, claims },
        origin,
        placed.sessionsFrom,
      );
      ({ environment, claims } = forked);
      afresh = forked.afresh === true;
    }
    // The workspace as it is before the turn, so its real changes can be read and undone.
    const checkpointNotice = await this.deps.workspace.before(turnId, executionId, environment.environmentId);
    if (checkpointNotice) workspaceNotices.push(checkpointNotice);
    const previous = previousRun(this.store, turn.parentTurnId);
    const input = {
      sessionId: agentSessionOf(this.store, this.agentSessionId(context), turn.branch),
      turnId,
      executionId,
      message: request.message,
      model: request.model,
      ...(request.backend ? { backend: request.backend } : {}),
      ...extras,
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
        const replaced = !placed.own && before !== null && before !== controlRef.environmentId;
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
          workspaceNotices,
          own: placed.own,
        };
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        const step = retryStep(err, tries, input.sessionId);
        if (step.kind === "refuse") throw err;
        if (step.kind === "recover") {
          if (placed.own) {
            // The branch's own sandbox, brought back (resumed, or made again from its checkpoint).
            const conversation = await claimedEnvironment(this.deps, context, request);
            ({ environment, claims } = await this.deps.branches.branchEnvironment(context, turn, origin, conversation));
          } else
            ({ environment, claims } = await claimedEnvironment(
              this.deps,
              context,
              request,
              environment.environmentId,
            ));
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
