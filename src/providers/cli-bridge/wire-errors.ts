/**
 * The bridge's own error codes (`wireCode`, read by the transport from an error body) as provider
 * error codes, and the two tests every call makes of a failure. One table for every call this
 * client makes, so a code the session reacts to is read the same way whichever call met it.
 * Messages keep the bridge's words (for a refusal the session passes on) without its host's file
 * paths (./host-paths.ts).
 */
import { ProviderError } from "../errors";
import { scrubbed } from "./host-paths";

/**
 * The bridge runs a retained Pi session's native child only in its enforced filesystem jail, which
 * it takes from its own environment (`BRIDGE_JAIL_MODE`), never from the request's `execution`.
 */
const JAIL_REFUSAL = [
  "the CLI Bridge refuses to run Pi's retained sessions outside its filesystem jail, which it takes from its own",
  "environment, not from CLI_BRIDGE_EXECUTION: set BRIDGE_JAIL_MODE=fs-jail where the bridge runs (a Linux host with",
  "bubblewrap) and restart it",
].join(" ");

export function refine(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  const wireCode = err.options.wireCode;
  if (wireCode === "not_configured") {
    // The bridge is not set up to run this (501): the operator's to fix, named where the bridge says what to set.
    const said = scrubbed(err.options.wireMessage ?? err.message, "a CLI Bridge answer");
    const jail = /BRIDGE_JAIL_MODE|fs-jail/.test(said);
    const message = jail ? JAIL_REFUSAL : `the CLI Bridge is not set up to run this turn: ${said}`;
    return err.as("not_configured", message, { retryable: false });
  }
  if (err.code === "unauthorized") {
    return err.as("unauthorized", "the CLI Bridge refused the gateway's bearer token (authentication failed)");
  }
  const message = scrubbed(err.message, "a CLI Bridge answer");
  switch (wireCode) {
    case "run_identity_conflict":
      return err.as("run_identity_conflict", message);
    case "invalid_replay_cursor":
      return err.as("cursor_ahead", message, { retryable: false });
    case "expired_replay_cursor":
      return err.as("cursor_expired", message, { retryable: false });
    default:
      return message === err.message ? err : err.as(err.code, message);
  }
}

export const isWire = (err: unknown, wireCode: string): err is ProviderError =>
  err instanceof ProviderError && err.options.wireCode === wireCode;
export const isNotFound = (err: unknown): err is ProviderError =>
  err instanceof ProviderError && err.code === "not_found";
