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
 * checks, backoff and payload are the pure modules of ../webhooks/. Its tables are ./webhook-store.ts's
 * (made by the user object's migration, ./schema.ts, v8).
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
import type { DeliveryRecord, EndpointRecord, WebhookStore } from "./webhook-store";

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
  store: WebhookStore;
  transaction<T>(fn: () => T): T;
  alarm: { get(): Promise<number | null>; set(atMs: number): Promise<void> };
  settings(): WebhookSettings;
  fetch(url: string, init: RequestInit): Promise<Response>;
  now(): number;
  random(): number;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export type CreateOutcome =
  | { ok: true; endpoint: WebhookEndpointView; secret: string }
  | { ok: false; code: "webhook_limit_reached"; message: string };

export class WebhookDesk {
  constructor(private readonly deps: WebhookDeskDeps) {}

  private get store(): WebhookStore {
    return this.deps.store;
  }

  private view(endpoint: EndpointRecord): WebhookEndpointView {
    const now = this.deps.now();
    const previousLive = endpoint.previousExpiresAt !== null && endpoint.previousExpiresAt > now;
    return {
      id: endpoint.id,
      url: endpoint.url,
      events: endpoint.events,
      description: endpoint.description,
      createdAt: new Date(endpoint.createdAt).toISOString(),
      secretRotatedAt: iso(endpoint.secretRotatedAt),
      previousSecretExpiresAt: previousLive ? iso(endpoint.previousExpiresAt) : null,
    };
  }

  // ------------------------------------------------------------------ endpoints

  /**
   * A new endpoint; its secret is in this answer only. The URL was checked by the caller
   * (../webhooks/target.ts). `fence` runs in the transaction that writes it and throws to refuse
   * (the account deleted since the request began: ./account.ts, the fence).
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
      if (this.store.countEndpoints() >= MAX_WEBHOOK_ENDPOINTS) return false;
      this.store.insertEndpoint({
        id,
        url: input.url,
        events: input.events,
        description: input.description ?? null,
        linkOrigin: input.linkOrigin,
        secret: sealed,
        createdAt: now,
      });
      return true;
    });
    if (!created)
      return {
        ok: false,
        code: "webhook_limit_reached",
        message: `a user may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first`,
      };
    return { ok: true, endpoint: this.view(this.store.endpoint(id)!), secret };
  }

  list(): WebhookEndpointView[] {
    return this.store.listEndpoints().map((endpoint) => this.view(endpoint));
  }

  get(id: string): WebhookEndpointView | null {
    const endpoint = this.store.endpoint(id);
    return endpoint ? this.view(endpoint) : null;
  }

  /** Deletes an endpoint and its deliveries (pending ones are never sent). */
  remove(id: string): boolean {
    return this.deps.transaction(() => {
      if (!this.store.endpoint(id)) return false;
      this.store.deleteEndpoint(id);
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
    const endpoint = this.store.endpoint(id);
    if (!endpoint) return null;
    const secret = newSigningSecret();
    const sealed = await sealSecret(this.deps.settings().sealingSecret, id, secret);
    const now = this.deps.now();
    const updated = this.store.replaceSecret(id, endpoint.secret, {
      secret: sealed,
      previousSecret: graceSeconds > 0 ? endpoint.secret : null,
      previousExpiresAt: graceSeconds > 0 ? now + graceSeconds * 1000 : null,
      rotatedAt: now,
    });
    // Another rotation won the race (or the endpoint went): that one's secret stands.
    if (!updated) return null;
    return { endpoint: this.view(this.store.endpoint(id)!), secret };
  }

  /** The endpoint's delivery log, newest first; null for an endpoint the user does not have. */
  deliveries(id: string, limit: number): WebhookDeliveryView[] | null {
    if (!this.store.endpoint(id)) return null;
    return this.store.deliveries(id, limit).map((delivery) => ({
      webhookId: delivery.webhookId,
      type: delivery.type,
      status: delivery.status,
      attempts: delivery.attempts,
      createdAt: new Date(delivery.createdAt).toISOString(),
      lastAttemptAt: iso(delivery.lastAttemptAt),
      nextAttemptAt: delivery.status === "pending" ? iso(delivery.nextAttemptAt) : null,
      deliveredAt: iso(delivery.deliveredAt),
      givenUpAt: iso(delivery.givenUpAt),
      lastStatus: delivery.lastStatus,
      lastError: delivery.lastError,
    }));
  }

  /**
   * Forgets every endpoint and every delivery, pending ones included (account deletion): nothing
   * is sent after this returns. Idempotent. Answers what was forgotten.
   */
  forgetAll(): { endpoints: number; deliveries: number } {
    return this.deps.transaction(() => this.store.deleteAll());
  }

  // ------------------------------------------------------------------ deliveries

  /** Records the deliveries of events a session handed over, then arms the alarm. Sends nothing itself. */
  async accept(events: readonly WebhookEvent[]): Promise<number> {
    const now = this.deps.now();
    const recorded = this.deps.transaction(() => {
      const endpoints = this.store.endpoints();
      let count = 0;
      for (const event of events) {
        const at = Date.parse(event.at);
        for (const endpoint of endpoints) {
          if (!endpoint.events.includes(event.type) || at < endpoint.createdAt) continue;
          const full = this.store.pendingCount(endpoint.id) >= MAX_PENDING_PER_ENDPOINT;
          const written = this.store.insertDelivery({
            webhookId: newWebhookId(),
            endpointId: endpoint.id,
            eventKey: event.key,
            type: event.type,
            body: JSON.stringify(payloadOf(event, endpoint.linkOrigin)),
            status: full ? "failed" : "pending",
            createdAt: now,
            nextAttemptAt: full ? null : now,
            givenUpAt: full ? now : null,
            lastError: full
              ? `not sent: the endpoint already has ${MAX_PENDING_PER_ENDPOINT} deliveries pending`
              : null,
          });
          if (written) count += 1;
        }
      }
      return count;
    });
    if (recorded > 0) await this.rearm();
    return recorded;
  }

  /** Arms the alarm for the earliest pending delivery unless it is armed sooner. */
  async rearm(): Promise<void> {
    const earliest = this.store.earliestDue();
    if (earliest === null) return;
    const armed = await this.deps.alarm.get();
    if (armed === null || armed > earliest) await this.deps.alarm.set(earliest);
  }

  /** The alarm: the due deliveries attempted (at most ATTEMPTS_PER_RUN; the rest right after). */
  async runDue(): Promise<void> {
    const settings = this.deps.settings();
    const now = this.deps.now();
    const due = this.store.due(now, ATTEMPTS_PER_RUN);
    const attempts: Array<{ delivery: DeliveryRecord; endpoint: EndpointRecord }> = [];
    this.deps.transaction(() => {
      for (const delivery of due) {
        const endpoint = this.store.endpoint(delivery.endpointId);
        if (!endpoint) {
          this.store.deleteDelivery(delivery.webhookId);
          continue;
        }
        // A delivery due at its check-back time is an attempt whose outcome was never recorded (the
        // object restarted mid-attempt): it is made again, even past the give-up time, and its
        // outcome decides (a failure then gives up).
        this.store.countAttempt(delivery.webhookId, now, now + settings.timeoutMs + CHECK_BACK_MARGIN_MS);
        attempts.push({ delivery: { ...delivery, attempts: delivery.attempts + 1 }, endpoint });
      }
    });
    await this.rearm();
    const outcomes = await Promise.all(
      attempts.map(({ delivery, endpoint }) => this.attempt(delivery, endpoint, settings, now)),
    );
    this.deps.transaction(() => {
      for (const [i, { delivery }] of attempts.entries()) this.record(delivery, outcomes[i]!, settings);
      // Each endpoint's log keeps its newest LOG_KEPT_PER_ENDPOINT finished deliveries.
      for (const endpointId of new Set(attempts.map(({ endpoint }) => endpoint.id)))
        this.store.prune(endpointId, LOG_KEPT_PER_ENDPOINT);
    });
    if (due.length === ATTEMPTS_PER_RUN) await this.deps.alarm.set(this.deps.now());
    else await this.rearm();
  }

  private async attempt(
    delivery: DeliveryRecord,
    endpoint: EndpointRecord,
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
      endpoint.previousSecret !== null && endpoint.previousExpiresAt !== null && endpoint.previousExpiresAt > startedAt;
    // A previous secret that cannot be read any more only loses its signature.
    const previous = previousLive
      ? await openSecret(settings.sealingSecret, endpoint.id, endpoint.previousSecret!).catch(() => null)
      : null;
    const secrets = previous === null ? [current] : [current, previous];
    const timestamp = Math.floor(startedAt / 1000);
    const headers = {
      "content-type": "application/json",
      "user-agent": "agent-chat-gateway-webhooks/1",
      "webhook-id": delivery.webhookId,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": await signatureHeader(secrets, delivery.webhookId, timestamp, delivery.body),
    };
    return attemptDelivery(
      { url: endpoint.url, headers, body: delivery.body },
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

  private record(delivery: DeliveryRecord, outcome: AttemptOutcome, settings: WebhookSettings): void {
    const now = this.deps.now();
    if (outcome.kind === "delivered") {
      this.store.markDelivered(delivery.webhookId, now, outcome.status);
      return;
    }
    this.store.recordFailure(delivery.webhookId, outcome.status, outcome.error);
    const plan = outcome.permanent
      ? ({ kind: "give_up" } as const)
      : planRetry(settings, delivery.createdAt, delivery.attempts, now, this.deps.random(), outcome.retryAfterMs);
    if (plan.kind === "give_up") this.store.giveUp(delivery.webhookId, now, outcome.error);
    else this.store.retryAt(delivery.webhookId, plan.at);
  }
}
