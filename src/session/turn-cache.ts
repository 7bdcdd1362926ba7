/**
 * Turn identity (the Sandbox sessions guide, "Retry a turn without running it twice"). Pure: what
 * makes two sends the same (the request digest), the execution id a turn's run is named by, and a
 * turn's public view. What a send with a known id gets is the send's decision (./send-decision.ts).
 */
import { canonicalDigest, sha256Hex, stripUndefined } from "../lib/digest";
import type { TurnView } from "../schemas/api";
import type { InteractionRecord, TurnRecord, TurnRequest } from "./store/records";
import { waitingOf } from "./turn-waiting";

export type { TurnView };

/** The digest of what the client asked for; what makes "same content". */
export function turnRequestDigest(request: TurnRequest): Promise<string> {
  return canonicalDigest(stripUndefined(request));
}

/** A deterministic execution id for (session, turn): a retried dispatch names the same run. */
export async function executionIdFor(sessionId: string, turnId: string): Promise<string> {
  const hex = await sha256Hex(`execution/v1|${sessionId.length}:${sessionId}|${turnId.length}:${turnId}`);
  return `exe_${hex.slice(0, 32)}`;
}

/**
 * The public view of one turn (GET …/turns/:turnId, and the 200/202 answers of POST …/turns).
 * `open` is the turn's outstanding asks, oldest first: what a running turn waits for. `turn` has
 * its answer read back (./transcript.ts withAnswer) when its parts hold it.
 */
export function turnView(turn: TurnRecord, open: readonly InteractionRecord[]): TurnView {
  return {
    turnId: turn.turnId,
    executionId: turn.executionId,
    status: turn.status,
    waitingFor: turn.status === "running" ? (waitingOf(open)?.waitingFor ?? null) : null,
    message: turn.request.message,
    parentTurnId: turn.parentTurnId,
    branch: turn.branch,
    ...(turn.request.model ? { model: turn.request.model } : {}),
    // What served the turn is what the provider reported, never the model asked for.
    servedModels: turn.usage?.servedModels ?? null,
    ...(turn.resultText !== null ? { result: { text: turn.resultText } } : {}),
    ...(turn.error ? { error: turn.error } : {}),
    ...(turn.usage ? { usage: turn.usage } : {}),
    ...(turn.status === "cancelled" && turn.cancelReason ? { cancelReason: turn.cancelReason } : {}),
    ...(turn.acceptedSeq !== null ? { after: turn.acceptedSeq - 1 } : {}),
    createdAt: new Date(turn.createdAt).toISOString(),
    startedAt: new Date(turn.startedAt).toISOString(),
    ...(turn.completedAt !== null ? { completedAt: new Date(turn.completedAt).toISOString() } : {}),
  };
}
