// @ts-check
/**
 * The names of the events a conversation's stream carries: the one list the page listens for,
 * checked against what the server emits by test/events.test.ts (it runs the emulator's scripts
 * and fails on any event name missing here).
 *
 * EventSource delivers a named event only to a listener for that name, so an event missing here
 * would be dropped by the page without a trace.
 */
import { DELTA_EVENT } from "../wire/frames.js";

/** Events the gateway writes to a conversation's log itself (src/session). */
export const GATEWAY_EVENT = Object.freeze({
  turnAccepted: "turn.accepted",
  turnCompleted: "turn.completed",
  turnFailed: "turn.failed",
  turnCancelled: "turn.cancelled",
  partUpdated: "message.part.updated",
  usageUpdated: "usage.updated",
  budgetExceeded: "budget.exceeded",
  interactionRequested: "interaction.requested",
  interactionResolved: "interaction.resolved",
  /** What the running turn waits for changed: `{ turnId, waitingFor, interactionId }` (null: nothing, it runs). */
  turnWaiting: "turn.waiting",
  warning: "warning",
  /** One update of a child task the agent started (a subagent): applied once per sourceEventId by the server. */
  childTask: "child-task",
  /** A turn was queued behind the running one: `{ turnId, message, model?, queuePosition }`. */
  turnQueued: "turn.queued",
  /** A queued turn's text was replaced: `{ turnId, message }`. */
  turnQueueEdited: "turn.queue_edited",
  /** A queued turn left the queue without running: `{ turnId, reason, error? }` (its start is its turn.accepted). */
  turnDequeued: "turn.dequeued",
  /** The conversation shows another branch: `{ branch, previous, tipTurnId, by }` (docs/sse-protocol.md §10). */
  branchSwitched: "branch.switched",
  /** What a turn really changed in the workspace (docs/api.md "A turn's changes, undo and redo"). */
  workspaceChanges: "workspace.changes",
  /** A turn's file changes undone or redone: `{ turnId, direction, operationId, restoredAt }`. */
  workspaceRestored: "workspace.restored",
  /** The agent's own terminal UI took the session (interactive mode): `{ terminalId, generation }`; no turn runs meanwhile. */
  interactiveStarted: "interactive.started",
  /** The chat has the session back: `{ terminalId, reason }`. */
  interactiveReleased: "interactive.released",
  /** Not logged: sent when the stream's cursor is no longer (or never was) in the log. */
  streamReset: "stream.reset",
  /** Not a log event's type: a lean frame standing for the `message.part.updated` that continues the frame before it (wire/frames.js). */
  partDelta: DELTA_EVENT,
});

/**
 * Provider events shown to viewers as they are (src/providers: "passthrough" and the shown form of
 * asks, usage and terminal frames). The page draws none of them from these (the gateway's own
 * events carry what it shows), but it listens so that every logged event moves its cursor.
 */
const PROVIDER_EVENTS = Object.freeze([
  "status",
  "result",
  "done",
  "error",
  "session.run.failed",
  "raw",
  "interaction",
  "interaction.cancel",
  "plan.submitted",
  "session.updated",
  "tool-heartbeat",
  "tool-slow",
  "model-processing",
]);

/** Every event name the page listens for on the stream. */
export const STREAM_EVENTS = Object.freeze([...Object.values(GATEWAY_EVENT), ...PROVIDER_EVENTS]);
