import { describe, expect, it } from "vitest";
import { tightestBudget } from "../usage/budgets";
import {
  type ExecutionUsageState,
  emptyExecutionUsage,
  executionView,
  foldReceipt,
  foldUsage,
} from "../usage/usage-fold";
import type { NewEvent } from "./store/records";
import type { SessionStore } from "./store/store";
import { conversationTotal, recordUsage, usageFromResult } from "./turn-usage";

const spent = (executionId: string, inputTokens: number, outputTokens: number): ExecutionUsageState =>
  foldReceipt(emptyExecutionUsage(executionId), { inputTokens, outputTokens }, { provenance: "measured" });

/** A store of dispatched executions and their folds, as much of it as the helpers read. */
function store(dispatched: string[], folds: ExecutionUsageState[]) {
  const byId = new Map(folds.map((f) => [f.executionId, f]));
  const views = new Map<string, unknown>();
  const view = {
    allExecutionUsage: () => [...byId.values()],
    dispatchedExecutionIds: () => dispatched,
    putExecutionUsage: (turnId: string, state: ExecutionUsageState) => {
      byId.set(state.executionId, state);
      views.set(turnId, executionView(state));
    },
  } as Pick<SessionStore, "allExecutionUsage" | "dispatchedExecutionIds" | "putExecutionUsage">;
  return { view, views };
}

describe("the conversation's total", () => {
  it("sums every dispatched execution's fold", () => {
    const total = conversationTotal(store(["a", "b"], [spent("a", 10, 5), spent("b", 1, 2)]).view);
    expect(total).toMatchObject({ inputTokens: 11, outputTokens: 7, complete: true });
  });

  it("a dispatched turn that reported no usage is unknown, never zero: the total is a floor", () => {
    const total = conversationTotal(store(["a", "b"], [spent("a", 10, 5)]).view);
    expect(total).toMatchObject({ inputTokens: 10, outputTokens: 5, complete: false });
    expect(total.unknown).toEqual(expect.arrayContaining(["inputTokens", "outputTokens"]));
  });

  it("a fold of an execution no dispatched turn ran under does not count", () => {
    const total = conversationTotal(store(["a"], [spent("a", 10, 5), spent("pending", 100, 100)]).view);
    expect(total).toMatchObject({ inputTokens: 10, outputTokens: 5 });
  });
});

describe("recording an execution's usage", () => {
  it("stores the fold with its view on the turn, then reports it with the total that includes it", () => {
    const s = store(["a", "b"], [spent("a", 10, 5)]);
    const events: NewEvent[] = [];
    recordUsage(
      s.view,
      { append: (event) => (events.push(event), { seq: 1, type: event.type, envelope: "" }) },
      "turn-b",
      spent("b", 1, 2),
      42,
      () => null,
    );
    expect(s.views.get("turn-b")).toMatchObject({ inputTokens: 1, outputTokens: 2 });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ turnId: "turn-b", executionId: "b", type: "usage.updated", now: 42 });
    expect(events[0]!.data).toMatchObject({
      turnId: "turn-b",
      executionId: "b",
      usage: { inputTokens: 1, outputTokens: 2 },
      conversation: { inputTokens: 11, outputTokens: 7, complete: true },
    });
    expect(events[0]!.data.budget).toBeNull();
  });

  it("reports the budget as it stands with the fold counted, so a client keeps it current from the stream", () => {
    const s = store(["a", "b"], [spent("a", 10, 5)]);
    const events: NewEvent[] = [];
    const budget = () =>
      tightestBudget(
        conversationTotal(s.view),
        { used: 0, complete: true, provenance: "measured" },
        { perConversation: 100 },
      );
    recordUsage(
      s.view,
      { append: (event) => (events.push(event), { seq: 1, type: event.type, envelope: "" }) },
      "turn-b",
      spent("b", 1, 2),
      42,
      budget,
    );
    expect(events[0]!.data.budget).toEqual({
      scope: "conversation",
      tokens: 100,
      used: 18,
      complete: true,
      provenance: "measured",
      exceeded: false,
    });
  });
});

describe("the usage a run's result gives its turn", () => {
  it("frames were missed: no running total stands, and the result's receipt is authoritative and announced", () => {
    const streamed = foldUsage(emptyExecutionUsage("e1"), {
      mode: "cumulative",
      counts: { inputTokens: 5 },
      provenance: "measured",
    }).state;
    const settled = usageFromResult(streamed, "e1", {
      status: "completed",
      receipt: { inputTokens: 7, outputTokens: 3 },
      receiptProvenance: { provenance: "measured" },
    });
    expect(settled?.report).toBe(true);
    expect(settled?.state.stepsBroken).toBe(true);
    expect(settled?.state.receipt).toEqual({ inputTokens: 7, outputTokens: 3 });
    expect(settled?.state.receiptProvenance).toEqual({ inputTokens: "measured", outputTokens: "measured" });
    expect(settled?.state.receiptDisagreements).toEqual([{ counter: "inputTokens", streamed: 5, receipt: 7 }]);
  });

  it("a receipt with nothing streamed before it is folded from an empty fold of that execution", () => {
    const settled = usageFromResult(null, "e2", { status: "completed", receipt: { inputTokens: 1 } });
    expect(settled?.report).toBe(true);
    expect(settled?.state.executionId).toBe("e2");
    expect(settled?.state.receipt).toEqual({ inputTokens: 1 });
    // A receipt whose provenance nobody gave is not called measured.
    expect(settled?.state.receiptProvenance).toEqual({ inputTokens: "unknown" });
  });

  it("without a receipt a streamed fold is kept, broken, but not announced; with neither nothing is stored", () => {
    const streamed = foldUsage(emptyExecutionUsage("e1"), {
      mode: "cumulative",
      counts: { inputTokens: 5 },
      provenance: "measured",
    }).state;
    expect(usageFromResult(streamed, "e1", { status: "completed" })).toEqual({
      state: { ...streamed, stepsBroken: true },
      report: false,
    });
    expect(usageFromResult(null, "e1", { status: "completed" })).toBeNull();
  });
});
