/**
 * The user's webhooks (docs/webhooks.md#webhooks), kept by the user object: endpoints (URL, events,
 * sealed signing secrets) and one delivery row per event and endpoint, which is the outbox and
 * the delivery log at once. Deliveries are made from the object's alarm, never on a turn's path:
 *  - `accept` records the deliveries of events a session handed over (idempotent per event and
 *    endpoint: a hand-off sent again records nothing new) and arms the alarm for now;
 *  - `runDue` (the alarm) takes the deliveries that are due. Before sending, each attempt is
 *    counted and its row given a check-back time (the timeout and a margin) in one commit, and the
 *    alarm armed for it, so a restart mid-attempt loses nothing: the attempt is made again at the
 *    check-back time, under the same `webhook-id` (also past the give-up time: its outcome decides);
 *  - after an attempt: delivered, given up (a 410, or no retry left before the give-up time:
 *    ../webhooks/backoff.ts), or due again at its backoff time.
 * An endpoint receives only events that happened after it was created. The signing, target
 * checks, backoff and payload are the pure modules of ../webhooks/. Its tables are made by the user
 * object's migration (./schema.ts, v8).
 */
import type { Config } from "../config";
import {
  ROTATION_GRACE_DEFAULT_SECONDS,
  type WebhookDeliveryView,
  type WebhookEndpointView,
  type WebhookEvent,
  type WebhookEventType,
} from "../schemas/webhooks";
import { planRetry, type RetryPolicy } from "../webhooks/backoff";
import { payloadOf } from "../webhooks/payload";
import { type AttemptOutcome, attemptDelivery } from "../webhooks/send";
import {
  newEndpointId,
  newSigningSecret,
  newWebhookId,
  openSecret,
  sealSecret,
  signatureHeader,
} from "../webhooks/signing";

/** How many endpoints a user may have. */
const MAX_WEBHOOK_ENDPOINTS = 10;
/** Deliveries attempted in one alarm run (the rest: at once in the next). */
const ATTEMPTS_PER_RUN = 20;
/** Pending deliveries one endpoint may have: past it, a new event's delivery is recorded given up at once. */
const MAX_PENDING_PER_ENDPOINT = 1000;
/** Finished deliveries kept in an endpoint's log. */
const LOG_KEPT_PER_ENDPOINT = 100;
/** Redirects followed per attempt, and how much of a response is read. */
const MAX_REDIRECTS = 3;
const MAX_RESPONSE_BYTES = 4096;
/** An attempt's row comes due again this long after its timeout when no outcome was recorded (the object restarted mid-attempt). */
const CHECK_BACK_MARGIN_MS = 5_000;

export interface WebhookSettings extends RetryPolicy {
  local: boolean;
  timeoutMs: number;
  /** The key that seals signing secrets at rest (the server's SESSION_ID_SECRET). */
  sealingSecret: string;
}

/** The deployment's webhook settings (docs/configuration.md#configuration). */
export function webhookSettings(config: Config): WebhookSettings {
  return {
    local: config.local,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    baseDelayMs: config.WEBHOOK_RETRY_BASE_MS,
    maxDelayMs: config.WEBHOOK_RETRY_MAX_DELAY_MS,
    giveUpAfterMs: config.WEBHOOK_GIVE_UP_AFTER_MS,
    sealingSecret: config.SESSION_ID_SECRET,
  };
}

export interface WebhookDeskDeps {
  sql: SqlStorage;
  transaction<T>(fn: () => T): T;
  alarm: { get(): Promise<number | null>; set(atMs: number): Promise<void> };
  settings(): WebhookSettings;
  fetch(url: string, init: RequestInit): Promise<Response>;
  now(): number;
  random(): number;
}

interface EndpointRow extends Record<string, SqlStorageValue> {
  id: string;
  url: string;
  events: string;
  description: string | null;
  link_origin: string;
  secret: string;
  previous_secret: string | null;
  previous_expires_at: number | null;
  secret_rotated_at: number | null;
  created_at: number;
}

interface DeliveryRow extends Record<string, SqlStorageValue> {
  webhook_id: string;
  endpoint_id: string;
  event_key: string;
  type: string;
  body: string;
  status: string;
  attempts: number;
  created_at: number;
  last_attempt_at: number | null;
  next_attempt_at: number | null;
  delivered_at: number | null;
  given_up_at: number | null;
  last_status: number | null;
  last_error: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export type CreateOutcome =
  | { ok: true; endpoint: WebhookEndpointView; secret: string }
  | { ok: false; code: "webhook_limit_reached"; message: string };

export class WebhookDesk {
  constructor(private readonly deps: WebhookDeskDeps) {}

  private get sql(): SqlStorage {
    return this.deps.sql;
  }

  private endpointRow(id: string): EndpointRow | null {
    return this.sql.exec<EndpointRow>("SELECT * FROM webhook_endpoints WHERE id = ?", id).toArray()[0] ?? null;
  }

  private view(row: EndpointRow): WebhookEndpointView {
    const now = this.deps.now();
    const previousLive = row.previous_expires_at !== null && row.previous_expires_at > now;
    return {
      id: row.id,
      url: row.url,
      events: JSON.parse(row.events) as WebhookEventType[],
      description: row.description,
      createdAt: new Date(row.created_at).toISOString(),
      secretRotatedAt: iso(row.secret_rotated_at),
      previousSecretExpiresAt: previousLive ? iso(row.previous_expires_at) : null,
    };
  }

  // ------------------------------------------------------------------ endpoints

  /**
   * A new endpoint; its secret is in this answer only. The URL was checked by the caller
   * (../webhooks/target.ts). `fence` runs in the transaction that writes it and throws to refuse
   * (the account deleted since the request began: ./account-records.ts).
   */
  async create(
    input: { url: string; events: WebhookEventType[]; description?: string; linkOrigin: string },
    fence: () => void = () => undefined,
  ): Promise<CreateOutcome> {
    const id = newEndpointId();
    const secret = newSigningSecret();
    const sealed = await sealSecret(this.deps.settings().sealingSecret, id, secret);
    const now = this.deps.now();
    const created = this.deps.transaction(() => {
      fence();
      const count = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_endpoints").one().n;
      if (count >= MAX_WEBHOOK_ENDPOINTS) return false;
      this.sql.exec(
        "INSERT INTO webhook_endpoints (id, url, events, description, link_origin, secret, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        id,
        input.url,
        JSON.stringify(input.events),
        input.description ?? null,
        input.linkOrigin,
        sealed,
        now,
      );
      return true;
    });
    if (!created)
      return {
        ok: false,
        code: "webhook_limit_reached",
        message: `a user may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first`,
      };
    return { ok: true, endpoint: this.view(this.endpointRow(id)!), secret };
  }

  list(): WebhookEndpointView[] {
    return this.sql
      .exec<EndpointRow>("SELECT * FROM webhook_endpoints ORDER BY created_at")
      .toArray()
      .map((row) => this.view(row));
  }

  get(id: string): WebhookEndpointView | null {
    const row = this.endpointRow(id);
    return row ? this.view(row) : null;
  }

  /** Deletes an endpoint and its deliveries (pending ones are never sent). */
  remove(id: string): boolean {
    return this.deps.transaction(() => {
      if (!this.endpointRow(id)) return false;
      this.sql.exec("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", id);
      this.sql.exec("DELETE FROM webhook_endpoints WHERE id = ?", id);
      return true;
    });
  }

  /**
   * A new signing secret (in this answer only). The previous one keeps signing deliveries beside
   * it for `graceSeconds` (default a day; 0: not at all); one rotated out earlier is dropped.
   */
  async rotate(
    id: string,
    graceSeconds = ROTATION_GRACE_DEFAULT_SECONDS,
  ): Promise<{ endpoint: WebhookEndpointView; secret: string } | null> {
    const row = this.endpointRow(id);
    if (!row) return null;
    const secret = newSigningSecret();
    const sealed = await sealSecret(this.deps.settings().sealingSecret, id, secret);
    const now = this.deps.now();
    const updated = this.sql.exec(
      "UPDATE webhook_endpoints SET secret = ?, previous_secret = ?, previous_expires_at = ?, secret_rotated_at = ? WHERE id = ? AND secret = ?",
      sealed,
      graceSeconds > 0 ? row.secret : null,
      graceSeconds > 0 ? now + graceSeconds * 1000 : null,
      now,
      id,
      row.secret,
    ).rowsWritten;
    // Another rotation won the race (or the endpoint went): that one's secret stands.
    if (updated === 0) return null;
    return { endpoint: this.view(this.endpointRow(id)!), secret };
  }

  /** The endpoint's delivery log, newest first; null for an endpoint the user does not have. */
  deliveries(id: string, limit: number): WebhookDeliveryView[] | null {
    if (!this.endpointRow(id)) return null;
    return this.sql
      .exec<DeliveryRow>(
        "SELECT * FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY created_at DESC, webhook_id LIMIT ?",
        id,
        limit,
      )
      .toArray()
      .map((row) => ({
        webhookId: row.webhook_id,
        type: row.type as WebhookEventType,
        status: row.status as WebhookDeliveryView["status"],
        attempts: row.attempts,
        createdAt: new Date(row.created_at).toISOString(),
        lastAttemptAt: iso(row.last_attempt_at),
        nextAttemptAt: row.status === "pending" ? iso(row.next_attempt_at) : null,
        deliveredAt: iso(row.delivered_at),
        givenUpAt: iso(row.given_up_at),
        lastStatus: row.last_status,
        lastError: row.last_error,
      }));
  }

  /**
   * Forgets every endpoint and every delivery, pending ones included (account deletion): nothing
   * is sent after this returns. Idempotent. Answers what was forgotten.
   */
  forgetAll(): { endpoints: number; deliveries: number } {
    return this.deps.transaction(() => {
      const deliveries = this.sql.exec("DELETE FROM webhook_deliveries").rowsWritten;
      const endpoints = this.sql.exec("DELETE FROM webhook_endpoints").rowsWritten;
      return { endpoints, deliveries };
    });
  }

  // ------------------------------------------------------------------ deliveries

  /** Records the deliveries of events a session handed over, then arms the alarm. Sends nothing itself. */
  async accept(events: readonly WebhookEvent[]): Promise<number> {
    const now = this.deps.now();
    const recorded = this.deps.transaction(() => {
      const endpoints = this.sql.exec<EndpointRow>("SELECT * FROM webhook_endpoints").toArray();
      let count = 0;
      for (const event of events) {
        const at = Date.parse(event.at);
        for (const endpoint of endpoints) {
          const wanted = JSON.parse(endpoint.events) as string[];
          if (!wanted.includes(event.type) || at < endpoint.created_at) continue;
          const pending = this.sql
            .exec<{ n: number }>(
              "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'pending'",
              endpoint.id,
            )
            .one().n;
          const full = pending >= MAX_PENDING_PER_ENDPOINT;
          const body = JSON.stringify(payloadOf(event, endpoint.link_origin));
          count +=
            this.sql.exec(
              `INSERT OR IGNORE INTO webhook_deliveries (webhook_id, endpoint_id, event_key, type, body, status, attempts, created_at, next_attempt_at, given_up_at, last_error)
             VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)`,
              newWebhookId(),
              endpoint.id,
              event.key,
              event.type,
              body,
              full ? "failed" : "pending",
              now,
              full ? null : now,
              full ? now : null,
              full ? `not sent: the endpoint already has ${MAX_PENDING_PER_ENDPOINT} deliveries pending` : null,
            ).rowsWritten > 0
              ? 1
              : 0;
        }
      }
      return count;
    });
    if (recorded > 0) await this.rearm();
    return recorded;
  }

  /** Whether any delivery waits (the alarm must be armed for it). */
  private earliestDue(): number | null {
    return this.sql
      .exec<{ at: number | null }>("SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'")
      .one().at;
  }

  /** Arms the alarm for the earliest pending delivery unless it is armed sooner. */
  async rearm(): Promise<void> {
    const earliest = this.earliestDue();
    if (earliest === null) return;
    const armed = await this.deps.alarm.get();
    if (armed === null || armed > earliest) await this.deps.alarm.set(earliest);
  }

  /** The alarm: the due deliveries attempted (at most ATTEMPTS_PER_RUN; the rest right after). */
  async runDue(): Promise<void> {
    const settings = this.deps.settings();
    const now = this.deps.now();
    const due = this.sql
      .exec<DeliveryRow>(
        "SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
        now,
        ATTEMPTS_PER_RUN,
      )
      .toArray();
    const attempts: Array<{ row: DeliveryRow; endpoint: EndpointRow }> = [];
    this.deps.transaction(() => {
      for (const row of due) {
        const endpoint = this.endpointRow(row.endpoint_id);
        if (!endpoint) {
          this.sql.exec("DELETE FROM webhook_deliveries WHERE webhook_id = ?", row.webhook_id);
          continue;
        }
        // A row due at its check-back time is an attempt whose outcome was never recorded (the
        // object restarted mid-attempt): it is made again, even past the give-up time, and its
        // outcome decides (a failure then gives up).
        this.sql.exec(
          "UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = ?, next_attempt_at = ? WHERE webhook_id = ?",
          now,
          now + settings.timeoutMs + CHECK_BACK_MARGIN_MS,
          row.webhook_id,
        );
        attempts.push({ row: { ...row, attempts: row.attempts + 1 }, endpoint });
      }
    });
    await this.rearm();
    const outcomes = await Promise.all(attempts.map(({ row, endpoint }) => this.attempt(row, endpoint, settings, now)));
    this.deps.transaction(() => {
      for (const [i, { row }] of attempts.entries()) this.record(row, outcomes[i]!, settings);
      for (const endpointId of new Set(attempts.map(({ endpoint }) => endpoint.id))) this.prune(endpointId);
    });
    if (due.length === ATTEMPTS_PER_RUN) await this.deps.alarm.set(this.deps.now());
    else await this.rearm();
  }

  private async attempt(
    row: DeliveryRow,
    endpoint: EndpointRow,
    settings: WebhookSettings,
    startedAt: number,
  ): Promise<AttemptOutcome> {
    let current: string;
    try {
      current = await openSecret(settings.sealingSecret, endpoint.id, endpoint.secret);
    } catch {
      return {
        kind: "failed",
        status: null,
        error: "the signing secret cannot be read (the server secret changed)",
        permanent: false,
      };
    }
    const previousLive =
      endpoint.previous_secret !== null &&
      endpoint.previous_expires_at !== null &&
      endpoint.previous_expires_at > startedAt;
    // A previous secret that cannot be read any more only loses its signature.
    const previous = previousLive
      ? await openSecret(settings.sealingSecret, endpoint.id, endpoint.previous_secret!).catch(() => null)
      : null;
    const secrets = previous === null ? [current] : [current, previous];
    const timestamp = Math.floor(startedAt / 1000);
    const headers = {
      "content-type": "application/json",
      "user-agent": "agent-chat-gateway-webhooks/1",
      "webhook-id": row.webhook_id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": await signatureHeader(secrets, row.webhook_id, timestamp, row.body),
    };
    return attemptDelivery(
      { url: endpoint.url, headers, body: row.body },
      {
        local: settings.local,
        timeoutMs: settings.timeoutMs,
        maxRedirects: MAX_REDIRECTS,
        maxResponseBytes: MAX_RESPONSE_BYTES,
        fetch: this.deps.fetch,
        now: this.deps.now,
      },
    );
  }

  private record(row: DeliveryRow, outcome: AttemptOutcome, settings: WebhookSettings): void {
    const now = this.deps.now();
    if (outcome.kind === "delivered") {
      this.sql.exec(
        "UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, next_attempt_at = NULL, last_status = ?, last_error = NULL WHERE webhook_id = ? AND status = 'pending'",
        now,
        outcome.status,
        row.webhook_id,
      );
      return;
    }
    this.sql.exec(
      "UPDATE webhook_deliveries SET last_status = ?, last_error = ? WHERE webhook_id = ?",
      outcome.status,
      outcome.error,
      row.webhook_id,
    );
    const plan = outcome.permanent
      ? ({ kind: "give_up" } as const)
      : planRetry(settings, row.created_at, row.attempts, now, this.deps.random(), outcome.retryAfterMs);
    if (plan.kind === "give_up") this.giveUp(row.webhook_id, now, outcome.error);
    else
      this.sql.exec(
        "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND status = 'pending'",
        plan.at,
        row.webhook_id,
      );
  }

  private giveUp(webhookId: string, now: number, error: string): void {
    this.sql.exec(
      "UPDATE webhook_deliveries SET status = 'failed', given_up_at = ?, next_attempt_at = NULL, last_error = ? WHERE webhook_id = ? AND status = 'pending'",
      now,
      error,
      webhookId,
    );
  }

  /** Keeps the newest LOG_KEPT_PER_ENDPOINT finished deliveries of an endpoint. */
  private prune(endpointId: string): void {
    this.sql.exec(
      `DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending' AND webhook_id NOT IN (
         SELECT webhook_id FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending' ORDER BY created_at DESC LIMIT ?)`,
      endpointId,
      endpointId,
      LOG_KEPT_PER_ENDPOINT,
    );
  }
}
