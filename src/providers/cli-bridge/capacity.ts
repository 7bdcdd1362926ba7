/**
 * "The CLI Bridge is at capacity", read from what the bridge answers (its source: the host
 * executor, the health probe, the admission gate). Every CLI the bridge spawns holds one of its
 * process slots (`BRIDGE_HOST_MAX_CONCURRENCY`, 4 by default) while its process lives: a one-shot
 * run's for the run, a retained Pi session's from its first turn until the session is closed,
 * idle time included. When they are all taken:
 *
 * - a spawn waits (`BRIDGE_HOST_ACQUIRE_DEADLINE_MS`, 60 s), then is refused: 429
 *   `executor_saturated` with `Retry-After` and the counts, or, on a one-shot run's stream that
 *   had answered 200, an error frame with them (`capacityRunError`);
 * - a capability read or a session create, which probe the backend's health with a
 *   `--version` that needs a slot too, answers 503 `backend_not_ready` ("health probe timed out")
 *   after 3.5 s: that says nothing of slots by itself, so the bridge's `/health` is asked whether
 *   its executor's slots are all taken;
 * - the admission gate of its chat runs answers 503 `admission_rejected` (`capacity: true`).
 *
 * Each becomes `at_capacity`: a retryable refusal in this gateway's words that names the limit
 * (never the bridge's own text), with the bridge's `Retry-After` where it gave one. A refusal
 * like these is not retried inside the call: the bridge already waited before answering it.
 */
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { RunError } from "../provider";
import { bridgeRoutes as routes } from "./routes";
import { Health } from "./wire";

const SLOTS = "BRIDGE_HOST_MAX_CONCURRENCY";
const PLACES = "BRIDGE_HOST_CHAT_MAX_ACTIVE";

/** The code of a turn whose run the bridge refused for capacity after accepting it. */
const AT_CAPACITY = "upstream_at_capacity";

function slotsMessage(limit: number | undefined): string {
  const all = limit === undefined ? "all of its agent process slots" : `all ${limit} of its agent process slots`;
  const why = "each open retained Pi session holds one until it is closed";
  return `the CLI Bridge is at capacity: ${all} (${SLOTS}) are taken, and ${why}; retry in a moment`;
}

const num = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;

/** Whether a bridge refusal may say it is at capacity: such a refusal is not retried inside the call. */
function mayBeCapacity(err: ProviderError): boolean {
  const code = err.options.wireCode;
  if (code === "executor_saturated" || code === "admission_rejected" || code === "backend_not_ready") return true;
  return err.options.details?.capacity === true;
}

/** The retry policy of a call to the bridge: not a refusal the bridge already waited for. */
export const retryUnlessCapacity = (err: ProviderError): boolean => !mayBeCapacity(err);

/**
 * The `at_capacity` error a bridge refusal means, or null when it does not say the bridge is at
 * capacity (then the refusal stands as it is).
 */
export async function capacityOf(http: HttpTransport, err: unknown): Promise<ProviderError | null> {
  if (!(err instanceof ProviderError) || !mayBeCapacity(err)) return null;
  const details = err.options.details ?? {};
  const retry = err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {};
  if (err.options.wireCode === "admission_rejected") {
    const admission = details.admission as Record<string, unknown> | undefined;
    const limit = num(admission?.maxActive);
    const all = limit === undefined ? "all of its places for runs" : `all ${limit} of its places for runs`;
    const message = `the CLI Bridge is at capacity: ${all} (${PLACES}) are taken; retry in a moment`;
    return new ProviderError("at_capacity", message, {
      status: err.status,
      retryable: true,
      ...retry,
      details: { setting: PLACES, ...(limit !== undefined ? { limit } : {}) },
    });
  }
  if (err.options.wireCode === "executor_saturated" || details.capacity === true) {
    const limit = num(details.max);
    const inUse = num(details.in_flight);
    return new ProviderError("at_capacity", slotsMessage(limit), {
      status: err.status,
      retryable: true,
      ...retry,
      details: { setting: SLOTS, ...(limit !== undefined ? { limit } : {}), ...(inUse !== undefined ? { inUse } : {}) },
    });
  }
  // A health probe that timed out: at capacity only when the bridge's executor says every slot is taken.
  if (!/health probe timed out/i.test(err.message)) return null;
  const executor = await http
    .json(routes.health(), Health, { accept: [503] }, "read health")
    .then((health) => health.executor)
    .catch(() => undefined);
  if (!executor || executor.in_flight < executor.max) return null;
  return new ProviderError("at_capacity", slotsMessage(executor.max), {
    status: err.status,
    retryable: true,
    ...retry,
    details: { setting: SLOTS, limit: executor.max, inUse: executor.in_flight },
  });
}

/**
 * A run the bridge ended for capacity (the error frame of a one-shot run's stream), in this
 * gateway's words; null otherwise.
 */
export function capacityRunError(error: { type?: string; capacity?: unknown; executor?: unknown }): RunError | null {
  if (error.type !== "executor_saturated" && error.capacity !== true) return null;
  const counts = error.executor;
  const executor = typeof counts === "object" && counts !== null ? (counts as Record<string, unknown>) : {};
  return { code: AT_CAPACITY, message: slotsMessage(num(executor.max)) };
}
