/**
 * How upstream failures reach the session: one error type whose `code` is a closed union. Each
 * provider maps its own wire (statuses, error-body codes, stream frames) onto these codes inside
 * its own folder; nothing outside `src/providers/<name>` compares an upstream string.
 * Messages never contain credentials.
 */

export type ProviderErrorCode =
  /** The environment (sandbox) no longer exists. */
  | "environment_gone"
  /** The environment exists but is not running (stopped): resume it first. */
  | "environment_not_running"
  /** The environment could not be brought up (provisioning failed, timed out). */
  | "environment_unavailable"
  /** The agent session is running another turn. */
  | "session_busy"
  /** The replay cursor is older than what upstream still holds. */
  | "cursor_expired"
  /** The replay cursor is beyond the run's last event. */
  | "cursor_ahead"
  | "not_found"
  | "rate_limited"
  | "timeout"
  /** Upstream is down or unreachable (5xx, transport failure). */
  | "unavailable"
  /** Upstream has no room for the work now (every process slot is taken): retry later. */
  | "at_capacity"
  /** Upstream refused our credentials. */
  | "unauthorized"
  /** Upstream holds a different state or identity for this request (the same run id with other content). */
  | "conflict"
  /** Upstream refused the request as malformed. */
  | "invalid_request"
  /** Upstream answered something that does not match its API. */
  | "invalid_response"
  /** The operation is not offered by this deployment. */
  | "capability_denied"
  /** The admission named another run than the one requested (fail closed). */
  | "admission_mismatch"
  /** The dispatch stream closed or timed out without admitting the run. */
  | "admission_missing"
  /** Upstream refused to start the run. */
  | "dispatch_refused"
  /** The same run id was already bound to a request with other content. */
  | "run_identity_conflict"
  /** No model route for the turn: neither the turn nor the configuration names one. */
  | "model_invalid"
  /** The provider cannot run this request as configured. */
  | "not_configured";

export class ProviderError extends Error {
  override name = "ProviderError";
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    readonly options: {
      /** The upstream HTTP status, 0 for a transport failure; for diagnostics only. */
      status?: number;
      /** Whether the same call may succeed if repeated. */
      retryable?: boolean;
      retryAfterMs?: number;
      /** Upstream's own error code, verbatim (diagnostics only: never compared outside the provider). */
      wireCode?: string;
      /** Upstream's own error message, as read (a provider may pass on what it says, in its own folder). */
      wireMessage?: string;
      details?: Record<string, unknown>;
    } = {},
  ) {
    super(message);
  }

  get status(): number | undefined {
    return this.options.status;
  }

  get retryable(): boolean {
    return this.options.retryable ?? false;
  }

  get retryAfterMs(): number | undefined {
    return this.options.retryAfterMs;
  }

  /** The same failure under another code (a provider refining a generic transport code). */
  as(code: ProviderErrorCode, message = this.message, extra: Partial<ProviderError["options"]> = {}): ProviderError {
    return new ProviderError(code, message, { ...this.options, ...extra });
  }
}
