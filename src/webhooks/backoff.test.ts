import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planRetry, retryDelayMs } from "./backoff";

const policy = { baseDelayMs: 5_000, maxDelayMs: 6 * 3_600_000, giveUpAfterMs: 3 * 86_400_000 };

describe("the retry schedule", () => {
  it("grows fourfold from the base delay up to the cap (no jitter at random = 0.5)", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => retryDelayMs(policy, n, 0.5))).toEqual([
      5_000, 20_000, 80_000, 320_000, 1_280_000, 5_120_000, 20_480_000, 21_600_000, 21_600_000,
    ]);
  });

  it("jitters within ±20 %, never below a Retry-After (itself capped)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempts, random) => {
          const raw = Math.min(policy.maxDelayMs, policy.baseDelayMs * 4 ** (attempts - 1));
          const delay = retryDelayMs(policy, attempts, random);
          expect(delay).toBeGreaterThanOrEqual(Math.floor(raw * 0.8));
          expect(delay).toBeLessThanOrEqual(Math.ceil(raw * 1.2));
        },
      ),
    );
    expect(retryDelayMs(policy, 1, 0.5, 60_000)).toBe(60_000);
    expect(retryDelayMs(policy, 1, 0.5, 10 * 86_400_000)).toBe(policy.maxDelayMs);
  });

  it("gives up rather than retry at or past the give-up time", () => {
    const created = 1_000_000;
    expect(planRetry(policy, created, 1, created, 0.5)).toEqual({ kind: "retry", at: created + 5_000 });
    const late = created + policy.giveUpAfterMs - 1_000;
    expect(planRetry(policy, created, 3, late, 0.5)).toEqual({ kind: "give_up" });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 0, max: policy.giveUpAfterMs * 2 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempts, elapsed, random) => {
          const plan = planRetry(policy, created, attempts, created + elapsed, random);
          if (plan.kind === "retry") expect(plan.at).toBeLessThan(created + policy.giveUpAfterMs);
        },
      ),
    );
  });
});
