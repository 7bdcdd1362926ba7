import type { ScriptFrame } from "./script-frame";

/**
 * The `[subagents]` script's child tasks (docs/sandbox-wire.md §4, `child-task` [ours]): the agent
 * delegates the exploration of the repository to one child task, which starts a second, nested
 * under it (`parentChildId`); both run through the agent's first step (a `[hold]` holds them
 * running), then the nested one fails and the first completes. Each update is a frame of
 * its own with its own `sourceEventId`. The first reports its runner, model, usage and terminal
 * reason; the failed one reports its runner and terminal reason only (its model and usage are
 * unknown, never zero).
 *
 * `[subagents:dup]` sends every update again after the ends, each copy a new frame (a new frame
 * id) with the same `sourceEventId`, as copies arrive under a reconnect or a replay upstream: a
 * consumer that applied them would show both children running again.
 *
 * Shapes (variant `childTask`): a `child-task` frame whose data is the update, or a
 * `message.part.updated` frame whose part is `{ id: childId, type: "subtask", …the update }`.
 * Times are epoch milliseconds from a fixed base, so the script stays pure.
 */

export type ChildTaskShape = "frame" | "subtask-part";

/** 2026-01-01T00:00:00Z: the script's clock for child tasks. */
const BASE_MS = Date.UTC(2026, 0, 1);
const at = (seconds: number) => BASE_MS + seconds * 1000;

function updates(exe: string): Record<string, unknown>[] {
  const explore = `${exe}:child-explore`;
  const tests = `${exe}:child-tests`;
  return [
    {
      childId: explore,
      sourceEventId: `${explore}#1`,
      status: "running",
      title: "Explore the repository's layout",
      runner: "explore",
      model: "zai/glm-5.2",
      time: { started: at(1), updated: at(1) },
    },
    {
      childId: tests,
      parentChildId: explore,
      sourceEventId: `${tests}#1`,
      status: "running",
      title: "Run the test suite",
      runner: "general",
      time: { started: at(2), updated: at(2) },
    },
    {
      childId: tests,
      parentChildId: explore,
      sourceEventId: `${tests}#2`,
      status: "failed",
      title: "Run the test suite",
      runner: "general",
      terminalReason: "tool_error",
      time: { started: at(2), updated: at(5), ended: at(5) },
    },
    {
      childId: explore,
      sourceEventId: `${explore}#2`,
      status: "completed",
      title: "Explore the repository's layout",
      runner: "explore",
      model: "zai/glm-5.2",
      usage: { inputTokens: 2400, outputTokens: 310, cost: 0.0017 },
      terminalReason: "stop",
      time: { started: at(1), updated: at(8), ended: at(8) },
    },
  ];
}

function frames(list: Record<string, unknown>[], shape: ChildTaskShape): ScriptFrame[] {
  return list.map((update) =>
    shape === "subtask-part"
      ? { type: "message.part.updated", data: { part: { id: update.childId, type: "subtask", ...update } } }
      : { type: "child-task", data: update },
  );
}

/** The child tasks' starts (both running), in the shape in force. */
export function childTaskStarts(exe: string, shape: ChildTaskShape = "frame"): ScriptFrame[] {
  return frames(updates(exe).slice(0, 2), shape);
}

/** The child tasks' ends (the nested one failed, then the first completed). */
export function childTaskEnds(exe: string, shape: ChildTaskShape = "frame"): ScriptFrame[] {
  return frames(updates(exe).slice(2), shape);
}

/** Every update again, in order: the copies `[subagents:dup]` sends. */
export function childTaskCopies(exe: string, shape: ChildTaskShape = "frame"): ScriptFrame[] {
  return frames(updates(exe), shape);
}
