import { describe, expect, it } from "vitest";
import { payloadOf } from "../webhooks/payload";
import type { EventEnvelope } from "./store/records";
import { WebhookHandoff, webhookEventOf } from "./webhook-handoff";

const conversation = { conversationId: "c1", title: "Fix the tests", incarnation: 1700000000000 };
const ask = {
  id: "ask-1",
  kind: "question",
  title: "Which framework?",
  body: "pick one",
  answerSpec: { fields: [{ id: "token", type: "secret", label: "API token" }] },
};

function envelope(seq: number, type: string, data: Record<string, unknown>): EventEnvelope {
  return { seq, turnId: "t1", executionId: "e1", type, data, at: "2026-12-02T03:00:00.000Z" };
}
const none = () => null;

describe("the webhook event a log event makes", () => {
  it("an ask: ids, kind and title only (no body, no fields, no answer)", () => {
    const event = webhookEventOf(
      envelope(7, "interaction.requested", { turnId: "t1", interaction: ask }),
      conversation,
      none,
    );
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
    const expired = webhookEventOf(
      envelope(9, "interaction.resolved", { interactionId: "ask-1", status: "expired", reason: "timeout" }),
      conversation,
      () => ({ request: ask as never }),
    );
    expect(expired).toMatchObject({
      type: "interaction.expired",
      interactionId: "ask-1",
      kind: "question",
      title: "Which framework?",
    });
    for (const status of ["answered", "cancelled"]) {
      expect(
        webhookEventOf(
          envelope(9, "interaction.resolved", { interactionId: "ask-1", status, outcome: "accepted" }),
          conversation,
          none,
        ),
      ).toBeNull();
    }
  });

  it("a turn's end: its status; a failure its error code, never its message; a budget stop is its own type", () => {
    expect(
      webhookEventOf(
        envelope(3, "turn.completed", { status: "completed", result: { text: "the answer" } }),
        conversation,
        none,
      ),
    ).toMatchObject({ type: "turn.completed", status: "completed" });
    const failed = webhookEventOf(
      envelope(3, "turn.failed", {
        status: "failed",
        error: { code: "turn_timeout", message: "secret-ish upstream words" },
      }),
      conversation,
      none,
    );
    expect(failed).toMatchObject({ type: "turn.failed", status: "failed", errorCode: "turn_timeout" });
    expect(JSON.stringify(failed)).not.toContain("upstream words");
    expect(
      webhookEventOf(
        envelope(3, "turn.cancelled", { status: "cancelled", reason: "cancelled by the user" }),
        conversation,
        none,
      ),
    ).toMatchObject({ type: "turn.cancelled" });
    expect(
      webhookEventOf(
        envelope(3, "turn.cancelled", { status: "cancelled", reason: "budget_exceeded" }),
        conversation,
        none,
      ),
    ).toMatchObject({ type: "turn.budget_stopped", status: "cancelled" });
  });

  it("other events make none, and so does one that does not fit the event's schema", () => {
    for (const type of ["part", "turn.waiting", "usage", "turn.accepted", "budget.exceeded"])
      expect(webhookEventOf(envelope(1, type, {}), conversation, none)).toBeNull();
    expect(
      webhookEventOf(
        envelope(7, "interaction.requested", { interaction: ask }),
        { ...conversation, conversationId: "c 1" },
        none,
      ),
    ).toBeNull();
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

describe("the hand-off and the object's alarm", () => {
  /** A store holding one turn's end after the hand-off's cursor. */
  function fakeStore() {
    const meta = new Map<string, unknown>([["webhooksHandedOff", 0]]);
    const events = [envelope(1, "turn.completed", { status: "completed" })];
    return {
      getMeta: (key: string) => meta.get(key) ?? null,
      setMeta: (key: string, value: unknown) => void meta.set(key, value),
      eventsOfTypesAfter: (after: number) => events.filter((e) => e.seq > after),
      lastSeq: () => events.length,
      interaction: () => null,
    };
  }
  const session = { sessionId: "s1", conversationId: "c1", ownerKey: "u1" };

  it("a hand-off under way needs no alarm (it arms one itself if it fails); one that failed does; one done leaves none", async () => {
    const store = fakeStore();
    let release!: (ok: boolean) => void;
    const retries: number[] = [];
    const handoff = new WebhookHandoff({
      store: () => store as never,
      bound: () => session,
      handOff: () =>
        new Promise<void>(
          (resolve, reject) => (release = (ok) => (ok ? resolve() : reject(new Error("user object gone")))),
        ),
      retryLater: async (at) => void retries.push(at),
    });
    expect(handoff.needsAlarm()).toBe(true);
    const first = handoff.flush();
    // Under way: the turn's end must not arm an alarm for it (that alarm would wake an idle object).
    expect(handoff.needsAlarm()).toBe(false);
    release(false);
    await first;
    expect(retries).toHaveLength(1);
    expect(handoff.needsAlarm()).toBe(true);
    const second = handoff.flush();
    release(true);
    await second;
    expect(handoff.needsAlarm()).toBe(false);
    expect(store.getMeta("webhooksHandedOff")).toBe(1);
  });
});
