/**
 * The reconnecting loop of the one upstream reader of a running execution (its host is
 * ./upstream-reader.ts). It reads the provider's events from the last upstream id the session
 * stored and hands each to the host, which queues it for the next commit (./ingest-queue.ts): the
 * reader does not wait for a commit per frame, only at a terminal event (to know whether the run
 * ended), when the queue is long (backpressure) and at the end of a stream (its progress). After a
 * severed stream it reconnects from the last committed id with a bounded exponential backoff. It
 * ends when the host says the run is over, when it is aborted, or when it gives up (the session's
 * alarm tries again later).
 */
import { backoffMs } from "../lib/retry";
import { ProviderError } from "../providers/errors";
import type { AgentProvider, ProviderEvent, ProviderResult } from "../providers/provider";
import type { AgentExactRunControlRef } from "../schemas/contracts";

export interface PumpHost {
  /** The last upstream id stored for this execution (exclusive cursor), or undefined for the start. */
  cursor(): string | undefined;
  /** Queues one event for the next commit (throws a failed commit's error). */
  ingest(event: ProviderEvent): void;
  /** Resolves once every event handed over is committed and durable; rejects when a commit failed. */
  settled(): Promise<void>;
  /** How many events handed over so far were new (not repeats), once committed. */
  admitted(): number;
  /** Whether so many events wait for a commit that the reader should wait before reading on. */
  backlogged(): boolean;
  /** Calls `listener` when a commit failed (the stream is then read again); answers how to stop listening. */
  onFailure(listener: () => void): () => void;
  /** Whether the run is still live (no terminal event stored yet). */
  isLive(): boolean;
  /** Finishes the run from its result when the stream cannot tell (cursor gone, reader gave up). */
  finishFromResult(result: ProviderResult, reason: string): void;
  /** The run's environment is gone or stopped: the run cannot go on. */
  environmentLost(reason: string): void;
  /** A reconnect happened; for logs and counters. */
  onReconnect?(attempt: number, reason: string): void;
}

export interface PumpOptions {
  signal: AbortSignal;
  /** Consecutive reconnects without progress before giving up. */
  maxAttempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Events handed over between two yields to the event loop (INGEST_EVENTS_PER_TASK). */
  eventsPerTask?: number;
  /** Lets the isolate's other work run (a macrotask: a request, another conversation's frames). */
  yieldTask?: () => Promise<void>;
}

/**
 * At most this many events are handed over in one task: an upstream read can hold thousands of
 * frames (an unpaced burst), each read from it without waiting on anything, and the object's
 * isolate (under `wrangler dev`, the Worker's and every object's) answers nothing else until the
 * reader waits. After as many, the reader yields to the event loop (bench/README.md, `stall`).
 */
export const INGEST_EVENTS_PER_TASK = 64;

const nextTask = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

export type PumpOutcome = "finished" | "aborted" | "gave_up";

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

const CLEAN_END = "stream closed before the run ended";

export async function runPump(
  provider: AgentProvider,
  ref: AgentExactRunControlRef,
  host: PumpHost,
  options: PumpOptions,
): Promise<PumpOutcome> {
  const { signal } = options;
  const maxAttempts = options.maxAttempts ?? 8;
  const baseDelayMs = options.baseDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const sleep = options.sleep ?? defaultSleep;
  const eventsPerTask = options.eventsPerTask ?? INGEST_EVENTS_PER_TASK;
  const yieldTask = options.yieldTask ?? nextTask;
  let attempt = 0;
  let sinceYield = 0;

  const settleFromResult = async (reason: string): Promise<boolean> => {
    const result = await provider.result(ref).catch(() => null);
    if (!result) return false;
    host.finishFromResult(result, reason);
    return true;
  };

  while (!signal.aborted && host.isLive()) {
    const before = host.admitted();
    let reason = CLEAN_END;
    // This stream only: dropped when a commit fails (what it held is read again from the cursor).
    const pass = new AbortController();
    const dropPass = () => pass.abort(new Error("a commit of this stream's events failed"));
    signal.addEventListener("abort", dropPass, { once: true });
    const stopListening = host.onFailure(dropPass);
    try {
      for await (const event of provider.events(ref, { after: host.cursor(), signal: pass.signal })) {
        host.ingest(event);
        if (++sinceYield >= eventsPerTask) {
          sinceYield = 0;
          await yieldTask();
        }
        if (event.kind === "terminal" || host.backlogged()) {
          await host.settled();
          // The run ended: whatever follows on this stream repeats what the session has.
          if (event.kind === "terminal" && !host.isLive()) break;
        }
      }
      await host.settled();
    } catch (err) {
      // What was handed over is committed (or dropped with a failed commit) before the cursor is read again.
      await host.settled().catch(() => undefined);
      if (signal.aborted) return "aborted";
      if (err instanceof ProviderError && (err.code === "environment_gone" || err.code === "environment_not_running")) {
        host.environmentLost(err.message);
        return "finished";
      }
      if (err instanceof ProviderError && (err.code === "cursor_expired" || err.code === "cursor_ahead")) {
        // Upstream no longer holds our cursor: the frames in between are gone; settle from the result.
        if (await settleFromResult("the upstream replay window no longer holds this run's cursor")) return "finished";
      } else if (err instanceof ProviderError && !err.retryable) {
        if (await settleFromResult(err.message)) return "finished";
      }
      reason = err instanceof Error ? err.message : String(err);
    } finally {
      signal.removeEventListener("abort", dropPass);
      stopListening();
    }
    if (signal.aborted) return "aborted";
    const progressed = host.admitted() > before;
    if (!host.isLive()) return "finished";
    // A stream that ended cleanly with nothing new: the run may be over without a terminal frame.
    if (!progressed && reason === CLEAN_END && (await settleFromResult("the stream ended without a terminal frame")))
      return "finished";
    attempt = progressed ? 1 : attempt + 1;
    if (attempt > maxAttempts) {
      if (await settleFromResult("the upstream stream could not be re-established")) return "finished";
      return "gave_up";
    }
    host.onReconnect?.(attempt, reason);
    await sleep(backoffMs(attempt, baseDelayMs, maxDelayMs), signal);
  }
  return signal.aborted ? "aborted" : "finished";
}
