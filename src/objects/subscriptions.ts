/**
 * The session object's side of the event streams: one subscription per browser stream, each a
 * hibernatable WebSocket from the Worker that holds the browser's SSE response (the wire is in
 * src/lib/subscription-wire.ts; the Worker's side in src/http/sse-relay.ts).
 *
 * Nothing here lives only in memory: a subscription's state (its cursor, whether it is live) is
 * the socket's attachment, so the object can hibernate with streams open and, woken by a new
 * event, push it to every live subscription. The object holds no timer for them: pings and the
 * slow-viewer bound are the Worker's.
 *
 * Each subscription first replays the log strictly after its cursor, one page per pull from the
 * Worker, and with the page that catches up (one that is not full) it joins the live set in that
 * same synchronous step: no event can fall between replay and live.
 */
import { encodeSseFrame, encodeSseRetry } from "../lib/sse";
import { EVENTS, LIVE, PAGE } from "../lib/subscription-wire";
import type { EventRow } from "./session-store";

export interface Subscription {
  /** The last seq this subscription was sent (exclusive cursor). */
  after: number;
  live: boolean;
  /** Whether the stream's head (retry, and a reset when the cursor is not held) was sent. */
  started: boolean;
}

export interface SubscriptionHubDeps<S> {
  /** The open sockets (after hibernation too). */
  sockets(): Iterable<S>;
  load(socket: S): Subscription | null;
  save(socket: S, state: Subscription): void;
  send(socket: S, message: string): void;
  readPage(afterSeq: number, limit: number): EventRow[];
  lastSeq(): number;
  firstRetainedSeq(): number | null;
  pageSize?: number;
  /** A replay page stops after the row that passes this many bytes. */
  pageBytes?: number;
  retryMs?: number;
}

const DEFAULT_PAGE_BYTES = 256 * 1024;

function encodeEventRow(row: EventRow): string {
  return encodeSseFrame({ id: row.seq, event: row.type, data: row.envelope });
}

export function newSubscription(after: number): Subscription {
  return { after, live: false, started: false };
}

export class SubscriptionHub<S> {
  private pending = "";
  private flushQueued = false;

  constructor(private readonly deps: SubscriptionHubDeps<S>) {}

  /** The head of a stream: the retry delay, and a reset when the cursor names events the log does not hold. */
  private head(state: Subscription): string {
    let head = encodeSseRetry(this.deps.retryMs ?? 2000);
    const first = this.deps.firstRetainedSeq();
    const last = this.deps.lastSeq();
    if (state.after > last || (first !== null && state.after < first - 1)) {
      head += encodeSseFrame({
        event: "stream.reset",
        data: JSON.stringify({ type: "stream.reset", data: { reason: state.after > last ? "cursor_ahead" : "cursor_trimmed", firstRetainedSeq: first, lastSeq: last } }),
      });
      state.after = first === null ? last : first - 1;
    }
    return head;
  }

  /** The Worker has room for more: the next replay page, or the last one and the switch to live. */
  pull(socket: S): void {
    const state = this.deps.load(socket);
    if (!state || state.live) return;
    // Events still waiting in the burst buffer are in the log already: they go out to the
    // subscriptions live before this one, and this one reads them below, not twice.
    this.flush();
    let out = "";
    if (!state.started) {
      out = this.head(state);
      state.started = true;
    }
    const pageSize = this.deps.pageSize ?? 500;
    const rows = this.deps.readPage(state.after, pageSize);
    const limit = this.deps.pageBytes ?? DEFAULT_PAGE_BYTES;
    let sent = 0;
    for (const row of rows) {
      out += encodeEventRow(row);
      state.after = row.seq;
      sent++;
      if (out.length > limit) break;
    }
    // Caught up (a page that is not full, sent whole): join the live set in this same synchronous
    // step, so no event can fall between replay and live.
    state.live = rows.length < pageSize && sent === rows.length;
    this.deps.save(socket, state);
    this.deps.send(socket, (state.live ? LIVE : PAGE) + out);
  }

  /**
   * Pushes one appended event to every live subscription (those still replaying read it from the
   * log). Events published in one synchronous burst leave as one message.
   */
  publish(row: EventRow): void {
    this.pending += encodeEventRow(row);
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(() => this.flush());
    }
  }

  private flush(): void {
    this.flushQueued = false;
    if (this.pending === "") return;
    const message = EVENTS + this.pending;
    this.pending = "";
    for (const socket of this.deps.sockets()) {
      try {
        if (this.deps.load(socket)?.live) this.deps.send(socket, message);
      } catch (err) {
        // A socket closing as we write (its browser reconnects from its last id): the others
        // still get the events.
        console.warn(JSON.stringify({ msg: "subscription write failed", error: String(err) }));
      }
    }
  }
}
