/**
 * Records for the session's unit tests: a turn and a queued turn with every field a plain value, and
 * the fields a test names put over them. One builder for every test, so a field added to a record is
 * added here once. Tests only.
 */
import type { QueuedTurn, TurnRecord } from "./records";

/** A completed first turn, `t1` on branch 0 (executed as `exe-1`), at 2026-01-01; `overrides` over it. */
export function turnRecord(overrides: Partial<TurnRecord> = {}): TurnRecord {
  const at = Date.parse("2026-01-01T00:00:00.000Z");
  return {
    turnId: "t1",
    ordinal: 1,
    parentTurnId: null,
    branch: 0,
    requestDigest: "sha256:x",
    request: { message: "hello" },
    executionId: "exe-1",
    status: "completed",
    controlRef: null,
    upstreamCursor: null,
    resultText: null,
    answerInParts: false,
    error: null,
    usage: null,
    cancelReason: null,
    acceptedSeq: 1,
    lostAt: null,
    parts: null,
    createdAt: at,
    startedAt: at,
    updatedAt: at,
    completedAt: at,
    ...overrides,
  };
}

/** A queued turn: its text `text of <turnId>`, its digest `d-<turnId>` unless given, its execution `exe-<turnId>`. */
export function queuedTurn(
  turnId: string,
  state: QueuedTurn["state"] = "queued",
  position = 1,
  digest = `d-${turnId}`,
): QueuedTurn {
  return {
    turnId,
    position,
    requestDigest: digest,
    request: { message: `text of ${turnId}` },
    executionId: `exe-${turnId}`,
    state,
    error: null,
    createdAt: 1_000,
    updatedAt: 2_000,
  };
}
