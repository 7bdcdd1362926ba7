/**
 * Per-user rate limits: a sliding window of one minute per kind of request. Pure state over a clock;
 * the user object keeps one in memory (an eviction forgets it, which only ever lets more through).
 * A place is taken before the request does its work, so requests at once never pass the limit
 * together, and given back (`release`) when the request turned out to do none (docs/api.md#errors-and-limits: a refusal
 * and a replay of what is known use up no rate limit).
 */
export type RateLimitKind = "turn" | "stream";

const WINDOW_MS = 60_000;

export class SlidingWindow {
  private readonly stamps = new Map<RateLimitKind, number[]>();

  /** Admits one request of `kind` under `perMinute` (its place: `at`), or says how long to wait. */
  admit(
    kind: RateLimitKind,
    perMinute: number,
    now: number,
  ): { ok: true; at: number } | { ok: false; retryAfterSeconds: number } {
    const recent = (this.stamps.get(kind) ?? []).filter((at) => now - at < WINDOW_MS);
    if (recent.length >= perMinute) {
      this.stamps.set(kind, recent);
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((recent[0]! + WINDOW_MS - now) / 1000)) };
    }
    recent.push(now);
    this.stamps.set(kind, recent);
    return { ok: true, at: now };
  }

  /** Gives back the place a request admitted at `at` took (one that left the window already is gone anyway). */
  release(kind: RateLimitKind, at: number): void {
    const recent = this.stamps.get(kind) ?? [];
    const index = recent.lastIndexOf(at);
    if (index >= 0) recent.splice(index, 1);
  }
}
