import { describe, expect, it } from "vitest";
import { payloadOf } from "../webhooks/payload";
import type { EventEnvelope } from "./session-store";
import { webhookEventOf } from "./webhook-handoff";

const conversation = { conversationId: "c1", title: "Fix the tests", incarnation: 1700000000000 };
const ask = { id: "ask-1", kind: "question", title: "Which framework?", body: "pick one", answerSpec: { fields: [{ id: "token", type: "secret", label: "API token" }] } };

function envelope(seq: number, type: string, data: Record<string, unknown>): EventEnvelope {
  return { seq, turnId: "t1", executionId: "e1", type, data, at: "2026-12-02T03:00:00.000Z" };
}
const none = () => null;

describe("the webhook event a log event makes", () => {
  it("an ask: ids, kind and title only (no body, no fields, no answer)", () => {
    const event = webhookEventOf(envelope(7, "interaction.requested", { turnId: "t1", interaction: ask }), conversation, none);
    expect(event).toEqual({
      key: "c1/1700000000000/7",
      type: "interaction.requested",
      at: "2026-12-02T03:00:00.000Z",
      conversationId: "c1",
      conversationTitle: "Fix the tests",
      turnId: "t1",
      interactionId: "ask-1",
      kind: "question",
      title: "Which framework?",
    });
  });

  it("an ask that expired names the ask from its record; one answered or cancelled makes none", () => {
    const expired = webhookEventOf(envelope(9, "interaction.resolved", { interactionId: "ask-1", status: "expired", reason: "timeout" }), conversation, () => ({ request: ask as never }));
    expect(expired).toMatchObject({ type: "interaction.expired", interactionId: "ask-1", kind: "question", title: "Which framework?" });
    for (const status of ["answered", "cancelled"]) {
      expect(webhookEventOf(envelope(9, "interaction.resolved", { interactionId: "ask-1", status, outcome: "accepted" }), conversation, none)).toBeNull();
    }
  });

  it("a turn's end: its status; a failure its error code, never its message; a budget stop is its own type", () => {
    expect(webhookEventOf(envelope(3, "turn.completed", { status: "completed", result: { text: "the answer" } }), conversation, none)).toMatchObject({ type: "turn.completed", status: "completed" });
    const failed = webhookEventOf(envelope(3, "turn.failed", { status: "failed", error: { code: "turn_timeout", message: "secret-ish upstream words" } }), conversation, none);
    expect(failed).toMatchObject({ type: "turn.failed", status: "failed", errorCode: "turn_timeout" });
    expect(JSON.stringify(failed)).not.toContain("upstream words");
    expect(webhookEventOf(envelope(3, "turn.cancelled", { status: "cancelled", reason: "cancelled by the user" }), conversation, none)).toMatchObject({ type: "turn.cancelled" });
    expect(webhookEventOf(envelope(3, "turn.cancelled", { status: "cancelled", reason: "budget_exceeded" }), conversation, none)).toMatchObject({ type: "turn.budget_stopped", status: "cancelled" });
  });

  it("other events make none, and so does one that does not fit the event's schema", () => {
    for (const type of ["part", "turn.waiting", "usage", "turn.accepted", "budget.exceeded"]) expect(webhookEventOf(envelope(1, type, {}), conversation, none)).toBeNull();
    expect(webhookEventOf(envelope(7, "interaction.requested", { interaction: ask }), { ...conversation, conversationId: "c 1" }, none)).toBeNull();
  });
});

describe("the payload", () => {
  it("is Standard Webhooks' type, timestamp and data, with links on the endpoint's origin", () => {
    const ok = webhookEventOf(envelope(7, "interaction.requested", { interaction: ask }), conversation, none)!;
    expect(payloadOf(ok, "https://chat.example.com")).toEqual({
      type: "interaction.requested",
      timestamp: "2026-12-02T03:00:00.000Z",
      data: {
        conversationId: "c1",
        conversationTitle: "Fix the tests",
        turnId: "t1",
        interactionId: "ask-1",
        kind: "question",
        title: "Which framework?",
        links: { conversation: "https://chat.example.com/?c=c1", api: "https://chat.example.com/v1/conversations/c1" },
      },
    });
  });
});
