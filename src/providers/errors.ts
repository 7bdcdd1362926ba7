/**
 * The one upstream error type. Every provider call that fails throws an UpstreamError carrying the
 * upstream status (0 for transport failures), a stable code, and whether a retry may succeed.
 * The message never contains credentials.
 */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Status → retryability, per docs/sandbox-wire.md §1. */
export function isRetryableStatus(status: number): boolean {
  return status === 0 || status === 408 || status === 429 || status >= 500;
}
