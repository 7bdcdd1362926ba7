/**
 * `GET /v1/chat/:id/messages` for a turn the log was trimmed into (../ai-sdk/message.ts keptEvents): its
 * kept parts stand in for its events, a warning among them included, so the reload is the message
 * the stream made.
 */
import { describe, expect, it } from "vitest";
import { uiMessages } from "../ai-sdk/message";
import { turnRecord } from "./store/fixtures";
import type { EventEnvelope } from "./store/records";
import { turnParts } from "./transcript";

const AT = "2026-01-01T00:00:00.000Z";
const turn = turnRecord({ resultText: "Hi" });
const event = (seq: number, type: string, data: Record<string, unknown>): EventEnvelope => ({
  seq,
  turnId: "t1",
  executionId: "exe-1",
  type,
  data,
  at: AT,
});

describe("a trimmed turn's chat message", () => {
  it("carries the warning its events carried (agent_memory_reset), with the streamed part's id", () => {
    const events = [
      event(2, "warning", { code: "agent_memory_reset", message: "the agent starts afresh" }),
      event(3, "message.part.updated", { part: { id: "p1", type: "text", text: "Hi" } }),
      event(4, "turn.completed", { status: "completed" }),
    ];
    const [, streamed] = uiMessages([{ turn, events, interactions: [] }]);
    const [, kept] = uiMessages([
      { turn: { ...turn, parts: turnParts({ events, interactions: [] }) }, events: [], interactions: [] },
    ]);
    expect(streamed!.parts.find((p) => p.type === "data-warning")).toEqual({
      type: "data-warning",
      id: "warning-2",
      data: { code: "agent_memory_reset", message: "the agent starts afresh" },
    });
    expect(kept!.parts.filter((p) => p.type === "data-warning")).toEqual(
      streamed!.parts.filter((p) => p.type === "data-warning"),
    );
  });

  it("carries its subagents as data-subagent parts, one per child task as its last update says, as the stream did", () => {
    const task = (status: string, n: number) => ({
      childId: "c1",
      sourceEventId: `c1#${n}`,
      status,
      time: { started: AT, updated: AT },
      runner: "explore",
    });
    const events = [
      event(2, "child-task", task("running", 1)),
      event(3, "message.part.updated", { part: { id: "p1", type: "text", text: "Hi" } }),
      event(4, "child-task", { ...task("completed", 2), usage: { inputTokens: 3, outputTokens: 1 } }),
      event(5, "turn.completed", { status: "completed" }),
    ];
    const [, streamed] = uiMessages([{ turn, events, interactions: [] }]);
    const [, kept] = uiMessages([
      { turn: { ...turn, parts: turnParts({ events, interactions: [] }) }, events: [], interactions: [] },
    ]);
    // The id is the childId (the SDK reconciles data parts by type and id); the update's own id is not data.
    expect(streamed!.parts.filter((p) => p.type === "data-subagent")).toEqual([
      {
        type: "data-subagent",
        id: "c1",
        data: {
          childId: "c1",
          status: "completed",
          time: { started: AT, updated: AT },
          runner: "explore",
          usage: { inputTokens: 3, outputTokens: 1 },
        },
      },
    ]);
    expect(kept!.parts).toEqual(streamed!.parts);
  });
});
