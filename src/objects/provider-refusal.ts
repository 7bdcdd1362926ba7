/**
 * Provider failures as domain refusals: one mapping, used by every object that calls a provider.
 * Messages say what failed; credentials are never part of them.
 */
import { Refusal } from "../errors";
import { ProviderError } from "../providers/errors";

export function providerRefusal(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  const details = { upstreamStatus: err.status ?? 0, upstreamCode: err.code, retryable: err.retryable };
  switch (err.code) {
    case "session_busy":
      return new Refusal("session_busy", "the agent session is already running a turn", details);
    case "rate_limited":
      return new Refusal("upstream_rate_limited", err.message, details, Math.max(1, Math.ceil((err.retryAfterMs ?? 1000) / 1000)));
    case "timeout":
      return new Refusal("upstream_timeout", err.message, details);
    case "admission_mismatch":
    case "admission_missing":
    case "environment_unavailable":
      return new Refusal(err.code, err.message, details);
    case "capability_denied":
      return new Refusal("capability_denied", err.message, { ...details, missing: ["interactions"] });
    case "not_configured":
      return new Refusal("provider_unavailable", err.message, details);
    case "model_invalid":
      return new Refusal("model_invalid", err.message, details);
    case "run_identity_conflict":
      return new Refusal("turn_conflict", "this turn id was already sent upstream with different content", details);
    case "unauthorized":
      return new Refusal("upstream_error", `the agent service refused the gateway's credentials (${err.message})`, details);
    default:
      return new Refusal("upstream_error", err.message, details);
  }
}
