import { describe, expect, it } from "vitest";
import type { EventEnvelope } from "../schemas/api";
import { assistantMessageId, TurnChunks, TurnResponse, turnOfAssistantMessage, type UiChunk } from "./chunks";
import { MessageFold } from "./message";
import { answerBody, type ChatRequestBody, ChatRequestError, chatAction } from "./request";

let seq = 0;
const event = (type: string, data: Record<string, unknown>, turnId = "t1"): EventEnvelope => ({
  seq: ++seq,
  turnId,
  executionId: "exe",
  type,
  data,
  at: "2026-01-01T00:00:00.000Z",
});
const part = (p: Record<string, unknown>, delta?: string) =>
  event("message.part.updated", { part: p, ...(delta !== undefined ? { delta } : {}) });
const permission = {
  id: "ask-1",
  kind: "permission",
  title: "Run it?",
  answerSpec: { fields: [{ name: "grant" }, { name: "feedback" }] },
};

const types = (chunks: UiChunk[]) => chunks.map((c) => c.type);

describe("a turn's events as UI message chunks", () => {
  it("text deltas once, a replaced text as a part of its own, steps from step-start parts", () => {
    const mapper = new TurnChunks("t1");
    const out = [
      part({ id: "s1", type: "step-start" }),
      part({ id: "p", type: "text" }, "Hel"),
      part({ id: "p", type: "text" }, "lo"),
      part({ id: "p", type: "text", text: "Hello, world" }),
      part({ id: "p", type: "text", text: "Replaced" }),
      event("turn.completed", { status: "completed", usage: { inputTokens: 1 } }),
    ].flatMap((e) => mapper.push(e).chunks);
    expect(out.filter((c) => c.type === "text-delta").map((c) => c.delta)).toEqual([
      "Hel",
      "lo",
      ", world",
      "Replaced",
    ]);
    expect(types(out)).toEqual([
      "start-step",
      "text-start",
      "text-delta",
      "text-delta",
      "text-delta",
      "text-end",
      "text-start",
      "text-delta",
      "text-end",
      "finish-step",
      "finish",
    ]);
    expect(out.at(-1)).toEqual({
      type: "finish",
      finishReason: "stop",
      messageMetadata: { status: "completed", usage: { inputTokens: 1 } },
    });
    expect(mapper.ended).toBe(true);
    expect(mapper.push(part({ id: "late", type: "text" }, "x")).chunks).toEqual([]);
  });

  it("a provider's tool: input, then output once; another turn's events are not this turn's", () => {
    const mapper = new TurnChunks("t1");
    const out = [
      part({ id: "tool", type: "tool", tool: "read", state: { status: "pending" } }),
      part({ id: "tool", type: "tool", tool: "read", state: { status: "running", input: { f: 1 } } }),
      part({ id: "tool", type: "tool", tool: "read", state: { status: "completed", input: { f: 1 }, output: "ok" } }),
      part({ id: "tool", type: "tool", tool: "read", state: { status: "completed", input: { f: 1 }, output: "ok" } }),
      event("message.part.updated", { part: { id: "x", type: "text", text: "not mine" } }, "t2"),
    ].flatMap((e) => mapper.push(e).chunks);
    expect(types(out)).toEqual(["start-step", "tool-input-start", "tool-input-available", "tool-output-available"]);
    expect(out[3]).toMatchObject({ toolCallId: "tool", output: "ok", providerExecuted: true, dynamic: true });
  });

  it("a permission is a tool approval; its answer closes it and opens the next step", () => {
    const mapper = new TurnChunks("t1");
    const asked = mapper.push(event("interaction.requested", { interaction: permission }));
    expect(asked.asked).toBe("ask-1");
    expect(types(asked.chunks)).toEqual([
      "start-step",
      "tool-input-available",
      "tool-approval-request",
      "message-metadata",
      "finish-step",
    ]);
    expect(asked.chunks[3]).toEqual({
      type: "message-metadata",
      messageMetadata: { waitingFor: "awaiting_permission" },
    });
    const denied = mapper.push(
      event("interaction.resolved", {
        interactionId: "ask-1",
        status: "answered",
        outcome: "accepted",
        approved: false,
      }),
    );
    expect(denied.chunks).toEqual([
      { type: "tool-approval-response", approvalId: "ask-1", approved: false },
      { type: "tool-output-denied", toolCallId: "ask-1" },
      { type: "message-metadata", messageMetadata: { waitingFor: null } },
      { type: "start-step" },
    ]);
  });

  it("the message says what the turn waits for: the oldest open ask, then the next, then nothing", () => {
    const mapper = new TurnChunks("t1");
    const waitingFor = (chunks: UiChunk[]) =>
      (chunks.find((c) => c.type === "message-metadata")?.messageMetadata as { waitingFor?: unknown } | undefined)
        ?.waitingFor;
    expect(
      waitingFor(
        mapper.push(
          event("interaction.requested", {
            interaction: { id: "q", kind: "question", title: "?", answerSpec: { fields: [] } },
          }),
        ).chunks,
      ),
    ).toBe("awaiting_question");
    expect(
      waitingFor(
        mapper.push(
          event("interaction.requested", {
            interaction: { id: "p", kind: "plan", title: "Plan?", answerSpec: { fields: [] } },
          }),
        ).chunks,
      ),
    ).toBe("awaiting_question");
    expect(
      waitingFor(
        mapper.push(event("interaction.resolved", { interactionId: "q", status: "answered", outcome: "accepted" }))
          .chunks,
      ),
    ).toBe("awaiting_plan_decision");
    expect(
      waitingFor(
        mapper.push(event("interaction.resolved", { interactionId: "p", status: "expired", reason: "timeout" })).chunks,
      ),
    ).toBeNull();
  });

  it("a question is a client tool; an expired one ends in an error, never with an answer", () => {
    const mapper = new TurnChunks("t1");
    const asked = mapper.push(
      event("interaction.requested", {
        interaction: { id: "q", kind: "question", title: "?", answerSpec: { fields: [] } },
      }),
    );
    expect(asked.chunks[1]).not.toHaveProperty("providerExecuted");
    const expired = mapper.push(
      event("interaction.resolved", { interactionId: "q", status: "expired", reason: "timeout" }),
    );
    expect(expired.chunks[0]).toEqual({
      type: "tool-output-error",
      toolCallId: "q",
      dynamic: true,
      errorText: "expired: timeout",
    });
  });

  it("failed is an error chunk after the metadata; cancelled an abort with its reason", () => {
    const failed = new TurnChunks("t1").push(
      event("turn.failed", { status: "failed", error: { code: "x", message: "broke" } }),
    );
    expect(types(failed.chunks)).toEqual(["message-metadata", "error"]);
    expect(failed.chunks[1]).toEqual({ type: "error", errorText: "x: broke" });
    const cancelled = new TurnChunks("t1").push(event("turn.cancelled", { status: "cancelled", reason: "stop" }));
    expect(cancelled.chunks.at(-1)).toEqual({ type: "abort", reason: "stop" });
  });
});

describe("one response about a turn", () => {
  const events = () => [
    part({ id: "s", type: "step-start" }),
    part({ id: "p", type: "text" }, "before"),
    event("interaction.requested", { interaction: permission }),
    event("interaction.resolved", { interactionId: "ask-1", status: "answered", outcome: "accepted", approved: true }),
    part({ id: "p2", type: "text" }, "after"),
    event("turn.completed", { status: "completed" }),
  ];

  it("pauses at an ask nobody answered, with finish tool-calls", () => {
    const response = new TurnResponse("t1", { pauseAt: () => true });
    const out = [...response.begin(), ...events().flatMap((e) => response.feed(e))];
    expect(out[0]).toEqual({ type: "start", messageId: "t1:answer", messageMetadata: { turnId: "t1" } });
    expect(out.at(-1)).toEqual({ type: "finish", finishReason: "tool-calls" });
    expect(response.finished).toBe(true);
  });

  it("a continuation sends only what follows the answered asks; folded together they are the whole message", () => {
    const whole = new TurnResponse("t1", { pauseAt: () => false });
    const all = [...whole.begin(), ...events().flatMap((e) => whole.feed(e))];
    const first = new TurnResponse("t1", { pauseAt: () => true });
    const head = [...first.begin(), ...events().flatMap((e) => first.feed(e))];
    const next = new TurnResponse("t1", { continueAfterAsks: ["ask-1"], pauseAt: () => true });
    const tail = [...next.begin(), ...events().flatMap((e) => next.feed(e))];
    expect(tail[1]).toEqual({ type: "tool-approval-response", approvalId: "ask-1", approved: true });
    expect(tail.some((c) => c.type === "text-delta" && c.delta === "before")).toBe(false);
    const fold = (chunks: UiChunk[]) => {
      const f = new MessageFold(assistantMessageId("t1"));
      for (const c of chunks) f.apply(c);
      return f.message;
    };
    const stitched = fold([...head, ...tail]);
    delete stitched.metadata;
    const reference = fold(all);
    delete reference.metadata;
    expect(stitched).toEqual(reference);
    expect(reference.parts.map((p) => p.type)).toEqual(["step-start", "text", "dynamic-tool", "step-start", "text"]);
    expect(reference.parts[2]).toMatchObject({ state: "output-available", approval: { id: "ask-1", approved: true } });
  });
});

describe("what a frontend sends", () => {
  const body = (over: Partial<ChatRequestBody>): ChatRequestBody => ({
    id: "c",
    trigger: "submit-message",
    messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
    ...over,
  });

  it("a user message is a turn under its id; an answer's id names its turn", () => {
    expect(chatAction(body({}))).toEqual({ kind: "submit", turnId: "u1", message: "hi", files: [] });
    expect(turnOfAssistantMessage(assistantMessageId("a:b"))).toBe("a:b");
    expect(turnOfAssistantMessage("plain")).toBeNull();
  });

  it("approvals and question outputs on the continued answer are its answers", () => {
    const action = chatAction(
      body({
        messageId: "u1:answer",
        messages: [
          { id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] },
          {
            id: "u1:answer",
            role: "assistant",
            parts: [
              {
                type: "dynamic-tool",
                toolName: "permission",
                toolCallId: "ask-1",
                state: "approval-responded",
                approval: { id: "ask-1", approved: false, reason: "no" },
              },
              {
                type: "dynamic-tool",
                toolName: "question",
                toolCallId: "q",
                state: "output-available",
                output: { name: "x" },
              },
              {
                type: "dynamic-tool",
                toolName: "read",
                toolCallId: "r",
                state: "output-available",
                output: "file",
                providerExecuted: true,
              },
            ],
          },
        ],
      }),
    );
    expect(action).toEqual({
      kind: "answer",
      turnId: "u1",
      askIds: ["ask-1", "q"],
      answers: [
        { interactionId: "ask-1", via: "approval", outcome: "accepted", approved: false, reason: "no" },
        { interactionId: "q", via: "output", outcome: "accepted", data: { name: "x" } },
      ],
    });
    const [denial] = (action as Extract<typeof action, { kind: "answer" }>).answers;
    expect(answerBody(denial!, permission)).toEqual({ outcome: "accepted", data: { grant: "deny", feedback: "no" } });
    expect(answerBody({ ...denial!, approved: true }, permission)).toEqual({
      outcome: "accepted",
      data: { grant: "allow_once" },
    });
    expect(answerBody(denial!, { kind: "plan", answerSpec: { fields: [{ name: "decision" }] } })).toEqual({
      outcome: "accepted",
      data: { decision: "reject" },
    });
  });

  it("an approval is answered in the ask's own form: its decision field, a one-time yes, the refusal for a no", () => {
    const approval = { interactionId: "ask-1", via: "approval" as const, outcome: "accepted" as const, approved: true };
    const seedForm = {
      kind: "permission",
      answerSpec: { fields: [{ name: "response", type: "select", options: ["allow", "deny"], required: true }] },
    };
    expect(answerBody(approval, seedForm)).toEqual({ outcome: "accepted", data: { response: "allow" } });
    expect(answerBody({ ...approval, approved: false }, seedForm)).toEqual({
      outcome: "accepted",
      data: { response: "deny" },
    });
    // The contract's scopes: a yes is the one-time grant, never a session grant nobody chose.
    const contract = {
      kind: "permission",
      responseScopes: ["interaction", "session", "persistent"],
      answerSpec: {
        fields: [{ name: "grant", type: "select", options: ["allow_session", "allow_once", "deny"], required: true }],
      },
    };
    expect(answerBody(approval, contract)).toEqual({ outcome: "accepted", data: { grant: "allow_once" } });
  });

  it("refuses what the SDK never sends, naming the field", () => {
    const refusal = (b: ChatRequestBody) => {
      try {
        chatAction(b);
      } catch (err) {
        return err instanceof ChatRequestError ? err.path : "other";
      }
      return null;
    };
    expect(refusal(body({ messages: [{ id: "u1", role: "user", parts: [{ type: "image", url: "x" }] }] }))).toBe(
      "messages.0.parts.0.type",
    );
    expect(
      refusal(body({ trigger: "regenerate-message", messages: [{ id: "a:answer", role: "assistant", parts: [] }] })),
    ).toBe("messages.0.role");
    expect(
      refusal(body({ messages: [{ id: "x:answer", role: "assistant", parts: [{ type: "text", text: "t" }] }] })),
    ).toBe("messages.0.parts");
  });
});
