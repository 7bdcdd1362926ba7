/**
 * Sandbox SSE frames → provider events (docs/sandbox-wire.md §4). Pure.
 *
 * Every frame is validated on arrival. An invalid frame is never a crash and never dropped in
 * silence: it becomes a `warning` event that names the problem, under the frame's own id, so the
 * cursor still advances past it. Usage is read here too: OpenCode steps (`raw` step_finish, or a
 * `step-finish` part with tokens) are delta reports keyed by their part id, converted to the
 * receipt's convention; `result` and `done` carry the authoritative receipt.
 *
 * Provenance: step and receipt token counts are measured (agent-provider-tangle, "Environment observation": the usage an execution
 * measured). Whether a cost (a step's `cost`, `totalCostUsd`) is billed spend or a catalog price
 * the Sandbox wire does not say (docs/sandbox-wire.md "Token usage on the wire"), so a cost is of
 * unknown provenance. Neither the steps nor the receipt name the model that served the run: the
 * served model is unknown, never the requested one.
 */
import type { SseFrame } from "../../lib/sse";
import type { Counts } from "../../schemas/common";
import type { ProviderEvent, ReceiptProvenance, ShownEvent, UsageReport } from "../provider";
import { childTaskOf, isChildTaskPart } from "./child-tasks";
import { isCost, isCount, receiptCounts } from "./counts";
import { FrameDataSchemas, type KnownFrameType } from "./wire";

export const MAX_FRAME_BYTES = 1024 * 1024;

const STATUS_MAP: Record<string, "started" | "processing" | "completed" | "failed" | "cancelled"> = {
  queued: "started",
  started: "started",
  running: "processing",
  processing: "processing",
  completed: "completed",
  success: "completed",
  failed: "failed",
  error: "failed",
  cancelled: "cancelled",
  awaiting_question: "processing",
  awaiting_plan_decision: "processing",
  blocked_on_approval: "processing",
};

function warning(upstreamId: string | undefined, code: string, message: string): ProviderEvent {
  return { kind: "warning", upstreamId, code, message };
}

function isKnown(type: string): type is KnownFrameType {
  return Object.hasOwn(FrameDataSchemas, type);
}

/**
 * Whether a frame's serialized size in UTF-8 bytes (event name, id and data) passes `bound`, as
 * agent-provider-tangle bounds it. A UTF-16 code unit is 1 to 3 UTF-8 bytes, so the string lengths
 * decide every frame but those between a third of the bound and the bound, which alone are encoded
 * (encoding every frame cost a buffer the size of its data, whole part texts included).
 */
function exceedsBytes({ data = "", event = "", id = "" }: SseFrame, bound: number): boolean {
  const units = data.length + event.length + id.length;
  if (units * 3 <= bound) return false;
  if (units > bound) return true;
  const encoder = new TextEncoder();
  return encoder.encode(data).length + encoder.encode(event).length + encoder.encode(id).length > bound;
}

/** Token counts measured; a cost of unknown provenance (see the header). */
export const SANDBOX_PROVENANCE = {
  provenance: "measured",
  costProvenance: "unknown",
} as const satisfies ReceiptProvenance;

/**
 * One OpenCode step's counts in the receipt's convention: input includes cache reads and writes,
 * output includes reasoning (`tokens.input` is the uncached part only). A step that lacks input
 * or output reports neither (unknown); a negative or non-integer count is a problem.
 */
function stepReport(partId: string, part: Record<string, unknown>): UsageReport {
  const base = { mode: "delta" as const, ...SANDBOX_PROVENANCE, key: partId };
  const tokens = part.tokens;
  if (typeof tokens !== "object" || tokens === null) return { ...base, counts: {} };
  const t = tokens as {
    input?: unknown;
    output?: unknown;
    reasoning?: unknown;
    cache?: { read?: unknown; write?: unknown };
  };
  const cache = (typeof t.cache === "object" && t.cache !== null ? t.cache : {}) as { read?: unknown; write?: unknown };
  for (const [name, value] of [
    ["input", t.input],
    ["output", t.output],
    ["reasoning", t.reasoning],
    ["cache.read", cache.read],
    ["cache.write", cache.write],
  ] as const) {
    if (value !== undefined && !isCount(value))
      return { ...base, counts: {}, problem: `step ${partId}: token count ${name} is not a non-negative integer` };
  }
  if (part.cost !== undefined && !isCost(part.cost))
    return { ...base, counts: {}, problem: `step ${partId}: cost is not a finite non-negative number` };
  if (t.input === undefined || t.output === undefined) return { ...base, counts: {} };
  const reasoning = (t.reasoning as number | undefined) ?? 0;
  const read = (cache.read as number | undefined) ?? 0;
  const write = (cache.write as number | undefined) ?? 0;
  const counts: Counts = {
    inputTokens: (t.input as number) + read + write,
    outputTokens: (t.output as number) + reasoning,
  };
  if (t.reasoning !== undefined) counts.reasoningTokens = reasoning;
  if (cache.read !== undefined) counts.cacheReadInputTokens = read;
  if (cache.write !== undefined) counts.cacheCreationInputTokens = write;
  if (part.cost !== undefined) counts.cost = part.cost as number;
  return { ...base, counts };
}

/** The step a frame reports, if it is one (a `raw` step_finish, or a `step-finish` part with tokens). */
function stepOf(type: string, data: Record<string, unknown>): { partId: string; part: Record<string, unknown> } | null {
  if (type === "raw") {
    const inner = data.event as { type?: unknown; part?: { id?: unknown } } | undefined;
    if (inner?.type === "step_finish" && typeof inner.part?.id === "string")
      return { partId: inner.part.id, part: inner.part as Record<string, unknown> };
    return null;
  }
  if (type === "message.part.updated") {
    const part = data.part as { id?: unknown; type?: unknown; tokens?: unknown } | undefined;
    if (part?.type === "step-finish" && typeof part.id === "string" && part.tokens !== undefined)
      return { partId: part.id, part: part as Record<string, unknown> };
  }
  return null;
}

function terminalReceipt(data: Record<string, unknown>): { receipt?: Counts; receiptProvenance?: ReceiptProvenance } {
  const counts = receiptCounts(data.tokenUsage, data.totalCostUsd);
  // A receipt that reports no counter says nothing about usage.
  return Object.keys(counts).length > 0 ? { receipt: counts, receiptProvenance: SANDBOX_PROVENANCE } : {};
}

/** A child task's update (./child-tasks.ts), or the warning that names why the frame is none. */
function childTask(upstreamId: string | undefined, type: string, data: Record<string, unknown>): ProviderEvent {
  const read = childTaskOf(data);
  if ("task" in read) return { kind: "child-task", upstreamId, task: read.task };
  return warning(
    upstreamId,
    "invalid_upstream_frame",
    `upstream frame ${upstreamId ?? "(no id)"} (${type}) is not a child task's update: ${read.problem}`,
  );
}

/**
 * Normalizes one parsed SSE frame. Answers undefined for frames that carry nothing of the run
 * (comments, keep-alives, `connection.established`).
 */
export function normalizeFrame(frame: SseFrame, options: { requireId: boolean }): ProviderEvent | undefined {
  const upstreamId = frame.id === "" ? undefined : frame.id;
  const type = frame.event ?? "message";
  if (frame.tooLarge || exceedsBytes(frame, MAX_FRAME_BYTES)) {
    return warning(
      upstreamId,
      "frame_too_large",
      `upstream frame ${upstreamId ?? "(no id)"} (${type}) exceeds ${MAX_FRAME_BYTES} bytes and was refused`,
    );
  }
  if (frame.data === undefined) return undefined;
  if (type === "connection.established") return undefined;
  if (options.requireId && upstreamId === undefined) {
    return warning(undefined, "frame_without_id", `upstream frame (${type}) carried no id on an exact replay`);
  }
  let data: unknown;
  try {
    data = JSON.parse(frame.data);
  } catch {
    return warning(
      upstreamId,
      "invalid_upstream_frame",
      `upstream frame ${upstreamId ?? "(no id)"} (${type}) is not JSON`,
    );
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return warning(
      upstreamId,
      "invalid_upstream_frame",
      `upstream frame ${upstreamId ?? "(no id)"} (${type}) is not a JSON object`,
    );
  }
  if (!isKnown(type)) {
    // A variant newer than this gateway: pass it through unchanged.
    return { kind: "passthrough", upstreamId, shown: { type, data: data as Record<string, unknown> } };
  }
  const parsed = FrameDataSchemas[type].safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join(".") : "data";
    return warning(
      upstreamId,
      "invalid_upstream_frame",
      `upstream frame ${upstreamId ?? "(no id)"} (${type}) is invalid at ${where}: ${issue?.message ?? "invalid"}`,
    );
  }
  const valid = parsed.data as Record<string, unknown>;
  const shown: ShownEvent = { type, data: valid };
  const step = stepOf(type, valid);
  if (step) return { kind: "usage", upstreamId, usage: stepReport(step.partId, step.part), shown };
  switch (type) {
    case "message.part.updated": {
      const { part, delta } = parsed.data as {
        part: Record<string, unknown> & { id: string; type: string };
        delta?: string;
      };
      if (isChildTaskPart(part)) return childTask(upstreamId, type, part);
      return { kind: "part", upstreamId, part, ...(delta !== undefined ? { delta } : {}) };
    }
    case "child-task":
      return childTask(upstreamId, type, valid);
    case "status": {
      const status = STATUS_MAP[valid.status as string] ?? "processing";
      return { kind: "passthrough", upstreamId, shown: { type, data: { ...valid, status } } };
    }
    case "interaction": {
      const { request } = parsed.data as {
        request: Extract<ProviderEvent, { kind: "interaction.requested" }>["request"];
      };
      return { kind: "interaction.requested", upstreamId, request, shown };
    }
    case "interaction.cancel": {
      const reason = typeof valid.reason === "string" ? valid.reason : undefined;
      return {
        kind: "interaction.ended",
        upstreamId,
        interactionId: valid.id as string,
        why: reason === "timeout" ? "expired" : "cancelled",
        ...(reason ? { reason } : {}),
        shown,
      };
    }
    case "result": {
      const wire = valid.status as string | undefined;
      const status =
        wire === undefined || wire === "success" || wire === "completed"
          ? "completed"
          : wire === "cancelled"
            ? "cancelled"
            : "failed";
      const error =
        status === "failed"
          ? { message: typeof valid.error === "string" ? valid.error : `run ended with status ${wire}` }
          : undefined;
      const text = valid.finalText as string | undefined;
      return {
        kind: "terminal",
        upstreamId,
        status,
        ...(text !== undefined ? { text } : {}),
        ...(error ? { error } : {}),
        ...terminalReceipt(valid),
        shown,
      };
    }
    case "done":
      // `done` does not say how the run ended: completed, unless the session knows it was stopped.
      return { kind: "terminal", upstreamId, status: "completed", assumed: true, ...terminalReceipt(valid), shown };
    case "session.run.failed": {
      const error = valid.error;
      const message =
        typeof error === "string"
          ? error
          : typeof error === "object" && error !== null
            ? (error as { message?: string }).message
            : (valid.message as string | undefined);
      const code = typeof error === "object" && error !== null ? (error as { code?: string }).code : undefined;
      return {
        kind: "terminal",
        upstreamId,
        status: "failed",
        error: { message: message ?? "the run failed", ...(code ? { code } : {}) },
        shown,
      };
    }
    case "error":
      return {
        kind: "terminal",
        upstreamId,
        status: "failed",
        error: { message: valid.message as string, ...(valid.code ? { code: valid.code as string } : {}) },
        shown,
      };
    case "native.session.observed":
    case "execution.started":
      return { kind: "private", upstreamId, type };
    default:
      return { kind: "passthrough", upstreamId, shown };
  }
}
