/**
 * A child task's update on the Sandbox wire → the canonical `child-task` event (docs/contracts.md;
 * docs/sandbox-wire.md §4 [ours]). Pure. Two shapes carry one: a `child-task` frame, and a
 * `message.part.updated` frame whose `subtask` part carries a `childId` (the part's id beside
 * it). A `subtask` part with no `childId` (OpenCode's own: a prompt, a description, an agent) has
 * no stable child identity, so it is no child-task event: it stays a part. Identity is the
 * update's own `childId` and `sourceEventId`, never anything read off the rest of the payload.
 */
import type { ChildTaskEvent, ChildTaskStatus } from "../../schemas/contracts";
import { receiptCounts } from "./counts";
import { ChildTaskUpdate } from "./wire";

/** The wire's statuses, as the canonical lifecycle: anything not yet ended runs. */
const STATUS: Record<string, ChildTaskStatus> = {
  pending: "running",
  queued: "running",
  started: "running",
  running: "running",
  processing: "running",
  completed: "completed",
  success: "completed",
  failed: "failed",
  error: "failed",
  cancelled: "cancelled",
  canceled: "cancelled",
};

const iso = (t: number | string): string => new Date(typeof t === "number" ? t : Date.parse(t)).toISOString();

/** Whether a `message.part.updated` part is a child task's update (a `subtask` part naming its child). */
export function isChildTaskPart(part: { type: string } & Record<string, unknown>): boolean {
  return part.type === "subtask" && part.childId !== undefined;
}

/** The canonical event of one update, or the problem that keeps it from being one (where, and why). */
export function childTaskOf(data: unknown): { task: ChildTaskEvent } | { problem: string } {
  const parsed = ChildTaskUpdate.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { problem: `${issue?.path.join(".") || "data"}: ${issue?.message ?? "invalid"}` };
  }
  const u = parsed.data;
  const status = STATUS[u.status];
  if (status === undefined) return { problem: `status: "${u.status}" is not a known child task status` };
  const usage = u.usage === undefined ? {} : receiptCounts(u.usage);
  return {
    task: {
      childId: u.childId,
      ...(u.parentChildId !== undefined ? { parentChildId: u.parentChildId } : {}),
      sourceEventId: u.sourceEventId,
      status,
      time: {
        started: iso(u.time.started),
        updated: iso(u.time.updated),
        ...(u.time.ended !== undefined ? { ended: iso(u.time.ended) } : {}),
      },
      ...(u.title !== undefined ? { title: u.title } : {}),
      ...(u.runner !== undefined ? { runner: u.runner } : {}),
      ...(u.model !== undefined ? { model: u.model } : {}),
      // Only the counters reported: none reported is no usage at all (unknown), never zeros.
      ...(Object.keys(usage).length > 0 ? { usage } : {}),
      ...(u.terminalReason !== undefined ? { terminalReason: u.terminalReason } : {}),
    },
  };
}
