import { describe, expect, it } from "vitest";
import { queuedTurn } from "./store/fixtures";
import type { TurnRecord, TurnStatus } from "./store/records";
import { nextStep, queuedView } from "./turn-queue";

const entry = queuedTurn;

const running = { turnId: "r", status: "running" } as TurnRecord;

describe("which queued turn goes next", () => {
  const statuses = (map: Record<string, TurnStatus>) => (id: string) => map[id] ?? null;
  const base = { active: null, lastTurnId: "t0", statusOf: statuses({}), dispatching: () => false };

  it("nothing waits: idle; a turn is active: wait; else the first in order starts, after the last turn", () => {
    expect(nextStep({ ...base, waiting: [] })).toEqual({ kind: "idle" });
    const waiting = [entry("q1"), entry("q2", "queued", 2)];
    expect(nextStep({ ...base, waiting, active: running })).toEqual({ kind: "wait" });
    expect(nextStep({ ...base, waiting })).toEqual({ kind: "start", entry: waiting[0], follows: "t0" });
    expect(nextStep({ ...base, waiting, lastTurnId: null })).toMatchObject({ kind: "start", follows: null });
  });

  it("a starting turn: waited for while dispatched here, dispatched again when nothing here does, settled once dispatched, started again when forgotten", () => {
    const starting = entry("q1", "starting");
    const waiting = [starting, entry("q2", "queued", 2)];
    const pending = { ...running, turnId: "q1", status: "pending" } as TurnRecord;
    expect(
      nextStep({ ...base, waiting, active: pending, statusOf: statuses({ q1: "pending" }), dispatching: () => true }),
    ).toEqual({ kind: "wait" });
    expect(nextStep({ ...base, waiting, active: pending, statusOf: statuses({ q1: "pending" }) })).toEqual({
      kind: "redispatch",
      entry: starting,
    });
    for (const status of ["running", "completed", "failed", "cancelled"] as const) {
      expect(nextStep({ ...base, waiting, statusOf: statuses({ q1: status }) })).toEqual({
        kind: "started",
        entry: starting,
      });
    }
    expect(nextStep({ ...base, waiting })).toMatchObject({ kind: "start", entry: starting });
    expect(nextStep({ ...base, waiting, active: running })).toEqual({ kind: "wait" });
  });

  it("one dispatch per queued turn: applying the steps to any queue starts each turn once, in order", () => {
    // A model of the runner: turns start, run and end; `move` is asked any number of times in between.
    const queue = [entry("a"), entry("b", "queued", 2), entry("c", "queued", 3)];
    const status: Record<string, TurnStatus> = {};
    const started: string[] = [];
    let active: TurnRecord | null = null;
    for (let round = 0; round < 20; round++) {
      const waiting = queue.filter((e) => e.state === "queued" || e.state === "starting");
      const step = nextStep({
        waiting,
        active,
        lastTurnId: started.at(-1) ?? null,
        statusOf: (id) => status[id] ?? null,
        dispatching: () => false,
      });
      if (step.kind === "start") {
        step.entry.state = "starting";
        status[step.entry.turnId] = "running";
        active = { turnId: step.entry.turnId, status: "running" } as TurnRecord;
        started.push(step.entry.turnId);
      } else if (step.kind === "started") step.entry.state = "started";
      else if (step.kind === "wait" && active && round % 3 === 2) {
        status[active.turnId] = "completed";
        active = null;
      }
    }
    expect(started).toEqual(["a", "b", "c"]);
    expect(queue.map((e) => e.state)).toEqual(["started", "started", "started"]);
  });
});

describe("a queued turn's view", () => {
  it("queued with its place; removed reads cancelled with why; refused reads failed with its error", () => {
    expect(queuedView(entry("q1"), 2)).toEqual({
      turnId: "q1",
      executionId: "exe-q1",
      status: "queued",
      queuePosition: 2,
      waitingFor: null,
      message: "text of q1",
      servedModels: null,
      createdAt: new Date(1_000).toISOString(),
    });
    const removed = {
      ...entry("q1", "removed"),
      error: { code: "removed", message: "removed from the queue before it started" },
    };
    expect(queuedView(removed, null)).toMatchObject({
      status: "cancelled",
      cancelReason: "removed from the queue before it started",
      completedAt: new Date(2_000).toISOString(),
    });
    expect(queuedView(removed, null)).not.toHaveProperty("queuePosition");
    const refused = { ...entry("q1", "refused"), error: { code: "budget_exceeded", message: "used up" } };
    expect(queuedView(refused, null)).toMatchObject({
      status: "failed",
      error: { code: "budget_exceeded", message: "used up" },
    });
  });
});
