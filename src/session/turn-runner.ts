/**
 * Running turns: a short coordinator over one room per part of a turn's life, wired here and
 * nowhere else:
 *  - ./send-decision.ts    what a send does (cached, in progress, conflict, busy, full, queued,
 *                          dispatched): one pure decision, applied by `submit` below;
 *  - ./dispatch.ts         sending a turn: claims (./turn-claims.ts), a branch's fork
 *                          (./branch-fork.ts), the dispatch and its retries (./dispatch-retry.ts);
 *  - ./upstream-reader.ts  the one reader of the running execution (./pump.ts), its events
 *                          committed in batches (./ingest-queue.ts), each applied once (./ingest.ts);
 *  - ./turn-end.ts         every way a turn ends: finish, fail, cancel-end, settle from the
 *                          result, the watchdog;
 *  - ./budget-stop.ts      budgets enforced: refused at the door, a running turn stopped;
 *  - ./turn-usage.ts       the usage fold stored and reported, the conversation's total;
 *  - ./abandoned-runs.ts   runs whose turn ended here while they may still run upstream:
 *                          cancelled, their later usage folded into their turn;
 *  - ./queue-runner.ts     turns sent while another runs, waiting their turn (./turn-queue.ts);
 *  - ./session-release.ts  agent sessions that hold something upstream while idle, released
 *                          after a while (the alarm), and all of them on a delete;
 *  - ./workspace.ts        the workspace's checkpoints: one before each turn, a turn's real
 *                          changes once it ended, undo and redo, released on a delete;
 *  - ./branch-workspace.ts a branch from an earlier turn in a sandbox of its own, made from one.
 * It holds what joins them: cancellation (exact and idempotent under its operation id) and the
 * user's conversation list entry. Every write that belongs together goes through one commit
 * (./event-log.ts).
 */
import type { Config } from "../config";
import { Refusal } from "../errors";
import { canonicalDigest, stripUndefined } from "../lib/digest";
import { cachedCatalog, catalogKey } from "../providers/catalog-cache";
import { ProviderError } from "../providers/errors";
import type { AgentProvider } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import type { ConversationAgent } from "../schemas/agents";
import type { TotalView } from "../schemas/api";
import type { CancellationAcknowledgement } from "../schemas/contracts";
import { type BudgetState, budgetUsage } from "../usage/budgets";
import { AbandonedRuns } from "./abandoned-runs";
import { agentView } from "./agent-choice";
import { agentInputs } from "./agent-inputs";
import { BranchWorkspaces } from "./branch-workspace";
import { activeBranch, agentSessions } from "./branches";
import { BudgetStop } from "./budget-stop";
import { Dispatcher, type Send } from "./dispatch";
import type { EventLog } from "./event-log";
import type { InteractionDesk } from "./interaction-desk";
import { InteractiveControl } from "./interactive";
import { priorOperation } from "./operations";
import { type QueueOutcome, QueueRunner } from "./queue-runner";
import { decideSend, type SendDecision, type WhenBusy } from "./send-decision";
import { SessionRelease } from "./session-release";
import type { SessionContext, TurnRequest } from "./store/records";
import type { SessionStore } from "./store/store";
import { executionIdFor, turnRequestDigest } from "./turn-cache";
import { TurnEnd } from "./turn-end";
import { conversationTotal } from "./turn-usage";
import { waitingOf } from "./turn-waiting";
import { UpstreamReader } from "./upstream-reader";
import type { UserLink } from "./user-link";
import { Workspace } from "./workspace";

export type { QueueOutcome as SubmitOutcome } from "./queue-runner";

export interface TurnRunnerDeps {
  store: () => SessionStore;
  /** The conversation this session holds, or null when it holds none (never stored, or deleted). */
  bound(): SessionContext | null;
  log: EventLog;
  desk: InteractionDesk;
  provider: () => AgentProvider;
  config: () => Config;
  alarms: { set(atMs: number): Promise<void>; clear(): Promise<void> };
  /** The user's object: its environment, its spend elsewhere, its conversation list (./user-link.ts). */
  user: Pick<UserLink, "environment" | "usageElsewhere" | "touchIndex" | "turnSettings">;
  /** Resolves once every write committed so far is durable (ctx.storage.sync()): the upstream reader's batches wait on it. */
  durable(): Promise<void>;
}

export class TurnRunner {
  private readonly budgets: BudgetStop;
  private readonly end: TurnEnd;
  private readonly reader: UpstreamReader;
  private readonly dispatcher: Dispatcher;
  private readonly abandoned: AbandonedRuns;
  readonly queue: QueueRunner;
  readonly release: SessionRelease;
  /** The workspace's checkpoints: before each turn, a turn's changes, undo and redo (./workspace.ts). */
  readonly workspace: Workspace;
  /** The branches' own sandboxes (./branch-workspace.ts). */
  readonly branches: BranchWorkspaces;
  /** Interactive mode: the agent's own terminal UI holding the session (./interactive.ts). */
  readonly interactive: InteractiveControl;

  constructor(private readonly deps: TurnRunnerDeps) {
    const { store, log, desk, provider, config, alarms } = deps;
    // The budget is read when usage is reported (the budgets are made next; read only later).
    const budget = () => this.budgets.budget();
    this.abandoned = new AbandonedRuns({ store, log, provider, budget });
    this.budgets = new BudgetStop({
      store,
      log,
      provider,
      config,
      usageElsewhere: (context) => deps.user.usageElsewhere(context),
    });
    this.end = new TurnEnd({
      store,
      log,
      desk,
      config,
      alarms,
      reader: { ensure: () => this.reader.ensure(), stop: () => this.reader.stop() },
      dispatching: (turnId) => this.dispatcher.isDispatching(turnId),
      showIdle: () => this.showIdle(),
      abandoned: this.abandoned,
      budget,
    });
    this.reader = new UpstreamReader({
      store,
      exists: () => deps.bound() !== null,
      log,
      desk,
      provider,
      end: this.end,
      budgets: this.budgets,
      showIdle: () => this.showIdle(),
      waitingChanged: () => this.refreshIndex(),
      stopped: () => void this.queue.move(),
      durable: () => deps.durable(),
    });
    this.branches = new BranchWorkspaces({ store, log, provider, config });
    this.workspace = new Workspace({
      store,
      log,
      provider,
      config,
      branches: this.branches,
      environment: (context) => deps.user.environment(context),
    });
    this.interactive = new InteractiveControl({
      store,
      log,
      provider,
      environment: async (context, branch) =>
        (await this.branches.liveEnvironment(context, branch)) ?? deps.user.environment(context),
      agentSessionId: (context) => this.dispatcher.agentSessionId(context),
    });
    this.dispatcher = new Dispatcher({
      workspace: this.workspace,
      branches: this.branches,
      store,
      log,
      provider,
      alarms,
      environment: (context, stale, claimMissing) => deps.user.environment(context, stale, claimMissing),
      budgets: this.budgets,
      abandoned: this.abandoned,
      startReader: () => this.reader.ensure(),
      showRunning: (context) => this.touchIndex(context, "running"),
      agentInputs: (context, request, modelOverride) => {
        const config = deps.config();
        // The CLI Bridge takes none of these (the Worker refused them): nothing to check or open.
        // It has no workspace files either, so no attachment of a conversation there exists.
        if (config.provider === "cli-bridge") {
          if (request.attachments?.length)
            return Promise.reject(
              new Refusal("attachment_not_found", "attachments: this provider takes none (it has no workspace files)", {
                field: "attachments",
                missing: request.attachments,
              }),
            );
          return Promise.resolve({});
        }
        return agentInputs(
          {
            catalog: () => cachedCatalog(catalogKey(config), config.AGENTS_CATALOG_TTL_MS, () => provider().catalog()),
            settings: (ctx, credential, mcpServers) => deps.user.turnSettings(ctx, credential, mcpServers),
            defaultBackend: config.AGENT_BACKEND,
            attachments: (ids) => this.store.attachments.byIds(ids),
          },
          context,
          request,
          modelOverride,
        );
      },
    });
    this.queue = new QueueRunner({ store, bound: () => deps.bound(), log, dispatcher: this.dispatcher, alarms });
    this.release = new SessionRelease({ store, log, provider });
  }

  private get store(): SessionStore {
    return this.deps.store();
  }

  // ------------------------------------------------------------------ the turn's life, by room

  /**
   * A send, as its one decision says (./send-decision.ts): the request's digest and the run's
   * execution id computed once, the dispatcher acting on a dispatch and on a turn it knows, the
   * queue on a queued answer.
   */
  async submit(
    context: SessionContext,
    turnId: string,
    request: TurnRequest,
    whenBusy: WhenBusy = "refuse",
  ): Promise<QueueOutcome> {
    const send: Send = {
      turnId,
      request,
      requestDigest: await turnRequestDigest(request),
      executionId: await executionIdFor(this.dispatcher.agentSessionId(context), turnId),
    };
    // Twice at most: a send that may queue and is refused busy (upstream, as it was dispatched) is decided once more.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.act(context, send, whenBusy);
      } catch (err) {
        if (whenBusy === "queue" && attempt === 0 && err instanceof Refusal && err.code === "session_busy") continue;
        throw err;
      }
    }
  }

  private async act(context: SessionContext, send: Send, whenBusy: WhenBusy): Promise<QueueOutcome> {
    // A terminal UI that ended upstream (its /exit) gives the session back before the send is decided.
    await this.interactive.settle();
    let decision = this.decide(send, whenBusy);
    if (decision.kind === "dispatch") {
      // Admitting a new turn may read the user's spend elsewhere (an RPC): a send that arrived
      // meanwhile may have taken this turn id or the conversation, so the send is decided again.
      await this.budgets.admit(context);
      decision = this.decide(send, whenBusy);
    }
    const { turnId } = send;
    // A new turn while the agent's terminal UI drives the session is refused (a retry of a known one is answered).
    if (decision.kind === "dispatch" || decision.kind === "queued") this.interactive.refuseTurn();
    // From here to the insert nothing awaits: a concurrent send sees this turn.
    switch (decision.kind) {
      case "dispatch":
        return this.dispatcher.dispatchNew(context, send);
      case "queued":
        return this.queue.enqueue(send);
      case "cached":
      case "in_progress":
        if ("turn" in decision) return this.dispatcher.known(context, send, decision);
        // Sent again: the turn already waits (or ended); nothing new is queued.
        return { outcome: decision.kind, turn: this.queue.view(turnId)! };
      case "conflict":
        throw new Refusal("turn_conflict", `turn ${turnId} was already sent with different content`, { turnId });
      case "busy":
        if ("active" in decision)
          throw new Refusal("session_busy", `turn ${decision.active.turnId} is still running in this conversation`, {
            activeTurnId: decision.active.turnId,
          });
        throw new Refusal(
          "session_busy",
          `${decision.queued} queued turn(s) wait in this conversation; send with whenBusy "queue" to wait after them`,
          {
            nextTurnId: decision.next.turnId,
            queued: decision.queued,
          },
        );
      case "full":
        throw new Refusal(
          "queue_full",
          `the queue holds ${decision.limit} turns already (QUEUE_MAX_TURNS); send again once one has started`,
          { limit: decision.limit },
        );
    }
  }

  /** What a send does, from what the store holds now. */
  private decide(send: Send, whenBusy: WhenBusy): SendDecision {
    const store = this.store;
    return decideSend({
      turn: store.turn(send.turnId),
      dispatching: this.dispatcher.isDispatching(send.turnId),
      entry: store.queuedTurn(send.turnId),
      active: store.activeTurn(),
      waiting: store.waitingTurns(),
      whenBusy,
      limit: this.deps.config().QUEUE_MAX_TURNS,
      requestDigest: send.requestDigest,
    });
  }

  /** Waits for every dispatch under way here to end (accepted or refused), its bookkeeping included. */
  quiesce(): Promise<void> {
    return this.dispatcher.quiesce();
  }

  /** Starts the upstream reader for the running turn, unless one runs already in this instance. */
  ensureReader(): void {
    this.reader.ensure();
  }

  stopReader(): void {
    this.reader.stop();
  }

  /** Compacts the ended turns whose compaction a crash left undone (./turn-end.ts `compactEnded`). */
  compactEnded(): void {
    this.end.compactEnded();
  }

  /**
   * A turn ended (its terminal event is committed). The next queued turn starts once the run's
   * stream is over, when upstream has let go of the agent session (the reader's stop moves the
   * queue); an end with no reader running here moves it now.
   */
  turnEnded(): void {
    this.workspace.turnEnded();
    if (!this.reader.reading()) void this.queue.move();
  }

  /** The alarm: the watchdog of ./turn-end.ts. */
  watchdog(): Promise<void> {
    return this.end.watchdog();
  }

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
  async cancel(
    conversationId: string,
    operationId: string,
    reason?: string,
    queue?: "keep" | "clear",
  ): Promise<CancellationAcknowledgement> {
    const store = this.store;
    const active = store.activeTurn();
    if (active && !active.controlRef)
      throw new Refusal("turn_not_ready", "the turn is still being dispatched; retry in a moment", { retryable: true });
    const target = active ?? store.lastTurn();
    if (!target?.controlRef) throw new Refusal("conversation_not_found", `no run in conversation ${conversationId}`);
    const run = target.controlRef;
    if (!store.getMeta("claims")?.cancelRun) {
      throw new Refusal(
        "capability_denied",
        "this agent environment does not claim exact run cancellation (session.cancelRun)",
        { missing: ["session.cancelRun"] },
      );
    }
    const clear = queue === "clear" ? queue : undefined;
    const requestDigest = await canonicalDigest(stripUndefined({ operationId, run, reason, queue: clear }));
    const prior = priorOperation(store.operation(operationId), "cancel", requestDigest);
    if (prior.kind === "replay") return { ...prior.ack, status: "replayed" };
    if (prior.kind === "conflict") {
      const existing =
        prior.recordedDigest === null ? {} : { existingRequestDigest: prior.recordedDigest as `sha256:${string}` };
      return { operationId, requestDigest, run, status: "conflict", effect: "unknown", ...existing };
    }
    let ack: CancellationAcknowledgement;
    const current = store.turn(target.turnId)!;
    // Cleared before the run is stopped: its end must not start the next queued turn.
    if (clear) this.queue.clear();
    if (current.status !== "running") {
      ack = { operationId, requestDigest, run, status: "accepted", effect: "not_live" };
    } else {
      this.deps.log.commit(() => store.setCancelReason(current.turnId, reason ?? "cancelled by the user"));
      try {
        const outcome = await this.deps
          .provider()
          .cancel(run, { operationId, ...(reason !== undefined ? { reason } : {}) });
        ack = { operationId, requestDigest, run, status: "accepted", effect: outcome.effect };
        // Upstream runs nothing under this ref any more: the turn must not stay running here.
        if (outcome.effect === "not_live")
          this.end.cancelled(
            current.turnId,
            `upstream says the run is not live${outcome.reason ? ` (${outcome.reason})` : ""}`,
          );
      } catch (err) {
        // Whether the run stopped is unknown: not recorded, so the same operation can be sent again,
        // and it is retryable where the failure says a repeat can succeed (a transport failure, a
        // timeout, 429, 5xx), not where upstream refused the request itself.
        const message = `the cancellation could not be confirmed: ${err instanceof Error ? err.message : String(err)}`;
        const retryable = err instanceof ProviderError && err.retryable;
        return { operationId, requestDigest, run, status: "unknown", effect: "unknown", message, retryable };
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
    this.queue.close();
    try {
      await this.stopAll(context);
    } catch (err) {
      this.queue.reopen();
      throw err;
    }
  }

  private async stopAll(context: SessionContext): Promise<void> {
    await this.quiesce();
    // The agent's terminal UI, if it drives the session, is stopped with it.
    await this.interactive.release("deleted");
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
        // Every branch's agent session goes (docs/api.md#branches), each with its own latest run, the conversation's
        // own last.
        for (const { sessionId, lastRun } of agentSessions(
          this.store,
          this.dispatcher.agentSessionId(context),
        ).reverse()) {
          await this.deps.provider().deleteSession({ environmentId, sessionId, ...(lastRun ? { lastRun } : {}) });
        }
        // And every other session upstream that still holds something (a CLI Bridge keeps one per model route).
        await this.release.releaseAll();
      } catch (err) {
        throw providerRefusal(err);
      }
    }
    // The workspace's checkpoints go too; one whose release is not proved refuses the delete (retryable).
    await this.workspace.releaseAll();
    this.stopReader();
  }

  /** The agent the conversation runs (./agent-choice.ts): its first turn's choice over the deployment's default. */
  agent(): ConversationAgent {
    return agentView(this.deps.bound() ? this.store.getMeta("agent") : null, this.deps.config());
  }

  // ------------------------------------------------------------------ the conversation index

  private async touchIndex(context: SessionContext | null, state: "idle" | "running"): Promise<void> {
    // Only a conversation that still exists here is listed (a delete may have just removed it).
    if (!context || !this.deps.bound()) return;
    const active = state === "running" ? this.store.activeTurn() : null;
    await this.deps.user.touchIndex(context, {
      title: this.store.getMeta("title") ?? context.conversationId,
      state,
      waitingFor:
        active?.status === "running"
          ? (waitingOf(this.store.outstandingOfTurn(active.turnId))?.waitingFor ?? null)
          : null,
      branch: activeBranch(this.store),
      agent: this.agent(),
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
