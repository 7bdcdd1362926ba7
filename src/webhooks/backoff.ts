/**
 * When a failed delivery is tried again, and when it is given up. Exponential: the n-th retry
 * waits `baseDelayMs · 4^(n-1)`, at most `maxDelayMs`, with ±20 % jitter so many failing
 * deliveries do not come back at once, and never sooner than a `Retry-After` the receiver sent
 * (itself capped at `maxDelayMs`). A retry that would come at or after `giveUpAfterMs` from the
 * delivery's creation is not made: the delivery is given up. With the defaults (5 s, 6 h, 3 days):
 * about 5 s, 20 s, 80 s, 5 min, 21 min, 85 min, 5.7 h, then every 6 h until three days have passed.
 * Pure: `random` is a parameter. The backoff is the project's one (../lib/retry.ts).
 */
import { backoffMs } from "../lib/retry";

export interface RetryPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
  giveUpAfterMs: number;
}

export type RetryPlan = { kind: "retry"; at: number } | { kind: "give_up" };

/** The delay before retry number `attempts` (the first retry follows the first attempt). */
export function retryDelayMs(
  policy: Pick<RetryPolicy, "baseDelayMs" | "maxDelayMs">,
  attempts: number,
  random: number,
  retryAfterMs?: number,
): number {
  // From the first retry on, its exponent bounded at 30 (past any cap).
  const raw = backoffMs(Math.min(Math.max(attempts, 1), 31), policy.baseDelayMs, policy.maxDelayMs, 4);
  const jittered = Math.round(raw * (0.8 + 0.4 * random));
  const floor = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, policy.maxDelayMs);
  return Math.max(jittered, floor, 1);
}

/** After `attempts` failed attempts of a delivery created at `createdAt`, at `now`: when to try again, or give up. */
export function planRetry(
  policy: RetryPolicy,
  createdAt: number,
  attempts: number,
  now: number,
  random: number,
  retryAfterMs?: number,
): RetryPlan {
  const at = now + retryDelayMs(policy, attempts, random, retryAfterMs);
  return at < createdAt + policy.giveUpAfterMs ? { kind: "retry", at } : { kind: "give_up" };
}
