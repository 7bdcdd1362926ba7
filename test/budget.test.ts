import { describe, expect, it } from "vitest";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

// This project runs with TOKEN_BUDGET_PER_CONVERSATION=2500 and TOKEN_BUDGET_PER_USER=4500.
// A plain scripted turn spends 1980 input + 80 output tokens, 995 of them by its first step.

describe("token budgets", () => {
  it("a run that crosses the conversation budget is cancelled mid-stream; new turns get 429 until it changes", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("turn");
    await sendTurn(token, cid, t1, "first");
    expect((await waitForTurn(token, cid, t1)).status).toBe("completed");

    const t2 = uid("turn");
    const accepted = await json(await sendTurn(token, cid, t2, "second [long]"));
    const { events } = await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd);
    const end = events.at(-1)!;
    expect(end.type).toBe("turn.cancelled");
    expect(end.data.reason).toBe("budget_exceeded");
    // It says the spend it stopped on was measured (the Sandbox's step totals), not an estimate.
    expect(events.find((e) => e.type === "budget.exceeded")?.data.budget).toMatchObject({ scope: "conversation", exceeded: true, provenance: "measured" });
    // It stopped at the first step that crossed the budget, long before the answer was done.
    expect(events.some((e) => e.type === "raw" && (e.data.event as any).part.id.endsWith("step-finish-2"))).toBe(false);
    const turn = await waitForTurn(token, cid, t2);
    expect(turn).toMatchObject({ status: "cancelled", cancelReason: "budget_exceeded" });
    expect(turn.usage.inputTokens).toBeGreaterThan(0);

    const refused = await sendTurn(token, cid, uid("turn"), "third");
    expect(refused.status).toBe(429);
    const error = (await json(refused)).error;
    expect(error.code).toBe("budget_exceeded");
    expect(error.details.budget).toMatchObject({ scope: "conversation", tokens: 2500, exceeded: true, provenance: "measured" });
    expect(error.message).not.toContain("estimate");
    // A retry of a finished turn is still answered from the cache.
    expect((await sendTurn(token, cid, t1, "first")).status).toBe(200);

    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    expect(usage.budget).toMatchObject({ tokens: 2500, exceeded: true, complete: true, provenance: "measured" });
  });

  it("the per-user budget counts every conversation of the user", async () => {
    const token = await tokenFor(uid("user"));
    for (const message of ["a", "b"]) {
      const cid = uid("conv");
      const t = uid("turn");
      await sendTurn(token, cid, t, message);
      expect((await waitForTurn(token, cid, t)).status).toBe("completed");
    }
    // 3960 spent elsewhere: this conversation's first step takes the user past 4500.
    const cid = uid("conv");
    const t = uid("turn");
    await sendTurn(token, cid, t, "c [long]");
    const turn = await waitForTurn(token, cid, t);
    expect(turn).toMatchObject({ status: "cancelled", cancelReason: "budget_exceeded" });
    const next = await sendTurn(token, uid("conv"), uid("turn"), "d");
    expect(next.status).toBe(429);
    // The spend counted elsewhere was measured too, and the user's index kept that.
    expect((await json(next)).error.details.budget).toMatchObject({ scope: "user", tokens: 4500, provenance: "measured" });
  });

  it("with unknown usage it says so: the budget is checked against a floor and says 'at least'", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("turn");
    await sendTurn(token, cid, t1, "partial [receipt-partial] [no-usage]");
    await waitForTurn(token, cid, t1);
    const t2 = uid("turn");
    await sendTurn(token, cid, t2, "again [receipt-partial] [no-usage]");
    await waitForTurn(token, cid, t2);
    const refused = await sendTurn(token, cid, uid("turn"), "more");
    expect(refused.status).toBe(429);
    const error = (await json(refused)).error;
    expect(error.message).toContain("at least");
    expect(error.details.budget).toMatchObject({ complete: false, used: 3960 });
  });
});

describe("spend is the user's", () => {
  it("deleting conversations does not give the user a fresh budget", async () => {
    const token = await tokenFor(uid("user"));
    for (const message of ["a", "b"]) {
      const cid = uid("conv");
      const t = uid("turn");
      await sendTurn(token, cid, t, message);
      expect((await waitForTurn(token, cid, t)).status).toBe("completed");
      expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    }
    // 3960 spent in conversations that are gone: the next one still counts them.
    const cid = uid("conv");
    const t = uid("turn");
    await sendTurn(token, cid, t, "c [long]");
    expect(await waitForTurn(token, cid, t)).toMatchObject({ status: "cancelled", cancelReason: "budget_exceeded" });
    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    // What the deleted conversations spent keeps its provenance (measured) in the user's record.
    expect(usage.budget).toMatchObject({ scope: "user", exceeded: true, provenance: "measured" });
    expect(usage.budget.used).toBeGreaterThanOrEqual(3960 + 1040);
  });
});

describe("a send while the per-user budget is being read", () => {
  // Admitting a new turn reads the user's spend elsewhere (an RPC): two sends that arrive together
  // must still be decided as if one came after the other.
  it("the same turn sent twice at once is one turn, answered twice, never a server error", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const answers = await Promise.all([sendTurn(token, cid, turnId, "hello"), sendTurn(token, cid, turnId, "hello")]);
    expect(answers.map((r) => r.status).sort()).toEqual([202, 202]);
    const [a, b] = await Promise.all(answers.map((r) => json(r)));
    expect(a.executionId).toBe(b.executionId);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });

  it("two turns sent at once to one conversation: one runs, the other is refused busy", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await sendTurn(token, cid, uid("turn"), "hello");
    expect(first.status).toBe(202);
    await waitForTurn(token, cid, (await json(first)).turnId);
    const answers = await Promise.all([sendTurn(token, cid, uid("turn"), "one"), sendTurn(token, cid, uid("turn"), "two")]);
    expect(answers.map((r) => r.status).sort()).toEqual([202, 409]);
  });
});
