/**
 * The emulator's own reading of the Sandbox HTTP API (docs/sandbox-wire.md), written from the doc
 * and not from the client: what it accepts (strict request bodies) and what it answers (response
 * shapes), and its SSE frame writer.
 *
 * Request bodies are strict: a field the doc does not name is refused with 400, so a client that
 * puts a field in the wrong place finds out here, not in production. Response shapes are the
 * emulator's promise about its answers (the tests parse its answers with them).
 */
import { z } from "zod";

// ------------------------------------------------------------------ requests

/** §2 create: `backend?: { type, model?, profile? }` [wire]; the doc leaves model's type open. */
const BackendBody = z.strictObject({
  type: z.string().min(1),
  model: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
  profile: z.unknown().optional(),
});

/** §2 `POST /v1/sandboxes` [wire]. */
export const CreateSandboxBody = z.strictObject({
  name: z.string().optional(),
  image: z.string().optional(),
  git: z.strictObject({ url: z.string().min(1), ref: z.string().optional() }).optional(),
  backend: BackendBody.optional(),
  env: z.record(z.string(), z.string()).optional(),
  resources: z
    .strictObject({ cpuCores: z.number().optional(), memoryMB: z.number().optional(), diskGB: z.number().optional() })
    .optional(),
  maxLifetimeSeconds: z.number().int().positive().optional(),
  idleTimeoutSeconds: z.number().int().positive().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  secrets: z.array(z.string()).optional(),
  idempotencyKey: z.string().min(1).optional(),
  /** §10 a workspace fork: the new sandbox's files a copy of this snapshot's [wire]; the sandbox it was taken of [sdk]. */
  fromSnapshot: z.string().min(1).optional(),
  fromSandboxId: z.string().min(1).optional(),
});
export type CreateSandboxBody = z.infer<typeof CreateSandboxBody>;

/** A turn's interaction posture (§3 `interactions` [ours]): kind → enabled. */
const InteractionPosture = z.record(z.string(), z.boolean());

/** A dispatch's backend: the create's, plus the turn's interaction posture where a deployment reads it there [ours]. */
const RunBackendBody = BackendBody.extend({
  interactions: InteractionPosture.optional(),
  /** Runtime MCP attachments (agent-provider-tangle: `backend.runtimeAttachments`) [ours shape]. */
  runtimeAttachments: z
    .array(
      z.strictObject({
        type: z.literal("mcp"),
        name: z.string().min(1),
        url: z.string().min(1),
        headers: z.record(z.string(), z.string()).optional(),
      }),
    )
    .optional(),
});

/** `backend.model` as an object (variant `backendModel: "object"`): `{ provider?, model }`. */
export const BackendModelObject = z.looseObject({ provider: z.string().min(1).optional(), model: z.string().min(1) });

/** §6 the exact run a dispatch asks for (`dispatch.runControlRef`) [ours]: strictly these five names. */
const RunControlRef = z.strictObject({
  runId: z.string().min(1),
  provider: z.string().min(1),
  environmentId: z.string().min(1),
  sessionId: z.string().min(1),
  executionId: z.string().min(1),
});

/**
 * §3 `POST …/agents/run/stream`: `{ message, parts?, sessionId, turnId?, executionId?, detach?,
 * backend?, interactions?, runControlRef? }` (message, parts, sessionId, backend [wire]; the rest
 * [ours]). The posture is accepted both at the top level and in `backend`; which one is read is a
 * variant (`interactionsAt`).
 */
export const RunStreamBody = z.strictObject({
  message: z.string(),
  parts: z
    .array(
      z.union([
        z.strictObject({ type: z.literal("text"), text: z.string() }),
        // A file already in the workspace, named as the AI SDK names one [ours] (§10, a prompt's image part).
        z.strictObject({
          type: z.literal("file"),
          mediaType: z.string().min(1),
          filename: z.string().optional(),
          url: z.string().startsWith("file://"),
        }),
      ]),
    )
    .optional(),
  sessionId: z.string().min(1),
  turnId: z.string().min(1).optional(),
  executionId: z.string().min(1).optional(),
  detach: z.boolean().optional(),
  backend: RunBackendBody.optional(),
  interactions: InteractionPosture.optional(),
  runControlRef: RunControlRef.optional(),
});
export type RunStreamBody = z.infer<typeof RunStreamBody>;

/** The same body when the requested execution id travels only in `X-Execution-ID` (variant). */
export const RunStreamBodyHeaderId = RunStreamBody.omit({ executionId: true });

/** §3 abort: `{}` on the wire [wire]; an `executionId` naming the run to stop [ours]. Nothing else. */
export const AbortBody = z.strictObject({ executionId: z.string().min(1).optional() });

/** §3 fork a session [ours]: the run whose answer is the last message copied, and the new session's id. */
export const ForkBody = z.strictObject({ messageId: z.string().min(1), sessionId: z.string().min(1).max(512) });

/** §3 answer an interaction [wire]. */
export const InteractionAnswerBody = z.strictObject({
  id: z.string().min(1),
  outcome: z.enum(["accepted", "declined", "cancelled"]),
  data: z.record(z.string(), z.unknown()).optional(),
});

/** §3 plan decision [ours]: `{}` to approve, `{ feedback }` to reject. */
export const PlanApproveBody = z.strictObject({});
export const PlanRejectBody = z.strictObject({ feedback: z.string() });

// ------------------------------------------------------------------ answers

const SandboxStatus = z.enum(["pending", "provisioning", "running", "stopped", "failed", "expired", "deleted"]);

/**
 * §2 sandbox object [wire] (the emulator serves no connection); the create's limits and the
 * resources given are [ours] (variant `sandboxLifecycle`).
 */
export const SandboxView = z.strictObject({
  id: z.string().min(1),
  name: z.string().optional(),
  status: SandboxStatus,
  metadata: z.record(z.string(), z.unknown()).optional(),
  createdAt: z.string(),
  startedAt: z.string().optional(),
  lastActivityAt: z.string().optional(),
  expiresAt: z.string().optional(),
  idleTimeoutSeconds: z.number().int().positive().optional(),
  maxLifetimeSeconds: z.number().int().positive().optional(),
  resources: z
    .strictObject({ cpuCores: z.number().optional(), memoryMB: z.number().optional(), diskGB: z.number().optional() })
    .optional(),
  /** `"warming"` is the unlisted value of variant `readiness: "unknown-value"`. */
  filesystemIncarnationReadiness: z.enum(["transitioning", "ready", "warming"]),
  error: z.string().optional(),
});
export type SandboxView = z.infer<typeof SandboxView>;

/** §2 the account's usage [ours] (the SDK's `client.usage()`): no ceiling is left out, never 0. */
export const AccountUsageView = z.strictObject({
  activeSandboxes: z.number().int().nonnegative(),
  concurrentSandboxLimit: z.number().int().positive().optional(),
});
export type AccountUsageView = z.infer<typeof AccountUsageView>;

export const SandboxListView = z.strictObject({ sandboxes: z.array(SandboxView) });

/** §3 session state, inner object. */
export const SessionStateInner = z.strictObject({
  state: z.enum(["running", "idle"]),
  activeExecutionId: z.string().optional(),
  latestExecutionId: z.string().optional(),
});
export type SessionStateInner = z.infer<typeof SessionStateInner>;

/** §5 PromptResult [sdk]. */
export const PromptResultView = z
  .strictObject({
    success: z.boolean(),
    status: z.string(),
    durationMs: z.number().nonnegative(),
    executionId: z.string(),
    response: z.string().optional(),
    error: z.string().optional(),
    errorCode: z.string().optional(),
    usage: z.record(z.string(), z.unknown()).optional(),
    costUsd: z.number().optional(),
  })
  .refine((r) => r.success === (r.status === "success"), 'success must equal status === "success"');
export type PromptResultView = z.infer<typeof PromptResultView>;

/** §6 capability document [wire]. */
export const CapabilityDocument = z.looseObject({
  schema: z.literal(1),
  agentInterface: z.string().optional(),
  sidecarVersion: z.string().optional(),
  dispatch: z.record(z.string(), z.boolean()),
  cancel: z.record(z.string(), z.boolean()),
  runs: z.record(z.string(), z.boolean()),
  interactions: z.record(z.string(), z.boolean()),
});

/** §4 `execution.started` data (`dispatched` and the run's `status`: variant `dispatched: "receipt"`). */
export const ExecutionStartedData = z.strictObject({
  executionId: z.string().min(1),
  sessionId: z.string().min(1).optional(),
  turnId: z.string().optional(),
  alreadyExisted: z.boolean().optional(),
  dispatched: z.boolean().optional(),
  status: z.enum(["running", "completed", "failed", "cancelled"]).optional(),
});

/** §1 error bodies: sidecar `{ error: { code, message } }`, control plane `{ error: "text", code? }`. */
export const SidecarErrorBody = z.strictObject({ error: z.looseObject({ code: z.string(), message: z.string() }) });
export const ControlPlaneErrorBody = z.looseObject({ error: z.string(), code: z.string() });

// ------------------------------------------------------------------ SSE

export type FieldOrder = "id-first" | "data-first";

export interface WireFrame {
  event: string;
  /** Omitted for frames that carry nothing of the run (admission on attach, connection.established). */
  id?: number;
  /** The frame's JSON text, exactly as stored (a corrupt-frame fault may make it not JSON). */
  data: string;
}

/**
 * Writes one SSE frame: `event:`, `id:`, `data:` (id-first) or `data:` before them (data-first).
 * Data of several lines goes as one `data:` line each; a JSON text (every frame but a corrupt one)
 * has no line break and goes as it is, not split (a part's frame carries its whole text so far).
 */
export function sseFrame(frame: WireFrame, order: FieldOrder): string {
  const data =
    frame.data.includes("\n") || frame.data.includes("\r")
      ? frame.data
          .split(/\r\n|\r|\n/)
          .map((line) => `data: ${line}\n`)
          .join("")
      : `data: ${frame.data}\n`;
  const event = `event: ${frame.event}\n`;
  const id = frame.id === undefined ? "" : `id: ${frame.id}\n`;
  return order === "data-first" ? `${data}${event}${id}\n` : `${event}${id}${data}\n`;
}

export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
};
