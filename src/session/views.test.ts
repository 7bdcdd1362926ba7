import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Refusal } from "../errors";
import type { BudgetState } from "../usage/budgets";
import { totalOf } from "../usage/usage-fold";
import type { SessionContext } from "./store/records";
import { SessionStore } from "./store/store";
import { chatMessagesOf, chatReplayOf, messagesOf, summaryOf, usageOf } from "./views";

const context: SessionContext = { conversationId: "conv-1", sessionId: "sess-1", ownerKey: "owner-1" };
const digest = `sha256:${"a".repeat(64)}` as const;
const ref = (executionId: string) => ({
  runId: executionId,
  provider: "tangle",
  environmentId: "env-1",
  sessionId: "sess-1",
  executionId,
  requestDigest: digest,
});
const question = {
  id: "ask-1",
  kind: "question",
  title: "Which one?",
  answerSpec: { fields: [{ name: "answer", type: "text" }] },
};

/** A store of its own in a fresh session object, for one test. */
function withStore<T>(fn: (store: SessionStore) => T): Promise<T> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`views-${crypto.randomUUID()}`));
  return runInDurableObject(stub, (_instance, state) => fn(new SessionStore(state.storage.sql)));
}

/** A turn that ran under `executionId` (accepted, and finished when `status` says so). */
function turn(store: SessionStore, turnId: string, executionId: string, status?: "completed" | "failed", now = 1_000) {
  store.insertPendingTurn({
    turnId,
    requestDigest: digest,
    request: { message: `say ${turnId}`, model: "m-1" },
    executionId,
    now,
  });
  const accepted = store.appendEvent({
    turnId,
    executionId,
    type: "turn.accepted",
    data: { turnId, executionId, message: `say ${turnId}` },
    now,
  });
  store.markRunning(turnId, ref(executionId), accepted.seq, now);
  if (!status) return;
  store.finishTurn(turnId, { status, resultText: "done", now: now + 1 });
  store.appendEvent({
    turnId,
    executionId,
    type: `turn.${status}`,
    data: { turnId, status, result: { text: "done" } },
    now: now + 1,
  });
}

const AGENT = { backend: "opencode", model: null, chosen: "default" } as const;

describe("the conversation's read views", () => {
  it("a conversation without turns: idle, nothing active or last, the runner's total as given", async () => {
    const total = totalOf([]);
    const summary = await withStore((store) => {
      store.setMeta("createdAt", Date.UTC(2025, 0, 2));
      return summaryOf(store, context, total, [], AGENT);
    });
    expect(summary).toEqual({
      conversationId: "conv-1",
      state: "idle",
      waitingFor: null,
      title: null,
      agent: AGENT,
      activeTurn: null,
      lastTurn: null,
      queue: [],
      turnCount: 0,
      branch: 0,
      branchCount: 0,
      interactive: null,
      lastEventId: 0,
      interactions: [],
      usage: total,
      createdAt: "2025-01-02T00:00:00.000Z",
      updatedAt: null,
    });
  });

  it("the running turn is the active and the last one, and the summary waits for its open ask", async () => {
    const summary = await withStore((store) => {
      store.setMeta("title", "a title");
      turn(store, "t1", "x1", "completed");
      turn(store, "t2", "x2", undefined, 2_000);
      store.addInteraction({ interactionId: "ask-1", turnId: "t2", executionId: "x2", request: question, now: 2_001 });
      return summaryOf(store, context, totalOf([]), [], AGENT);
    });
    expect(summary).toMatchObject({
      state: "running",
      title: "a title",
      turnCount: 2,
      lastEventId: 3,
      waitingFor: "awaiting_question",
    });
    expect(summary.activeTurn).toMatchObject({ turnId: "t2", status: "running", waitingFor: "awaiting_question" });
    expect(summary.lastTurn).toEqual(summary.activeTurn);
    expect(summary.interactions).toEqual([{ turnId: "t2", ...question }]);
    expect(summary.updatedAt).toBe(new Date(2_000).toISOString());
  });

  it("messages and the UI messages hold each turn's message, in order", async () => {
    const { messages, chat } = await withStore((store) => {
      turn(store, "t1", "x1", "completed");
      turn(store, "t2", "x2", "failed");
      return {
        messages: messagesOf(store, "conv-1"),
        chat: JSON.parse(chatMessagesOf(store)) as Array<{ id: string; role: string; parts: unknown[] }>,
      };
    });
    expect(messages).toMatchObject({ conversationId: "conv-1", lastEventId: 4 });
    expect(messages.messages.filter((m) => m.role === "user").map((m) => m.turnId)).toEqual(["t1", "t2"]);
    expect(chat.filter((m) => m.role === "user")).toEqual([
      { id: "t1", role: "user", parts: [{ type: "text", text: "say t1" }] },
      { id: "t2", role: "user", parts: [{ type: "text", text: "say t2" }] },
    ]);
  });

  it("a replay is of a finished turn only: none while it runs, refused for a turn not held", async () => {
    const { finished, running, missing } = await withStore((store) => {
      turn(store, "t1", "x1", "completed");
      turn(store, "t2", "x2");
      let missing: unknown;
      try {
        chatReplayOf(store, "nope", []);
      } catch (err) {
        missing = err;
      }
      return { finished: chatReplayOf(store, "t1", []), running: chatReplayOf(store, "t2", []), missing };
    });
    // The turn's own stream, from its start to its end.
    expect(finished).toMatch(/^data: \{"type":"start","messageId":"t1:answer"/);
    expect(finished).toContain('"type":"finish","finishReason":"stop"');
    expect(running).toBeNull();
    expect(missing).toBeInstanceOf(Refusal);
    expect((missing as Refusal).code).toBe("turn_not_found");
  });

  it("usage: a turn that reported none is unknown, not zero; the budget as it applies, or null", async () => {
    const budget: BudgetState = {
      scope: "conversation",
      tokens: 1_000,
      used: 40,
      complete: false,
      exceeded: false,
      provenance: "estimated",
    };
    const total = totalOf([]);
    const { withBudget, without } = await withStore((store) => {
      turn(store, "t1", "x1", "completed");
      return { withBudget: usageOf(store, "conv-1", total, budget), without: usageOf(store, "conv-1", total, null) };
    });
    expect(withBudget.budget).toEqual(budget);
    expect(withBudget.total).toBe(total);
    expect(without.budget).toBeNull();
    expect(withBudget.turns).toHaveLength(1);
    expect(withBudget.turns[0]).toMatchObject({
      turnId: "t1",
      executionId: "x1",
      status: "completed",
      model: "m-1",
      conflicts: [],
      receiptDisagreements: [],
    });
    expect(withBudget.turns[0]!.usage).toMatchObject({
      source: "none",
      inputTokens: null,
      outputTokens: null,
      cost: null,
    });
  });
});
