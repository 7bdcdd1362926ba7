/**
 * What a dispatch does after the provider refused it (`retryStep`, pure): recover an environment
 * that stopped or vanished, once; stop a run admitted in place of ours and send the turn again under
 * a turn key of its own (`rekeyedTurnId`), within bounds; wait for a session still busy right after
 * our previous turn's receipt, backing off; or let the error stand. ./dispatch.ts acts on the step.
 */
import type { ProviderError } from "../providers/errors";
import { AgentExactRunControlRef } from "../schemas/contracts";

/** A dispatch admitted under another execution goes again under a new turn key at most this often. */
const MISMATCH_REKEYS = 1;
/** How many turn keys a dispatch follows at most (each one a run stopped earlier in place of ours). */
const MISMATCH_CHAIN = 12;
/** Upstream still busy right after our previous turn's receipt: retry this many times, backing off. */
const UPSTREAM_BUSY_ATTEMPTS = 6;
const UPSTREAM_BUSY_DELAY_MS = 100;

/** How far a dispatch has got: its attempt (from 1), whether its environment was recovered, how many runs admitted in its place counted. */
export interface DispatchTries {
  attempt: number;
  recovered: boolean;
  rekeyed: number;
}

export type RetryStep =
  /** The environment stopped or vanished since it was last seen: resume or replace it, then again. */
  | { kind: "recover" }
  /**
   * A run admitted in place of ours, in our session: never adopted, so it is stopped, and the turn
   * goes again under a key of its own unless the bound is `exhausted`. `rekeyed`: the count after it.
   */
  | { kind: "replaced"; admitted: AgentExactRunControlRef; rekeyed: number; exhausted: boolean }
  /** Our previous turn has its result, but the platform can take a moment to release the session after the receipt. */
  | { kind: "wait"; delayMs: number }
  /** No retry can succeed: the error stands. */
  | { kind: "refuse" };

/** What a dispatch does after the provider refused it with `err`. */
export function retryStep(err: ProviderError, tries: DispatchTries, sessionId: string): RetryStep {
  if (!tries.recovered && (err.code === "environment_gone" || err.code === "environment_not_running"))
    return { kind: "recover" };
  const admitted =
    err.code === "admission_mismatch" ? AgentExactRunControlRef.safeParse(err.options.details?.admittedRef) : null;
  if (admitted?.success && admitted.data.sessionId === sessionId) {
    // The platform ties the turn key to that run now. A run an earlier dispatch left (stopped then)
    // only says which key comes next; a run started in place of ours by this very call counts
    // against the bound.
    const rekeyed = err.options.details?.earlier !== true ? tries.rekeyed + 1 : tries.rekeyed;
    return {
      kind: "replaced",
      admitted: admitted.data,
      rekeyed,
      exhausted: rekeyed > MISMATCH_REKEYS || tries.attempt > MISMATCH_CHAIN,
    };
  }
  if (err.code === "session_busy" && tries.attempt < UPSTREAM_BUSY_ATTEMPTS)
    return { kind: "wait", delayMs: UPSTREAM_BUSY_DELAY_MS * tries.attempt };
  return { kind: "refuse" };
}

/** The upstream turn key of a turn sent again after a run was admitted in its place: derived from that run (a retry after a crash takes the same path). */
export async function rekeyedTurnId(turnId: string, replaced: string): Promise<string> {
  const bytes = new Uint8Array(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(`rekey/v1|${turnId.length}:${turnId}|${replaced.length}:${replaced}`),
    ),
  );
  return `${turnId}.r-${[...bytes.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
