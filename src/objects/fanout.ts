/**
 * Fan-out of the session log to any number of browsers as SSE.
 *
 * Each reader first replays the log strictly after its cursor, one SQLite page per pull (so a long
 * log is never loaded whole), and when a page comes back empty it joins the live set in that same
 * synchronous step: no event can fall between replay and live. Live events are pushed to every
 * live reader; a reader whose unread output passes the bound is closed and reconnects from its
 * last id. A `: ping` comment on an interval finds dead readers and keeps proxies from timing out.
 */
import { encodeSseFrame, encodeSseRetry } from "../lib/sse";
import type { EventRow } from "./session-store";

export interface FanoutOptions {
  readPage(afterSeq: number, limit: number): EventRow[];
  lastSeq(): number;
  firstRetainedSeq(): number | null;
  pingIntervalMs: number;
  maxPendingBytes: number;
  pageSize?: number;
  retryMs?: number;
}

interface Reader {
  controller: ReadableStreamDefaultController<Uint8Array>;
  live: boolean;
  closed: boolean;
}

const encoder = new TextEncoder();
const PING = encoder.encode(": ping\n\n");
/** Replay reads the next page while less than this is waiting to be read. */
const HIGH_WATER_MARK_BYTES = 64 * 1024;

function encodeEventRow(row: EventRow): string {
  return encodeSseFrame({ id: row.seq, event: row.type, data: row.envelope });
}

export class EventFanout {
  private readonly readers = new Set<Reader>();
  private pending = "";
  private flushQueued = false;
  private pingTimer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly options: FanoutOptions) {}

  get liveReaders(): number {
    let n = 0;
    for (const r of this.readers) if (r.live && !r.closed) n++;
    return n;
  }

  get size(): number {
    return this.readers.size;
  }

  /** Opens an SSE byte stream that replays after `cursor`, then follows live events. */
  open(cursor: number): ReadableStream<Uint8Array> {
    const pageSize = this.options.pageSize ?? 500;
    let after = cursor;
    let reader: Reader | undefined;
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          reader = { controller, live: false, closed: false };
          this.readers.add(reader);
          this.ensurePing();
          let head = encodeSseRetry(this.options.retryMs ?? 2000);
          const first = this.options.firstRetainedSeq();
          const last = this.options.lastSeq();
          // The cursor names events we no longer hold (trimmed), or a future the log never had:
          // the client must rebuild from /messages, then follow from here.
          if (after > last || (first !== null && after < first - 1)) {
            head += encodeSseFrame({
              event: "stream.reset",
              data: JSON.stringify({ type: "stream.reset", data: { reason: after > last ? "cursor_ahead" : "cursor_trimmed", firstRetainedSeq: first, lastSeq: last } }),
            });
            after = first === null ? last : first - 1;
          }
          controller.enqueue(encoder.encode(head));
        },
        pull: (controller) => {
          if (!reader || reader.live || reader.closed) return;
          const rows = this.options.readPage(after, pageSize);
          if (rows.length === 0) {
            // Caught up: join the live set in this same synchronous step. Events still waiting
            // in the burst buffer are in the log already and were read above, so they go out to
            // the readers that were live before this one, not again to it.
            this.flush();
            reader.live = true;
            return;
          }
          let chunk = "";
          for (const row of rows) chunk += encodeEventRow(row);
          after = rows[rows.length - 1]!.seq;
          controller.enqueue(encoder.encode(chunk));
        },
        cancel: () => {
          if (reader) this.drop(reader);
        },
      },
      { highWaterMark: HIGH_WATER_MARK_BYTES, size: (chunk) => chunk.byteLength },
    );
    return body;
  }

  /**
   * Pushes one appended event to every live reader. Readers still replaying will read it from
   * the log. Events published in one synchronous burst leave as one chunk.
   */
  publish(row: EventRow): void {
    if (this.readers.size === 0) return;
    this.pending += encodeEventRow(row);
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(() => this.flush());
    }
  }

  private flush(): void {
    this.flushQueued = false;
    if (this.pending === "") return;
    const bytes = encoder.encode(this.pending);
    this.pending = "";
    for (const reader of this.readers) {
      if (!reader.live || reader.closed) continue;
      this.write(reader, bytes);
    }
  }

  private write(reader: Reader, bytes: Uint8Array): void {
    try {
      reader.controller.enqueue(bytes);
      // Bytes queued and not yet read by the browser (the queue counts chunk bytes).
      const queued = HIGH_WATER_MARK_BYTES - (reader.controller.desiredSize ?? 0);
      if (queued > this.options.maxPendingBytes) {
        // Too far behind: close it; the browser reconnects from the last id it read.
        this.close(reader);
      }
    } catch {
      this.drop(reader);
    }
  }

  private ensurePing(): void {
    if (this.pingTimer !== undefined) return;
    this.pingTimer = setInterval(() => {
      for (const reader of this.readers) if (reader.live) this.write(reader, PING);
      if (this.readers.size === 0) this.stopPing();
    }, this.options.pingIntervalMs);
  }

  private stopPing(): void {
    if (this.pingTimer !== undefined) clearInterval(this.pingTimer);
    this.pingTimer = undefined;
  }

  private close(reader: Reader): void {
    if (!reader.closed) {
      try {
        reader.controller.close();
      } catch {
        // the browser already went away
      }
    }
    this.drop(reader);
  }

  private drop(reader: Reader): void {
    reader.closed = true;
    this.readers.delete(reader);
    if (this.readers.size === 0) this.stopPing();
  }

  closeAll(): void {
    for (const reader of [...this.readers]) this.close(reader);
  }
}
