/**
 * The budget stop as a webhook event: runs in the `budgets` project (TOKEN_BUDGET_PER_CONVERSATION
 * 2500; a plain scripted turn spends 2060 tokens), with the webhook receiver of ./support.ts.
 */
import { describe, expect, it } from "vitest";
import { json, sendTurn, uid, waitForTurn } from "../helpers";
import { completedTurn, deliveries, inbox, subscribed, until } from "./support";

describe("a turn stopped by a budget", () => {
  it("is delivered as turn.budget_stopped, not as turn.cancelled", async () => {
    const { token, name, endpoint } = await subscribed(["turn.budget_stopped", "turn.cancelled", "turn.completed"]);
    const { cid } = await completedTurn(token, "first");
    const second = uid("turn");
    expect((await json(await sendTurn(token, cid, second, "second [hold]"))).turnId).toBe(second);
    expect(await waitForTurn(token, cid, second)).toMatchObject({
      status: "cancelled",
      cancelReason: "budget_exceeded",
    });
    const received = await until("both deliveries", async () => {
      const all = await inbox(name);
      return all.length >= 2 ? all : undefined;
    });
    expect(received.every((r) => r.verified)).toBe(true);
    expect(received.map((r) => r.payload.type)).toEqual(["turn.completed", "turn.budget_stopped"]);
    expect(received[1]!.payload.data).toMatchObject({ conversationId: cid, turnId: second, status: "cancelled" });
    await until("the log", async () =>
      (await deliveries(token, endpoint.id)).every((d) => d.status === "delivered") ? true : undefined,
    );
  });
});
