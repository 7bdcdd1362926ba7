/**
 * How a benchmark run went, section by section (bench/outcome.mjs): a section that threw is failed,
 * one that reported problems is not ok either, and the exit code is the sum of the bits of the
 * sections that are not ok, so it names them; `before` shares idle's bit.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  exitCode,
  failureText,
  outcomeLines,
  outcomeOf,
  ranWithin,
  SECTIONS,
  sectionsOfExitCode,
} from "../../bench/outcome.mjs";

describe("a section's outcome", () => {
  it("is failed when it threw, whatever it reported", () => {
    expect(outcomeOf({ error: "fetch failed", problems: ["x"], seconds: 3 })).toEqual({
      status: "failed",
      seconds: 3,
      error: "fetch failed",
      problems: ["x"],
    });
  });
  it("is problems when it ended but reported some, ok when it reported none", () => {
    expect(outcomeOf({ problems: ["a viewer saw 2 seq gaps"] }).status).toBe("problems");
    expect(outcomeOf({ problems: [], seconds: 1 })).toEqual({ status: "ok", seconds: 1, problems: [] });
  });
  it("says it ran on a fresh dev server", () => {
    expect(outcomeOf({ freshServer: true }).freshServer).toBe(true);
  });
});

describe("the exit code", () => {
  it("is 0 when every section that ran is ok", () => {
    expect(exitCode({ relay: outcomeOf({}), memory: outcomeOf({}) })).toBe(0);
    expect(exitCode({})).toBe(0);
  });
  it("is the sum of the bits of the sections that failed or reported problems", () => {
    const code = exitCode({
      relay: outcomeOf({}),
      replay: outcomeOf({ error: "fetch failed" }),
      agents: outcomeOf({}),
      memory: outcomeOf({ problems: ["memory round 2: 503"] }),
      "page-load": outcomeOf({ error: "timeout" }),
    });
    expect(code).toBe(2 + 64 + 128);
    expect(sectionsOfExitCode(code)).toEqual(["replay", "memory", "page-load"]);
  });
  it("counts idle's baseline (before) as idle", () => {
    expect(exitCode({ idle: outcomeOf({}), before: outcomeOf({ error: "worktree" }) })).toBe(8);
  });
  it("counts stall as replay (both the unpaced 10,000-word burst)", () => {
    expect(exitCode({ replay: outcomeOf({}), stall: outcomeOf({ problems: ["late"] }) })).toBe(2);
    expect(outcomeLines({ stall: outcomeOf({ error: "x", seconds: 1 }) }).join("\n")).toContain("stall");
  });
  it("gives every section a bit of its own, inside an exit status", () => {
    const bits = SECTIONS.map((s) => s.bit);
    expect(new Set(bits).size).toBe(bits.length);
    expect(bits.every((b) => b > 0 && (b & (b - 1)) === 0)).toBe(true);
    expect(bits.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(255);
    const all = Object.fromEntries(SECTIONS.map((s) => [s.name, outcomeOf({ error: "x" })]));
    expect(sectionsOfExitCode(exitCode(all))).toEqual(SECTIONS.map((s) => s.name));
  });
});

describe("the summary's lines", () => {
  it("say each section's status and what failed, and what the exit code names", () => {
    const lines = outcomeLines({
      relay: outcomeOf({ seconds: 12 }),
      memory: outcomeOf({ error: "fetch failed", seconds: 40, freshServer: true }),
      idle: outcomeOf({ problems: ["p1", "p2"], seconds: 30 }),
    });
    const text = lines.join("\n");
    expect(text).toMatch(/relay\s+OK\s+12 s/);
    expect(text).toMatch(/idle\s+PROBLEMS\s+30 s: 2 problems/);
    expect(text).toMatch(/memory\s+FAILED\s+40 s \(on a fresh dev server[^)]*\): fetch failed/);
    expect(lines.at(-1)).toBe("exit code 72: idle, memory not ok");
  });
});

describe("a section's run", () => {
  afterEach(() => vi.useRealTimers());

  it("is no failure when it ends in time, and leaves no timer behind", async () => {
    vi.useFakeTimers();
    expect(await ranWithin(async () => "figures", 1000)).toBeNull();
    expect(vi.getTimerCount()).toBe(0);
  });
  it("fails with what it threw, its cause's code beside a bare 'fetch failed'", async () => {
    const err = new TypeError("fetch failed", {
      cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }),
    });
    const failure = await ranWithin(async () => {
      throw err;
    }, 1000);
    expect(failure).toEqual({ message: "fetch failed (UND_ERR_SOCKET)", overdue: false, err });
  });
  it("fails when it throws before it returns a promise", async () => {
    const failure = await ranWithin(() => {
      throw new RangeError("Maximum call stack size exceeded");
    }, 1000);
    expect(failure?.message).toBe("Maximum call stack size exceeded");
    expect(failure?.overdue).toBe(false);
  });
  it("is abandoned as overdue at its deadline while its work still hangs (the clock held)", async () => {
    vi.useFakeTimers();
    const hung = new Promise(() => {});
    const ran = ranWithin(() => hung, 3_600_000);
    await vi.advanceTimersByTimeAsync(3_599_999);
    let settled = false;
    void ran.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await ran).toMatchObject({ overdue: true, message: "did not end within 3600 s (BENCH_SECTION_DEADLINE_S)" });
  });
  it("says a failure without a cause as it is, and a thrown string too", () => {
    expect(failureText(new Error("dev server did not answer"))).toBe("dev server did not answer");
    expect(failureText("boom")).toBe("boom");
    expect(failureText(new Error("x".repeat(600))).length).toBe(500);
  });
});
