/**
 * The session object's side of the event streams: one subscription per browser stream, each a
 * hibernatable WebSocket from the Worker that holds the browser's SSE response (the wire is in
 * src/lib/subscription-wire.ts; the Worker's side in src/http/sse-relay.ts). `SubscriptionHub`
 * is the replay-then-live rule, over any socket; ./subscription-sockets.ts speaks the socket protocol
 * over it that the session object's handlers hand it (accept, message, open a direct stream, close).
 *
 * Nothing here lives only in memory: a subscription's state (its cursor, whether it is live) is
 * the socket's attachment, held under its own key and read back through a schema, so the object
 * can hibernate with streams open and, woken by a new event, push it to every live subscription.
 * The object holds no timer for them: pings and the slow-viewer bound are the Worker's.
 *
 * Each subscription first replays the log strictly after its cursor, one page per pull from the
 * Worker, and with the page that catches up (one that is not full) it joins the live set in that
 * same synchronous step: no event can fall between replay and live.
 *
 * Frames are encoded here, once: a replay page for its one socket, a live batch once for every
 * socket (public/wire/frames.js: a text delta that continues the previous frame's part goes as a
 * lean frame), in messages of whole frames of at most LIVE_MESSAGE_BYTES. A message is a kind
 * byte and the SSE bytes the Worker writes as they are.
 */
import { z } from "zod";
import { DELTA_EVENT, type Envelope, encodeEvent, SNAPSHOT_EVENT } from "../../public/wire/frames.js";
import { encodeSseFrame, encodeSseRetry } from "../lib/sse";
import {
  DIRECT,
  EVENTS,
  HANDOVER,
  LIVE,
  LIVE_MESSAGE_BYTES,
  PAGE,
  wireMessage,
  wireMessageOf,
} from "../lib/subscription-wire";
import type { DirectStreams } from "./direct-streams";
import { builtEvent } from "./store/log-chunks";
import type { EventRow } from "./store/records";

const SubscriptionState = z.strictObject({
  /** The last seq this subscription was sent (exclusive cursor). */
  after: z.number().int().nonnegative(),
  live: z.boolean(),
  /** Whether the stream's head (retry, and a reset when the cursor is not held) was sent. */
  started: z.boolean(),
  /** The branch whose history the replay holds (its turns' events and the conversation's own); absent: every event. Live, every event goes out. */
  branch: z.number().int().nonnegative().optional(),
  /**
   * Live, whether the live frames may continue what this stream was sent last (a lean delta frame
   * continues the frame before it): true once it got a live batch, or when it went live right after
   * the event the live frames continue. Absent: false, its next live batch starts with a full frame.
   */
  synced: z.boolean().optional(),
  /**
   * The stream starts with the conversation's snapshot (docs/sse-protocol.md §14): read at the first pull, in the
   * same synchronous step as the replay page after it, whose cursor it sets. Cleared once sent.
   */
  snapshot: z.literal(true).optional(),
  /** The id of this subscription's direct streams: present when the Worker can open one (`direct=1`; ./direct-streams.ts). */
  direct: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .optional(),
  /**
   * `offered`: the socket was sent `D`, and live events still go on it; `open`: the socket was
   * sent `H`, and they go on the direct stream. Absent: on the socket, and a direct stream may be offered.
   */
  directState: z.enum(["offered", "open"]).optional(),
});
export type Subscription = z.infer<typeof SubscriptionState>;

/**
 * A socket's attachment: the subscription's state under a key of its own, so nothing else a socket
 * may carry is mistaken for it, and an attachment this module did not write reads as none.
 */
const SocketAttachment = z.object({ subscription: SubscriptionState });
type SocketAttachment = z.infer<typeof SocketAttachment>;

/** The subscription an attachment holds, or null when it holds none that reads as one. */
export function subscriptionOf(attachment: unknown): Subscription | null {
  const parsed = SocketAttachment.safeParse(attachment);
  return parsed.success ? parsed.data.subscription : null;
}

export function attachmentOf(state: Subscription): SocketAttachment {
  return { subscription: state };
}

/** A conversation's snapshot as a stream opens with it: the event's JSON, and the last seq it reflects. */
export interface StreamSnapshot {
  lastSeq: number;
  json: string;
}

export interface SubscriptionHubDeps<S> {
  /** The open sockets (after hibernation too). */
  sockets(): Iterable<S>;
  load(socket: S): Subscription | null;
  save(socket: S, state: Subscription): void;
  /** A wire message (src/lib/subscription-wire.ts): the kind byte, then SSE bytes. */
  send(socket: S, message: Uint8Array): void;
  readPage(afterSeq: number, limit: number, branch?: number): EventRow[];
  lastSeq(): number;
  firstRetainedSeq(): number | null;
  /** The conversation's snapshot, read now; null when the object holds none (the stream then replays from its cursor). */
  snapshot?(): StreamSnapshot | null;
  /** The lowest cursor the log holds (absent: the oldest retained seq minus one); compaction removes seqs that are not trimmed (docs/sse-protocol.md §13). */
  lowestHeldCursor?(): number | null;
  pageSize?: number;
  /** A replay page stops after the row that passes this many bytes. */
  pageBytes?: number;
  retryMs?: number;
  /** The least time between two live sends (LIVE_INTERVAL_MS; 0: every batch on the next task). */
  liveIntervalMs?: number;
  /** The clock the interval is kept by (Date.now). */
  now?(): number;
  /** Direct streams (./direct-streams.ts): absent, live events go on the sockets only. */
  directs?: DirectStreams;
}

/**
 * Live batches leave at most once per this many milliseconds: one display frame at 60 Hz. The
 * first batch after a quiet spell leaves on the next task, no later, and so does the first after a
 * stream joined the live set (a reconnecting viewer's first new delta waits for no interval); events
 * that come within the interval after a send wait for its end and leave together. A browser paints no faster, and every
 * message costs each viewer's relay the same whatever it carries
 * (bench/notes/2026-12-02-one-live-send-per-display-frame.md), so deltas faster than 60 a second cost a viewer 60
 * messages a second, not one per delta.
 */
const LIVE_INTERVAL_MS = 16;

const DEFAULT_PAGE_BYTES = 256 * 1024;

/** Live frames encoded (SSE bytes, each a whole frame) and not sent yet, and their total. */
interface LiveMessage {
  frames: Uint8Array[];
  bytes: number;
}

/** Live events encoded and not sent yet: messages of at most LIVE_MESSAGE_BYTES, the same for every socket. */
interface LiveBatch {
  messages: LiveMessage[];
  /** Its first event, and whether it went lean (a stream that is not synced needs it full). */
  first: EventRow;
  firstLean: boolean;
}

const utf8 = new TextEncoder();

/** The messages of a batch: each at most `bound` bytes of frames, a frame larger than that alone. */
function addFrame(messages: LiveMessage[], frame: Uint8Array, bound: number): void {
  const last = messages.at(-1);
  if (last && last.bytes + frame.byteLength <= bound) {
    last.frames.push(frame);
    last.bytes += frame.byteLength;
  } else {
    messages.push({ frames: [frame], bytes: frame.byteLength });
  }
}

export function newSubscription(after: number, branch?: number, snapshot = false, direct?: string): Subscription {
  return {
    after,
    live: false,
    started: false,
    ...(branch !== undefined ? { branch } : {}),
    ...(snapshot ? { snapshot: true as const } : {}),
    ...(direct !== undefined ? { direct } : {}),
  };
}

export class SubscriptionHub<S> {
  private batch: LiveBatch | null = null;
  /** The pending send of `batch`, cleared when it is sent sooner (a replay page, a close). */
  private sendTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the last live batch left (memory only: after a hibernation the first leaves at once). */
  private lastSentAt = Number.NEGATIVE_INFINITY;
  /** A stream joined the live set since the last live batch left: the next one leaves on the next task. */
  private joined = false;
  /**
   * The last event pushed live, as its frame left (its envelope's text beside it): what the next
   * live frame may continue. Memory only: after a hibernation the first live frame goes full.
   */
  private live: { context: Envelope | null; envelope: string | null } = { context: null, envelope: null };
  /** The direct streams end once the batch waiting now is sent (a turn ended: nothing more is coming soon). */
  private endDirectAfterFlush = false;

  constructor(private readonly deps: SubscriptionHubDeps<S>) {}

  /** The head of a stream: the retry delay, and a reset when the cursor names events the log does not hold. */
  private head(state: Subscription): string {
    let head = encodeSseRetry(this.deps.retryMs ?? 2000);
    const first = this.deps.firstRetainedSeq();
    const last = this.deps.lastSeq();
    const lowest = this.deps.lowestHeldCursor ? this.deps.lowestHeldCursor() : first === null ? null : first - 1;
    if (state.after > last || (lowest !== null && state.after < lowest)) {
      head += encodeSseFrame({
        event: "stream.reset",
        data: JSON.stringify({
          type: "stream.reset",
          data: {
            reason: state.after > last ? "cursor_ahead" : "cursor_trimmed",
            firstRetainedSeq: first,
            lastSeq: last,
          },
        }),
      });
      state.after = lowest === null ? last : lowest;
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
      // The snapshot and the page after it are read in this one synchronous step: the page starts
      // strictly after the snapshot's last event, so no event falls between them or comes twice.
      const snapshot = state.snapshot ? this.deps.snapshot?.() : null;
      delete state.snapshot;
      if (snapshot) state.after = snapshot.lastSeq;
      out = this.head(state);
      if (snapshot) out += encodeSseFrame({ id: String(snapshot.lastSeq), event: SNAPSHOT_EVENT, data: snapshot.json });
      state.started = true;
    }
    const pageSize = this.deps.pageSize ?? 500;
    const rows = this.deps.readPage(state.after, pageSize, state.branch);
    const limit = this.deps.pageBytes ?? DEFAULT_PAGE_BYTES;
    // A page starts with a full frame: a page is one message, and a frame never continues one the
    // reader may not have (the page before it was sent from another instance, say).
    let context: Envelope | null = null;
    let lastSent: EventRow | undefined;
    for (const row of rows) {
      const encoded = encodeEvent(context, row);
      out += encodeSseFrame(encoded.frame);
      context = encoded.context;
      state.after = row.seq;
      lastSent = row;
      if (out.length > limit) break;
    }
    // Caught up (a page that is not full, sent whole): join the live set in this same synchronous
    // step, so no event can fall between replay and live.
    state.live = rows.length < pageSize && lastSent === rows.at(-1);
    // Synced when the next live frame may continue what this page sent last: nothing was pushed live
    // since this instance started (its first live frame goes full), or this page ended on the very
    // event the live frames continue.
    if (state.live) {
      state.synced =
        this.live.envelope === null || (lastSent !== undefined && lastSent.envelope === this.live.envelope);
      this.joined = true;
    }
    this.deps.save(socket, state);
    this.deps.send(socket, wireMessage(state.live ? LIVE : PAGE, out));
  }

  /**
   * Pushes one appended event to every live subscription (those still replaying read it from the
   * log). Events published before the next task leave as one message.
   */
  publish(row: EventRow): void {
    this.publishBatch([row]);
  }

  /**
   * Pushes committed events, in log order, to every live subscription: each frame encoded once,
   * and the same messages (whole frames, each at most LIVE_MESSAGE_BYTES) to every socket for the
   * batch and everything else published before it leaves. It leaves on a task of its own, not a
   * microtask: a burst that upstream sent in one chunk is read, stored and published event by event
   * (each an await of the reader), and leaves as one message per socket, not one per event; and no
   * sooner than LIVE_INTERVAL_MS after the batch before it (docs/architecture.md "The streaming
   * path"). A replay page and closing the sockets send what is waiting first.
   */
  publishBatch(rows: readonly EventRow[]): void {
    for (const row of rows) {
      const encoded = encodeEvent(this.live.context, row, builtEvent(row));
      const frame = utf8.encode(encodeSseFrame(encoded.frame));
      this.batch ??= { messages: [], first: row, firstLean: encoded.frame.event === DELTA_EVENT };
      addFrame(this.batch.messages, frame, LIVE_MESSAGE_BYTES);
      this.live = { context: encoded.context, envelope: row.envelope };
    }
    if (this.batch && this.sendTimer === undefined) {
      const wait = this.joined ? 0 : this.lastSentAt + (this.deps.liveIntervalMs ?? LIVE_INTERVAL_MS) - this.now();
      this.sendTimer = setTimeout(() => this.flush(), Math.max(0, wait));
    }
  }

  private now(): number {
    return this.deps.now ? this.deps.now() : Date.now();
  }

  /** Sends the events waiting for their send now (before the sockets are closed, say). */
  flush(): void {
    if (this.sendTimer !== undefined) clearTimeout(this.sendTimer);
    this.sendTimer = undefined;
    const batch = this.batch;
    if (!batch) return;
    this.batch = null;
    this.lastSentAt = this.now();
    this.joined = false;
    // Several messages for a large batch (a resumed reader's whole part texts, tool outputs): none
    // past the platform's message limit, none alone past the relay's slow-viewer bound. The relay
    // writes them to one response in order, so a lean frame may continue the message before it.
    const messages = batch.messages.map((m) => wireMessageOf(EVENTS, m.frames));
    // For a stream that joined live after a frame of its own (a branch's replay, a page that ended
    // elsewhere): the same batch with its first frame full. Encoded at most once per batch.
    let resumed: Uint8Array[] | undefined;
    // A direct stream takes the SSE bytes without the kind byte: views made once per batch, not per viewer.
    let directMessages: Uint8Array[] | undefined;
    let directResumed: Uint8Array[] | undefined;
    const sseOf = (wire: Uint8Array[]) => wire.map((m) => m.subarray(1));
    const resume = (): Uint8Array[] => {
      const full = utf8.encode(encodeSseFrame(encodeEvent(null, batch.first).frame));
      const head: LiveMessage[] = [];
      addFrame(head, full, LIVE_MESSAGE_BYTES);
      for (const frame of batch.messages[0]!.frames.slice(1)) addFrame(head, frame, LIVE_MESSAGE_BYTES);
      return [...head.map((m) => wireMessageOf(EVENTS, m.frames)), ...messages.slice(1)];
    };
    const directs = this.deps.directs;
    for (const socket of this.deps.sockets()) {
      try {
        const state = this.deps.load(socket);
        if (!state?.live) continue;
        if (state.directState === "open") {
          // Its direct stream (none when that broke off: its relay ends the browser's stream).
          if (!directs || !state.direct || !directs.has(state.direct)) continue;
          const out =
            batch.firstLean && !state.synced
              ? (directResumed ??= sseOf((resumed ??= resume())))
              : (directMessages ??= sseOf(messages));
          for (const bytes of out) if (directs.write(state.direct, bytes) !== "written") break;
          if (!state.synced) {
            state.synced = true;
            this.deps.save(socket, state);
          }
          continue;
        }
        const out = batch.firstLean && !state.synced ? (resumed ??= resume()) : messages;
        for (const message of out) this.deps.send(socket, message);
        let changed = !state.synced;
        state.synced = true;
        if (
          directs &&
          state.direct &&
          state.directState === undefined &&
          directs.enabled() &&
          !this.endDirectAfterFlush
        ) {
          // The object is busy: a direct stream is offered (events go on the socket until it opens).
          this.deps.send(socket, wireMessage(DIRECT, state.direct));
          state.directState = "offered";
          changed = true;
        }
        if (changed) this.deps.save(socket, state);
      } catch (err) {
        // A socket closing as we write (its browser reconnects from its last id): the others
        // still get the events.
        console.warn(JSON.stringify({ msg: "subscription write failed", error: String(err) }));
      }
    }
    if (this.endDirectAfterFlush) {
      this.endDirectAfterFlush = false;
      this.endDirect();
    }
  }

  /**
   * Opens `socket`'s direct stream (it was offered one): what is waiting is sent on the socket
   * first, then `H`, and from then on its live events go on the stream, which continues exactly
   * where the socket's messages end (nothing replayed, nothing skipped). Null when the
   * subscription has no offer to take up.
   */
  openDirect(socket: S, maxPendingBytes: number): ReadableStream<Uint8Array> | null {
    const directs = this.deps.directs;
    const state = this.deps.load(socket);
    if (!directs || !state?.live || !state.direct || state.directState !== "offered") return null;
    this.flush();
    this.deps.send(socket, wireMessage(HANDOVER, ""));
    state.directState = "open";
    this.deps.save(socket, state);
    return directs.start(state.direct, maxPendingBytes);
  }

  /**
   * Ends the direct streams once what was published is sent (a turn ended): the object need not
   * stay awake the quiet time for them, and no stream is offered with that batch.
   */
  endDirectSoon(): void {
    if (!this.deps.directs) return;
    if (this.batch) this.endDirectAfterFlush = true;
    else this.endDirect();
  }

  /** Ends every open direct stream (the object went quiet): their subscriptions go on over their sockets. */
  endDirect(): void {
    const directs = this.deps.directs;
    if (!directs) return;
    for (const socket of this.deps.sockets()) {
      const state = this.deps.load(socket);
      if (!state?.direct || state.directState !== "open") continue;
      directs.end(state.direct);
      delete state.directState;
      this.deps.save(socket, state);
    }
  }
}
