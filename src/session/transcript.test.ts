import { describe, expect, it } from "vitest";
import type { InteractionRequest } from "../schemas/contracts";
import { turnRecord } from "./store/fixtures";
import type { EventEnvelope, InteractionRecord, TurnRecord } from "./store/records";
import { buildTranscript } from "./transcript";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");

function turn(overrides: Partial<TurnRecord> = {}): TurnRecord {
  return turnRecord({ updatedAt: T0 + 1000, completedAt: T0 + 1000, ...overrides });
}

let seq = 0;
const event = (type: string, data: Record<string, unknown>): EventEnvelope => ({
  seq: ++seq,
  turnId: "t1",
  executionId: "exe-1",
  type,
  data,
  at: new Date(T0).toISOString(),
});
const part = (p: Record<string, unknown>) => event("message.part.updated", { part: p });

const permission: InteractionRequest = {
  id: "ask-1",
  kind: "permission",
  title: "Run the test suite?",
  answerSpec: { fields: [{ name: "grant", type: "select", options: ["allow_once", "deny"], required: true }] },
};

function ask(overrides: Partial<InteractionRecord> = {}): InteractionRecord {
  return {
    interactionId: "ask-1",
    turnId: "t1",
    executionId: "exe-1",
    request: permission,
    status: "answered",
    outcome: "accepted",
    answerHmac: "hmac-of-the-answer",
    operationId: "op-1",
    createdAt: T0 + 100,
    resolvedAt: T0 + 200,
    ...overrides,
  };
}

describe("the transcript", () => {
  it("places an answered ask where it was asked, with the request and the outcome", () => {
    const events = [
      part({ id: "p1", type: "text", text: "Before" }),
      event("interaction.requested", { turnId: "t1", interaction: permission }),
      event("interaction.resolved", { turnId: "t1", interactionId: "ask-1", status: "answered", outcome: "accepted" }),
      part({ id: "p2", type: "text", text: "After" }),
    ];
    const [, assistant] = buildTranscript([
      { turn: turn({ resultText: "Before\n\nAfter" }), events, interactions: [ask()] },
    ]);
    expect(assistant).toMatchObject({ role: "assistant", text: "Before\n\nAfter" });
    if (assistant?.role !== "assistant") throw new Error("no assistant message");
    expect(assistant.parts.map((p) => `${p.type}:${p.id}`)).toEqual(["text:p1", "interaction:ask-1", "text:p2"]);
    expect(assistant.parts[1]).toEqual({
      id: "ask-1",
      type: "interaction",
      request: permission,
      status: "answered",
      outcome: "accepted",
      askedAt: new Date(T0 + 100).toISOString(),
      resolvedAt: new Date(T0 + 200).toISOString(),
    });
  });

  it("never carries what was answered: no hash, no operation, no data", () => {
    const [, assistant] = buildTranscript([
      { turn: turn(), events: [event("interaction.requested", { interaction: permission })], interactions: [ask()] },
    ]);
    const text = JSON.stringify(assistant);
    expect(text).not.toContain("hmac-of-the-answer");
    expect(text).not.toContain("op-1");
    expect(text).not.toContain("answerHmac");
  });

  it("keeps why an ask ended unanswered (the reason on its resolved event)", () => {
    const events = [
      event("interaction.requested", { interaction: permission }),
      event("interaction.resolved", { interactionId: "ask-1", status: "expired", reason: "timeout" }),
    ];
    const [, assistant] = buildTranscript([
      { turn: turn(), events, interactions: [ask({ status: "expired", outcome: null, resolvedAt: T0 + 300 })] },
    ]);
    if (assistant?.role !== "assistant") throw new Error("no assistant message");
    expect(assistant.parts[0]).toMatchObject({ type: "interaction", status: "expired", reason: "timeout" });
    expect(assistant.parts[0]).not.toHaveProperty("outcome");
  });

  it("shows an outstanding ask whose request event was trimmed, after the result text", () => {
    const [, assistant] = buildTranscript([
      {
        turn: turn({ status: "running", resultText: null, completedAt: null }),
        events: [],
        interactions: [ask({ status: "outstanding", outcome: null, resolvedAt: null })],
      },
    ]);
    if (assistant?.role !== "assistant") throw new Error("no assistant message");
    expect(assistant.parts).toMatchObject([{ type: "interaction", id: "ask-1", status: "outstanding" }]);
  });

  it("keeps the stored result when the events were trimmed, beside the turn's asks", () => {
    const [, assistant] = buildTranscript([
      { turn: turn({ resultText: "All done." }), events: [], interactions: [ask()] },
    ]);
    if (assistant?.role !== "assistant") throw new Error("no assistant message");
    expect(assistant.parts.map((p) => p.type)).toEqual(["interaction", "text"]);
    expect(assistant.text).toBe("All done.");
  });

  it("carries the cancel reason of a cancelled turn, and only of a cancelled turn", () => {
    const [, cancelled] = buildTranscript([
      { turn: turn({ status: "cancelled", cancelReason: "stopped by the user" }), events: [], interactions: [] },
    ]);
    expect(cancelled).toMatchObject({ status: "cancelled", cancelReason: "stopped by the user" });
    const [, completed] = buildTranscript([{ turn: turn({ cancelReason: "stale" }), events: [], interactions: [] }]);
    expect(completed).not.toHaveProperty("cancelReason");
  });

  it("merges a part's updates into one part, in first-seen order, and leaves out bookkeeping parts", () => {
    const events = [
      part({ id: "s1", type: "step-start" }),
      part({ id: "tool", type: "tool", tool: "read", state: { status: "pending" } }),
      part({ id: "p1", type: "text", text: "Hel" }),
      part({ id: "tool", type: "tool", tool: "read", state: { status: "completed", output: "x" } }),
      part({ id: "p1", type: "text", text: "Hello" }),
    ];
    const [user, assistant] = buildTranscript([{ turn: turn(), events, interactions: [] }]);
    expect(user).toEqual({ role: "user", turnId: "t1", text: "hello", at: new Date(T0).toISOString() });
    if (assistant?.role !== "assistant") throw new Error("no assistant message");
    expect(assistant.parts).toEqual([
      { id: "tool", type: "tool", tool: "read", state: { status: "completed", output: "x" } },
      { id: "p1", type: "text", text: "Hello" },
    ]);
    expect(assistant.text).toBe("Hello");
  });

  it("carries each warning of the turn where it came (agent_memory_reset above all), and the result beside a warning alone", () => {
    const reset = event("warning", { code: "agent_memory_reset", message: "the agent's environment was replaced" });
    const [, assistant] = buildTranscript([
      { turn: turn(), events: [reset, part({ id: "p1", type: "text", text: "Hi" })], interactions: [] },
    ]);
    if (assistant?.role !== "assistant") throw new Error("no assistant message");
    expect(assistant.parts).toEqual([
      {
        id: `warning:${reset.seq}`,
        type: "warning",
        code: "agent_memory_reset",
        message: "the agent's environment was replaced",
      },
      { id: "p1", type: "text", text: "Hi" },
    ]);
    expect(assistant.text).toBe("Hi");
    // A turn whose events hold a warning and no text part still shows its stored result.
    const [, settled] = buildTranscript([
      {
        turn: turn({ resultText: "Done." }),
        events: [event("warning", { code: "stream_incomplete", message: "settled" })],
        interactions: [],
      },
    ]);
    if (settled?.role !== "assistant") throw new Error("no assistant message");
    expect(settled.parts.map((p) => p.type)).toEqual(["warning", "text"]);
    expect(settled.text).toBe("Done.");
  });
});
