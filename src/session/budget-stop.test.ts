import { describe, expect, it } from "vitest";
import { Refusal } from "../errors";
import type { BudgetState, Spend } from "../usage/budgets";
import { type ExecutionUsageState, emptyExecutionUsage, foldReceipt } from "../usage/usage-fold";
import { BudgetStop, budgetRefusal } from "./budget-stop";
import { EventLog } from "./event-log";
import type { NewEvent, TurnRecord } from "./store/records";
import type { SessionStore } from "./store/store";

const budget = (over: Partial<BudgetState> = {}): BudgetState => ({
  scope: "conversation",
  tokens: 100,
  used: 120,
  complete: true,
  provenance: "measured",
  exceeded: true,
  ...over,
});

describe("a new turn at the door of a used-up budget", () => {
  it("no budget, or one not used up: no refusal", () => {
    expect(budgetRefusal(null)).toBeNull();
    expect(budgetRefusal(budget({ used: 99, exceeded: false }))).toBeNull();
  });

  it("is refused budget_exceeded, with the budget, saying what the spend is", () => {
    const refusal = budgetRefusal(budget());
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal?.code).toBe("budget_exceeded");
    expect(refusal?.message).toBe("the conversation token budget of 100 is used up (120 tokens)");
    expect(refusal?.details).toEqual({ budget: budget() });
  });

  it("a floor says at least; spend counting estimates or figures of unknown provenance says so", () => {
    expect(budgetRefusal(budget({ scope: "user", complete: false }))?.message).toBe(
      "the user token budget of 100 is used up (at least 120 tokens)",
    );
    expect(budgetRefusal(budget({ provenance: "estimated" }))?.message).toBe(
      "the conversation token budget of 100 is used up (120 tokens, counting estimates)",
    );
    expect(budgetRefusal(budget({ provenance: "unknown" }))?.message).toBe(
      "the conversation token budget of 100 is used up (120 tokens, counting figures of unknown provenance)",
    );
  });
});

/** A budget stop over a store of one turn `t` of execution `e`, whose run spent `spent` measured tokens. */
function harness(options: {
  spent: number;
  status?: TurnRecord["status"];
  perConversation?: number;
  perUser?: number;
  elsewhere?: Spend;
  cancelFails?: number;
}) {
  const events: NewEvent[] = [];
  const cancels: Array<{ operationId?: string; reason?: string }> = [];
  const meta = new Map<string, unknown>();
  let elsewhereReads = 0;
  let failures = options.cancelFails ?? 0;
  const fold: ExecutionUsageState = foldReceipt(
    emptyExecutionUsage("e"),
    { inputTokens: options.spent, outputTokens: 0 },
    { provenance: "measured" },
  );
  const turn = {
    turnId: "t",
    executionId: "e",
    status: options.status ?? "running",
    cancelReason: null as string | null,
    controlRef: { runId: "e" },
  } as TurnRecord;
  const store = {
    getMeta: (key: string) => meta.get(key) ?? null,
    setMeta: (key: string, value: unknown) => void meta.set(key, value),
    turn: (id: string) => (id === "t" ? { ...turn } : null),
    setCancelReason: (_id: string, reason: string) => void (turn.cancelReason ??= reason),
    allExecutionUsage: () => [fold],
    dispatchedExecutionIds: () => ["e"],
  } as unknown as SessionStore;
  const log = new EventLog({
    transaction: (fn) => fn(),
    append: (event) => (events.push(event), { seq: events.length, type: event.type, envelope: "" }),
    publish: () => undefined,
  });
  const stop = new BudgetStop({
    store: () => store,
    log,
    provider: () => ({
      cancel: async (_ref, request) => {
        cancels.push(request ?? {});
        if (failures-- > 0) throw new Error("upstream unreachable");
        return { effect: "cancelled" as const };
      },
    }),
    config: () => ({ TOKEN_BUDGET_PER_CONVERSATION: options.perConversation, TOKEN_BUDGET_PER_USER: options.perUser }),
    usageElsewhere: async () => {
      elsewhereReads++;
      return options.elsewhere ?? { used: 0, complete: true, provenance: "measured" };
    },
  });
  return { stop, events, cancels, turn, meta, elsewhereReads: () => elsewhereReads };
}

/** Lets a stop started without waiting (after its commit) run to its end. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
const context = { sessionId: "s", conversationId: "c", ownerKey: "o" };

describe("the budget at the door", () => {
  it("reads what the user spent elsewhere only when a user budget is set, and refuses on the sum", async () => {
    const onlyConversation = harness({ spent: 10, perConversation: 100 });
    await onlyConversation.stop.admit(context);
    expect(onlyConversation.elsewhereReads()).toBe(0);

    const user = harness({ spent: 10, perUser: 100, elsewhere: { used: 95, complete: true, provenance: "measured" } });
    await expect(user.stop.admit(context)).rejects.toMatchObject({
      code: "budget_exceeded",
      message: "the user token budget of 100 is used up (105 tokens)",
    });
    expect(user.elsewhereReads()).toBe(1);
    expect(user.meta.get("userElsewhere")).toEqual({ used: 95, complete: true, provenance: "measured" });
  });
});

describe("the budget stop of a running turn", () => {
  it("records the stop as the turn's cancel reason, says so, and cancels the run upstream once", async () => {
    const h = harness({ spent: 150, perConversation: 100 });
    h.stop.stop("t");
    await settle();
    h.stop.stop("t");
    await settle();
    expect(h.turn.cancelReason).toBe("budget_exceeded");
    expect(h.events.map((e) => e.type)).toEqual(["budget.exceeded"]);
    expect(h.events[0]!.data).toMatchObject({
      turnId: "t",
      budget: { scope: "conversation", tokens: 100, used: 150, exceeded: true },
    });
    expect(h.cancels).toEqual([{ operationId: "budget:t", reason: "budget_exceeded" }]);
  });

  it("a cancel that fails is reported and tried again at the next usage report", async () => {
    const h = harness({ spent: 150, perConversation: 100, cancelFails: 1 });
    h.stop.stop("t");
    await settle();
    expect(h.events.map((e) => e.type)).toEqual(["budget.exceeded", "warning"]);
    expect(h.events[1]!.data).toEqual({
      code: "budget_cancel_failed",
      message: "could not cancel the run for its budget: upstream unreachable",
    });
    h.stop.stop("t");
    await settle();
    expect(h.cancels).toHaveLength(2);
  });

  it("a turn that no longer runs is not stopped", async () => {
    const h = harness({ spent: 150, perConversation: 100, status: "completed" });
    h.stop.stop("t");
    await settle();
    expect(h.cancels).toEqual([]);
    expect(h.events).toEqual([]);
  });
});
