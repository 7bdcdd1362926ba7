/**
 * The queue of turns sent while another runs (issue 21, "A queue"). Pure: which queued turn goes
 * next and what it follows, and what a queued turn looks like to the API. Which send waits in it
 * is the send's decision (./send-decision.ts); applied by ./queue-runner.ts.
 *
 * Queued turns start in order, one at a time, each when nothing is active. A queued turn continues
 * the conversation after the turns before it: it follows the conversation's last turn when it
 * starts (`follows`; with branches, the active branch's last turn).
 */
import type { TurnView } from "../schemas/api";
import type { QueuedTurn, TurnRecord, TurnStatus } from "./store/records";

export type QueueStep =
  /** Nothing waits. */
  | { kind: "idle" }
  /** A turn is active, or the next one is being dispatched: its end moves the queue. */
  | { kind: "wait" }
  /** Record the next turn pending and dispatch it, after `follows` (null: the conversation's first turn). */
  | { kind: "start"; entry: QueuedTurn; follows: string | null }
  /** Recorded pending, but nothing dispatches it here (this instance is new): dispatch it again (the execution id names the same run). */
  | { kind: "redispatch"; entry: QueuedTurn }
  /** Its turn was dispatched (it runs, or ended): the queue's record says so, and the next is looked at. */
  | { kind: "started"; entry: QueuedTurn };

export interface StepInput {
  waiting: readonly QueuedTurn[];
  active: TurnRecord | null;
  /** The conversation's last turn, which a turn started now follows. */
  lastTurnId: string | null;
  /** The status of a turn's record, null when there is none. */
  statusOf(turnId: string): TurnStatus | null;
  /** Whether a dispatch of this turn is under way in this instance. */
  dispatching(turnId: string): boolean;
}

/**
 * What the queue does next. The same answer from the end of a turn, the alarm and a new instance
 * (each asks after anything changed), so each queued turn is dispatched once: a turn is recorded
 * pending before its dispatch, and one recorded pending that nothing here dispatches is dispatched
 * again under the same execution id, never as a second turn.
 */
export function nextStep(input: StepInput): QueueStep {
  const next = input.waiting[0];
  if (!next) return { kind: "idle" };
  if (next.state === "starting") {
    const status = input.statusOf(next.turnId);
    if (status === "pending")
      return input.dispatching(next.turnId) ? { kind: "wait" } : { kind: "redispatch", entry: next };
    if (status !== null) return { kind: "started", entry: next };
    // Its pending record was forgotten (a dispatch that never finished): it starts again.
  }
  if (input.active) return { kind: "wait" };
  return { kind: "start", entry: next, follows: input.lastTurnId };
}

/** How a queued turn that did not start reads: a removed one as cancelled, a refused one as failed. */
const ENDED_STATUS = { removed: "cancelled", refused: "failed" } as const;

/**
 * The public view of a turn the queue holds (GET …/turns/:turnId, the answer of a queued send, the
 * summary's `queue`): `queued` with its place (1: next), or how it ended before it started.
 */
export function queuedView(entry: QueuedTurn, place: number | null): TurnView {
  const ended = entry.state === "removed" || entry.state === "refused" ? ENDED_STATUS[entry.state] : null;
  return {
    turnId: entry.turnId,
    executionId: entry.executionId,
    status: ended ?? "queued",
    waitingFor: null,
    message: entry.request.message,
    ...(entry.request.model ? { model: entry.request.model } : {}),
    servedModels: null,
    ...(ended === "failed" && entry.error ? { error: entry.error } : {}),
    ...(ended === "cancelled" && entry.error ? { cancelReason: entry.error.message } : {}),
    ...(ended === null && place !== null ? { queuePosition: place } : {}),
    createdAt: new Date(entry.createdAt).toISOString(),
    ...(ended ? { completedAt: new Date(entry.updatedAt).toISOString() } : {}),
  };
}
