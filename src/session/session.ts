/**
 * One Durable Object per conversation session: a shell that wires its rooms and owns only the
 * session's binding (whose conversation it is; a refused first turn leaves nothing behind). Turns,
 * the upstream reader, usage, budgets and a delete's shutdown are the turn runner's; asks and
 * answers the interaction desk's; the event log commits then publishes; subscriptions.ts holds
 * the hibernatable sockets of the Worker's browser streams, views.ts what the reads answer.
 * Methods answer domain outcomes (values or Refusals); the Worker chooses HTTP statuses.
 */
import { DurableObject } from "cloudflare:workers";
import { readConfig, type Config } from "../config";
import { captureRpc, Refusal, type RpcResult } from "../errors";
import { CLOSE_DELETED, CLOSE_DROPPED } from "../lib/subscription-wire";
import { createProvider } from "../providers";
import type { AgentProvider, EnvironmentRecord } from "../providers/provider";
import type { CancellationAcknowledgement, InteractionAcknowledgement } from "../schemas/contracts";
import { branchesOf, switchBranch } from "./branches";
import { EventLog, storeWrites } from "./event-log";
import { InteractionDesk, type AnswerCommand } from "./interaction-desk";
import { providerRefusal } from "../providers/refusal";
import { SessionStore, type SessionContext, type TurnRequest } from "./store/store";
import { SubscriptionSockets } from "./subscriptions";
import type { TurnView } from "./turn-cache";
import type { WhenBusy } from "./turn-queue";
import { TurnRunner, type SubmitOutcome } from "./turn-runner";
import type { ConversationEntry } from "../schemas/api";
import { HANDOFF_RETRY_MS, WebhookHandoff } from "./webhook-handoff";
import { chatMessagesOf, chatReplayOf, messagesOf, summaryOf, turnOf, usageOf, type ConversationMessages, type ConversationSummary, type ConversationUsage } from "./views";

export type { ConversationSummary } from "./views";
/** Who a conversation RPC is for: session id and owner key, derived by the Worker from the user and the conversation id. */
export type { SessionContext };

/** The events that end a turn (./turn-end.ts): each may let the queue move. */
const TURN_ENDS = new Set(["turn.completed", "turn.failed", "turn.cancelled"]);

export class SessionObject extends DurableObject<Env> {
  /** Null until the conversation exists: reading a conversation that does not exist stores nothing. */
  private storeInstance: SessionStore | null;
  private readonly log: EventLog;
  private readonly desk: InteractionDesk;
  private readonly runner: TurnRunner;
  private readonly subscriptions: SubscriptionSockets;
  /** Webhook events handed to the user object after their commit (./webhook-handoff.ts). */
  private readonly handoff: WebhookHandoff;
  /** Turn submissions under way (binding, dispatch and bookkeeping): a delete waits for them. */
  private readonly submissions = new Set<Promise<unknown>>();
  private providerInstance: AgentProvider | undefined;
  /**
   * The session this object is bound to, once read: written once (bind) and gone only with
   * everything else (wipe), while the upstream reader asks for it with every batch it applies.
   * Null is not kept: an unbound object reads again.
   */
  private boundMemo: SessionContext | null = null;
  private readonly instance = crypto.randomUUID();
  private readonly startedAt = Date.now();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const exists = ctx.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").toArray().length > 0;
    this.storeInstance = exists ? new SessionStore(ctx.storage.sql) : null;
    this.log = new EventLog({
      transaction: (fn) => ctx.storage.transactionSync(fn),
      ...storeWrites(
        () => this.store,
        () => this.storeInstance,
      ),
      publish: (row) => {
        this.subscriptions.publish(row);
        // A turn ended: the next queued turn may start (after this commit's events are out).
        if (TURN_ENDS.has(row.type)) queueMicrotask(() => this.runner.turnEnded());
        this.handoff.noticed(row.type);
      },
    });
    this.handoff = new WebhookHandoff({
      store: () => this.storeInstance,
      bound: () => this.boundSession(),
      handOff: (ownerKey, events) => this.userStub(ownerKey).acceptWebhookEvents(events),
      retryLater: async (at) => {
        const armed = await ctx.storage.getAlarm();
        if (armed === null || armed > at) await ctx.storage.setAlarm(at);
      },
    });
    this.subscriptions = new SubscriptionSockets({ accept: (ws) => ctx.acceptWebSocket(ws), sockets: () => ctx.getWebSockets() }, () => this.storeInstance);
    this.desk = new InteractionDesk({
      store: () => this.store,
      log: this.log,
      provider: () => this.provider,
      secret: () => this.config.SESSION_ID_SECRET,
      waitingChanged: () => this.runner.refreshIndex(),
    });
    this.runner = new TurnRunner({
      store: () => this.store,
      bound: () => this.boundSession(),
      log: this.log,
      desk: this.desk,
      provider: () => this.provider,
      config: () => this.config,
      alarms: {
        set: (at) => ctx.storage.setAlarm(at),
        // An event not yet handed over keeps the alarm, so it is handed over even if nothing wakes
        // this object; so does an agent session to release once idle (./session-release.ts).
        clear: () => {
          const handoff = this.handoff.needsAlarm() ? Date.now() + HANDOFF_RETRY_MS : null;
          const release = this.storeInstance ? this.runner.release.dueAt() : null;
          const due = [handoff, release].filter((at) => at !== null);
          return due.length > 0 ? ctx.storage.setAlarm(Math.min(...due)) : ctx.storage.deleteAlarm();
        },
      },
      environment: async (context, stale, claimMissing) => {
        // RPC typing drops the record's JSON document (unknown values); the shape is UserObject's own.
        const user = this.userStub(context.ownerKey);
        const answer = (await user.ensureEnvironment(context.ownerKey, context.conversationId, stale, claimMissing)) as unknown as RpcResult<EnvironmentRecord>;
        if (!answer.ok) throw new Refusal(answer.refusal.code, answer.refusal.message, answer.refusal.details, answer.refusal.retryAfterSeconds);
        return answer.value;
      },
      usageElsewhere: (context) => this.userStub(context.ownerKey).usageElsewhere(context.conversationId),
      touchIndex: (context, entry) => this.userStub(context.ownerKey).touchConversation({ conversationId: context.conversationId, updatedAt: Date.now(), ...entry }),
      durable: () => ctx.storage.sync(),
    });
    // One start-up path: whatever wakes this object (a request, an RPC, the alarm), a running
    // turn gets its upstream reader back before anything else runs.
    ctx.blockConcurrencyWhile(async () => {
      // Ended turns a crash left uncompacted are compacted (./turn-end.ts); never fails the start.
      if (this.storeInstance) this.runner.compactEnded();
      try {
        if (this.storeInstance) this.runner.ensureReader();
      } catch (err) {
        console.error(JSON.stringify({ msg: "could not resume the upstream reader", error: String(err) }));
      }
      // A queued turn this instance finds recorded pending and undispatched (the last one was
      // evicted mid-dispatch) is dispatched again; with nothing active, the next one starts.
      if (this.storeInstance) void this.runner.queue.move();
      try {
        this.handoff.start();
      } catch (err) {
        console.error(JSON.stringify({ msg: "could not resume the webhook hand-off", error: String(err) }));
      }
    });
  }

  /** The store, created on first write (binding a conversation). */
  private get store(): SessionStore {
    return (this.storeInstance ??= new SessionStore(this.ctx.storage.sql));
  }

  /** Forgets everything stored: the object is as if never used. */
  private async wipe(): Promise<void> {
    this.boundMemo = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.storeInstance = null;
    this.boundMemo = null;
  }

  /** The bound session (kept once read, see boundMemo), or null. */
  private boundSession(): SessionContext | null {
    return (this.boundMemo ??= this.storeInstance?.getMeta("session") ?? null);
  }

  private get config(): Config {
    return readConfig(this.env);
  }

  private get provider(): AgentProvider {
    try {
      return (this.providerInstance ??= createProvider(this.config, this.env));
    } catch (err) {
      throw providerRefusal(err);
    }
  }

  private userStub(ownerKey: string) {
    return this.env.USERS.get(this.env.USERS.idFromName(ownerKey));
  }

  /**
   * Records who this session belongs to on first use; a later call must name the same session. A
   * conversation id used again after a delete gets a new agent session upstream. Every send is
   * admitted first by the user's object for the request's token (`issuedAt`), the first and every
   * later one: a send whose account was deleted since it began binds and writes nothing, whatever
   * this object holds by then (../user/account-records.ts, the fence).
   */
  private async bind(context: SessionContext, issuedAt: number | null): Promise<void> {
    const admitted = (await this.userStub(context.ownerKey).admitConversation(context.conversationId, issuedAt)) as RpcResult<number>;
    if (!admitted.ok) throw new Refusal(admitted.refusal.code, admitted.refusal.message);
    let known = this.store.getMeta("session");
    if (!known) {
      const deletions = admitted.value;
      this.log.commit(() => {
        if (this.store.getMeta("session")) return;
        this.store.setMeta("session", context);
        this.store.setMeta("createdAt", Date.now());
        this.store.setMeta("webhooksHandedOff", 0);
        if (deletions > 0) this.store.setMeta("agentSessionId", `${context.sessionId}.${deletions}`);
      });
      known = this.store.getMeta("session")!;
    }
    if (known.sessionId !== context.sessionId || known.ownerKey !== context.ownerKey) {
      throw new Refusal("session_binding_mismatch", "this session object belongs to another session");
    }
  }

  /** The bound session, or a refusal naming the conversation. */
  private bound(conversationId: string): SessionContext {
    const context = this.boundSession();
    if (!context) throw new Refusal("conversation_not_found", `no conversation ${conversationId}`);
    return context;
  }

  /** Runs `fn` on the conversation this object holds; refused when it holds none, before the store is touched (so creating none). */
  private held<T>(conversationId: string, fn: (context: SessionContext, store: SessionStore) => T | Promise<T>): Promise<RpcResult<T>> {
    return captureRpc(() => fn(this.bound(conversationId), this.store));
  }

  // ------------------------------------------------------------------ turns

  /** `issuedAt`: the request's token's `iat` (seconds; null without one), which the user's object admits a new conversation for. */
  async submitTurn(
    context: SessionContext,
    turnId: string,
    request: TurnRequest,
    whenBusy: WhenBusy,
    issuedAt: number | null,
  ): Promise<RpcResult<SubmitOutcome>> {
    const work = captureRpc(async () => {
      const fresh = !this.boundSession();
      try {
        await this.bind(context, issuedAt);
        return await this.runner.submit(context, turnId, request, whenBusy);
      } catch (err) {
        // A refused first turn leaves nothing behind: no conversation, no title, no summary, no admission (unless turns queued behind it).
        if (fresh && this.storeInstance?.turnCount() === 0 && this.storeInstance.waitingTurns().length === 0) {
          await this.wipe();
          await this.userStub(context.ownerKey).forgetAdmission(context.conversationId);
        }
        throw err;
      } finally {
        // A refused dispatch may leave the conversation free with turns queued.
        if (this.storeInstance) void this.runner.queue.move();
      }
    });
    this.submissions.add(work);
    return work.finally(() => this.submissions.delete(work));
  }

  async getTurn(turnId: string): Promise<RpcResult<TurnView>> {
    return captureRpc(() => turnOf(this.storeInstance, turnId, (id) => this.runner.queue.view(id)));
  }

  async cancel(conversationId: string, operationId: string, reason?: string, queue?: "keep" | "clear"): Promise<RpcResult<CancellationAcknowledgement>> {
    return this.held(conversationId, () => this.runner.cancel(conversationId, operationId, reason, queue));
  }

  /** Replaces a queued turn's text before it starts. */
  async editQueued(conversationId: string, turnId: string, message: string): Promise<RpcResult<TurnView>> {
    return this.held(conversationId, () => this.runner.queue.edit(turnId, message));
  }

  /** Removes a queued turn before it starts. */
  async removeQueued(conversationId: string, turnId: string): Promise<RpcResult<TurnView>> {
    return this.held(conversationId, () => this.runner.queue.remove(turnId));
  }

  /** Removes every queued turn. */
  async clearQueue(conversationId: string): Promise<RpcResult<{ removed: string[] }>> {
    return this.held(conversationId, () => ({ removed: this.runner.queue.clear() }));
  }

  async answer(conversationId: string, interactionId: string, command: AnswerCommand): Promise<RpcResult<InteractionAcknowledgement>> {
    return this.held(conversationId, (context) => this.desk.answer(context, interactionId, command));
  }

  override async alarm(): Promise<void> {
    await this.handoff.flush();
    if (this.storeInstance) await this.runner.watchdog();
    if (this.storeInstance) {
      await this.runner.release.releaseIdle();
      await this.ringForRelease();
      void this.runner.queue.move();
    }
  }

  /** Keeps the alarm for the next idle release (./session-release.ts), unless it rings sooner for something else. */
  private async ringForRelease(): Promise<void> {
    const due = this.runner.release.dueAt();
    if (due === null) return;
    const armed = await this.ctx.storage.getAlarm();
    if (armed === null || armed > due) await this.ctx.storage.setAlarm(due);
  }

  // ------------------------------------------------------------------ streams and reads

  /** A browser stream's subscription: the Worker, which holds the browser's SSE response, opens a WebSocket here (./subscriptions.ts). */
  override async fetch(request: Request): Promise<Response> {
    return this.subscriptions.accept(request);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    this.subscriptions.message(ws, message);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.subscriptions.close(ws, code);
  }

  override async webSocketError(): Promise<void> {
    // The Worker's side went away; the socket is gone from getWebSockets() already.
  }

  /** Which instance answers, since when, with how many subscriptions (development and the benchmarks: a new instance means the last was evicted or hibernated). */
  async instanceInfo(): Promise<{ instance: string; startedAt: number; subscriptions: number; rowsWritten: number; compactionRowsWritten: number; commits: number; log: { events: number; rows: number; bytes: number }; turns: { rows: number; bytes: number } }> {
    return {
      instance: this.instance,
      startedAt: this.startedAt,
      subscriptions: this.subscriptions.count(),
      // Rows this instance wrote (a new instance starts from 0), and the log it holds.
      rowsWritten: this.storeInstance?.rowsWritten ?? 0,
      // Of those, the rows turn-end compaction wrote (each row it deletes counts).
      compactionRowsWritten: this.storeInstance?.compactionRowsWritten ?? 0,
      // Transactions this instance committed through the log (a batch of upstream frames is one).
      commits: this.log.commits,
      log: this.storeInstance?.logSize() ?? { events: 0, rows: 0, bytes: 0 },
      turns: this.storeInstance?.turnsSize() ?? { rows: 0, bytes: 0 },
    };
  }

  /** Closes every browser stream (local development: the page must reconnect by itself). */
  async closeBrowserStreams(): Promise<number> {
    return this.subscriptions.closeAll(CLOSE_DROPPED, "dropped");
  }

  async summary(conversationId: string): Promise<RpcResult<ConversationSummary>> {
    return this.held(conversationId, (context, store) => summaryOf(store, context, this.runner.total(), this.runner.queue.waiting()));
  }

  /** A branch's conversation (`branch` omitted: the active one). */
  async messages(conversationId: string, branch?: number): Promise<RpcResult<ConversationMessages>> {
    return this.held(conversationId, (_context, store) => messagesOf(store, conversationId, branch));
  }

  async chatMessages(conversationId: string, branch?: number): Promise<RpcResult<string>> {
    return this.held(conversationId, (_context, store) => chatMessagesOf(store, branch));
  }

  async branches(conversationId: string): Promise<RpcResult<ReturnType<typeof branchesOf> & { conversationId: string }>> {
    return this.held(conversationId, (_context, store) => ({ conversationId, ...branchesOf(store) }));
  }

  /** Shows another branch; every stream of the conversation hears `branch.switched`. */
  async switchBranch(conversationId: string, target: { branch?: number; turnId?: string }): Promise<RpcResult<{ branch: number; previous: number; tipTurnId: string }>> {
    return this.held(conversationId, (_context, store) => {
      const switched = switchBranch(store, this.log, target);
      // The conversation list shows the branch too.
      if (switched.branch !== switched.previous) this.runner.refreshIndex();
      return switched;
    });
  }

  /**
   * Renames the conversation: the summary's title here, then the user's list (whose entry is
   * answered). The title from the first message is set only while there is none, so a later turn
   * keeps the new one. Should the list's write fail, the next touch of the index carries the
   * new title from here.
   */
  async rename(conversationId: string, title: string): Promise<RpcResult<ConversationEntry>> {
    return this.held(conversationId, async (context, store) => {
      store.setMeta("title", title);
      const entry = await this.userStub(context.ownerKey).renameConversation(context.conversationId, title);
      if (!entry) throw new Refusal("conversation_not_found", `no conversation ${conversationId}`);
      return entry;
    });
  }

  async chatReplay(conversationId: string, turnId: string, continueAfterAsks: string[]): Promise<RpcResult<string | null>> {
    return this.held(conversationId, (_context, store) => chatReplayOf(store, turnId, continueAfterAsks));
  }

  async usage(conversationId: string): Promise<RpcResult<ConversationUsage>> {
    return this.held(conversationId, (_context, store) => usageOf(store, conversationId, this.runner.total(), this.runner.budget()));
  }

  /** Deletes the conversation once a turn being sent has finished (accepted or refused): the runner shuts it down upstream, then every local record goes. */
  async deleteConversation(conversationId: string): Promise<RpcResult<{ deleted: true }>> {
    return captureRpc(async () => {
      await Promise.allSettled([...this.submissions]);
      const context = this.bound(conversationId);
      await this.runner.shutdown(context);
      this.subscriptions.closeAll(CLOSE_DELETED, "conversation deleted");
      await this.wipe();
      await this.userStub(context.ownerKey).removeConversation(context.conversationId);
      return { deleted: true as const };
    });
  }
}
