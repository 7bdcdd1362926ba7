/**
 * One Durable Object per user: the user's sandbox (one per user, the Sandbox sessions guide "One sandbox per user")
 * and the index of the user's conversations. Ensuring the environment is single-flight here, so
 * two conversations starting at once never race to provision. It also keeps the create ledger
 * (which create keys were sent, which bring-ups failed), so a create can prove it made the
 * sandbox it got before anything deletes it.
 */
import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { deriveSessionId } from "../auth/ids";
import { readConfig } from "../config";
import { captureRpc, Refusal, type RpcResult } from "../errors";
import { AWAIT_PATH, CLOSE_DELETED, CLOSE_KNOWN, CLOSE_PROTOCOL } from "../lib/subscription-wire";
import { createProvider } from "../providers";
import { capabilityReadDue } from "../providers/claims";
import { ProviderError } from "../providers/errors";
import type { CreateLedger, EnvironmentRecord } from "../providers/provider";
import { Provenance } from "../schemas/common";
import type { Spend } from "../usage/budgets";
import { WaitingFor } from "../schemas/api";
import type { AccountAnswer, AccountDeletion, EnvironmentAnswer } from "../schemas/environment";
import { runDeletion } from "./account-deletion";
import { ACCOUNT_TABLES_V10, ACCOUNT_TABLES_V6, AccountRecords } from "./account-records";
import { providerRefusal } from "../providers/refusal";
import { SlidingWindow, type RateLimitKind } from "./rate-limit";
import { weakest } from "../usage/usage-fold";
import { WebhookDesk, WEBHOOK_TABLES_SQL, type CreateOutcome } from "./webhook-desk";
import { WebhookEvent as WebhookEventSchema, type WebhookDeliveryView, type WebhookEndpointView, type WebhookEvent, type WebhookEventType } from "../schemas/webhooks";

/** How long after a deletion step stopped short (or began, in case this instance dies) the alarm runs it again. */
const DELETION_RETRY_MS = 30_000;

/** A ready environment checked this recently is used without another status probe. */
const TRUST_VERIFIED_MS = 30_000;

const EnvironmentRecordSchema = z.object({
  environmentId: z.string(),
  generation: z.number().int().positive(),
  capabilities: z.record(z.string(), z.unknown()).nullable(),
  capabilitiesCheckedAt: z.string().optional(),
  warnings: z.array(z.string()),
  readyAt: z.string(),
  requested: z.object({ idleTimeoutSeconds: z.number().nullable(), maxLifetimeSeconds: z.number().nullable() }).optional(),
});

export interface ConversationEntry {
  conversationId: string;
  title: string;
  state: "idle" | "running";
  /** What the running turn waits for (an ask is open), else null. */
  waitingFor: WaitingFor | null;
  /** The branch the conversation shows (README "Branches"). */
  branch: number;
  lastEventId: number;
  createdAt: string;
  updatedAt: string;
}

export class UserObject extends DurableObject<Env> {
  /** Requests admitted in the last minute, by kind (memory only: nothing is written per request). */
  private readonly window = new SlidingWindow();
  private readonly sql: SqlStorage;
  /** The provisioning under way, and whether it reads the capability document again. */
  private ensuring: { work: Promise<EnvironmentRecord>; rereads: boolean } | undefined;
  private verifiedAt = 0;
  /** The sandbox's life and the account's deletion (./account-records.ts). */
  private readonly records: AccountRecords;
  /** The deletion steps under way in this instance (one at a time: a request and the alarm share it). */
  private deleting: Promise<void> | undefined;
  /** The user's webhook endpoints and their deliveries (./webhook-desk.ts). */
  private readonly webhooks: WebhookDesk;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.migrate();
    this.records = new AccountRecords(this.sql);
    this.webhooks = new WebhookDesk({
      sql: this.sql,
      transaction: (fn) => ctx.storage.transactionSync(fn),
      alarm: { get: () => ctx.storage.getAlarm(), set: (at) => ctx.storage.setAlarm(at) },
      settings: () => {
        const config = readConfig(this.env);
        return {
          local: config.local,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          baseDelayMs: config.WEBHOOK_RETRY_BASE_MS,
          maxDelayMs: config.WEBHOOK_RETRY_MAX_DELAY_MS,
          giveUpAfterMs: config.WEBHOOK_GIVE_UP_AFTER_MS,
          sealingSecret: config.SESSION_ID_SECRET,
        };
      },
      fetch: (url, init) => fetch(url, init),
      now: () => Date.now(),
      random: () => Math.random(),
    });
    // A delivery due while the object was gone (a restart) gets its alarm back.
    ctx.blockConcurrencyWhile(() => this.webhooks.rearm());
  }

  private migrate(): void {
    this.sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    const current = this.sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0]?.version ?? 0;
    if (current >= 10) return;
    if (current < 5) this.migrateToV5(current);
    // v6 (issue 22, the sandbox's life): what the gateway did to the user's environment, and the
    // durable record of an account's deletion (./account-records.ts).
    if (current < 6) for (const statement of ACCOUNT_TABLES_V6) this.sql.exec(statement);
    // v7: the branch each conversation shows (README "Branches"); before, every one showed its only
    // line, branch 0.
    if (current < 7) this.sql.exec("ALTER TABLE conversations ADD COLUMN branch INTEGER NOT NULL DEFAULT 0");
    // v8: webhook endpoints and their deliveries (the outbox and the delivery log in one table).
    if (current < 8) this.sql.exec(WEBHOOK_TABLES_SQL);
    // v9: whether the user renamed the conversation (README "Public API", PATCH /v1/conversations/:cid):
    // a renamed title is the user's, and no touch of the session's (one in flight from before the
    // rename included) writes over it.
    if (current < 9) this.sql.exec("ALTER TABLE conversations ADD COLUMN renamed INTEGER NOT NULL DEFAULT 0");
    // v10: the conversations the live account admitted, the account deletion's fence (./account-records.ts).
    if (current < 10) for (const statement of ACCOUNT_TABLES_V10) this.sql.exec(statement);
    this.sql.exec("DELETE FROM schema_version");
    this.sql.exec("INSERT INTO schema_version (version) VALUES (10)");
  }

  private migrateToV5(current: number): void {
    if (current < 2) this.migrateToV2();
    // v3: how many times each conversation id was deleted: a conversation id used again talks to a
    // new agent session, never the old agent's memory.
    this.sql.exec("CREATE TABLE IF NOT EXISTS incarnations (conversation_id TEXT PRIMARY KEY, deletions INTEGER NOT NULL)");
    // v4: what deleted conversations spent: spend is the user's, kept when conversations go.
    this.sql.exec("CREATE TABLE IF NOT EXISTS deleted_spend (id INTEGER PRIMARY KEY CHECK (id = 1), used_tokens INTEGER NOT NULL, incomplete INTEGER NOT NULL)");
    // v5: the create ledger: the highest generation whose sandbox create was sent, and the highest
    // whose bring-up failed (a create proves it made a sandbox only under a key never sent before).
    this.sql.exec("CREATE TABLE IF NOT EXISTS create_ledger (id INTEGER PRIMARY KEY CHECK (id = 1), sent INTEGER NOT NULL, failed INTEGER NOT NULL)");
    if (current < 5) {
      // v5: where each conversation's spend comes from (measured, estimated, unknown), so a user's
      // budget says when it counts estimates. Spend recorded before was not told apart: unknown.
      this.sql.exec("ALTER TABLE conversations ADD COLUMN usage_provenance TEXT NOT NULL DEFAULT 'unknown'");
      this.sql.exec("ALTER TABLE deleted_spend ADD COLUMN provenance TEXT NOT NULL DEFAULT 'unknown'");
    }
    // v5: what each conversation's running turn waits for (an open ask), null when nothing.
    this.sql.exec("ALTER TABLE conversations ADD COLUMN waiting_for TEXT");
  }

  private migrateToV2(): void {
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS environment (id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS conversations (
        conversation_id TEXT PRIMARY KEY, title TEXT NOT NULL, state TEXT NOT NULL,
        last_event_id INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at DESC);
    `);
    // v2: what each conversation spent, for the per-user token budget.
    this.sql.exec("ALTER TABLE conversations ADD COLUMN used_tokens INTEGER NOT NULL DEFAULT 0");
    this.sql.exec("ALTER TABLE conversations ADD COLUMN usage_complete INTEGER NOT NULL DEFAULT 1");
  }

  private known(): EnvironmentRecord | null {
    const row = this.sql.exec<{ record: string }>("SELECT record FROM environment WHERE id = 1").toArray()[0];
    return row ? EnvironmentRecordSchema.parse(JSON.parse(row.record)) : null;
  }

  /**
   * The user's ready environment. `staleEnvironmentId` says a caller found that one unusable
   * (stopped or gone): it is probed again and resumed or replaced. `claimMissing` says a caller
   * lacks a claim: the capability document is read again first where `capabilityReadDue` allows
   * (README "Capabilities"), as it is once it is older than `CAPABILITIES_MAX_AGE_MS`. Only for a
   * conversation the live account admitted: a session its account's deletion left behind brings
   * up no sandbox.
   */
  async ensureEnvironment(
    ownerKey: string,
    conversationId: string,
    staleEnvironmentId?: string,
    claimMissing = false,
  ): Promise<RpcResult<EnvironmentRecord>> {
    return captureRpc(async () => {
      this.refuseWhileDeleting();
      this.refuseUnadmitted(conversationId);
      // Twice at most: a provisioning under way that does not read the document again is waited
      // for, then this call reads it if it still must.
      for (let pass = 1; ; pass++) {
        const known = this.known();
        const stale = staleEnvironmentId !== undefined && known?.environmentId === staleEnvironmentId;
        const rereads = known !== null && this.capabilityReadDue(known, claimMissing);
        if (known && !stale && !rereads && Date.now() - this.verifiedAt < TRUST_VERIFIED_MS) return known;
        if (this.ensuring && rereads && !this.ensuring.rereads && pass === 1) {
          await this.ensuring.work.catch(() => undefined);
          continue;
        }
        if (!this.ensuring) {
          const ensuring = { work: this.provision(ownerKey, known, rereads), rereads };
          this.ensuring = ensuring;
          ensuring.work
            .finally(() => {
              if (this.ensuring === ensuring) this.ensuring = undefined;
            })
            .catch(() => undefined);
        }
        return this.ensuring.work;
      }
    });
  }

  /** Whether the record's capability document is read again before it is handed out. */
  private capabilityReadDue(known: EnvironmentRecord, claimMissing: boolean): boolean {
    // None was read yet (the read failed): it is read again at every turn, and within one turn
    // once (a missing claim asks again only where the bounds allow).
    if (known.capabilities === null && !claimMissing) return true;
    const config = readConfig(this.env);
    const checkedAt = Date.parse(known.capabilitiesCheckedAt ?? known.readyAt);
    return capabilityReadDue(checkedAt, Date.now(), { maxAgeMs: config.CAPABILITIES_MAX_AGE_MS, recheckMs: config.CAPABILITIES_RECHECK_MS }, claimMissing);
  }

  private ledger(): CreateLedger {
    return this.sql.exec<{ sent: number; failed: number }>("SELECT sent, failed FROM create_ledger WHERE id = 1").toArray()[0] ?? { sent: 0, failed: 0 };
  }

  private async provision(ownerKey: string, known: EnvironmentRecord | null, rereadCapabilities: boolean): Promise<EnvironmentRecord> {
    try {
      const provider = createProvider(readConfig(this.env), this.env);
      const ledger = {
        state: this.ledger(),
        write: (next: CreateLedger) => {
          this.sql.exec(
            "INSERT INTO create_ledger (id, sent, failed) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET sent = excluded.sent, failed = excluded.failed",
            next.sent,
            next.failed,
          );
        },
      };
      const { record, outcome } = await provider.ensureEnvironment({ ownerKey, known, ledger, ...(rereadCapabilities ? { rereadCapabilities } : {}) });
      this.sql.exec(
        "INSERT INTO environment (id, record) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET record = excluded.record",
        JSON.stringify(record),
      );
      this.verifiedAt = Date.now();
      if (outcome !== "existing") {
        const replaced = known !== null && known.environmentId !== record.environmentId;
        this.records.recordAction(replaced ? "replaced" : outcome, record.environmentId, replaced ? `in place of ${known.environmentId}` : undefined);
      }
      if (outcome !== "existing" || record.warnings.length) {
        console.log(JSON.stringify({ msg: "environment ready", outcome, environmentId: record.environmentId, warnings: record.warnings }));
      }
      return record;
    } catch (err) {
      throw providerRefusal(err);
    }
  }

  /** Admits one turn submission or stream of this user (the place it took: `at`), or says how long to wait. */
  async admit(kind: RateLimitKind, perMinute: number): Promise<{ ok: true; at: number } | { ok: false; retryAfterSeconds: number }> {
    return this.window.admit(kind, perMinute, Date.now());
  }

  /** Gives back the place an admitted request took: it turned out to do no work (./rate-limit.ts). */
  async releaseAdmission(kind: RateLimitKind, at: number): Promise<void> {
    this.window.release(kind, at);
  }

  async environment(): Promise<EnvironmentRecord | null> {
    return this.known();
  }

  async touchConversation(entry: {
    conversationId: string;
    title: string;
    state: "idle" | "running";
    waitingFor: WaitingFor | null;
    branch?: number;
    lastEventId: number;
    updatedAt: number;
    usage: Spend;
  }): Promise<void> {
    // A conversation the live account did not admit (its account deleted since) is listed nowhere.
    if (!this.records.admitted(entry.conversationId)) return;
    // Touches can arrive out of order (each is its own call): one that saw less of the log than
    // the row already has is older news and changes nothing.
    this.sql.exec(
      `INSERT INTO conversations (conversation_id, title, state, waiting_for, last_event_id, created_at, updated_at, used_tokens, usage_complete, usage_provenance, branch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(conversation_id) DO UPDATE SET title = CASE WHEN conversations.renamed = 1 THEN conversations.title ELSE excluded.title END, state = excluded.state, waiting_for = excluded.waiting_for, branch = excluded.branch,
         last_event_id = excluded.last_event_id, updated_at = excluded.updated_at,
         used_tokens = excluded.used_tokens, usage_complete = excluded.usage_complete, usage_provenance = excluded.usage_provenance
       WHERE excluded.last_event_id >= conversations.last_event_id`,
      entry.conversationId,
      entry.title,
      entry.state,
      entry.waitingFor,
      entry.lastEventId,
      entry.updatedAt,
      entry.updatedAt,
      entry.usage.used,
      entry.usage.complete ? 1 : 0,
      entry.usage.provenance,
      entry.branch ?? 0,
    );
    // Streams opened before the conversation existed follow it from now on.
    this.releaseWaiting(CLOSE_KNOWN, "the conversation exists", entry.conversationId);
  }

  /**
   * A browser stream of a conversation the user does not have yet waits here (src/lib/subscription-wire.ts
   * AWAIT_PATH): a hibernatable WebSocket tagged with the conversation's id, closed with CLOSE_KNOWN
   * when the conversation enters the index, so the stream follows its first turn at once and an
   * idle tab on a new conversation costs nothing meanwhile. 204 when the conversation is known already.
   */
  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const conversationId = url.searchParams.get("conversation");
    if (url.pathname !== AWAIT_PATH || request.headers.get("upgrade")?.toLowerCase() !== "websocket" || !conversationId || conversationId.length > 128) {
      return new Response("expected a WebSocket upgrade to /await?conversation=<id>", { status: 400 });
    }
    if (await this.knows(conversationId)) return new Response(null, { status: 204 });
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server, [awaitTag(conversationId)]);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Nothing is sent on a waiting socket: a message is not this wire. */
  override async webSocketMessage(ws: WebSocket): Promise<void> {
    ws.close(CLOSE_PROTOCOL, "nothing is sent on a waiting socket");
  }

  /** The Worker closed its side (its browser left): the close is answered. */
  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
    } catch {
      // already closed
    }
  }

  /** Closes the sockets waiting for `conversationId` (all of them without one) with `code`. */
  private releaseWaiting(code: number, reason: string, conversationId?: string): void {
    for (const ws of this.ctx.getWebSockets(conversationId === undefined ? undefined : awaitTag(conversationId))) {
      try {
        ws.close(code, reason);
      } catch {
        // already closing
      }
    }
  }

  /**
   * Tokens (input + output) the user spent in every other conversation, deleted ones included: a
   * floor when any is incomplete, and as weak as the weakest provenance of any spend it counts.
   */
  async usageElsewhere(conversationId: string): Promise<Spend> {
    const row = this.sql
      .exec<{ used: number | null; incomplete: number | null }>(
        "SELECT SUM(used_tokens) AS used, SUM(usage_complete = 0) AS incomplete FROM conversations WHERE conversation_id != ?",
        conversationId,
      )
      .one();
    const kinds = this.sql
      .exec<{ provenance: string }>("SELECT DISTINCT usage_provenance AS provenance FROM conversations WHERE conversation_id != ? AND used_tokens > 0", conversationId)
      .toArray()
      .map((r) => r.provenance);
    const deleted = this.sql
      .exec<{ used_tokens: number; incomplete: number; provenance: string }>("SELECT used_tokens, incomplete, provenance FROM deleted_spend WHERE id = 1")
      .toArray()[0];
    if (deleted && deleted.used_tokens > 0) kinds.push(deleted.provenance);
    return { used: (row.used ?? 0) + (deleted?.used_tokens ?? 0), complete: !row.incomplete && !deleted?.incomplete, provenance: weakestOf(kinds) };
  }

  async removeConversation(conversationId: string): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      const spent = this.sql
        .exec<{ used_tokens: number; usage_complete: number; usage_provenance: string }>(
          "SELECT used_tokens, usage_complete, usage_provenance FROM conversations WHERE conversation_id = ?",
          conversationId,
        )
        .toArray()[0];
      if (spent) {
        const before = this.sql.exec<{ used_tokens: number; provenance: string }>("SELECT used_tokens, provenance FROM deleted_spend WHERE id = 1").toArray()[0];
        const kinds = [before && before.used_tokens > 0 ? before.provenance : null, spent.used_tokens > 0 ? spent.usage_provenance : null].filter((k) => k !== null);
        this.sql.exec(
          "INSERT INTO deleted_spend (id, used_tokens, incomplete, provenance) VALUES (1, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET used_tokens = used_tokens + excluded.used_tokens, incomplete = incomplete + excluded.incomplete, provenance = excluded.provenance",
          spent.used_tokens,
          spent.usage_complete ? 0 : 1,
          weakestOf(kinds),
        );
      }
      this.sql.exec("DELETE FROM conversations WHERE conversation_id = ?", conversationId);
      this.records.forgetAdmission(conversationId);
      this.sql.exec(
        "INSERT INTO incarnations (conversation_id, deletions) VALUES (?, 1) ON CONFLICT(conversation_id) DO UPDATE SET deletions = deletions + 1",
        conversationId,
      );
    });
  }

  /**
   * The user renamed the conversation: its listed title from now on, whatever a touch carries.
   * Answers the entry as listed, or null when the user has no such conversation.
   */
  async renameConversation(conversationId: string, title: string): Promise<ConversationEntry | null> {
    this.sql.exec("UPDATE conversations SET title = ?, renamed = 1 WHERE conversation_id = ?", title, conversationId);
    return this.entries("SELECT * FROM conversations WHERE conversation_id = ?", conversationId)[0] ?? null;
  }

  /** Whether the user has this conversation (a read of one it does not have wakes no session object). */
  async knows(conversationId: string): Promise<boolean> {
    return this.sql.exec("SELECT 1 FROM conversations WHERE conversation_id = ?", conversationId).toArray().length > 0;
  }

  /**
   * Admits a conversation whose session is being bound, for a request whose token was issued at
   * `issuedAtSeconds` (refused as the account's gate refuses that token: ./account-records.ts, the
   * fence). Answers how many times this conversation id was deleted (0 for a first use).
   */
  async admitConversation(conversationId: string, issuedAtSeconds: number | null): Promise<RpcResult<number>> {
    return captureRpc(() => {
      const gate = this.records.admit(conversationId, issuedAtSeconds);
      if (!gate.open) throw new Refusal(gate.code, gate.message);
      const row = this.sql.exec<{ deletions: number }>("SELECT deletions FROM incarnations WHERE conversation_id = ?", conversationId).toArray()[0];
      return row?.deletions ?? 0;
    });
  }

  /** A first turn was refused and its session wiped: its admission goes too (unless the index lists the conversation). */
  async forgetAdmission(conversationId: string): Promise<void> {
    this.records.forgetAdmission(conversationId, true);
  }

  // ------------------------------------------------------------------ webhooks (README "Webhooks")

  /**
   * Records the deliveries of events a session hands over (idempotent per event); sends nothing on
   * the caller's time. Events of a conversation the live account did not admit (a session its
   * account's deletion left behind) reach none of its endpoints.
   */
  async acceptWebhookEvents(events: WebhookEvent[]): Promise<void> {
    await this.webhooks.accept(z.array(WebhookEventSchema).parse(events).filter((event) => this.records.admitted(event.conversationId)));
  }

  /**
   * A new endpoint, for a request whose token was issued at `issuedAtSeconds`: refused, as at the
   * door, once that token's account is being deleted or was (checked in the step that writes it).
   */
  async createWebhook(
    input: { url: string; events: WebhookEventType[]; description?: string; linkOrigin: string },
    issuedAtSeconds: number | null,
  ): Promise<RpcResult<CreateOutcome>> {
    return captureRpc(() =>
      this.webhooks.create(input, () => {
        const gate = this.records.gate(issuedAtSeconds, false);
        if (!gate.open) throw new Refusal(gate.code, gate.message);
      }),
    );
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

  async rotateWebhookSecret(id: string, graceSeconds?: number): Promise<{ endpoint: WebhookEndpointView; secret: string } | null> {
    return this.webhooks.rotate(id, graceSeconds);
  }

  async webhookDeliveries(id: string, limit: number): Promise<WebhookDeliveryView[] | null> {
    return this.webhooks.deliveries(id, limit);
  }

  /**
   * Account deletion: forgets every webhook endpoint of the user and every delivery, pending ones
   * included, so nothing is sent after it returns. Idempotent (a resumed deletion calls it again).
   */
  async forgetWebhooks(): Promise<{ endpoints: number; deliveries: number }> {
    return this.webhooks.forgetAll();
  }

  async listConversations(limit: number): Promise<ConversationEntry[]> {
    return this.entries("SELECT * FROM conversations ORDER BY updated_at DESC LIMIT ?", limit);
  }

  /** Rows of the conversation index as listed. */
  private entries(query: string, ...bindings: (string | number)[]): ConversationEntry[] {
    return this.sql
      .exec<{ conversation_id: string; title: string; state: string; waiting_for: string | null; branch: number; last_event_id: number; created_at: number; updated_at: number }>(query, ...bindings)
      .toArray()
      .map((r) => ({
        conversationId: r.conversation_id,
        title: r.title,
        state: r.state as "idle" | "running",
        waitingFor: r.state === "running" && r.waiting_for !== null ? WaitingFor.parse(r.waiting_for) : null,
        branch: r.branch ?? 0,
        lastEventId: r.last_event_id,
        createdAt: new Date(r.created_at).toISOString(),
        updatedAt: new Date(r.updated_at).toISOString(),
      }));
  }

  // ------------------------------------------------------------------ the sandbox's life (README "The sandbox's life")

  /** Reads and turns of an account being deleted are refused from the moment its deletion began. */
  private refuseWhileDeleting(): void {
    if (this.records.pending()) throw new Refusal("account_deleting", "this account is being deleted: its conversations and sandbox can no longer be read or used");
  }

  /** A conversation the live account did not admit belongs to an account deleted since (./account-records.ts, the fence). */
  private refuseUnadmitted(conversationId: string): void {
    if (this.records.admitted(conversationId)) return;
    throw new Refusal("account_deleted", "this conversation's account was deleted; sign in again for a new, empty account");
  }

  /** Whether a request of a token issued at `issuedAtSeconds` is served (`account`: GET or DELETE /v1/me). */
  async accountGate(issuedAtSeconds: number | null, account: boolean): Promise<RpcResult<null>> {
    return captureRpc(() => {
      const gate = this.records.gate(issuedAtSeconds, account);
      if (!gate.open) throw new Refusal(gate.code, gate.message);
      return null;
    });
  }

  /** The user's sandbox as the provider reports it, and what the gateway did to it. */
  async environmentView(): Promise<RpcResult<EnvironmentAnswer>> {
    return captureRpc(async () => {
      this.refuseWhileDeleting();
      const config = readConfig(this.env);
      const provider = createProvider(config, this.env);
      const known = this.known();
      const observedAt = new Date().toISOString();
      const observation = await provider.observe(known);
      // The provider account's usage (its sandboxes, every user's) is the operator's to read, in the
      // log; no user is shown it (README "The sandbox's life").
      console.log(JSON.stringify({ msg: "provider account usage", provider: config.provider, accountUsage: observation.accountUsage }));
      return {
        provider: config.provider,
        observedAt,
        environment:
          known && observation.environment
            ? { environmentId: known.environmentId, generation: known.generation, requested: known.requested ?? null, reported: observation.environment }
            : null,
        capabilities: { ...provider.environmentControl },
        actions: this.records.actions(),
      };
    });
  }

  /** The environment as it is once a bring-up under way has ended; refused where the provider lets no user do `what`. */
  private async settledEnvironment(what: "stop" | "delete") {
    this.refuseWhileDeleting();
    const provider = createProvider(readConfig(this.env), this.env);
    if (!provider.environmentControl[what]) {
      throw new Refusal("environment_control_unsupported", `this provider's environment is shared by every user: it cannot be ${what === "stop" ? "stopped" : "deleted"} by one`);
    }
    await this.ensuring?.work.catch(() => undefined);
    return { provider, known: this.known() };
  }

  /** Stops the user's sandbox now; the next turn resumes it (its agent's memory kept). */
  async stopEnvironment(): Promise<RpcResult<{ stopped: true; environmentId: string }>> {
    return captureRpc(async () => {
      const { provider, known } = await this.settledEnvironment("stop");
      if (!known) throw new Refusal("environment_not_found", "there is no sandbox to stop: the next turn creates one");
      await provider.stopEnvironment(known).catch((err: unknown) => {
        if (err instanceof ProviderError && err.code === "environment_gone") throw new Refusal("environment_not_found", "the sandbox is gone already: the next turn creates another");
        throw providerRefusal(err);
      });
      // The next turn probes it (and resumes it) instead of trusting the last check.
      this.verifiedAt = 0;
      this.records.recordAction("stopped", known.environmentId, "the user asked");
      return { stopped: true as const, environmentId: known.environmentId };
    });
  }

  /** Deletes the user's sandbox upstream and here; the next turn creates another, its agent starting afresh. */
  async deleteEnvironment(): Promise<RpcResult<{ deleted: true; environmentId: string | null }>> {
    return captureRpc(async () => {
      const { provider, known } = await this.settledEnvironment("delete");
      if (!known) return { deleted: true as const, environmentId: null };
      await this.forgetEnvironment(provider, known);
      this.records.recordAction("deleted", known.environmentId, "the user asked");
      return { deleted: true as const, environmentId: known.environmentId };
    });
  }

  /**
   * Deletes the environment upstream, then its record. Every create key sent so far is retired
   * (the ledger's `failed`), so the next create makes a new sandbox under a key never sent,
   * rather than finding the deleted one under its old key.
   */
  private async forgetEnvironment(provider: ReturnType<typeof createProvider>, known: EnvironmentRecord): Promise<void> {
    if (provider.environmentControl.delete) {
      await provider.deleteEnvironment(known).catch((err: unknown) => {
        throw providerRefusal(err);
      });
    }
    this.ctx.storage.transactionSync(() => {
      const ledger = this.ledger();
      const retired = Math.max(ledger.sent, ledger.failed, known.generation);
      this.sql.exec("INSERT INTO create_ledger (id, sent, failed) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET sent = excluded.sent, failed = excluded.failed", retired, retired);
      this.sql.exec("DELETE FROM environment WHERE id = 1");
    });
    this.verifiedAt = 0;
  }

  // ------------------------------------------------------------------ deleting the account

  /** The account as a token issued at `issuedAtSeconds` sees it: the deletion, if one began. */
  async account(issuedAtSeconds: number | null): Promise<AccountAnswer> {
    return { deletion: this.records.deletion(issuedAtSeconds) };
  }

  /**
   * Deletes the account (./account-deletion.ts has the steps and their order): the record is
   * written first, then the steps run; one cut short is resumed by the alarm, or by calling this
   * again. Answers the deletion as it stands (`deleted`, or `deleting` with the last error).
   */
  async deleteAccount(userId: string, issuedAtSeconds: number | null): Promise<AccountDeletion> {
    this.records.begin(userId, issuedAtSeconds);
    // If this instance dies mid-way, the alarm picks the deletion up.
    await this.ctx.storage.setAlarm(Date.now() + DELETION_RETRY_MS);
    await this.continueDeletion();
    return this.records.deletion(issuedAtSeconds)!;
  }

  /** The alarm: a deletion cut short goes on, and the webhook deliveries that are due go out. */
  override async alarm(): Promise<void> {
    await this.continueDeletion();
    await this.webhooks.runDue();
  }

  /** Runs the pending deletion's steps (one run at a time); a step that fails is retried from the alarm. */
  private continueDeletion(): Promise<void> {
    this.deleting ??= this.deletionSteps().finally(() => {
      this.deleting = undefined;
    });
    return this.deleting;
  }

  private async deletionSteps(): Promise<void> {
    const pending = this.records.pending();
    // Nothing to delete: the alarm stays as it is (webhook deliveries may need it).
    if (!pending) return;
    const config = readConfig(this.env);
    const provider = createProvider(config, this.env);
    const session = async (conversationId: string) =>
      this.env.SESSIONS.get(this.env.SESSIONS.idFromName(await deriveSessionId(config.SESSION_ID_SECRET, pending.userId, conversationId)));
    try {
      await runDeletion({
        step: () => this.records.pending()?.step ?? "done",
        advance: (step) => this.records.advance(step),
        forgetWebhooks: async () => {
          await this.forgetWebhooks();
        },
        // Every admitted conversation: the listed ones, then those whose first turn is under way.
        conversations: () => [
          ...this.sql
            .exec<{ conversation_id: string }>("SELECT conversation_id FROM conversations ORDER BY created_at")
            .toArray()
            .map((r) => r.conversation_id),
          ...this.records.unlistedAdmissions(),
        ],
        closeStreams: async (cid) => {
          await (await session(cid)).closeBrowserStreams();
        },
        deleteConversation: async (cid) => {
          const answer = (await (await session(cid)).deleteConversation(cid)) as RpcResult<{ deleted: true }>;
          if (!answer.ok) {
            // A conversation its session object does not hold (a refused first turn wiped it) has only its row here.
            if (answer.refusal.code !== "conversation_not_found") throw new Error(`conversation ${cid}: ${answer.refusal.message}`);
            await this.removeConversation(cid);
          }
          this.records.countConversationDeleted();
        },
        deleteSandbox: async () => {
          await this.ensuring?.work.catch(() => undefined);
          const known = this.known();
          if (known) await this.forgetEnvironment(provider, known);
        },
        wipeIndex: () =>
          this.ctx.storage.transactionSync(() => {
            const tables = ["conversations", "admissions", "incarnations", "deleted_spend", "environment_actions", "environment"];
            for (const table of tables) this.sql.exec(`DELETE FROM ${table}`);
          }),
      });
      await this.ctx.storage.deleteAlarm();
      // Streams that waited for a conversation of this account end with it (a reconnect is told why).
      this.releaseWaiting(CLOSE_DELETED, "account deleted");
    } catch (err) {
      const message = err instanceof Refusal || err instanceof Error ? err.message : String(err);
      this.records.failed(message);
      console.error(JSON.stringify({ msg: "account deletion stopped short; the alarm resumes it", step: this.records.pending()?.step, error: message }));
      await this.ctx.storage.setAlarm(Date.now() + DELETION_RETRY_MS);
    }
  }
}

/** The tag of the sockets waiting for a conversation (at most 256 characters: ids are at most 128). */
const awaitTag = (conversationId: string) => `await:${conversationId}`;

/** The weakest of stored provenances (none: nothing was counted, which is exact); an unreadable value is unknown. */
function weakestOf(kinds: string[]): Provenance {
  return kinds.reduce<Provenance>((acc, kind) => weakest(acc, Provenance.safeParse(kind).data ?? "unknown") ?? acc, "measured");
}
