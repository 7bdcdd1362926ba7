/**
 * Contract shapes of agent-interface (docs/contracts.md) that this project uses.
 */
import { z } from "zod";
import { Id, Sha256Digest } from "./common";

const AgentRunControlRef = z.strictObject({
  runId: Id,
  provider: Id,
  environmentId: Id,
  sessionId: Id.optional(),
  executionId: Id.optional(),
  requestDigest: Sha256Digest.optional(),
});

/** The exact form names the session, execution and the admission digest. */
export const AgentExactRunControlRef = AgentRunControlRef.extend({
  sessionId: Id,
  executionId: Id,
  requestDigest: Sha256Digest,
});
export type AgentExactRunControlRef = z.infer<typeof AgentExactRunControlRef>;

export const RequestedInteractions = z
  .record(
    z.string().regex(/^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/, "must be a kind such as question or vendor.kind"),
    z.boolean(),
  )
  .refine((r) => Object.keys(r).length <= 256, "at most 256 kinds");
export type RequestedInteractions = z.infer<typeof RequestedInteractions>;

const FieldBase = {
  name: z.string().min(1).max(128),
  label: z.string().max(512).optional(),
  description: z.string().max(4096).optional(),
  required: z.boolean().optional(),
};

export const InteractionField = z.discriminatedUnion("type", [
  z.looseObject({
    ...FieldBase,
    type: z.literal("text"),
    multiline: z.boolean().optional(),
    maxLength: z.number().int().positive().optional(),
  }),
  z.looseObject({
    ...FieldBase,
    type: z.literal("number"),
    min: z.number().optional(),
    max: z.number().optional(),
    integer: z.boolean().optional(),
  }),
  z.looseObject({ ...FieldBase, type: z.literal("boolean") }),
  z.looseObject({
    ...FieldBase,
    type: z.literal("select"),
    options: z.array(z.union([z.string(), z.looseObject({ value: z.string(), label: z.string().optional() })])).min(1),
    multi: z.boolean().optional(),
    allowCustom: z.boolean().optional(),
  }),
  z.looseObject({ ...FieldBase, type: z.literal("secret") }),
]);
export type InteractionField = z.infer<typeof InteractionField>;

const InteractionBinding = z.looseObject({
  runId: Id,
  provider: Id,
  environmentId: Id,
  sessionId: Id,
  executionId: Id,
  interactionId: Id,
});

export const InteractionRequest = z.looseObject({
  id: Id,
  kind: z.string().min(1).max(128),
  title: z.string().max(1024),
  body: z.string().optional(),
  subject: z.unknown().optional(),
  answerSpec: z.looseObject({ fields: z.array(InteractionField) }),
  responseScopes: z.array(z.string()).optional(),
  allowedOutcomes: z.array(z.enum(["accepted", "declined", "cancelled"])).optional(),
  default: z.unknown().optional(),
  timeoutMs: z.number().int().positive().optional(),
  onTimeout: z.string().optional(),
  binding: InteractionBinding.optional(),
  requestDigest: Sha256Digest.optional(),
});
export type InteractionRequest = z.infer<typeof InteractionRequest>;

/** contracts.md Cancellation: the acknowledgement of one cancel operation. */
export const CancellationAcknowledgement = z.strictObject({
  operationId: Id,
  requestDigest: Sha256Digest,
  run: AgentExactRunControlRef,
  status: z.enum(["accepted", "replayed", "conflict", "unknown"]),
  effect: z.enum(["cancel_requested", "cancelled", "not_live", "unknown"]),
  message: z.string().optional(),
  retryable: z.boolean().optional(),
  existingRequestDigest: Sha256Digest.optional(),
});
export type CancellationAcknowledgement = z.infer<typeof CancellationAcknowledgement>;

/** contracts.md Interactions: the acknowledgement of one answer. Never carries the answer or a hash of it. */
export const InteractionAcknowledgement = z.strictObject({
  operationId: Id,
  binding: InteractionBinding,
  commandDigest: Sha256Digest,
  status: z.enum([
    "accepted",
    "already_resolved_same",
    "already_resolved_different",
    "expired",
    "cancelled",
    "unknown_interaction",
    "unknown_run",
    "binding_mismatch",
    "invalid_response",
    "transport_failure",
  ]),
  message: z.string().optional(),
  retryable: z.boolean().optional(),
});
export type InteractionAcknowledgement = z.infer<typeof InteractionAcknowledgement>;
