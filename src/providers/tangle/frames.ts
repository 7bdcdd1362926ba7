/**
 * Sandbox SSE frames → canonical provider events (docs/sandbox-wire.md §4). Pure.
 *
 * Every frame is validated on arrival. An invalid frame is never a crash and never dropped in
 * silence: it becomes a `warning` event that names the problem, under the frame's own id, so the
 * cursor still advances past it.
 */
import type { SseFrame } from "../../lib/sse";
import { FrameDataSchemas, type KnownFrameType } from "../../schemas/sandbox-wire";
import type { ProviderEvent } from "../provider";

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
};

function warning(upstreamId: string | undefined, code: string, message: string): ProviderEvent {
  return { upstreamId, type: "warning", data: { code, message, ...(upstreamId !== undefined ? { upstreamEventId: upstreamId } : {}) } };
}

function isKnown(type: string): type is KnownFrameType {
  return Object.hasOwn(FrameDataSchemas, type);
}

/** Serialized size of a frame in UTF-8 bytes (event name, id and data), as seed 000 bounds it. */
function frameBytes(frame: SseFrame): number {
  const encoder = new TextEncoder();
  return encoder.encode(frame.data ?? "").length + encoder.encode(frame.event ?? "").length + encoder.encode(frame.id ?? "").length;
}

/**
 * Normalizes one parsed SSE frame. Answers undefined for frames that carry nothing of the run
 * (comments, keep-alives, `connection.established`).
 */
export function normalizeFrame(frame: SseFrame, options: { requireId: boolean }): ProviderEvent | undefined {
  const upstreamId = frame.id === "" ? undefined : frame.id;
  const type = frame.event ?? "message";
  if (frame.tooLarge || frameBytes(frame) > MAX_FRAME_BYTES) {
    return warning(upstreamId, "frame_too_large", `upstream frame ${upstreamId ?? "(no id)"} (${type}) exceeds ${MAX_FRAME_BYTES} bytes and was refused`);
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
    return warning(upstreamId, "invalid_upstream_frame", `upstream frame ${upstreamId ?? "(no id)"} (${type}) is not JSON`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return warning(upstreamId, "invalid_upstream_frame", `upstream frame ${upstreamId ?? "(no id)"} (${type}) is not a JSON object`);
  }
  if (!isKnown(type)) {
    // A variant newer than this gateway: pass it through unchanged.
    return { upstreamId, type, data: data as Record<string, unknown> };
  }
  const parsed = FrameDataSchemas[type].safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join(".") : "data";
    return warning(upstreamId, "invalid_upstream_frame", `upstream frame ${upstreamId ?? "(no id)"} (${type}) is invalid at ${where}: ${issue?.message ?? "invalid"}`);
  }
  const valid = parsed.data as Record<string, unknown>;
  switch (type) {
    case "status": {
      const status = STATUS_MAP[valid.status as string] ?? "processing";
      return { upstreamId, type, data: { ...valid, status } };
    }
    case "result": {
      const wire = valid.status as string | undefined;
      const status = wire === undefined || wire === "success" || wire === "completed" ? "completed" : wire === "cancelled" ? "cancelled" : "failed";
      const error = status === "failed" ? { message: typeof valid.error === "string" ? valid.error : `run ended with status ${wire}` } : undefined;
      return { upstreamId, type, data: valid, terminal: { status, text: valid.finalText as string | undefined, ...(error ? { error } : {}) } };
    }
    case "done":
      return { upstreamId, type, data: valid, terminal: { status: "completed" } };
    case "error":
      return {
        upstreamId,
        type,
        data: valid,
        terminal: { status: "failed", error: { message: valid.message as string, ...(valid.code ? { code: valid.code as string } : {}) } },
      };
    case "native.session.observed":
    case "execution.started":
      return { upstreamId, type, data: valid, private: true };
    default:
      return { upstreamId, type, data: valid };
  }
}
