/**
 * Variants: where docs/sandbox-wire.md tags a fact [ours], or says the real service may answer in
 * two shapes, the emulator serves its default shape and can be switched to the other plausible one
 * with `POST /_emulator/variants`, so the client's handling of both can be tested. Each variant
 * changes only what it names. The shaping functions below hold the variants that shape an answer
 * or a frame; the ones that decide whether a request is served act in the API's routes (api-*.ts),
 * the ones that change what the scripted agent asks in script.ts (fixed when a run starts).
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
  /**
   * §3 where a dispatch names its execution: the body's `executionId` (the `X-Execution-ID` header
   * may name it too, and must then agree), or only the `X-Execution-ID` header.
   */
  dispatchExecutionId: z.enum(["body", "header"]).optional(),
  /**
   * §4 how a run ends: `result` then `done` (a failure: `error`); `done` alone (a cancel: `status:
   * cancelled` then `done`); a failure as `session.run.failed` `{ error: { message, code? } }`; or
   * no terminal frame at all (the stream closes cleanly; the run's end is in the emulator's state).
   */
  terminal: z.enum(["result+done", "done-only", "run-failed", "none"]).optional(),
  /** §3 the fork route [ours]: served, 404 `NOT_FOUND` like a deployment without it, or 501 `NOT_IMPLEMENTED`. */
  forkRoute: z.enum(["available", "missing", "not-implemented"]).optional(),
  /** §3 the run-result route [ours]: served, or 404 `NOT_FOUND` like a deployment without it. */
  resultRoute: z.enum(["available", "missing"]).optional(),
  /** §2 readiness: the doc's enum, or an unlisted `"warming"` for the first polls of a ready sandbox. */
  readiness: z.enum(["enum", "unknown-value"]).optional(),
  /** How many answers showing a ready sandbox say `"warming"` instead (variant `readiness: "unknown-value"`; default 2). */
  readinessUnknownPolls: z.number().int().positive().optional(),
  /** A permission ask's `responseScopes`: `["once", "session"]`, or the contract's `["interaction", "session", "persistent"]`. */
  permissionScopes: z.enum(["legacy", "contract"]).optional(),
  /**
   * A permission ask's answer: a `grant` select (`allow_once`, `allow_session`, `deny`; the
   * contract's grants), or the Sandbox SDK's own `{ response: "allow" | "deny" }`
   * (`respondToPermission`), a `response` select and nothing else.
   */
  permissionAnswer: z.enum(["grant", "response"]).optional(),
  /** §2 `backend.model` on a dispatch: a string (or an object) accepted, or an object `{ provider?, model }` required. */
  backendModel: z.enum(["string", "object"]).optional(),
  /** §3 where a dispatch's interaction posture is read: top-level `interactions`, or only `backend.interactions`. */
  interactionsAt: z.enum(["top", "backend"]).optional(),
  /**
   * §3 how a plan waits for its decision: an `interaction` of kind `plan`, or a `status`
   * `awaiting_plan_decision` frame decided only through `plan/approve` and `plan/reject`.
   */
  planDecision: z.enum(["interaction", "route"]).optional(),
  /**
   * §4 how a run says it waits for a person: an `interaction` frame carrying the ask, or only a
   * `status` frame (`awaiting_question`, `blocked_on_approval` for a permission,
   * `awaiting_plan_decision`), the ask itself listed by `GET …/interactions` alone.
   */
  waitSignal: z.enum(["interaction", "status"]).optional(),
  /** §3 the answer route: served, or 501 `NOT_IMPLEMENTED`. */
  answerRoute: z.enum(["ok", "not-implemented"]).optional(),
  /** §3 another answer to an answered ask: the same one acknowledged, another 409; or 404 `INTERACTION_NOT_FOUND`. */
  answeredAsk: z.enum(["already-resolved", "gone"]).optional(),
  /** §6 a dispatch's `runControlRef`: optional, or required (naming the requested execution). */
  runControlRef: z.enum(["optional", "required"]).optional(),
  /**
   * §3 the dispatch receipt (the SDK's `dispatchPrompt` answers `dispatched`): the admission names
   * `alreadyExisted` only and a session busy with another run is 409 `SESSION_BUSY` (`absent`); or
   * it carries `dispatched` and the run's `status`, and a session busy with another run answers
   * that run's admission with `dispatched: false` instead of a 409 (`receipt`).
   */
  dispatched: z.enum(["absent", "receipt"]).optional(),
  /**
   * §2 a create whose `idempotencyKey` names an existing sandbox: answered 200 (a fresh one 201),
   * or 201 like a fresh one, nothing telling them apart.
   */
  createReplay: z.enum(["200", "201"]).optional(),
  /**
   * §2 a sandbox stopped with a run in flight [ours]: its runtime goes down, so every live stream of
   * the run closes without a terminal frame, and the run dies with it (`end`: it ends `failed`), or
   * is kept and goes on, readable again once the sandbox runs again, holding its agent session
   * until it ends (`survive`).
   */
  stoppedRuns: z.enum(["end", "survive"]).optional(),
  /**
   * §2 the sandbox object's lifecycle [ours]: the [wire] times (`startedAt`, `lastActivityAt`,
   * `expiresAt`) plus the create's `idleTimeoutSeconds`, `maxLifetimeSeconds` and the `resources`
   * given (`full`), or the [wire] times only (`wire-only`).
   */
  sandboxLifecycle: z.enum(["full", "wire-only"]).optional(),
  /** §2 the account's usage [ours]: `GET /v1/account/usage` served, or 404 like a deployment without it. */
  accountUsage: z.enum(["served", "missing"]).optional(),
  /** §2 the backend catalog [ours]: `{ backends }`, `{ data: { backends } }`, a bare array, or 404 like a deployment without it. */
  catalog: z.enum(["backends", "data", "array", "missing"]).optional(),
  /**
   * §4 a child task's update [ours]: a `child-task` frame carrying it (`frame`), or a
   * `message.part.updated` frame whose `subtask` part carries it, the part's id its `childId`.
   */
  childTask: z.enum(["frame", "subtask-part"]).optional(),
  /**
   * §10 the workspace's routes [ours where §10 says]: served, or every one of them (files, snapshots,
   * diff, restore) 404 `NOT_FOUND` like a deployment without them, and a create `fromSnapshot` 400.
   */
  workspace: z.enum(["served", "missing"]).optional(),
  /** §10 a snapshot's answer: its `idempotency` (`{ outcome, requestDigest }`) given a key, or never (the key still honoured). */
  snapshotIdempotency: z.enum(["echoed", "absent"]).optional(),
  /** §10 a snapshot's delete: `{ snapshotId, outcome }`, or a 204 with no body (no outcome: unknown to the client). */
  snapshotDelete: z.enum(["outcome", "no-content"]).optional(),
  /** §10 a restore in place: `{ snapshotId, outcome, restoredAt }`, or 200 `{}` (no outcome: unknown to the client). */
  restore: z.enum(["outcome", "no-outcome"]).optional(),
  /** §10 an upload's cap in bytes (default 10 MiB): a file over it is 413 `PAYLOAD_TOO_LARGE`. */
  uploadMaxBytes: z.number().int().positive().optional(),
  /**
   * §12 the terminal's routes [ours] (named apart from `terminal`, a run's ending): served,
   * or every one of them (socket, metadata, the TUI's) 404 `NOT_FOUND` like a deployment without them.
   */
  terminalRoutes: z.enum(["served", "missing"]).optional(),
  /** §12 a terminal's output: binary messages (the PTY's bytes), or `{ type: "output", data }` text frames. */
  terminalFrames: z.enum(["binary", "json"]).optional(),
  /** §12 how many of a PTY's newest output bytes a reattach replays (default 64 KiB). */
  terminalRetainedBytes: z.number().int().positive().optional(),
  /** §12 how long a PTY lives with no socket (ms; default 60 000, or `EMULATOR_TERMINAL_DETACH_MS`). */
  terminalDetachMs: z.number().int().nonnegative().optional(),
  /** §12 a terminal's metadata with one field left out (`"full"`: every field). */
  terminalMetadata: z
    .enum([
      "full",
      "no-sessionId",
      "no-connectionId",
      "no-name",
      "no-shell",
      "no-cwd",
      "no-cols",
      "no-rows",
      "no-createdAt",
      "no-lastActivityAt",
      "no-isRunning",
    ])
    .optional(),
  /** §12 the `ready` frame: in full, without `detachTimeoutMs`, or none at all (a 101 and nothing). */
  terminalReady: z.enum(["full", "no-detach-window", "silent"]).optional(),
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
  terminal: "result+done",
  resultRoute: "available",
  forkRoute: "available",
  readiness: "enum",
  readinessUnknownPolls: 2,
  permissionScopes: "legacy",
  permissionAnswer: "grant",
  backendModel: "string",
  interactionsAt: "top",
  planDecision: "interaction",
  waitSignal: "interaction",
  answerRoute: "ok",
  answeredAsk: "already-resolved",
  runControlRef: "optional",
  dispatched: "absent",
  createReplay: "200",
  stoppedRuns: "end",
  sandboxLifecycle: "full",
  accountUsage: "served",
  catalog: "backends",
  childTask: "frame",
  workspace: "served",
  snapshotIdempotency: "echoed",
  snapshotDelete: "outcome",
  restore: "outcome",
  uploadMaxBytes: 10 * 1024 * 1024,
  terminalRoutes: "served",
  terminalFrames: "binary",
  terminalRetainedBytes: 64 * 1024,
  terminalDetachMs: 60_000,
  terminalMetadata: "full",
  terminalReady: "full",
};

/** The variants in force: those set, the defaults for the rest. */
export function effectiveVariants(set: EmulatorVariants): Variants {
  const out = { ...DEFAULT_VARIANTS };
  for (const [key, value] of Object.entries(set))
    if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  return out;
}

export function errorBody(
  v: Variants,
  code: string,
  message: string,
  extra?: Record<string, unknown>,
): Record<string, unknown> {
  return v.errorBody === "control-plane" ? { error: message, code, ...extra } : { error: { code, message, ...extra } };
}

export function sessionStateBody(v: Variants, session: SessionStateInner): Record<string, unknown> {
  return v.sessionState === "flat" ? { ...session } : { data: { session } };
}

export function abortBody(v: Variants, cancelled: boolean, reason?: string): Record<string, unknown> {
  if (v.abort === "flat") return { cancelled, ...(reason !== undefined ? { noopReason: reason } : {}) };
  return { data: { cancelled, ...(reason !== undefined ? { reason } : {}) } };
}

/**
 * The admission frame's type and data for one execution: a run this dispatch started
 * (`dispatched: true`), or one it found (the same run, its turn, or with variant `dispatched:
 * "receipt"` another run holding the session: `dispatched: false`). `status` is the run's.
 */
export function admissionFrame(
  v: Variants,
  exe: { executionId: string; sessionId: string; turnId?: string; status: string },
  found: { alreadyExisted: boolean; dispatched: boolean },
): { type: string; data: Record<string, unknown> } {
  const again = found.alreadyExisted ? { alreadyExisted: true } : {};
  if (v.admission === "status") {
    if (v.dispatched !== "receipt")
      return {
        type: "status",
        data: { status: "started", executionId: exe.executionId, sessionId: exe.sessionId, ...again },
      };
    // With the receipt, the frame's own `status` is the run's: started while it runs.
    const status = exe.status === "running" ? "started" : exe.status;
    return {
      type: "status",
      data: { status, executionId: exe.executionId, sessionId: exe.sessionId, ...again, dispatched: found.dispatched },
    };
  }
  return {
    type: "execution.started",
    data: {
      executionId: exe.executionId,
      ...(v.executionStartedSessionId ? { sessionId: exe.sessionId } : {}),
      ...(exe.turnId ? { turnId: exe.turnId } : {}),
      ...again,
      ...(v.dispatched === "receipt" ? { dispatched: found.dispatched, status: exe.status } : {}),
    },
  };
}

/** The wire shape of a run's ending, fixed when the run starts. */
export type TerminalShape = Variants["terminal"];

/**
 * What a run sends for one of its frames, in the terminal shape it started with: the frame, a
 * reshaped frame, or nothing (undefined). Only the terminal frames (`result`, `done`, `error`)
 * change; the run's state records its end whatever is sent.
 */
export function terminalFrame(
  shape: TerminalShape,
  frame: { type: string; data: Record<string, unknown> },
): { type: string; data: Record<string, unknown> } | undefined {
  switch (frame.type) {
    case "result":
      return shape === "done-only" || shape === "none" ? undefined : frame;
    case "done":
      return shape === "none" ? undefined : frame;
    case "error": {
      if (shape === "none") return undefined;
      if (shape !== "run-failed") return frame;
      const { message, code } = frame.data as { message?: unknown; code?: unknown };
      return { type: "session.run.failed", data: { error: { message, ...(code !== undefined ? { code } : {}) } } };
    }
    default:
      return frame;
  }
}

/** §2 the readiness a sandbox reports: `"warming"` instead of `"ready"` while the variant's polls last. */
export function readinessShown(
  v: Variants,
  readiness: string,
  warmingPollsSoFar: number,
): { shown: string; counted: boolean } {
  if (v.readiness === "unknown-value" && readiness === "ready" && warmingPollsSoFar < v.readinessUnknownPolls)
    return { shown: "warming", counted: true };
  return { shown: readiness, counted: false };
}

/** A permission ask's scopes in the vocabulary in force. */
export function permissionScopes(v: Variants["permissionScopes"]): string[] {
  return v === "contract" ? ["interaction", "session", "persistent"] : ["once", "session"];
}
