import { describe, expect, it } from "vitest";
import { api, collect, counters, isTurnEnd, json, release, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

// This project runs with TOKEN_BUDGET_PER_CONVERSATION=2500 and TOKEN_BUDGET_PER_USER=4500.
// A plain scripted turn spends 1980 input + 80 output tokens, 995 of them by its first step. A turn
// expected to be stopped by a budget is held after that step ([hold]): the stop cannot be outrun.

describe("token budgets", () => {
  it("a run that crosses the conversation budget is cancelled mid-stream; new turns get 429 until it changes", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("turn");
    await sendTurn(token, cid, t1, "first");
    expect((await waitForTurn(token, cid, t1)).status).toBe("completed");

    const t2 = uid("turn");
    const accepted = await json(await sendTurn(token, cid, t2, "second [hold]"));
    const { events } = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      isTurnEnd,
    );
    const end = events.at(-1)!;
    expect(end.type).toBe("turn.cancelled");
    expect(end.data.reason).toBe("budget_exceeded");
    // It says the spend it stopped on was measured (the Sandbox's step totals), not an estimate.
    expect(events.find((e) => e.type === "budget.exceeded")?.data.budget).toMatchObject({
      scope: "conversation",
      exceeded: true,
      provenance: "measured",
    });
    // It stopped at the first step that crossed the budget, long before the answer was done.
    expect(events.some((e) => e.type === "raw" && (e.data.event as any).part.id.endsWith("step-finish-2"))).toBe(false);
    const turn = await waitForTurn(token, cid, t2);
    expect(turn).toMatchObject({ status: "cancelled", cancelReason: "budget_exceeded" });
    expect(turn.usage.inputTokens).toBeGreaterThan(0);

    const refused = await sendTurn(token, cid, uid("turn"), "third");
    expect(refused.status).toBe(429);
    const error = (await json(refused)).error;
    expect(error.code).toBe("budget_exceeded");
    expect(error.details.budget).toMatchObject({
      scope: "conversation",
      tokens: 2500,
      exceeded: true,
      provenance: "measured",
    });
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
    await sendTurn(token, cid, t, "c [hold]");
    const turn = await waitForTurn(token, cid, t);
    expect(turn).toMatchObject({ status: "cancelled", cancelReason: "budget_exceeded" });
    const next = await sendTurn(token, uid("conv"), uid("turn"), "d");
    expect(next.status).toBe(429);
    // The spend counted elsewhere was measured too, and the user's index kept that.
    expect((await json(next)).error.details.budget).toMatchObject({
      scope: "user",
      tokens: 4500,
      provenance: "measured",
    });
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

describe("the budget on the stream", () => {
  it("every usage.updated carries the budget as it stands: the first turn's already, and the last one's equals GET …/usage", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("turn");
    const accepted = await json(await sendTurn(token, cid, t1, "first"));
    const { events } = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      isTurnEnd,
    );
    const updates = events.filter((e) => e.type === "usage.updated");
    expect(updates.length).toBeGreaterThan(1);
    for (const update of updates) {
      const total = update.data.conversation as { inputTokens: number | null; outputTokens: number | null };
      // This conversation's budget is the tightest: what it used is the total's tokens, in and out.
      expect(update.data.budget).toMatchObject({
        scope: "conversation",
        tokens: 2500,
        used: (total.inputTokens ?? 0) + (total.outputTokens ?? 0),
      });
    }
    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    expect(updates.at(-1)!.data.budget).toEqual(usage.budget);
    expect(usage.budget).toMatchObject({ used: 2060, exceeded: false });
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
    await sendTurn(token, cid, t, "c [hold]");
    expect(await waitForTurn(token, cid, t)).toMatchObject({ status: "cancelled", cancelReason: "budget_exceeded" });
    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    // What the deleted conversations spent keeps its provenance (measured) in the user's record.
    expect(usage.budget).toMatchObject({ scope: "user", exceeded: true, provenance: "measured" });
    expect(usage.budget.used).toBeGreaterThanOrEqual(3960 + 1040);
  });
});

describe("an account's deletion", () => {
  it("forgets its spend: the same user signing in again starts with a fresh budget", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    for (const message of ["a", "b"]) {
      const cid = uid("conv");
      const t = uid("turn");
      await sendTurn(token, cid, t, message);
      expect((await waitForTurn(token, cid, t)).status).toBe("completed");
    }
    const res = await api("/v1/me", { token, method: "DELETE" });
    expect(res.status).toBe(200);
    const deletion = await json(res);
    expect(deletion).toMatchObject({ state: "deleted", conversationsDeleted: 2 });
    const began = Date.parse(deletion.beganAt);
    while (Date.now() <= began + 1000) await new Promise((r) => setTimeout(r, 50));
    const fresh = await tokenFor(user, { issuedAt: Math.floor(Date.now() / 1000) + 60 });
    // Had the 3960 spent before the deletion been kept, this turn's first step (995) would take the
    // user past 4500 and stop it there; held after that step ([hold]), it is let go and completes.
    const cid = uid("conv");
    const t = uid("turn");
    const accepted = await json(await sendTurn(fresh, cid, t, "c [hold]"));
    await release(accepted.executionId);
    expect(await waitForTurn(fresh, cid, t)).toMatchObject({ status: "completed" });
    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token: fresh }));
    expect(usage.budget).toMatchObject({ exceeded: false, used: 2060 });
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
    const answers = await Promise.all([
      sendTurn(token, cid, uid("turn"), "one"),
      sendTurn(token, cid, uid("turn"), "two"),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([202, 409]);
  });
});

describe("queued turns and the budget", () => {
  const queue = (token: string, cid: string, turnId: string, message: string) =>
    sendTurn(token, cid, turnId, message, { whenBusy: "queue" });

  it("is checked when a queued turn starts, not when it was queued: a refusal at the start ends that turn failed, and the next is checked at its own start", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const started = (await counters())["runs.started"] ?? 0;
    const first = uid("turn");
    // Held after its first step while the others queue behind it, then let go.
    const running = await json(await sendTurn(token, cid, first, "first [hold]"));
    // Both are accepted while the budget allows a new turn.
    const [crosses, refused, alsoRefused] = [uid("q"), uid("q"), uid("q")];
    for (const q of [crosses, refused, alsoRefused])
      expect((await queue(token, cid, q, q === crosses ? "queued [hold]" : "queued")).status).toBe(202);
    await release(running.executionId);
    expect((await waitForTurn(token, cid, first)).status).toBe("completed");
    // 2060 spent: the first queued turn starts (under 2500) and is stopped when it crosses the budget.
    const { events } = await collect(
      await api(`/v1/conversations/${cid}/events`, { token }),
      (e) => e.type === "turn.dequeued" && e.turnId === alsoRefused,
      { timeoutMs: 15_000 },
    );
    expect(events.find((e) => e.type === "turn.cancelled")).toMatchObject({
      turnId: crosses,
      data: { reason: "budget_exceeded" },
    });
    // The rest are refused at their start, each with the budget's refusal, and never dispatched.
    const dequeued = events.filter((e) => e.type === "turn.dequeued");
    expect(dequeued.map((e) => [e.turnId, e.data.reason, (e.data.error as { code: string }).code])).toEqual([
      [refused, "refused", "budget_exceeded"],
      [alsoRefused, "refused", "budget_exceeded"],
    ]);
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${refused}`, { token }));
    expect(turn).toMatchObject({ status: "failed", error: { code: "budget_exceeded" } });
    expect(turn.error.message).toContain("token budget of 2500 is used up");
    expect(events.filter((e) => e.type === "turn.accepted").map((e) => e.turnId)).toEqual([first, crosses]);
    expect(((await counters())["runs.started"] ?? 0) - started).toBe(2);
    // A retry of a refused queued send is its final answer.
    const retried = await queue(token, cid, refused, "queued");
    expect(retried.status).toBe(200);
    expect(await json(retried)).toMatchObject({ status: "failed", cached: true, error: { code: "budget_exceeded" } });
  });

  it("two turns sent at once with whenBusy queue while the per-user budget is read: one runs, the other waits and starts after it", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const [a, b] = [uid("turn"), uid("turn")];
    // Each is held after its first step ([hold]): the one that runs until let go, the one that waits until its budget stop.
    const answers = await Promise.all([queue(token, cid, a, "one [hold]"), queue(token, cid, b, "two [hold]")]);
    expect(answers.map((r) => r.status)).toEqual([202, 202]);
    const views = await Promise.all(answers.map((r) => json(r)));
    expect(views.map((t) => t.status === "queued").sort()).toEqual([false, true]);
    const [runs, waits] = views[0].status === "queued" ? [b, a] : [a, b];
    await release(views.find((t) => t.status !== "queued").executionId);
    const endOf = async (turnId: string) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
        if (["completed", "failed", "cancelled"].includes(turn.status) || Date.now() > deadline) return turn;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    expect((await endOf(runs)).status).toBe("completed");
    // It started (2060 of 2500 spent), then crossed the conversation's budget.
    expect(await endOf(waits)).toMatchObject({ status: "cancelled", cancelReason: "budget_exceeded" });
  });
});
