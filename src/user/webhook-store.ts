/**
 * The user object's webhook tables (the schema is ./schema.ts, v8): `webhook_endpoints` (URL,
 * events, the sealed signing secrets) and `webhook_deliveries` (one row per event and endpoint:
 * the outbox and the delivery log at once). Typed records in and out; the rules (sealing, what is
 * due, attempts, pruning, rotation) are ./webhook-desk.ts's. What belongs together is written in
 * one transaction by the caller.
 */
import type { WebhookDeliveryView, WebhookEventType } from "../schemas/webhooks";

/** An endpoint as stored: its secrets sealed (../webhooks/signing.ts), its times in ms. */
export interface EndpointRecord {
  id: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  /** The origin links in its payloads point at. */
  linkOrigin: string;
  secret: string;
  /** The secret rotated out, signing beside the current one until `previousExpiresAt`. */
  previousSecret: string | null;
  previousExpiresAt: number | null;
  secretRotatedAt: number | null;
  createdAt: number;
}

/** A new endpoint: it has no previous secret and was never rotated. */
export type NewEndpoint = Omit<EndpointRecord, "previousSecret" | "previousExpiresAt" | "secretRotatedAt">;

/** A delivery of one event to one endpoint, as stored (times in ms). */
export interface DeliveryRecord {
  webhookId: string;
  endpointId: string;
  eventKey: string;
  type: WebhookEventType;
  /** The exact body sent on every attempt. */
  body: string;
  status: WebhookDeliveryView["status"];
  attempts: number;
  createdAt: number;
  lastAttemptAt: number | null;
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  givenUpAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
}

/** A new delivery: no attempt made yet. */
export type NewDelivery = Pick<
  DeliveryRecord,
  | "webhookId"
  | "endpointId"
  | "eventKey"
  | "type"
  | "body"
  | "status"
  | "createdAt"
  | "nextAttemptAt"
  | "givenUpAt"
  | "lastError"
>;

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

function toEndpoint(row: EndpointRow): EndpointRecord {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as WebhookEventType[],
    description: row.description,
    linkOrigin: row.link_origin,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousExpiresAt: row.previous_expires_at,
    secretRotatedAt: row.secret_rotated_at,
    createdAt: row.created_at,
  };
}

function toDelivery(row: DeliveryRow): DeliveryRecord {
  return {
    webhookId: row.webhook_id,
    endpointId: row.endpoint_id,
    eventKey: row.event_key,
    type: row.type as WebhookEventType,
    body: row.body,
    status: row.status as WebhookDeliveryView["status"],
    attempts: row.attempts,
    createdAt: row.created_at,
    lastAttemptAt: row.last_attempt_at,
    nextAttemptAt: row.next_attempt_at,
    deliveredAt: row.delivered_at,
    givenUpAt: row.given_up_at,
    lastStatus: row.last_status,
    lastError: row.last_error,
  };
}

export class WebhookStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  // ------------------------------------------------------------------ endpoints

  endpoint(id: string): EndpointRecord | null {
    const row = this.sql.exec<EndpointRow>("SELECT * FROM webhook_endpoints WHERE id = ?", id).toArray()[0];
    return row ? toEndpoint(row) : null;
  }

  /** Every endpoint, oldest first. */
  listEndpoints(): EndpointRecord[] {
    return this.sql.exec<EndpointRow>("SELECT * FROM webhook_endpoints ORDER BY created_at").toArray().map(toEndpoint);
  }

  /** Every endpoint, in no particular order. */
  endpoints(): EndpointRecord[] {
    return this.sql.exec<EndpointRow>("SELECT * FROM webhook_endpoints").toArray().map(toEndpoint);
  }

  countEndpoints(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_endpoints").one().n;
  }

  insertEndpoint(endpoint: NewEndpoint): void {
    this.sql.exec(
      "INSERT INTO webhook_endpoints (id, url, events, description, link_origin, secret, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      endpoint.id,
      endpoint.url,
      JSON.stringify(endpoint.events),
      endpoint.description,
      endpoint.linkOrigin,
      endpoint.secret,
      endpoint.createdAt,
    );
  }

  /** Deletes an endpoint and its deliveries. Inside the caller's transaction. */
  deleteEndpoint(id: string): void {
    this.sql.exec("DELETE FROM webhook_deliveries WHERE endpoint_id = ?", id);
    this.sql.exec("DELETE FROM webhook_endpoints WHERE id = ?", id);
  }

  /**
   * Writes an endpoint's new secrets if its current secret is still `expected` (sealed); answers
   * whether it wrote (false: the secret changed since it was read, or the endpoint went).
   */
  replaceSecret(
    id: string,
    expected: string,
    next: Pick<EndpointRecord, "secret" | "previousSecret" | "previousExpiresAt"> & { rotatedAt: number },
  ): boolean {
    return (
      this.sql.exec(
        "UPDATE webhook_endpoints SET secret = ?, previous_secret = ?, previous_expires_at = ?, secret_rotated_at = ? WHERE id = ? AND secret = ?",
        next.secret,
        next.previousSecret,
        next.previousExpiresAt,
        next.rotatedAt,
        id,
        expected,
      ).rowsWritten > 0
    );
  }

  /** Deletes every endpoint and every delivery; answers how many rows of each. Inside the caller's transaction. */
  deleteAll(): { endpoints: number; deliveries: number } {
    const deliveries = this.sql.exec("DELETE FROM webhook_deliveries").rowsWritten;
    const endpoints = this.sql.exec("DELETE FROM webhook_endpoints").rowsWritten;
    return { endpoints, deliveries };
  }

  // ------------------------------------------------------------------ deliveries

  /** An endpoint's deliveries, newest first. */
  deliveries(endpointId: string, limit: number): DeliveryRecord[] {
    return this.sql
      .exec<DeliveryRow>(
        "SELECT * FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY created_at DESC, webhook_id LIMIT ?",
        endpointId,
        limit,
      )
      .toArray()
      .map(toDelivery);
  }

  pendingCount(endpointId: string): number {
    return this.sql
      .exec<{ n: number }>(
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'pending'",
        endpointId,
      )
      .one().n;
  }

  /** Records a delivery with no attempt made; answers false when the endpoint has one of the event already. */
  insertDelivery(delivery: NewDelivery): boolean {
    return (
      this.sql.exec(
        `INSERT OR IGNORE INTO webhook_deliveries (webhook_id, endpoint_id, event_key, type, body, status, attempts, created_at, next_attempt_at, given_up_at, last_error)
             VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)`,
        delivery.webhookId,
        delivery.endpointId,
        delivery.eventKey,
        delivery.type,
        delivery.body,
        delivery.status,
        delivery.createdAt,
        delivery.nextAttemptAt,
        delivery.givenUpAt,
        delivery.lastError,
      ).rowsWritten > 0
    );
  }

  /** When the earliest pending delivery is due (null: none pending). */
  earliestDue(): number | null {
    return this.sql
      .exec<{ at: number | null }>("SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE status = 'pending'")
      .one().at;
  }

  /** Pending deliveries due at `now`, the earliest first, at most `limit`. */
  due(now: number, limit: number): DeliveryRecord[] {
    return this.sql
      .exec<DeliveryRow>(
        "SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
        now,
        limit,
      )
      .toArray()
      .map(toDelivery);
  }

  deleteDelivery(webhookId: string): void {
    this.sql.exec("DELETE FROM webhook_deliveries WHERE webhook_id = ?", webhookId);
  }

  /** Counts an attempt begun at `at`; the delivery comes due again at `checkBackAt` unless its outcome is recorded. */
  countAttempt(webhookId: string, at: number, checkBackAt: number): void {
    this.sql.exec(
      "UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = ?, next_attempt_at = ? WHERE webhook_id = ?",
      at,
      checkBackAt,
      webhookId,
    );
  }

  /** A pending delivery delivered at `at`, the receiver's status kept. */
  markDelivered(webhookId: string, at: number, status: number): void {
    this.sql.exec(
      "UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, next_attempt_at = NULL, last_status = ?, last_error = NULL WHERE webhook_id = ? AND status = 'pending'",
      at,
      status,
      webhookId,
    );
  }

  /** The last attempt's failure: its status (null: none) and error. */
  recordFailure(webhookId: string, status: number | null, error: string): void {
    this.sql.exec(
      "UPDATE webhook_deliveries SET last_status = ?, last_error = ? WHERE webhook_id = ?",
      status,
      error,
      webhookId,
    );
  }

  /** A pending delivery comes due again at `at`. */
  retryAt(webhookId: string, at: number): void {
    this.sql.exec(
      "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND status = 'pending'",
      at,
      webhookId,
    );
  }

  /** A pending delivery given up at `at`, with why. */
  giveUp(webhookId: string, at: number, error: string): void {
    this.sql.exec(
      "UPDATE webhook_deliveries SET status = 'failed', given_up_at = ?, next_attempt_at = NULL, last_error = ? WHERE webhook_id = ? AND status = 'pending'",
      at,
      error,
      webhookId,
    );
  }

  /** Deletes an endpoint's finished deliveries but the newest `kept`. */
  prune(endpointId: string, kept: number): void {
    this.sql.exec(
      `DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending' AND webhook_id NOT IN (
         SELECT webhook_id FROM webhook_deliveries WHERE endpoint_id = ? AND status != 'pending' ORDER BY created_at DESC LIMIT ?)`,
      endpointId,
      endpointId,
      kept,
    );
  }
}
