/**
 * Webhooks (docs/webhooks.md#webhooks): the bodies and answers of `/v1/webhooks`, the events an endpoint
 * can subscribe to, the payload every delivery carries, and the event a session hands to its
 * user's object. The OpenAPI document is generated from these same schemas.
 */
import { z } from "zod";
import { ConversationId, Id, TurnId } from "./common";

/**
 * What an endpoint can be told about. A turn that ends is one of four: completed, failed,
 * cancelled (by a Stop), or stopped because a token budget was reached (docs/api.md#usage-and-budgets).
 */
const WEBHOOK_EVENT_TYPES = [
  "interaction.requested",
  "interaction.expired",
  "turn.completed",
  "turn.failed",
  "turn.cancelled",
  "turn.budget_stopped",
] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES).describe("An event an endpoint can subscribe to");
export type WebhookEventType = z.infer<typeof WebhookEventType>;

/** An endpoint's id, chosen by the gateway. */
export const WebhookEndpointId = z.string().regex(/^wh_[0-9a-f]{32}$/, "must be a webhook id (wh_ and 32 hex digits)");

/** The longest endpoint URL accepted. */
const WEBHOOK_URL_MAX_CHARS = 2048;

export const CreateWebhookBody = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .max(WEBHOOK_URL_MAX_CHARS)
      .describe("Where deliveries are POSTed: https (http only to a loopback address in local development)"),
    events: z
      .array(WebhookEventType)
      .min(1, "must name at least one event")
      .refine((events) => new Set(events).size === events.length, "must not name an event twice"),
    description: z.string().max(200).optional(),
  })
  .meta({ id: "CreateWebhook" });

/** Rotating the signing secret: how long the previous one still signs deliveries (default a day, at most a week). */
export const ROTATION_GRACE_DEFAULT_SECONDS = 86_400;
export const RotateWebhookSecretBody = z
  .strictObject({
    graceSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .optional()
      .describe(
        "How long deliveries are still signed with the previous secret too (0: it stops at once); default 86400",
      ),
  })
  .meta({ id: "RotateWebhookSecret" });

export const WebhookEndpointView = z
  .object({
    id: WebhookEndpointId,
    url: z.string(),
    events: z.array(WebhookEventType),
    description: z.string().nullable(),
    createdAt: z.string(),
    secretRotatedAt: z.string().nullable(),
    previousSecretExpiresAt: z
      .string()
      .nullable()
      .describe("Until then, deliveries carry a second signature made with the previous secret"),
  })
  .meta({ id: "WebhookEndpoint" });
export type WebhookEndpointView = z.infer<typeof WebhookEndpointView>;

export const WebhookSecretAnswer = WebhookEndpointView.extend({
  secret: z
    .string()
    .regex(/^whsec_/)
    .describe("The signing secret, shown only in this answer (Standard Webhooks: whsec_ and base64)"),
}).meta({ id: "WebhookWithSecret" });

export const WebhookListAnswer = z.object({ webhooks: z.array(WebhookEndpointView) }).meta({ id: "WebhookList" });

export const WebhookDeliveryView = z
  .object({
    webhookId: z.string().describe("The webhook-id header: the same on every attempt"),
    type: WebhookEventType,
    status: z
      .enum(["pending", "delivered", "failed"])
      .describe("failed: given up (no attempt succeeded before the give-up time, or the receiver answered 410)"),
    attempts: z.number().int().nonnegative(),
    createdAt: z.string(),
    lastAttemptAt: z.string().nullable(),
    nextAttemptAt: z.string().nullable(),
    deliveredAt: z.string().nullable(),
    givenUpAt: z.string().nullable(),
    lastStatus: z
      .number()
      .int()
      .nullable()
      .describe(
        "The HTTP status of the last attempt; null when it had none (refused target, timeout, connection error)",
      ),
    lastError: z.string().nullable(),
  })
  .meta({ id: "WebhookDelivery" });
export type WebhookDeliveryView = z.infer<typeof WebhookDeliveryView>;

export const WebhookDeliveriesAnswer = z
  .object({ deliveries: z.array(WebhookDeliveryView) })
  .meta({ id: "WebhookDeliveries" });

/**
 * What happened, as a session hands it to its user's object: ids, the ask's kind and title, the
 * conversation's title, the turn's status and error code. Never an answer, a message, a result
 * text, an error message, a token or a key.
 */
export const WebhookEvent = z.strictObject({
  /** Unique per user and stable across hand-off retries: the conversation's incarnation and the log seq. */
  key: z.string().min(1).max(512),
  type: WebhookEventType,
  /** When it happened (ISO 8601). */
  at: z.string(),
  conversationId: ConversationId,
  conversationTitle: z.string().max(1024),
  turnId: TurnId.nullable(),
  interactionId: Id.optional(),
  kind: z.string().max(128).optional(),
  title: z.string().max(1024).optional(),
  status: z.enum(["completed", "failed", "cancelled"]).optional(),
  errorCode: z.string().max(128).optional(),
});
export type WebhookEvent = z.infer<typeof WebhookEvent>;

/** The body of every delivery (Standard Webhooks' `type`, `timestamp`, `data`). */
export const WebhookPayload = z
  .object({
    type: WebhookEventType,
    timestamp: z.string().describe("When the event happened (not the attempt: that is webhook-timestamp)"),
    data: z.object({
      conversationId: z.string(),
      conversationTitle: z.string(),
      turnId: z.string().nullable(),
      interactionId: z.string().optional(),
      kind: z.string().optional().describe("The ask's kind: question, permission, plan, …"),
      title: z.string().optional().describe("The ask's title"),
      status: z.enum(["completed", "failed", "cancelled"]).optional(),
      errorCode: z.string().optional(),
      links: z.object({
        conversation: z.string().describe("The chat page at this conversation"),
        api: z.string().describe("The conversation's summary route"),
      }),
    }),
  })
  .meta({ id: "WebhookPayload" });
export type WebhookPayload = z.infer<typeof WebhookPayload>;
