import { describe, expect, it } from "vitest";
import type { NewEvent, SessionStore } from "./session-store";
import { conversationTotal, recordUsage } from "./turn-usage";
import { emptyExecutionUsage, foldReceipt, type ExecutionUsageState } from "./usage-fold";

const spent = (executionId: string, inputTokens: number, outputTokens: number): ExecutionUsageState =>
  foldReceipt(emptyExecutionUsage(executionId), { inputTokens, outputTokens }, { provenance: "measured" });

/** A store of dispatched executions and their folds, as much of it as the helpers read. */
function store(dispatched: string[], folds: ExecutionUsageState[]) {
  const byId = new Map(folds.map((f) => [f.executionId, f]));
  const views = new Map<string, unknown>();
  const view = {
    allExecutionUsage: () => [...byId.values()],
    dispatchedExecutionIds: () => dispatched,
    putExecutionUsage: (turnId: string, state: ExecutionUsageState, usage: unknown) => {
      byId.set(state.executionId, state);
      views.set(turnId, usage);
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
    recordUsage(s.view, { append: (event) => (events.push(event), { seq: 1, type: event.type, envelope: "" }) }, "turn-b", spent("b", 1, 2), 42);
    expect(s.views.get("turn-b")).toMatchObject({ inputTokens: 1, outputTokens: 2 });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ turnId: "turn-b", executionId: "b", type: "usage.updated", now: 42 });
    expect(events[0]!.data).toMatchObject({ turnId: "turn-b", executionId: "b", usage: { inputTokens: 1, outputTokens: 2 }, conversation: { inputTokens: 11, outputTokens: 7, complete: true } });
  });
});
