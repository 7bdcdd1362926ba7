import { describe, expect, it } from "vitest";
import { endingOf, nextWatchdogAt, resultEnding, WATCHDOG_INTERVAL_MS, watchdogVerdict } from "./turn-end";

describe("how a turn ends from what its run reported", () => {
  it("a completed or cancelled run ends so, without an error", () => {
    expect(endingOf(null, "completed")).toEqual({ status: "completed" });
    expect(endingOf(null, "completed", { code: "x", message: "ignored" })).toEqual({ status: "completed" });
    expect(endingOf("cancelled by the user", "cancelled")).toEqual({ status: "cancelled" });
    expect(endingOf("budget_exceeded", "cancelled")).toEqual({ status: "cancelled" });
  });

  it("a run cancelled upstream that nobody here asked to stop is a failure that says who stopped it", () => {
    expect(endingOf(null, "cancelled")).toEqual({
      status: "failed",
      error: {
        code: "upstream_cancelled",
        message: "the agent service cancelled the run by itself; the gateway did not ask it to stop",
      },
    });
  });

  it("a failed turn always says why: the run's own error, or agent_failed", () => {
    expect(endingOf(null, "failed", { code: "tool_crashed", message: "the tool crashed" })).toEqual({
      status: "failed",
      error: { code: "tool_crashed", message: "the tool crashed" },
    });
    expect(endingOf(null, "failed", { message: "no code given" })).toEqual({
      status: "failed",
      error: { code: "agent_failed", message: "no code given" },
    });
    expect(endingOf(null, "failed")).toEqual({
      status: "failed",
      error: { code: "agent_failed", message: "the run failed" },
    });
    // A stop asked for here does not turn a failure into a cancellation.
    expect(endingOf("cancelled by the user", "failed")).toEqual({
      status: "failed",
      error: { code: "agent_failed", message: "the run failed" },
    });
  });
});

describe("how a turn ends from its run's result", () => {
  it("a result that does not say how the run ended is a failure, outcome_unknown, never a success", () => {
    expect(resultEnding({ status: "unknown" })).toEqual({
      status: "failed",
      error: { code: "outcome_unknown", message: "the run ended upstream, but how it ended is unknown" },
    });
    expect(resultEnding({ status: "unknown", text: "partial", error: { message: "session idle" } })).toEqual({
      status: "failed",
      error: { code: "outcome_unknown", message: "the run ended upstream, but how it ended is unknown (session idle)" },
    });
  });

  it("a result that says how it ended is taken with its text and error", () => {
    expect(resultEnding({ status: "completed", text: "done" })).toEqual({ status: "completed", text: "done" });
    expect(resultEnding({ status: "failed", error: { code: "boom", message: "it broke" } })).toEqual({
      status: "failed",
      error: { code: "boom", message: "it broke" },
    });
    expect(resultEnding({ status: "cancelled" })).toEqual({ status: "cancelled" });
  });
});

describe("the watchdog's verdict on the active turn", () => {
  const limits = { TURN_MAX_DURATION_MS: 3_600_000, UPSTREAM_LOST_AFTER_MS: 600_000 };
  const running = (over: Partial<{ startedAt: number; updatedAt: number; lostAt: number | null }> = {}) => ({
    status: "running" as const,
    startedAt: 0,
    updatedAt: 0,
    lostAt: null,
    ...over,
  });
  const pending = (updatedAt: number) => ({
    status: "pending" as const,
    startedAt: updatedAt,
    updatedAt,
    lostAt: null,
  });

  it("a pending turn is forgotten only when its dispatch is no longer under way here and it is older than one interval", () => {
    expect(watchdogVerdict(pending(0), WATCHDOG_INTERVAL_MS, limits, false)).toEqual({ kind: "wait" });
    expect(watchdogVerdict(pending(0), WATCHDOG_INTERVAL_MS + 1, limits, false)).toEqual({ kind: "forget_pending" });
    expect(watchdogVerdict(pending(0), WATCHDOG_INTERVAL_MS + 1, limits, true)).toEqual({ kind: "wait" });
  });

  it("a running turn gets its reader back until it reaches its time limit, then fails turn_timeout", () => {
    expect(watchdogVerdict(running(), limits.TURN_MAX_DURATION_MS - 1, limits, false)).toEqual({ kind: "resume" });
    expect(watchdogVerdict(running(), limits.TURN_MAX_DURATION_MS, limits, false)).toEqual({
      kind: "fail",
      code: "turn_timeout",
      message: "the turn ran longer than 3600000 ms and was stopped",
    });
  });

  it("a turn's time limit counts from its start, not from when it was sent (a queued turn waited before it)", () => {
    const queued = { ...running({ startedAt: limits.TURN_MAX_DURATION_MS }), createdAt: 0 };
    expect(watchdogVerdict(queued, limits.TURN_MAX_DURATION_MS + 1, limits, false)).toEqual({ kind: "resume" });
    expect(nextWatchdogAt(queued, 2 * limits.TURN_MAX_DURATION_MS - 10, limits.TURN_MAX_DURATION_MS)).toBe(
      2 * limits.TURN_MAX_DURATION_MS,
    );
  });

  it("a run that could not be reached for UPSTREAM_LOST_AFTER_MS fails upstream_lost; before that the reader tries again", () => {
    const lost = running({ lostAt: 1_000 });
    expect(watchdogVerdict(lost, 1_000 + limits.UPSTREAM_LOST_AFTER_MS - 1, limits, false)).toEqual({ kind: "resume" });
    expect(watchdogVerdict(lost, 1_000 + limits.UPSTREAM_LOST_AFTER_MS, limits, false)).toEqual({
      kind: "fail",
      code: "upstream_lost",
      message: "the run could not be reached for 600 s and nothing could settle it",
    });
    // The time limit is checked first: a turn both too old and lost timed out.
    expect(watchdogVerdict(lost, limits.TURN_MAX_DURATION_MS, limits, false)).toMatchObject({
      kind: "fail",
      code: "turn_timeout",
    });
  });

  it("looks again after one interval, or at the turn's time limit if that comes sooner", () => {
    expect(nextWatchdogAt({ startedAt: 0 }, 1_000, limits.TURN_MAX_DURATION_MS)).toBe(1_000 + WATCHDOG_INTERVAL_MS);
    expect(nextWatchdogAt({ startedAt: 0 }, limits.TURN_MAX_DURATION_MS - 10, limits.TURN_MAX_DURATION_MS)).toBe(
      limits.TURN_MAX_DURATION_MS,
    );
  });
});
