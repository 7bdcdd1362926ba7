/**
 * Provider failures as domain refusals: one mapping, used by every object that calls a provider.
 * Messages say what failed; credentials are never part of them.
 */
import { Refusal } from "../errors";
import { ProviderError } from "./errors";

/** What failed, in our words: the upstream's own error text is not passed on (it may say anything). */
function summary(err: ProviderError): string {
  const status = err.status ?? 0;
  if (status === 0) return "the agent service could not be reached";
  if (err.code === "timeout") return "the agent service did not answer in time";
  if (err.code === "invalid_response") return "the agent service answered something this gateway cannot read";
  return `the agent service answered ${status}`;
}

export function providerRefusal(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  const details = { upstreamStatus: err.status ?? 0, upstreamCode: err.code, retryable: err.retryable };
  switch (err.code) {
    case "session_busy":
      return new Refusal("session_busy", "the agent session is already running a turn", details);
    case "rate_limited":
      return new Refusal(
        "upstream_rate_limited",
        "the agent service is rate limiting: retry later",
        details,
        Math.max(1, Math.ceil((err.retryAfterMs ?? 1000) / 1000)),
      );
    case "timeout":
      return new Refusal("upstream_timeout", summary(err), details);
    case "at_capacity": {
      // The message is the provider's own words, naming the limit (never the upstream's text).
      const retryAfter = err.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(err.retryAfterMs / 1000));
      const about = { ...details, retryable: true, ...err.options.details };
      return new Refusal("upstream_at_capacity", err.message, about, retryAfter);
    }
    case "admission_mismatch":
    case "admission_missing":
    case "environment_unavailable":
      return new Refusal(err.code, err.message, details);
    case "capability_denied":
      return new Refusal("capability_denied", err.message, {
        ...details,
        missing: Array.isArray(err.options.details?.missing) ? err.options.details.missing : ["interactions"],
      });
    case "not_configured":
      return new Refusal("provider_unavailable", err.message, details);
    case "model_invalid":
      return new Refusal("model_invalid", err.message, details);
    case "run_identity_conflict":
      return new Refusal("turn_conflict", "this turn id was already sent upstream with different content", details);
    case "unauthorized":
      return new Refusal(
        "upstream_error",
        "the agent service refused the gateway's credentials (authentication failed)",
        details,
      );
    default:
      return new Refusal("upstream_error", err.status === undefined ? err.message : summary(err), details);
  }
}
