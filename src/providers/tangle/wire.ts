/**
 * The Sandbox HTTP API (docs/sandbox-wire.md): what the Tangle client sends and reads, and what
 * the emulator serves. Upstream objects are loose (a newer deployment may add fields); the fields
 * we rely on are checked.
 */
import { z } from "zod";
import { InteractionRequest, RequestedInteractions } from "../../schemas/contracts";

export const Sandbox = z.looseObject({
  id: z.string().min(1),
  name: z.string().optional(),
  /** pending, provisioning, running, stopped, failed, expired, deleted; anything else is not running. */
  status: z.string(),
  connection: z.looseObject({ runtimeUrl: z.string().optional(), authToken: z.string().optional() }).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  createdAt: z.string().optional(),
  startedAt: z.string().optional(),
  lastActivityAt: z.string().optional(),
  expiresAt: z.string().optional(),
  error: z.unknown().optional(),
  /** `transitioning` or `ready`; any other value is not ready (and is named when the wait fails). */
  filesystemIncarnationReadiness: z.string().optional(),
});
export type Sandbox = z.infer<typeof Sandbox>;

/** A backend (create and per turn). `model` is the object agent-provider-tangle's "Per-turn backend options" shows, never a bare string. */
export const BackendConfig = z.strictObject({
  type: z.string().min(1).max(64),
  model: z
    .strictObject({
      provider: z.string().max(128).optional(),
      model: z.string().max(256).optional(),
      authMode: z.string().max(64).optional(),
      apiKey: z.string().optional(),
      authFiles: z
        .array(z.strictObject({ path: z.string(), content: z.string(), mode: z.number().int().optional() }))
        .optional(),
      /** The endpoint a session credential's key is sent to (agent-provider-tangle, named model credentials). */
      baseUrl: z.string().optional(),
      /** A named model credential: the secret the Sandbox holds (listed in the create's `secrets`), never its value. */
      apiKeyEnv: z.string().optional(),
    })
    .optional(),
  profile: z.unknown().optional(),
  interactions: RequestedInteractions.optional(),
  /** Runtime MCP attachments (agent-provider-tangle: `backend.runtimeAttachments`), apart from the profile. */
  runtimeAttachments: z
    .array(
      z.strictObject({
        type: z.literal("mcp"),
        name: z.string(),
        url: z.string(),
        headers: z.record(z.string(), z.string()).optional(),
      }),
    )
    .optional(),
});
export type BackendConfig = z.infer<typeof BackendConfig>;

// ---- Event frames (docs/sandbox-wire.md §4) ----

const MessagePart = z.looseObject({
  id: z.string().min(1),
  type: z.string().min(1),
  text: z.string().optional(),
  tool: z.string().optional(),
  state: z
    .looseObject({
      status: z.enum(["pending", "running", "completed", "error"]),
      input: z.unknown().optional(),
      output: z.unknown().optional(),
      error: z.unknown().optional(),
    })
    .optional(),
});

const WireTokenUsage = z.looseObject({
  inputTokens: z.number().optional(),
  outputTokens: z.number().optional(),
  reasoningTokens: z.number().optional(),
  cacheReadInputTokens: z.number().optional(),
  cacheCreationInputTokens: z.number().optional(),
  cost: z.number().optional(),
});

const WIRE_STATUSES = [
  "queued",
  "started",
  "running",
  "processing",
  "completed",
  "success",
  "failed",
  "error",
  "cancelled",
  // Waiting for a person: not terminal.
  "awaiting_question",
  "awaiting_plan_decision",
  "blocked_on_approval",
] as const;

/** A status that says the run waits for a person: `blocked_on_approval`, or any `awaiting_*` (a kind newer than the list above too). */
export function isWaitStatus(status: unknown): boolean {
  return typeof status === "string" && (status === "blocked_on_approval" || /^awaiting_[a-z0-9_]+$/.test(status));
}

/** Each known frame type's data schema. Unknown types pass through as JSON objects (agent-interface: new variants arrive). */
/** A time on the wire: epoch milliseconds, or a date string. */
const WireTime = z.union([
  z.number().int().nonnegative(),
  z.string().refine((t) => !Number.isNaN(Date.parse(t)), "not a date"),
]);

/** The longest child or update id kept (each update's id is remembered while its run is read). */
const CHILD_ID_MAX = 512;

/**
 * One update of a child task (a subagent, a worker, a delegated task) [ours]: the canonical
 * `child-task` event's fields (docs/contracts.md). A `child-task` frame is this; a `subtask`
 * part that carries a `childId` is this too, the part's id beside it. `status` is read in
 * ./child-tasks.ts; `usage` is a TokenUsage, whose counters are read one by one.
 */
export const ChildTaskUpdate = z.looseObject({
  childId: z.string().min(1).max(CHILD_ID_MAX),
  parentChildId: z.string().min(1).max(CHILD_ID_MAX).optional(),
  sourceEventId: z.string().min(1).max(CHILD_ID_MAX),
  status: z.string().min(1),
  time: z.looseObject({ started: WireTime, updated: WireTime, ended: WireTime.optional() }),
  title: z.string().optional(),
  runner: z.string().optional(),
  model: z.string().optional(),
  usage: z.unknown().optional(),
  terminalReason: z.string().optional(),
});

export const FrameDataSchemas = {
  "connection.established": z.looseObject({}),
  "execution.started": z.looseObject({
    executionId: z.string().min(1),
    sessionId: z.string().min(1),
    turnId: z.string().optional(),
    alreadyExisted: z.boolean().optional(),
  }),
  status: z.looseObject({
    status: z.union([z.enum(WIRE_STATUSES), z.string().refine(isWaitStatus, "not a known status")]),
    detail: z.unknown().optional(),
  }),
  "message.part.updated": z.looseObject({ part: MessagePart, delta: z.string().optional() }),
  "session.updated": z.looseObject({ sessionId: z.string(), title: z.string().optional() }),
  "tool-heartbeat": z.looseObject({}),
  "tool-slow": z.looseObject({}),
  "model-processing": z.looseObject({}),
  warning: z.looseObject({ code: z.string().optional(), message: z.string().optional() }),
  interaction: z.looseObject({ request: InteractionRequest }),
  "interaction.cancel": z.looseObject({ id: z.string().min(1), reason: z.string().optional() }),
  "plan.submitted": z.looseObject({
    plan: z.looseObject({
      id: z.string(),
      revision: z.number().int().min(1),
      title: z.string().optional(),
      body: z.string(),
      submittedAt: z.string(),
    }),
  }),
  raw: z.looseObject({ backend: z.string(), event: z.unknown() }),
  result: z.looseObject({
    finalText: z.string().optional(),
    tokenUsage: WireTokenUsage.optional(),
    totalCostUsd: z.number().optional(),
    sessionId: z.string().optional(),
    executionId: z.string().optional(),
    status: z.string().optional(),
    error: z.unknown().optional(),
  }),
  done: z.looseObject({ tokenUsage: WireTokenUsage.optional(), totalCostUsd: z.number().optional() }),
  error: z.looseObject({ message: z.string(), code: z.string().optional() }),
  "session.run.failed": z.looseObject({
    error: z
      .union([z.string(), z.looseObject({ message: z.string().optional(), code: z.string().optional() })])
      .optional(),
    message: z.string().optional(),
  }),
  "native.session.observed": z.looseObject({ provider: z.string(), nativeSessionId: z.string() }),
  "child-task": ChildTaskUpdate,
} as const;

export type KnownFrameType = keyof typeof FrameDataSchemas;

// ---- Session state, results, capabilities ----

export const PromptResult = z
  .looseObject({
    success: z.boolean(),
    status: z.enum([
      "success",
      "failed",
      "cancelled",
      "blocked_on_approval",
      "awaiting_question",
      "awaiting_plan_decision",
    ]),
    durationMs: z.number().nonnegative(),
    executionId: z.string(),
    response: z.string().optional(),
    error: z.string().optional(),
    errorCode: z.string().optional(),
    usage: WireTokenUsage.optional(),
    costUsd: z.number().optional(),
  })
  .refine((r) => r.success === (r.status === "success"), 'success must equal status === "success"');
export type PromptResult = z.infer<typeof PromptResult>;

/** The session's outstanding asks (§3): each read on its own, so one this client cannot read does not hide the others. */
export const InteractionsResponse = z.looseObject({ data: z.looseObject({ interactions: z.array(z.unknown()) }) });

/** An answer's acknowledgement body; older deployments answer 2xx with no body of note. */
export const AnswerResponse = z.looseObject({ data: z.looseObject({ status: z.string().optional() }).optional() });

const AbortAnswer = z.looseObject({
  cancelled: z.boolean(),
  reason: z.string().optional(),
  noopReason: z.string().optional(),
});
/** `{ data: { cancelled, reason? } }`, or flat `{ cancelled, noopReason? }`: read both. */
export const AbortResponse = z.union([z.looseObject({ data: AbortAnswer }).transform((v) => v.data), AbortAnswer]);

const SessionStateInner = z.looseObject({
  state: z.string(),
  activeExecutionId: z.string().nullish(),
  latestExecutionId: z.string().nullish(),
});
/** `{ data: { session } }`, or the inner object flat on older deployments. */
export const SessionStateResponse = z.union([
  z.looseObject({ data: z.looseObject({ session: SessionStateInner }) }).transform((v) => v.data.session),
  SessionStateInner,
]);

/**
 * A deployment flag (sandbox-wire §6): only `true` is a claim. A missing flag, or one whose value
 * is not a boolean, is unknown, and is read as absent rather than failing the document.
 */
const Flag = z.boolean().optional().catch(undefined);
/** A group of flags; a missing group, or one that is not an object, gates off only its own flags. */
const FlagGroup = <T extends Record<string, typeof Flag>>(flags: T) => z.looseObject(flags).optional().catch(undefined);
/**
 * The capability document (`GET …/runtime/capabilities`). Only `schema: 1` is required: a document
 * of another schema is one this client cannot read, and claims nothing (agent-provider-tangle, "Two capability
 * documents"). Each absent or unreadable group or flag drops only the claims it gates; fields this
 * client does not read (`agentInterface`, `image`, a newer group) are ignored.
 */
export const SandboxCapabilities = z.looseObject({
  schema: z.literal(1),
  dispatch: FlagGroup({ runControlRef: Flag, executionIdOnAdmission: Flag }),
  cancel: FlagGroup({ canonicalRunCancellation: Flag, digestBound: Flag, idempotent: Flag }),
  runs: FlagGroup({ executionScopedStatus: Flag, eventReplay: Flag }),
  interactions: FlagGroup({ responseDedupe: Flag }),
  // The agent's own terminal UI (interactive mode; §12): claimed only with all six.
  interactiveAgent: FlagGroup({
    start: Flag,
    status: Flag,
    attach: Flag,
    control: Flag,
    sendPrompt: Flag,
    stop: Flag,
  }),
});
export type SandboxCapabilities = z.infer<typeof SandboxCapabilities>;

const ForkedSession = z.looseObject({ id: z.string().min(1) });
/** A fork's answer [ours]: `{ data: { session: { id } } }`, or `{ session: { id } }` as the SDK returns it. */
export const ForkResponse = z.union([
  z.looseObject({ data: z.looseObject({ session: ForkedSession }) }).transform((v) => v.data.session),
  z.looseObject({ session: ForkedSession }).transform((v) => v.session),
]);
