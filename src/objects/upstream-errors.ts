/**
 * Upstream failures as public API errors: one mapping, used by every route that calls a provider.
 */
import { ApiError } from "../http/errors";
import { UpstreamError } from "../providers/errors";

export function upstreamToApi(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof UpstreamError) {
    const details = { upstreamStatus: err.status, upstreamCode: err.code, retryable: err.retryable };
    if (err.code === "session_busy") return new ApiError(409, "session_busy", "the agent session is already running a turn", details);
    if (err.status === 429) {
      const seconds = Math.max(1, Math.ceil((err.retryAfterMs ?? 1000) / 1000));
      return new ApiError(503, "upstream_rate_limited", err.message, details, { "retry-after": String(seconds) });
    }
    if (err.status === 408 || err.code === "upstream_timeout") return new ApiError(504, "upstream_timeout", err.message, details);
    if (err.code === "admission_mismatch" || err.code === "admission_missing") return new ApiError(502, err.code, err.message, details);
    if (err.code === "environment_unavailable") return new ApiError(503, "environment_unavailable", err.message, details);
    return new ApiError(502, "upstream_error", err.message, details);
  }
  return new ApiError(500, "internal_error", "an internal error occurred");
}
