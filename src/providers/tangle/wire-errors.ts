/**
 * The Sandbox's own error codes (`error.code` on an error body, read by the transport into
 * `wireCode`) as provider error codes. One table for every call this client makes, so a code the
 * session reacts to (busy, not running, gone, a cursor out of range) is read the same way whichever
 * call met it.
 */
import { ProviderError } from "../errors";

/** Refines a transport failure by its wire code; `cursor` is the replay cursor of an event read, if that is what failed. */
export function refine(err: unknown, cursor?: string): unknown {
  if (!(err instanceof ProviderError)) return err;
  const wire = err.options.wireCode?.toUpperCase();
  if (wire === "SESSION_BUSY") return err.as("session_busy", "the agent session is already running a turn");
  if (wire === "SANDBOX_NOT_RUNNING")
    return err.as("environment_not_running", "the sandbox is not running", { retryable: true });
  if (wire === "SANDBOX_NOT_FOUND") return err.as("environment_gone", "the sandbox is gone", { retryable: false });
  if (wire === "INVALID_CURSOR") {
    const last = Number(err.options.details?.lastEventId);
    const ahead = cursor !== undefined && Number.isFinite(last) && Number(cursor) > last;
    return err.as(ahead ? "cursor_ahead" : "cursor_expired", err.message, { retryable: false });
  }
  if (err.code === "not_found" && cursor === undefined)
    return err.as("environment_gone", "the sandbox is gone", { retryable: true });
  return err;
}
