import { describe, expect, it } from "vitest";
import {
  ABANDONED_RUN_ALARM_TRIES,
  ABANDONED_RUN_MAX_AGE_MS,
  type AbandonedRun,
  alarmWanted,
  settleVerdict,
} from "./abandoned-runs";

const run = (over: Partial<AbandonedRun> = {}): AbandonedRun => ({
  turnId: "t1",
  ref: {
    runId: "e1",
    provider: "tangle",
    environmentId: "sbx_1",
    sessionId: "s1",
    executionId: "e1",
    requestDigest: "sha256:x",
  },
  since: 1_000,
  attempts: 0,
  ...over,
});

describe("which abandoned runs are still followed", () => {
  it("a run is tried while its environment is the conversation's, or while nobody says which that is", () => {
    expect(settleVerdict(run(), 2_000, "sbx_1")).toEqual({ kind: "try" });
    expect(settleVerdict(run(), 2_000)).toEqual({ kind: "try" });
  });

  it("a run in an environment since replaced went with it", () => {
    expect(settleVerdict(run(), 2_000, "sbx_2")).toEqual({ kind: "drop", why: "environment_replaced" });
  });

  it("a run nothing could settle in the age bound is let go; at the bound it is still tried", () => {
    expect(settleVerdict(run(), 1_000 + ABANDONED_RUN_MAX_AGE_MS)).toEqual({ kind: "try" });
    expect(settleVerdict(run(), 1_001 + ABANDONED_RUN_MAX_AGE_MS)).toEqual({ kind: "drop", why: "too_old" });
  });

  it("the alarm comes back only while some run has tries left, so an idle conversation stops costing alarms", () => {
    expect(alarmWanted([])).toBe(false);
    expect(alarmWanted([run({ attempts: ABANDONED_RUN_ALARM_TRIES - 1 })])).toBe(true);
    expect(alarmWanted([run({ attempts: ABANDONED_RUN_ALARM_TRIES })])).toBe(false);
    expect(alarmWanted([run({ attempts: ABANDONED_RUN_ALARM_TRIES }), run({ attempts: 0 })])).toBe(true);
  });
});
