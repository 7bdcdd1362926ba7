/**
 * What a send does: one decision, from what is known when it arrives
 * (docs/guarantees.md#retries-never-run-twice, docs/api.md#queued-turns; the Sandbox sessions guide,
 * "Retry a turn without running it twice"). Pure. The send is
 * named by its turn id, and its content by its request digest (./turn-cache.ts), computed once.
 *
 * - A turn under this id: the same content is the same turn: its result when it ended (a failed
 *   one too: a failed result is final, never a second run), in progress while it runs (a pending
 *   one that nothing here dispatches was left by a crash mid-dispatch: it is resumed); other
 *   content is a conflict.
 * - A queued turn under this id (./turn-queue.ts): the same send again is the same queued turn (an
 *   edit changes what it will send, not which send it was); removed or refused before it started
 *   is final, like an ended turn; other content is a conflict.
 * - A new turn: dispatched when nothing is active and nothing waits. Else a send that asks to
 *   queue (`whenBusy: "queue"`) waits in the queue, unless it holds `limit` turns already; one that
 *   does not is refused busy: by the running turn, or by the turns waiting (nothing overtakes the
 *   queue, even between two turns).
 *
 * Applied by ./turn-runner.ts `submit`: the dispatcher (./dispatch.ts) acts on a dispatch and on a
 * turn it knows, the queue (./queue-runner.ts) on a queued answer. A new turn is admitted by the
 * budget before it is dispatched, which may read the user's spend elsewhere (an RPC): the send is
 * decided again after it, with what is known then.
 */
import { type QueuedTurn, TERMINAL_TURN_STATUSES, type TurnRecord } from "./store/records";

/** How a send wants a busy conversation handled: refused (409 `session_busy`, the default) or queued. */
export type WhenBusy = "refuse" | "queue";

/** What is known when a send is decided. */
export interface SendFacts {
  /** The turn recorded under the send's turn id, if any. */
  turn: TurnRecord | null;
  /** Whether a dispatch of that turn is under way in this instance. */
  dispatching: boolean;
  /** The queue's record of the send's turn id, if it was ever queued. */
  entry: QueuedTurn | null;
  /** The turn that is pending or running, if any. */
  active: TurnRecord | null;
  /** The turns that wait, in order. */
  waiting: readonly QueuedTurn[];
  whenBusy: WhenBusy;
  /** How many turns the queue holds at most (QUEUE_MAX_TURNS). */
  limit: number;
  /** The digest of the send's request. */
  requestDigest: string;
}

export type SendDecision =
  /** The same send again, ended: its turn (or its queued turn, removed or refused before it started). */
  | { kind: "cached"; turn: TurnRecord }
  | { kind: "cached"; entry: QueuedTurn }
  /** The same send again, not ended: its turn (`resume`: pending, and nothing here dispatches it), or its queued turn. */
  | { kind: "in_progress"; turn: TurnRecord; resume: boolean }
  | { kind: "in_progress"; entry: QueuedTurn }
  /** Other content under a turn id already sent. */
  | { kind: "conflict" }
  /** Refused: a turn runs (`active`), or turns wait and this send does not queue (`next`, of `queued`). */
  | { kind: "busy"; active: TurnRecord }
  | { kind: "busy"; next: QueuedTurn; queued: number }
  /** The queue holds `limit` turns already. */
  | { kind: "full"; limit: number }
  /** A new turn that waits in the queue. */
  | { kind: "queued" }
  /** A new turn, dispatched now. */
  | { kind: "dispatch" };

/** What a send does, from what is known (see the header). */
export function decideSend(facts: SendFacts): SendDecision {
  const { turn, entry, active, waiting, requestDigest } = facts;
  if (turn) {
    if (turn.requestDigest !== requestDigest) return { kind: "conflict" };
    if (TERMINAL_TURN_STATUSES.has(turn.status)) return { kind: "cached", turn };
    return { kind: "in_progress", turn, resume: turn.status === "pending" && !facts.dispatching };
  }
  if (entry && entry.state !== "started") {
    if (entry.requestDigest !== requestDigest) return { kind: "conflict" };
    return entry.state === "removed" || entry.state === "refused"
      ? { kind: "cached", entry }
      : { kind: "in_progress", entry };
  }
  // A queued turn that started has its turn's record from then on; without one, the send is the dispatcher's.
  if (entry) return active ? { kind: "busy", active } : { kind: "dispatch" };
  const next = waiting[0];
  if (!active && !next) return { kind: "dispatch" };
  if (facts.whenBusy === "queue")
    return waiting.length >= facts.limit ? { kind: "full", limit: facts.limit } : { kind: "queued" };
  return active ? { kind: "busy", active } : { kind: "busy", next: next!, queued: waiting.length };
}
