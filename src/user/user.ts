/**
 * One Durable Object per user: a shell that wires its rooms and answers their RPCs. The rooms:
 *  - ./environment.ts    the user's sandbox: brought up single-flight, observed, stopped, deleted;
 *  - ./conversations.ts  the conversation index and the browser streams waiting to enter it;
 *  - ./account.ts        the account's gate (the fence) and its deletion, step by step;
 *  - ./webhook-desk.ts   the user's webhook endpoints and deliveries, sent from the alarm;
 *  - ./rate-limit.ts     per-user sliding windows on turns and streams (memory only).
 * Its storage: ./store.ts (the sandbox's record, the index, spend), ./account-store.ts (the
 * sandbox's log, the deletion record, the admissions), ./webhook-store.ts (the webhook desk's
 * tables); the schema and its migrations are ./schema.ts. Methods answer domain outcomes (values
 * or Refusals).
 */
import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { captureRpc, type RpcResult } from "../errors";
import type { EnvironmentRecord } from "../providers/provider";
import type {
  CredentialView,
  InstructionsView,
  McpServerView,
  PutCredentialBody,
  PutMcpServerBody,
  TurnSecrets,
} from "../schemas/agent-settings";
import type { ConversationEntry } from "../schemas/api";
import type { AccountAnswer, AccountDeletion, EnvironmentAnswer } from "../schemas/environment";
import {
  type WebhookDeliveryView,
  type WebhookEndpointView,
  type WebhookEvent,
  WebhookEvent as WebhookEventSchema,
  type WebhookEventType,
} from "../schemas/webhooks";
import type { Spend } from "../usage/budgets";
import type { Account } from "./account";
import type { AgentSettings } from "./agent-settings";
import type { ConversationIndex } from "./conversations";
import type { UserEnvironment } from "./environment";
import { type RateLimitKind, SlidingWindow } from "./rate-limit";
import { userRooms } from "./rooms";
import type { IndexTouch } from "./store";
import type { TerminalIndex, TerminalRow } from "./terminals";

export type { TerminalRow } from "./terminals";

import type { CreateOutcome, WebhookDesk } from "./webhook-desk";

export class UserObject extends DurableObject<Env> {
  /** Requests admitted in the last minute, by kind (memory only: nothing is written per request). */
  private readonly window = new SlidingWindow();
  /** The rooms, wired over this object's storage (./rooms.ts). */
  private readonly environments: UserEnvironment;
  private readonly conversations: ConversationIndex;
  private readonly accountRoom: Account;
  private readonly webhooks: WebhookDesk;
  private readonly settings: AgentSettings;
  private readonly terminals: TerminalIndex;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ({
      environments: this.environments,
      conversations: this.conversations,
      account: this.accountRoom,
      webhooks: this.webhooks,
      settings: this.settings,
      terminals: this.terminals,
    } = userRooms(ctx, env));
    // A delivery due while the object was gone (a restart) gets its alarm back.
    ctx.blockConcurrencyWhile(() => this.webhooks.rearm());
  }

  // ------------------------------------------------------------------ the sandbox's life
  // (docs/api.md#the-sandboxs-life)

  /**
   * The user's ready environment (./environment.ts `ensure`), only for a conversation the live
   * account admitted: a session its account's deletion left behind brings up no sandbox.
   */
  async ensureEnvironment(
    ownerKey: string,
    conversationId: string,
    staleEnvironmentId?: string,
    claimMissing = false,
  ): Promise<RpcResult<EnvironmentRecord>> {
    return captureRpc(async () => {
      this.accountRoom.refuseWhileDeleting();
      this.accountRoom.refuseUnadmitted(conversationId);
      return this.environments.ensure(ownerKey, staleEnvironmentId, claimMissing);
    });
  }

  /** The user's environment for its workspace: resumed if stopped, never created (./environment.ts `existing`). */
  async existingEnvironment(ownerKey: string, staleEnvironmentId?: string): Promise<RpcResult<EnvironmentRecord>> {
    return this.unlessDeleting(() => this.environments.existing(ownerKey, staleEnvironmentId));
  }

  async environment(): Promise<EnvironmentRecord | null> {
    return this.environments.known();
  }

  /** The user's sandbox as the provider reports it, and what the gateway did to it. */
  async environmentView(): Promise<RpcResult<EnvironmentAnswer>> {
    return this.unlessDeleting(() => this.environments.view());
  }

  async stopEnvironment(): Promise<RpcResult<{ stopped: true; environmentId: string }>> {
    return this.unlessDeleting(() => this.environments.stop());
  }

  async deleteEnvironment(): Promise<RpcResult<{ deleted: true; environmentId: string | null }>> {
    return this.unlessDeleting(() => this.environments.delete());
  }

  /** Runs `fn`, refused once the account's deletion began (./account.ts). */
  private unlessDeleting<T>(fn: () => Promise<T>): Promise<RpcResult<T>> {
    return captureRpc(() => {
      this.accountRoom.refuseWhileDeleting();
      return fn();
    });
  }

  // ------------------------------------------------------------------ terminals (./terminals.ts)

  /**
   * Registers (or finds) a terminal in the user's sandbox, brought up as a turn would bring it up
   * (created if there is none, resumed if stopped); `connectionId` is used for a new registration.
   */
  async openTerminal(
    ownerKey: string,
    wanted: {
      terminalId: string;
      kind: "shell" | "agent";
      conversationId: string | null;
      connectionId: string;
      generation: number | null;
    },
    max: number,
    /** The sandbox it is in, where the caller knows it (an agent's UI: its branch's); else the user's, brought up. */
    environmentId?: string,
  ): Promise<RpcResult<{ terminal: TerminalRow; created: boolean }>> {
    return this.unlessDeleting(async () => {
      const where = environmentId ?? (await this.environments.ensure(ownerKey, undefined, false)).environmentId;
      const known = this.terminals.get(wanted.terminalId);
      // A shell keeps its connection id while its sandbox lives; an agent's UI is where its start said.
      const keep = wanted.kind === "shell" && known !== null && known.environmentId === where;
      const connectionId = keep ? known.connectionId : wanted.connectionId;
      return this.terminals.register({ ...wanted, environmentId: where, connectionId }, max, Date.now());
    });
  }

  async terminalList(): Promise<TerminalRow[]> {
    return this.terminals.list();
  }

  async terminal(terminalId: string): Promise<TerminalRow | null> {
    return this.terminals.get(terminalId);
  }

  async forgetTerminal(terminalId: string): Promise<void> {
    this.terminals.forget(terminalId);
  }

  // ------------------------------------------------------------------ rate limits (./rate-limit.ts)

  /** Admits one turn submission or stream of this user (the place it took: `at`), or says how long to wait. */
  async admit(
    kind: RateLimitKind,
    perMinute: number,
  ): Promise<{ ok: true; at: number } | { ok: false; retryAfterSeconds: number }> {
    return this.window.admit(kind, perMinute, Date.now());
  }

  /** Gives back the place an admitted request took: it turned out to do no work. */
  async releaseAdmission(kind: RateLimitKind, at: number): Promise<void> {
    this.window.release(kind, at);
  }

  // ------------------------------------------------------------------ the conversation index (./conversations.ts)

  async touchConversation(entry: IndexTouch): Promise<void> {
    this.conversations.touch(entry);
  }

  async listConversations(limit: number): Promise<ConversationEntry[]> {
    return this.conversations.list(limit);
  }

  async renameConversation(conversationId: string, title: string): Promise<ConversationEntry | null> {
    return this.conversations.rename(conversationId, title);
  }

  async knows(conversationId: string): Promise<boolean> {
    return this.conversations.knows(conversationId);
  }

  async usageElsewhere(conversationId: string): Promise<Spend> {
    return this.conversations.spendElsewhere(conversationId);
  }

  async removeConversation(conversationId: string): Promise<void> {
    this.conversations.remove(conversationId);
  }

  /** A browser stream of a conversation the user does not have yet waits here (./conversations.ts). */
  override async fetch(request: Request): Promise<Response> {
    return this.conversations.accept(request);
  }

  override async webSocketMessage(ws: WebSocket): Promise<void> {
    this.conversations.message(ws);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.conversations.close(ws, code);
  }

  // ------------------------------------------------------------------ the account (./account.ts)

  /** Admits a conversation whose session is being bound; answers how many times its id was deleted. */
  async admitConversation(conversationId: string, issuedAtSeconds: number | null): Promise<RpcResult<number>> {
    return captureRpc(() => this.accountRoom.admit(conversationId, issuedAtSeconds));
  }

  /** A first turn was refused and its session wiped: its admission goes too (unless the index lists the conversation). */
  async forgetAdmission(conversationId: string): Promise<void> {
    this.accountRoom.forgetAdmission(conversationId);
  }

  /** Whether a request of a token issued at `issuedAtSeconds` is served (`account`: GET or DELETE /v1/me). */
  async accountGate(issuedAtSeconds: number | null, account: boolean): Promise<RpcResult<null>> {
    return captureRpc(() => {
      this.accountRoom.gate(issuedAtSeconds, account);
      return null;
    });
  }

  async account(issuedAtSeconds: number | null): Promise<AccountAnswer> {
    return this.accountRoom.view(issuedAtSeconds);
  }

  async deleteAccount(userId: string, issuedAtSeconds: number | null): Promise<AccountDeletion> {
    return this.accountRoom.delete(userId, issuedAtSeconds);
  }

  /** The alarm: a deletion cut short goes on, and the webhook deliveries that are due go out. */
  override async alarm(): Promise<void> {
    await this.accountRoom.continue();
    await this.webhooks.runDue();
  }

  // ------------------------------------------------------------------ webhooks (docs/webhooks.md#webhooks,
  // ./webhook-desk.ts)

  /**
   * Records the deliveries of events a session hands over (idempotent per event); sends nothing on
   * the caller's time. Events of a conversation the live account did not admit (a session its
   * account's deletion left behind) reach none of its endpoints.
   */
  async acceptWebhookEvents(events: WebhookEvent[]): Promise<void> {
    await this.webhooks.accept(
      z
        .array(WebhookEventSchema)
        .parse(events)
        .filter((event) => this.accountRoom.admitted(event.conversationId)),
    );
  }

  /** A new endpoint, refused as at the door once the token's account is being deleted or was (checked in the step that writes it). */
  async createWebhook(
    input: { url: string; events: WebhookEventType[]; description?: string; linkOrigin: string },
    issuedAtSeconds: number | null,
  ): Promise<RpcResult<CreateOutcome>> {
    return captureRpc(() => this.webhooks.create(input, () => this.accountRoom.gate(issuedAtSeconds, false)));
  }

  async listWebhooks(): Promise<WebhookEndpointView[]> {
    return this.webhooks.list();
  }

  async getWebhook(id: string): Promise<WebhookEndpointView | null> {
    return this.webhooks.get(id);
  }

  async deleteWebhook(id: string): Promise<boolean> {
    return this.webhooks.remove(id);
  }

  async rotateWebhookSecret(
    id: string,
    graceSeconds?: number,
  ): Promise<{ endpoint: WebhookEndpointView; secret: string } | null> {
    return this.webhooks.rotate(id, graceSeconds);
  }

  async webhookDeliveries(id: string, limit: number): Promise<WebhookDeliveryView[] | null> {
    return this.webhooks.deliveries(id, limit);
  }

  /** Account deletion: every endpoint and delivery forgotten, pending ones included (idempotent). */
  async forgetWebhooks(): Promise<{ endpoints: number; deliveries: number }> {
    return this.webhooks.forgetAll();
  }

  // ------------------------------------------------------------------ the agent settings
  // (docs/api.md#bring-your-own-key): writes refused once the token's account is being deleted

  async credentials(): Promise<CredentialView[]> {
    return this.settings.credentials();
  }

  async putCredential(
    name: string,
    body: PutCredentialBody,
    issuedAtSeconds: number | null,
  ): Promise<RpcResult<CredentialView & { created: boolean }>> {
    return captureRpc(() => {
      this.accountRoom.gate(issuedAtSeconds, false);
      return this.settings.putCredential(name, body);
    });
  }

  async deleteCredential(name: string): Promise<boolean> {
    return this.settings.deleteCredential(name);
  }

  async mcpServers(): Promise<McpServerView[]> {
    return this.settings.mcpServers();
  }

  async putMcpServer(
    name: string,
    body: PutMcpServerBody,
    issuedAtSeconds: number | null,
  ): Promise<RpcResult<McpServerView & { created: boolean }>> {
    return captureRpc(() => {
      this.accountRoom.gate(issuedAtSeconds, false);
      return this.settings.putMcpServer(name, body);
    });
  }

  async deleteMcpServer(name: string): Promise<boolean> {
    return this.settings.deleteMcpServer(name);
  }

  async instructions(): Promise<InstructionsView> {
    return this.settings.instructions();
  }

  async putInstructions(text: string, issuedAtSeconds: number | null): Promise<RpcResult<InstructionsView>> {
    return captureRpc(() => {
      this.accountRoom.gate(issuedAtSeconds, false);
      return this.settings.putInstructions(text);
    });
  }

  /** A turn's named settings checked (before it is stored): each refusal names the setting. */
  async checkTurnSettings(credential: string | undefined, mcpServers: string[] | undefined): Promise<RpcResult<null>> {
    return captureRpc(() => {
      this.settings.check(credential, mcpServers);
      return null;
    });
  }

  /** For the session object's dispatch only: what the turn's settings hold, opened. Never answered to a route. */
  async openTurnSettings(
    credential: string | undefined,
    mcpServers: string[] | undefined,
  ): Promise<RpcResult<TurnSecrets>> {
    return captureRpc(() => this.settings.openForTurn(credential, mcpServers));
  }
}
