// @ts-check
/**
 * The bridge's host executor (its src/executors/host.ts): a counting semaphore of process slots,
 * `BRIDGE_HOST_MAX_CONCURRENCY` (4 by default), that every CLI the bridge spawns takes before it
 * starts and holds while its process lives: a one-shot run's CLI for the run; a retained Pi
 * session's RPC child from its first turn until the session is closed or cancelled or the bridge
 * stops (idle time between turns included); a health probe's `--version` for a moment. A caller
 * waits for a slot in order, up to a deadline (`BRIDGE_HOST_ACQUIRE_DEADLINE_MS`, 60 s by
 * default), and is then refused: 429 `executor_saturated` with `Retry-After: 5`, or on a stream
 * that already answered 200 an error frame with the same facts. A health probe (every
 * capability read and session create makes one) waits at most `BRIDGE_HEALTH_PROBE_TIMEOUT_MS`
 * (3.5 s), then the route answers 503 `backend_not_ready`.
 */

/** The bridge's advice to a saturated caller (its EXECUTOR_RETRY_AFTER_SECONDS). */
const RETRY_AFTER_SECONDS = 5;

/**
 * @typedef {{ in_flight: number, max: number, queued: number, deadline_ms: number }} Saturation
 * @typedef {{ release: () => void } | { saturated: Saturation } | { aborted: true }} Acquired
 */

export class Executor {
  /** @param {() => number} max the slot count, read at each decision (a settings change applies at once) */
  constructor(max) {
    this.max = max;
    this.inFlight = 0;
    /** @type {Array<{ grant: () => void }>} */
    this.waiters = [];
    this.acquires = 0;
    this.timeouts = 0;
    /** Bumped when every process is gone (a restart): releases of slots taken before are void. */
    this.epoch = 0;
  }

  /**
   * Waits for a slot, in order, up to `deadlineMs` (or until `signal` aborts).
   * @param {number} deadlineMs
   * @param {AbortSignal} [signal]
   * @returns {Promise<Acquired>}
   */
  acquire(deadlineMs, signal) {
    this.acquires++;
    if (signal?.aborted) return Promise.resolve({ aborted: true });
    if (this.inFlight < this.max() && this.waiters.length === 0) return Promise.resolve({ release: this.take() });
    return new Promise((resolve) => {
      const waiter = {
        grant: () => {
          settle();
          resolve({ release: this.take() });
        },
      };
      const timer = setTimeout(() => {
        settle();
        this.timeouts++;
        resolve({
          saturated: {
            in_flight: this.inFlight,
            max: this.max(),
            queued: this.waiters.length,
            deadline_ms: deadlineMs,
          },
        });
      }, deadlineMs);
      const onAbort = () => {
        settle();
        resolve({ aborted: true });
      };
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Takes a slot; answers its release (once, and void after a restart). */
  take() {
    this.inFlight++;
    const epoch = this.epoch;
    let released = false;
    return () => {
      if (released || epoch !== this.epoch) return;
      released = true;
      this.inFlight--;
      this.pump();
    };
  }

  /** Grants waiting callers the slots that are free (after a release, or a larger limit). */
  pump() {
    while (this.waiters.length > 0 && this.inFlight < this.max()) this.waiters[0]?.grant();
  }

  /** Every process is gone (the bridge restarted): no slot is held. Waiting callers keep waiting for the free ones. */
  reset() {
    this.epoch++;
    this.inFlight = 0;
    this.pump();
  }

  /**
   * The counts `/health` reports (`executor`).
   * @param {{ acquireDeadlineMs: number }} settings
   */
  snapshot(settings) {
    return {
      in_flight: this.inFlight,
      max: this.max(),
      queued: this.waiters.length,
      acquire_deadline_ms: settings.acquireDeadlineMs,
      max_acquire_deadline_ms: 900000,
      acquires: this.acquires,
      timeouts: this.timeouts,
    };
  }
}

/**
 * The prose of a saturation refusal, as the bridge words it (its retry loops key on the prefix).
 * @param {Saturation} s
 */
function saturationMessage(s) {
  return `host-executor: acquire timeout after ${s.deadline_ms}ms (in_flight=${s.in_flight}/${s.max}, queued=${s.queued})`;
}

/**
 * The 429 body of a refused spawn (the bridge's chat and retained-session routes), `type` first.
 * @param {Saturation} s
 */
export function saturatedBody(s) {
  return {
    error: {
      type: "executor_saturated",
      capacity: true,
      provider_dispatch: "not_started",
      status: 429,
      executor: "host",
      ...s,
      retry_after_ms: RETRY_AFTER_SECONDS * 1000,
      message: saturationMessage(s),
    },
  };
}

/** The header the 429 carries. */
export const SATURATED_HEADERS = { "retry-after": String(RETRY_AFTER_SECONDS) };

/**
 * The error a stream that already answered 200 ends with (the bridge's `describeRunFailure`).
 * @param {Saturation} s
 */
export function saturatedFrameError(s) {
  return {
    message: saturationMessage(s),
    type: "executor_saturated",
    provider_dispatch: "not_started",
    status: 429,
    capacity: true,
    executor: { name: "host", ...s },
  };
}

/**
 * A backend's health probe: its `--version` takes a slot for a moment. Answers null when ready,
 * else the 503 refusal of a probe that found no slot within `healthProbeTimeoutMs`.
 * @param {Executor} executor
 * @param {string} backend
 * @param {{ healthProbeTimeoutMs: number }} settings
 */
export async function probeHealth(executor, backend, settings) {
  const slot = await executor.acquire(settings.healthProbeTimeoutMs);
  if ("release" in slot) {
    slot.release();
    return null;
  }
  return {
    status: 503,
    message: `backend ${JSON.stringify(backend)} is not ready: health probe timed out after ${settings.healthProbeTimeoutMs}ms`,
    type: "backend_not_ready",
  };
}
