/**
 * Waiting before trying again, one way for every caller that retries: the provider's HTTP client
 * (src/providers/http.ts), the upstream reader's reconnects (src/session/pump.ts) and webhook
 * deliveries (src/webhooks/backoff.ts). An exponential backoff, and the one reader of a
 * `Retry-After` header. Pure.
 */

/**
 * The delay before try number `attempt` (the first retry is 1): `baseMs · factor^(attempt-1)`,
 * at most `maxMs`; none before the first retry.
 */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, factor = 2): number {
  if (attempt <= 0) return 0;
  return Math.min(maxMs, baseMs * factor ** (attempt - 1));
}

/** A `Retry-After` header (seconds or an HTTP date) as milliseconds from `now`, or undefined. */
export function retryAfterMsOf(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
