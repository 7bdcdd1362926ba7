/**
 * The cost model (bench/cost.mjs) honest about duration: the bill by turn length, the user object's
 * awake time beside the session object's, the watchdog's alarms of a long turn, and the storage that
 * grows with history.
 */
import { describe, expect, it } from "vitest";
import { bill } from "../../bench/cost.mjs";

// 1 user, 1 day, one turn and one stream: each figure is what a single user-day costs.
const one = {
  users: 1,
  days: 1,
  tabHoursPerDay: 8,
  turnsPerDay: 1,
  wordsPerTurn: 500,
  turnSeconds: 25,
  streamsPerDay: 1,
  historyMonths: [1, 12],
};
const measured = { idleS: 10, rowsPerTurn: 40, keptBytesPerTurn: 11_000 };

describe("the cost model's bill", () => {
  it("counts the user object awake after a turn's start and after its end when the turn outlasts the idle window", () => {
    const b = bill(one, measured, "after", 25);
    // Session: the turn and the idle window after it, and after the stream opened.
    expect(b.sessionSecondsPerUserDay).toBe(25 + 10 + 10);
    // User: woken at the start and at the end (10 s each), and by the stream.
    expect(b.userSecondsPerUserDay).toBe(10 + 10 + 10);
    expect(b.activeSecondsPerUserDay).toBe(75);
  });
  it("keeps the user object awake from start to end when the turn is shorter than the idle window", () => {
    expect(bill(one, measured, "after", 4).userSecondsPerUserDay).toBe(4 + 10 + 10);
  });
  it("bills a long turn's duration for all of it, and its watchdog's alarms as requests and rows", () => {
    const short = bill(one, measured, "after", 25);
    const long = bill(one, measured, "after", 600);
    expect(short.alarmsPerTurn).toBe(0);
    // Armed 30 s ahead and again at each firing: 19 firings in 600 s (the 20th would be at its end).
    expect(long.alarmsPerTurn).toBe(19);
    expect(long.sessionSecondsPerUserDay).toBe(600 + 10 + 10);
    expect(long.rowsWritten).toBe(40 + 19);
    expect(long.requests - short.requests).toBe(19);
    expect(long.gbSeconds).toBe(Math.round((620 + 30) * 0.128));
  });
  it("leaves the idle windows out when they are not billed, for both objects", () => {
    const b = bill(one, measured, "idleUnbilled", 120);
    expect(b.sessionSecondsPerUserDay).toBe(120);
    expect(b.userSecondsPerUserDay).toBe(0);
  });
  it("holds the session object active for the whole tab before hibernation", () => {
    expect(bill(one, measured, "before").sessionSecondsPerUserDay).toBe(8 * 3600);
  });
  it("grows storage with history and bills it beyond the 5 GB included", () => {
    // 1,000 users × 30 days × 20 turns × 11,000 B = 6.6 GB a month.
    const c = { ...one, users: 1000, days: 30, turnsPerDay: 20 };
    const { storage } = bill(c, measured, "after", 25);
    expect(storage).toEqual([
      { months: 1, gb: 6.6, usd: Number(((6.6 - 5) * 0.2).toFixed(2)) },
      { months: 12, gb: 79.2, usd: Number(((79.2 - 5) * 0.2).toFixed(2)) },
    ]);
  });
  it("says storage is unknown when what a turn keeps was not measured", () => {
    const { storage } = bill(one, { ...measured, keptBytesPerTurn: null }, "after", 25);
    expect(storage[0]).toEqual({ months: 1, gb: null, usd: null });
  });
});
