/**
 * One Durable Object per conversation session: a shell that answers the RPCs over its rooms
 * (wired in ./rooms.ts); the one rule kept here: a refused first turn leaves nothing behind. Whose
 * conversation it holds, and its store, is ./binding.ts; what it asks of its user's object
 * ./user-link.ts. Turns, the upstream reader, usage, budgets and a delete's shutdown are the turn
 * runner's; asks and answers the interaction desk's; subscription-sockets.ts holds the hibernatable
 * sockets of the Worker's browser streams, views.ts what the reads answer. Methods answer domain
 * outcomes (values or Refusals); the Worker chooses HTTP statuses.
 */

import { DurableObject } from "cloudflare:workers";
import { captureRpc, Refusal, type RpcResult } from "../errors";
import { CLOSE_DELETED, CLOSE_DROPPED, DIRECT_PATH } from "../lib/subscription-wire";
import type { EnvironmentRecord } from "../providers/provider";
import type { ConversationEntry } from "../schemas/api";
import type { RestoreAck } from "../schemas/checkpoints";
import type { CancellationAcknowledgement, InteractionAcknowledgement } from "../schemas/contracts";
import type { Attachment } from "../schemas/workspace";
import { SessionBinding } from "./binding";
import { type BranchList, type BranchSwitch, branchesOf, switchBranch } from "./branches";
import type { AnswerCommand } from "./interaction-desk";
import type { InteractiveClaim } from "./interactive";
import { SessionRooms } from "./rooms";
import type { WhenBusy } from "./send-decision";
import type { SessionContext, TurnRequest } from "./store/records";
import type { SessionStore } from "./store/store";
import type { TurnView } from "./turn-cache";
import type { SubmitOutcome } from "./turn-runner";
import { UserLink } from "./user-link";
import {
  type ConversationMessages,
  type ConversationSnapshot,
  type ConversationSummary,
  type ConversationUsage,
  chatMessagesOf,
  chatReplayOf,
  type InstanceInfo,
  instanceInfoOf,
  messagesOf,
  snapshotOf,
  summaryOf,
  turnOf,
  usageOf,
} from "./views";

export type { InteractiveClaim } from "./interactive";
export type { ConversationSnapshot, ConversationSummary } from "./views";
/** Who a conversation RPC is for: session id and owner key, derived by the Worker from the user and the conversation id. */
export type { SessionContext };

export class SessionObject extends DurableObject<Env> {
  /** Whose conversation this object holds, and its store (./binding.ts). */
  private readonly binding: SessionBinding;
  private readonly user: UserLink;
  /** The rooms, wired (./rooms.ts). */
  private readonly rooms: SessionRooms;
  /** Turn submissions under way (binding, dispatch and bookkeeping): a delete waits for them. */
  private readonly submissions = new Set<Promise<unknown>>();
  private readonly instance = crypto.randomUUID();
  private readonly startedAt = Date.now();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.binding = new SessionBinding(ctx.storage);
    this.user = new UserLink(env);
    this.rooms = new SessionRooms(ctx, env, this.binding, this.user);
    ctx.blockConcurrencyWhile(async () => this.rooms.start());
  }

  /** Runs `fn` on the conversation this object holds; refused when it holds none, before the store is touched (so creating none). */
  private held<T>(
    conversationId: string,
    fn: (context: SessionContext, store: SessionStore) => T | Promise<T>,
  ): Promise<RpcResult<T>> {
    return captureRpc(() => fn(this.binding.require(conversationId), this.binding.store));
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
      const fresh = !this.binding.session();
      try {
        // Every send, the first and every later one, is admitted by the user's object for the request's token
        // (`issuedAt`): one whose account was deleted since it began binds and writes nothing, whatever this object
        // holds by then (src/user/account.ts, the fence). Bound on first use; later, the same session only.
        this.binding.bind(context, await this.user.admit(context, issuedAt), this.rooms.log);
        return await this.rooms.runner.submit(context, turnId, request, whenBusy);
      } catch (err) {
        // A refused first turn leaves nothing behind: no conversation, no title, no summary, no admission (unless turns queued behind it).
        if (fresh && this.binding.current?.turnCount() === 0 && this.binding.current.waitingTurns().length === 0) {
          await this.binding.wipe();
          await this.user.forgetAdmission(context);
        }
        throw err;
      } finally {
        // A refused dispatch may leave the conversation free with turns queued.
        if (this.binding.current) void this.rooms.runner.queue.move();
      }
    });
    this.submissions.add(work);
    return work.finally(() => this.submissions.delete(work));
  }

  // ------------------------------------------------------------------ attachments (./store/attachments.ts)

  /**
   * How many attachments the conversation holds, before an upload. An upload may be a
   * conversation's first act: a conversation this object does not hold yet is bound and admitted
   * for the request's token (`issuedAt`) as its first turn would be, so the account's deletion
   * finds it; it is listed once a turn is sent.
   */
  async attachmentCount(context: SessionContext, issuedAt: number | null): Promise<RpcResult<number>> {
    return captureRpc(async () => {
      if (!this.binding.session()) this.binding.bind(context, await this.user.admit(context, issuedAt), this.rooms.log);
      this.binding.require(context.conversationId);
      return this.binding.store.attachments.count();
    });
  }

  /** Records an attachment its upload wrote into the workspace, while the conversation holds fewer than `max`. */
  async recordAttachment(conversationId: string, attachment: Attachment, max: number): Promise<RpcResult<Attachment>> {
    return this.held(conversationId, (_, store) => {
      // The same id again (a retried AI SDK message): the one recorded.
      const known = store.attachments.byIds([attachment.id])[0];
      if (known) return known;
      if (store.attachments.count() >= max)
        throw new Refusal("attachment_limit_reached", `the conversation holds ${max} attachments, as many as allowed`, {
          max,
        });
      store.attachments.put(attachment, Date.now());
      return attachment;
    });
  }

  async getTurn(turnId: string): Promise<RpcResult<TurnView>> {
    return captureRpc(() => {
      const view = turnOf(this.binding.current, turnId, (id) => this.rooms.runner.queue.view(id));
      // A turn that started has a checkpoint, or says why not (./workspace.ts).
      return view.status === "queued"
        ? view
        : { ...view, checkpoint: this.rooms.runner.workspace.checkpointOf(turnId) };
    });
  }

  async cancel(
    conversationId: string,
    operationId: string,
    reason?: string,
    queue?: "keep" | "clear",
  ): Promise<RpcResult<CancellationAcknowledgement>> {
    return this.held(conversationId, () => this.rooms.runner.cancel(conversationId, operationId, reason, queue));
  }

  /**
   * The sandbox a branch's files are in (absent: the active branch), brought back if it idled out:
   * its own (a workspace fork, ./workspace.ts), or null for the conversation's, the user's.
   */
  async branchEnvironment(conversationId: string, branch?: number): Promise<RpcResult<EnvironmentRecord | null>> {
    return this.held(conversationId, (context) => this.rooms.runner.branches.liveEnvironment(context, branch));
  }

  /** Undoes a turn's file changes, or redoes them (./workspace.ts), under `operationId`. */
  async restoreWorkspace(
    conversationId: string,
    turnId: string,
    direction: "undo" | "redo",
    operationId: string,
  ): Promise<RpcResult<RestoreAck>> {
    return this.held(conversationId, (context) =>
      this.rooms.runner.workspace.restore(context, turnId, direction, operationId),
    );
  }

  /** Interactive mode (./interactive.ts): the agent's own terminal UI takes the session; the claim, for the Worker's terminal. */
  async startInteractive(
    conversationId: string,
    terminalId: string,
    geometry: { cols: number; rows: number },
  ): Promise<RpcResult<InteractiveClaim>> {
    return this.held(conversationId, (context) => this.rooms.runner.interactive.start(context, terminalId, geometry));
  }

  /** Gives the session back to the chat; null when the terminal UI held nothing. */
  async releaseInteractive(conversationId: string): Promise<RpcResult<InteractiveClaim | null>> {
    return this.held(conversationId, () => this.rooms.runner.interactive.release("released"));
  }

  /** Replaces a queued turn's text before it starts. */
  async editQueued(conversationId: string, turnId: string, message: string): Promise<RpcResult<TurnView>> {
    return this.held(conversationId, () => this.rooms.runner.queue.edit(turnId, message));
  }

  /** Removes a queued turn before it starts. */
  async removeQueued(conversationId: string, turnId: string): Promise<RpcResult<TurnView>> {
    return this.held(conversationId, () => this.rooms.runner.queue.remove(turnId));
  }

  /** Removes every queued turn. */
  async clearQueue(conversationId: string): Promise<RpcResult<{ removed: string[] }>> {
    return this.held(conversationId, () => ({ removed: this.rooms.runner.queue.clear() }));
  }

  async answer(
    conversationId: string,
    interactionId: string,
    command: AnswerCommand,
  ): Promise<RpcResult<InteractionAcknowledgement>> {
    return this.held(conversationId, (context) => this.rooms.desk.answer(context, interactionId, command));
  }

  override async alarm(): Promise<void> {
    await this.rooms.alarm();
  }

  // ------------------------------------------------------------------ streams and reads

  /** A browser stream's subscription: the Worker, which holds the browser's SSE response, opens a WebSocket here, and its direct streams (./subscription-sockets.ts). */
  override async fetch(request: Request): Promise<Response> {
    if (new URL(request.url).pathname === DIRECT_PATH) return this.rooms.subscriptions.openDirect(request);
    return this.rooms.subscriptions.accept(request);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    this.rooms.subscriptions.message(ws, message);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.rooms.subscriptions.close(ws, code);
  }

  override async webSocketError(): Promise<void> {
    // The Worker's side went away; the socket is gone from getWebSockets() already.
  }

  /** Which instance answers, since when, with how many subscriptions (development and the benchmarks: a new instance means the last was evicted or hibernated). */
  async instanceInfo(): Promise<InstanceInfo> {
    const { instance, startedAt, rooms } = this;
    return instanceInfoOf(this.binding.current, {
      instance,
      startedAt,
      subscriptions: rooms.subscriptions.count(),
      ...rooms.subscriptions.directCounts(),
      commits: rooms.log.commits,
    });
  }

  /** Closes every browser stream (local development: the page must reconnect by itself). */
  async closeBrowserStreams(): Promise<number> {
    return this.rooms.subscriptions.closeAll(CLOSE_DROPPED, "dropped");
  }

  async summary(conversationId: string): Promise<RpcResult<ConversationSummary>> {
    return this.held(conversationId, (context, store) =>
      summaryOf(
        store,
        context,
        this.rooms.runner.total(),
        this.rooms.runner.queue.waiting(),
        this.rooms.runner.agent(),
      ),
    );
  }

  /** A branch's conversation (`branch` omitted: the active one). */
  async messages(conversationId: string, branch?: number): Promise<RpcResult<ConversationMessages>> {
    return this.held(conversationId, (_context, store) => messagesOf(store, conversationId, branch));
  }

  async chatMessages(conversationId: string, branch?: number): Promise<RpcResult<string>> {
    return this.held(conversationId, (_context, store) => chatMessagesOf(store, branch));
  }

  async branches(conversationId: string): Promise<RpcResult<BranchList & { conversationId: string }>> {
    return this.held(conversationId, (_context, store) => ({ conversationId, ...branchesOf(store) }));
  }

  /** Shows another branch; every stream of the conversation hears `branch.switched`. */
  async switchBranch(
    conversationId: string,
    target: { branch?: number; turnId?: string },
  ): Promise<RpcResult<BranchSwitch>> {
    return this.held(conversationId, (_context, store) => {
      const switched = switchBranch(store, this.rooms.log, target);
      // The conversation list shows the branch too.
      if (switched.branch !== switched.previous) this.rooms.runner.refreshIndex();
      return switched;
    });
  }

  /**
   * Renames the conversation: the summary's title here, then the user's list (whose entry is answered). A later
   * turn keeps it (a first message titles only a conversation without one); a failed list write is carried later.
   */
  async rename(conversationId: string, title: string): Promise<RpcResult<ConversationEntry>> {
    return this.held(conversationId, async (context, store) => {
      store.setMeta("title", title);
      const entry = await this.user.rename(context, title);
      if (!entry) throw new Refusal("conversation_not_found", `no conversation ${conversationId}`);
      return entry;
    });
  }

  async chatReplay(
    conversationId: string,
    turnId: string,
    continueAfterAsks: string[],
  ): Promise<RpcResult<string | null>> {
    return this.held(conversationId, (_context, store) => chatReplayOf(store, turnId, continueAfterAsks));
  }

  /**
   * What a page shows before it follows the stream (GET …/bootstrap): the summary, the active branch's messages, the
   * branches and the usage, read in one step, so all four are of the same last event.
   */
  async bootstrap(conversationId: string): Promise<RpcResult<ConversationSnapshot>> {
    return this.held(conversationId, (context, store) => snapshotOf(store, context, this.rooms.run()));
  }

  async usage(conversationId: string): Promise<RpcResult<ConversationUsage>> {
    return this.held(conversationId, (_context, store) =>
      usageOf(store, conversationId, this.rooms.runner.total(), this.rooms.runner.budget()),
    );
  }

  /** Deletes the conversation once a turn being sent has finished (accepted or refused): the runner shuts it down upstream, then every local record goes. */
  async deleteConversation(conversationId: string): Promise<RpcResult<{ deleted: true }>> {
    return captureRpc(async () => {
      await Promise.allSettled([...this.submissions]);
      const context = this.binding.require(conversationId);
      await this.rooms.runner.shutdown(context);
      this.rooms.subscriptions.closeAll(CLOSE_DELETED, "conversation deleted");
      await this.binding.wipe();
      await this.user.remove(context);
      return { deleted: true as const };
    });
  }
}
