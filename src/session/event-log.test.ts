import { describe, expect, it } from "vitest";
import { EventLog } from "./event-log";
import type { EventRow, NewEvent } from "./store/records";

function harness() {
  const stored: EventRow[] = [];
  const published: number[] = [];
  let inTransaction = false;
  const log = new EventLog({
    transaction: (fn) => {
      const before = stored.length;
      inTransaction = true;
      try {
        return fn();
      } catch (err) {
        stored.length = before; // rolled back
        throw err;
      } finally {
        inTransaction = false;
      }
    },
    append: (event: NewEvent) => {
      const row = { seq: stored.length + 1, type: event.type, envelope: "{}" };
      stored.push(row);
      return row;
    },
    publish: (row) => {
      expect(inTransaction).toBe(false);
      published.push(row.seq);
    },
  });
  return { log, stored, published };
}

const event = (type: string): NewEvent => ({ turnId: "t", executionId: "e", type, data: {}, now: 0 });

describe("the event log", () => {
  it("publishes what a transaction appended, in order, after it committed", () => {
    const { log, published } = harness();
    const answer = log.commit((l) => {
      l.append(event("a"));
      l.append(event("b"));
      expect(published).toEqual([]);
      return 42;
    });
    expect(answer).toBe(42);
    expect(published).toEqual([1, 2]);
  });

  it("publishes nothing of a transaction that failed", () => {
    const { log, stored, published } = harness();
    expect(() =>
      log.commit((l) => {
        l.append(event("a"));
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(stored).toEqual([]);
    expect(published).toEqual([]);
  });

  it("writes what the store holds inside the transaction, and drops it when the transaction rolls back", () => {
    const calls: string[] = [];
    let inTransaction = false;
    const log = new EventLog({
      transaction: (fn) => {
        inTransaction = true;
        try {
          return fn();
        } finally {
          inTransaction = false;
        }
      },
      append: (e) => ({ seq: 1, type: e.type, envelope: "{}" }),
      publish: () => calls.push("publish"),
      settle: () => calls.push(inTransaction ? "settle (in the transaction)" : "settle (outside)"),
      rolledBack: () => calls.push("rolledBack"),
    });
    log.commit((l) => l.append(event("a")));
    expect(calls).toEqual(["settle (in the transaction)", "publish"]);
    calls.length = 0;
    expect(() =>
      log.commit(() => {
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(calls).toEqual(["rolledBack"]);
  });
});
