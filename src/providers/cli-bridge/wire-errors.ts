/**
 * The bridge's own error codes (`wireCode`, read by the transport from an error body) as provider
 * error codes, and the two tests every call makes of a failure. One table for every call this
 * client makes, so a code the session reacts to is read the same way whichever call met it.
 */
import { ProviderError } from "../errors";

export function refine(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  switch (err.options.wireCode) {
    case "run_identity_conflict":
      return err.as("run_identity_conflict", err.message);
    case "invalid_replay_cursor":
      return err.as("cursor_ahead", err.message, { retryable: false });
    case "expired_replay_cursor":
      return err.as("cursor_expired", err.message, { retryable: false });
    default:
      return err.code === "unauthorized" ? err.as("unauthorized", "the CLI Bridge refused the gateway's bearer token (authentication failed)") : err;
  }
}

export const isWire = (err: unknown, wireCode: string): err is ProviderError => err instanceof ProviderError && err.options.wireCode === wireCode;
export const isNotFound = (err: unknown): err is ProviderError => err instanceof ProviderError && err.code === "not_found";
