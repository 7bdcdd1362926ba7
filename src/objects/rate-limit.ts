/**
 * Per-user rate limits: a sliding window of one minute per kind of request. Pure state over a clock;
 * the user object keeps one in memory (an eviction forgets it, which only ever lets more through).
 */
export type RateLimitKind = "turn" | "stream";

const WINDOW_MS = 60_000;

export class SlidingWindow {
  private readonly stamps = new Map<RateLimitKind, number[]>();

  /** Admits one request of `kind` under `perMinute`, or says how long to wait. */
  admit(kind: RateLimitKind, perMinute: number, now: number): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const recent = (this.stamps.get(kind) ?? []).filter((at) => now - at < WINDOW_MS);
    if (recent.length >= perMinute) {
      this.stamps.set(kind, recent);
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((recent[0]! + WINDOW_MS - now) / 1000)) };
    }
    recent.push(now);
    this.stamps.set(kind, recent);
    return { ok: true };
  }
}
