/**
 * Variants: where docs/sandbox-wire.md tags a fact [ours], or says the real service may answer in
 * two shapes, the emulator serves its default shape and can be switched to the other plausible one
 * with `POST /_emulator/variants`, so the client's handling of both can be tested. Each variant
 * changes only what it names; the shaping functions below are the only places they act.
 */
import { z } from "zod";
import type { SessionStateInner } from "./wire";

export const EmulatorVariants = z.strictObject({
  /** §1 error body: sidecar `{ error: { code, message } }` or control plane `{ error: "text", code }`. */
  errorBody: z.enum(["sidecar", "control-plane"]).optional(),
  /** §3 session state: `{ data: { session } }` or the inner object flat (older deployments). */
  sessionState: z.enum(["wrapped", "flat"]).optional(),
  /** §3 abort answer: `{ data: { cancelled, reason? } }` or flat `{ cancelled, noopReason? }`. */
  abort: z.enum(["wrapped", "flat"]).optional(),
  /** §4 admission: an `execution.started` frame, or a `status` frame `{ status: "started", executionId, sessionId }`. */
  admission: z.enum(["execution.started", "status"]).optional(),
  /** §4 whether `execution.started` names the session. */
  executionStartedSessionId: z.boolean().optional(),
  /** §4 whether every run stream begins with an id-less `connection.established` frame. */
  connectionEstablished: z.boolean().optional(),
  /** §4 field order in a frame: `event:`, `id:`, `data:` or `data:` first. */
  fieldOrder: z.enum(["id-first", "data-first"]).optional(),
  /** §3 where a dispatch names its execution: the body's `executionId`, or only the `X-Execution-ID` header. */
  dispatchExecutionId: z.enum(["body", "header"]).optional(),
});
export type EmulatorVariants = z.infer<typeof EmulatorVariants>;
export type Variants = Required<EmulatorVariants>;

const DEFAULT_VARIANTS: Variants = {
  errorBody: "sidecar",
  sessionState: "wrapped",
  abort: "wrapped",
  admission: "execution.started",
  executionStartedSessionId: true,
  connectionEstablished: false,
  fieldOrder: "id-first",
  dispatchExecutionId: "body",
};

/** The variants in force: those set, the defaults for the rest. */
export function effectiveVariants(set: EmulatorVariants): Variants {
  const out = { ...DEFAULT_VARIANTS };
  for (const [key, value] of Object.entries(set)) if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  return out;
}

export function errorBody(v: Variants, code: string, message: string, extra?: Record<string, unknown>): Record<string, unknown> {
  return v.errorBody === "control-plane" ? { error: message, code, ...extra } : { error: { code, message, ...extra } };
}

export function sessionStateBody(v: Variants, session: SessionStateInner): Record<string, unknown> {
  return v.sessionState === "flat" ? { ...session } : { data: { session } };
}

export function abortBody(v: Variants, cancelled: boolean, reason?: string): Record<string, unknown> {
  if (v.abort === "flat") return { cancelled, ...(reason !== undefined ? { noopReason: reason } : {}) };
  return { data: { cancelled, ...(reason !== undefined ? { reason } : {}) } };
}

/** The admission frame's type and data for one execution (a fresh one, or one a dispatch attached to). */
export function admissionFrame(
  v: Variants,
  exe: { executionId: string; sessionId: string; turnId?: string },
  alreadyExisted: boolean,
): { type: string; data: Record<string, unknown> } {
  const again = alreadyExisted ? { alreadyExisted: true } : {};
  if (v.admission === "status") {
    return { type: "status", data: { status: "started", executionId: exe.executionId, sessionId: exe.sessionId, ...again } };
  }
  return {
    type: "execution.started",
    data: {
      executionId: exe.executionId,
      ...(v.executionStartedSessionId ? { sessionId: exe.sessionId } : {}),
      ...(exe.turnId ? { turnId: exe.turnId } : {}),
      ...again,
    },
  };
}
