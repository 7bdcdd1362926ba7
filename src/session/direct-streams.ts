/**
 * The session object's direct streams: while it is busy anyway (a turn streaming), a live
 * subscription's events go on a response of the object's own that the Worker pipes into its
 * browser's natively (src/lib/subscription-wire.ts, `D`), instead of one socket message per batch
 * that the Worker's relay must take in JavaScript. A batch then costs the object one write per
 * viewer and the Worker nothing: the runtime pumps the bytes from one pipe to the other.
 *
 * A direct stream holds the object awake, so it lasts only while events flow: they end with a
 * turn's last event (its end), or after SSE_DIRECT_QUIET_MS (3 s; a turn's pauses, a tool call or a
 * thought, keep them) without a live event, and the subscriptions go on over
 * their hibernatable sockets (an idle conversation with tabs open holds nothing else). Memory only:
 * an evicted object's streams break, and their relays end their browsers' streams, which reconnect
 * from their last id.
 *
 * The slow-viewer bound holds here as in the relay: a stream whose unread bytes pass it when a
 * batch comes is aborted (the relay ends its browser's stream; the browser reconnects).
 */
import { type BytePipe, bytePipe } from "../lib/byte-pipe";

interface DirectStream {
  pipe: BytePipe;
  /** Its slow-viewer bound (the relay's SSE_MAX_PENDING_BYTES). */
  maxPendingBytes: number;
}

export interface DirectStreamsOptions {
  /** Called once the streams have had no write for the quiet time: end them (SubscriptionHub.endDirect). */
  onQuiet(): void;
  /** The quiet time (SSE_DIRECT_QUIET_MS); 0: no direct stream is offered. */
  quietMs(): number;
  now?(): number;
}

export class DirectStreams {
  private readonly streams = new Map<string, DirectStream>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastWriteAt = 0;
  /** Streams this instance opened. */
  opened = 0;

  constructor(private readonly options: DirectStreamsOptions) {}

  private now(): number {
    return this.options.now ? this.options.now() : Date.now();
  }

  /** Whether direct streams are offered at all. */
  enabled(): boolean {
    return this.options.quietMs() > 0;
  }

  get size(): number {
    return this.streams.size;
  }

  has(id: string): boolean {
    return this.streams.has(id);
  }

  /** Opens the direct stream `id`: the body of the response the relay pipes. */
  start(id: string, maxPendingBytes: number): ReadableStream<Uint8Array> {
    this.streams.get(id)?.pipe.abort("replaced");
    const pipe = bytePipe();
    const stream = { pipe, maxPendingBytes };
    this.streams.set(id, stream);
    this.opened++;
    void pipe.gone.then(() => {
      if (this.streams.get(id) === stream) this.forget(id);
    });
    this.touch();
    return pipe.readable;
  }

  /** Writes to `id`: "written", "behind" (it passed its bound and was aborted), or "none" (not open). */
  write(id: string, bytes: Uint8Array): "written" | "behind" | "none" {
    const stream = this.streams.get(id);
    if (!stream) return "none";
    if (stream.pipe.unread() > stream.maxPendingBytes) {
      this.abort(id, "viewer too far behind");
      return "behind";
    }
    stream.pipe.write(bytes);
    this.touch();
    return "written";
  }

  /** Ends `id` after what was written: its relay goes on with the subscription's socket. */
  end(id: string): void {
    this.streams.get(id)?.pipe.close();
    this.forget(id);
  }

  /** Breaks `id` off: its relay ends its browser's stream. */
  abort(id: string, reason: string): void {
    this.streams.get(id)?.pipe.abort(reason);
    this.forget(id);
  }

  /** Drops `id`; with none left, the quiet timer goes too (a pending timer would keep the object awake). */
  private forget(id: string): void {
    this.streams.delete(id);
    if (this.streams.size === 0 && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** Ends every stream (the sockets are closing: a delete, a dev drop). */
  endAll(): void {
    for (const id of [...this.streams.keys()]) this.end(id);
  }

  private touch(): void {
    this.lastWriteAt = this.now();
    if (this.timer !== undefined) return;
    const quietMs = this.options.quietMs();
    const check = () => {
      this.timer = undefined;
      if (this.streams.size === 0) return;
      const idle = this.now() - this.lastWriteAt;
      if (idle >= quietMs) {
        this.options.onQuiet();
        // Any left (a stream whose socket is gone): ended too, so nothing holds the object awake.
        this.endAll();
      } else this.timer = setTimeout(check, quietMs - idle);
    };
    this.timer = setTimeout(check, quietMs);
  }
}
