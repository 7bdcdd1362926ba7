/**
 * Contract shapes of agent-interface (docs/contracts.md) that this project uses.
 */
import { z } from "zod";
import { Counts, Id, Sha256Digest } from "./common";

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

/** A child task's lifecycle status: `cancelled` is the caller's cancellation, distinct from `failed`. */
export const ChildTaskStatus = z.enum(["running", "completed", "failed", "cancelled"]);
export type ChildTaskStatus = z.infer<typeof ChildTaskStatus>;

/**
 * The canonical `child-task` event (docs/contracts.md): one update of a provider-native child task
 * (a subagent, a worker, a delegated task). Applied once per `sourceEventId`. Times are ISO 8601;
 * `usage` holds only the counters the provider reported (a missing one is unknown, never zero).
 */
export const ChildTaskEvent = z
  .strictObject({
    childId: z.string().min(1).describe("the child task's stable id: each update of it carries it"),
    parentChildId: z.string().min(1).optional().describe("the child task this one was started by, if any"),
    sourceEventId: z.string().min(1).describe("this exact update: a copy with the same id is not applied again"),
    status: ChildTaskStatus,
    time: z.strictObject({ started: z.string(), updated: z.string(), ended: z.string().optional() }),
    title: z.string().optional(),
    runner: z.string().optional().describe("what ran it (the agent or worker), as the provider named it"),
    model: z.string().optional().describe("the model that served it, only when the provider reported it"),
    usage: Counts.optional().describe("what it used, only the counters the provider reported"),
    terminalReason: z.string().optional().describe("why it ended, as the provider said"),
  })
  .meta({ id: "ChildTaskEvent" });
export type ChildTaskEvent = z.infer<typeof ChildTaskEvent>;
