/**
 * The Worker's side of an event stream: it holds the browser's SSE response and relays what the
 * session object sends over the subscription socket (src/lib/subscription-wire.ts), so the object
 * itself holds no response and can hibernate between events.
 *
 * Replay is pulled a page at a time, only when the browser has room. Once live, events are
 * written as they come; a `: ping` comment on an interval keeps proxies from timing the stream
 * out and finds browsers that went away, and a browser whose unread output passes the bound when
 * a message arrives is closed (it reconnects from its last id; the message is not written). The socket and the browser stream end together.
 *
 * The bytes are the object's: each message is its kind byte and SSE bytes, written to the browser
 * as a view of the message itself, never decoded or encoded again here, into the runtime's own
 * pipe (src/lib/byte-pipe.ts), which the runtime reads into the response itself: per message and
 * viewer one write, no JavaScript stream in between. While the object is busy it may move the live
 * events to a direct stream (`D`): the relay opens it and the runtime pipes it into the browser's
 * natively, no JavaScript per batch at all; the socket's messages wait until the object ends it.
 */

import { ApiError } from "../errors";
import { type BytePipe, bytePipe } from "../lib/byte-pipe";
import {
  CLOSE_DELETED,
  CLOSE_KNOWN,
  DIRECT,
  DIRECT_PATH,
  EVENTS,
  HANDOVER,
  LIVE,
  PAGE,
  PULL,
  SUBSCRIBE_PATH,
} from "../lib/subscription-wire";

export interface RelayOptions {
  pingIntervalMs: number;
  maxPendingBytes: number;
}

/** What a relay follows: the subscription's socket, and how to open its direct streams (absent: never offered). */
export interface RelaySource {
  socket: RelaySocket;
  /** Opens the direct stream `id` (a `D` message's); null when the object has none to open. */
  openDirect?(id: string): Promise<ReadableStream<Uint8Array> | null>;
}

/** The socket as the relay uses it (a WebSocket, already accepted). */
export interface RelaySocket {
  /** Set to "arraybuffer" by the relay: the object's messages are binary, and read as they come. */
  binaryType: "blob" | "arraybuffer";
  send(message: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close" | "error", listener: () => void): void;
}

const encoder = new TextEncoder();
const PING = encoder.encode(": ping\n\n");
/** Replay asks for the next page while less than this is waiting to be read. */
const HIGH_WATER_MARK_BYTES = 64 * 1024;

/** A binary message's bytes, as a view (no copy); undefined for anything else (a text message). */
function binary(data: unknown): Uint8Array | undefined {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // An ArrayBuffer, of this realm or another's (the check that does not depend on the realm).
  if (Object.prototype.toString.call(data) === "[object ArrayBuffer]") return new Uint8Array(data as ArrayBuffer);
  return undefined;
}

/**
 * Relays a subscription socket to a pipe's readable end (the response body). `connect` gives the
 * socket: at once (relayStream), or once the conversation exists (relayOnceKnown), writing to the
 * pipe meanwhile. One pipe for the whole stream: no stream relaying another's chunks.
 */
function relay(
  options: RelayOptions,
  connect: (pipe: BytePipe, ended: () => boolean) => RelaySource | Promise<RelaySource | null>,
  pipe: BytePipe = bytePipe(),
): ReadableStream<Uint8Array> {
  let socket: RelaySocket | null = null;
  let openDirect: RelaySource["openDirect"];
  /** A direct stream offered and being opened (`D`), until its hand-over (`H`). */
  let offered: Promise<ReadableStream<Uint8Array> | null> | undefined;
  /** While a direct stream is piped: the socket's messages that came meanwhile, handled after it, in order. */
  let held: Uint8Array[] | null = null;
  /** The socket closed while a direct stream was piped: the stream ends once that is through. */
  let closedWhilePiping = false;
  let live = false;
  let ended = false;
  let pageArrived: (() => void) | undefined;
  let pingTimer: ReturnType<typeof setInterval> | undefined;

  const end = (closeSocket: boolean, code = 1000, reason = "") => {
    if (ended) return;
    ended = true;
    if (pingTimer !== undefined) clearInterval(pingTimer);
    pageArrived?.();
    pageArrived = undefined;
    pipe.close();
    if (closeSocket && socket) {
      try {
        socket.close(code, reason);
      } catch {
        // already closed
      }
    }
  };
  void pipe.gone.then(() => end(true, 1000, "viewer left"));

  const write = (bytes: Uint8Array) => {
    if (ended) return;
    // Bytes written and not yet read by the browser, counted before this message: a viewer is too
    // far behind when what it has not read yet passes the bound, so one message larger than the
    // bound reaches a viewer that keeps up.
    if (held) return; // a ping while a direct stream is piped: that stream is what keeps the connection busy
    if (live && pipe.unread() > options.maxPendingBytes) {
      end(true, 1000, "viewer too far behind");
      return;
    }
    pipe.write(bytes);
  };

  // A direct stream handed over: piped into the browser's natively; the socket's messages meanwhile wait.
  const pipeDirect = async (opening: Promise<ReadableStream<Uint8Array> | null>) => {
    held = [];
    const body = await opening;
    const through = body ? await pipe.pipeFrom(body) : false;
    if (!through) {
      // Broken off (the object was evicted, or its bound for this viewer passed) or not opened:
      // the browser reconnects from its last id.
      end(true, 1000, "direct stream ended");
      return;
    }
    const waiting = held;
    held = null;
    for (let i = 0; i < waiting.length && !ended; i++) {
      handle(waiting[i]!);
      // Another direct stream: the rest waits for it.
      if (held) {
        (held as Uint8Array[]).push(...waiting.slice(i + 1));
        return;
      }
    }
    if (closedWhilePiping) end(true, 1000, "closed");
  };

  const handle = (message: Uint8Array) => {
    const kind = message[0];
    if (kind === DIRECT && openDirect && live && !offered) {
      // Opened now; the live events go on coming here until the object hands over.
      offered = openDirect(new TextDecoder().decode(message.subarray(1))).catch(() => null);
      return;
    }
    if (kind === HANDOVER && offered) {
      const opening = offered;
      offered = undefined;
      void pipeDirect(opening);
      return;
    }
    if (kind !== PAGE && kind !== LIVE && kind !== EVENTS) {
      end(true, 1002, "unknown message");
      return;
    }
    if (message.byteLength > 1) write(message.subarray(1));
    if (kind === LIVE) {
      live = true;
      pingTimer ??= setInterval(() => write(PING), options.pingIntervalMs);
    }
    if (kind === PAGE || kind === LIVE) {
      pageArrived?.();
      pageArrived = undefined;
    }
  };

  const attach = (source: RelaySource) => {
    const s = source.socket;
    socket = s;
    openDirect = source.openDirect;
    // Before the first pull (no message can arrive before it): binary messages as ArrayBuffers, in order.
    s.binaryType = "arraybuffer";
    s.addEventListener("message", (event) => {
      // The object sends binary messages only: anything else is not this wire.
      const message = binary(event.data);
      if (!message) {
        end(true, 1002, "unknown message");
        return;
      }
      if (held) held.push(message);
      else handle(message);
    });
    // The object closed it (a delete, a dev drop, a deploy): answer the close, end the browser's
    // stream (after a direct stream being piped is through: the object ended it first).
    s.addEventListener("close", () => {
      if (held) closedWhilePiping = true;
      else end(true, 1000, "closed");
    });
    s.addEventListener("error", () => end(false));
  };

  // Replay: a page asked for while less than the high-water mark is unread, until one says live.
  const replay = async () => {
    while (!live && !ended) {
      await pipe.below(HIGH_WATER_MARK_BYTES);
      if (live || ended) return;
      await new Promise<void>((resolve) => {
        pageArrived = resolve;
        try {
          socket!.send(PULL);
        } catch {
          end(false);
        }
      });
    }
  };

  void (async () => {
    try {
      const source = await connect(pipe, () => ended);
      if (!source) return;
      if (ended) {
        try {
          source.socket.close(1000, "viewer left");
        } catch {
          // already closed
        }
        return;
      }
      attach(source);
      await replay();
    } catch {
      end(true, 1011, "relay failed");
    }
  })();
  return pipe.readable;
}

/** Relays `source` to the browser (`pipe`: the runtime's, unless a test gives its own). */
export function relayStream(source: RelaySource, options: RelayOptions, pipe?: BytePipe): ReadableStream<Uint8Array> {
  return relay(options, () => source, pipe);
}

type SessionStub = { fetch(input: string, init?: RequestInit): Promise<Response> };

/**
 * Opens a subscription to a conversation's log strictly after `after` (the object accepts it as hibernatable);
 * `snapshot`: it starts with the conversation's snapshot instead, and goes on strictly after its last event.
 * It takes direct streams (`maxPendingBytes`: their slow-viewer bound, the relay's own).
 */
export async function openSubscription(
  stub: SessionStub,
  maxPendingBytes: number,
  after: number,
  branch?: number,
  snapshot = false,
): Promise<RelaySource> {
  const query = `after=${after}${branch !== undefined ? `&branch=${branch}` : ""}${snapshot ? "&snapshot=1" : ""}&direct=1`;
  const upgrade = await stub.fetch(`https://session${SUBSCRIBE_PATH}?${query}`, { headers: { upgrade: "websocket" } });
  const socket = upgrade.webSocket;
  if (upgrade.status !== 101 || !socket)
    throw new ApiError(503, "session_unavailable", "the conversation's event log could not be opened; retry");
  socket.accept();
  return {
    socket,
    async openDirect(id) {
      const response = await stub.fetch(
        `https://session${DIRECT_PATH}?id=${encodeURIComponent(id)}&max=${maxPendingBytes}`,
      );
      if (!response.ok || !response.body) {
        await response.body?.cancel();
        return null;
      }
      return response.body;
    },
  };
}

/** A socket waiting on the user's object for a conversation (src/lib/subscription-wire.ts AWAIT_PATH). */
export interface WaitSocket {
  close(code?: number, reason?: string): void;
  addEventListener(type: "close", listener: (event: { code: number }) => void): void;
  addEventListener(type: "error", listener: () => void): void;
}

/** After a waiting socket was lost (the user's object restarted, say), how long until it is opened again (doubling). */
const FIRST_REOPEN_MS = 250;
const MAX_REOPEN_MS = 30_000;
const RETRY_HEAD = encoder.encode("retry: 2000\n\n");

/**
 * The stream of a conversation the user does not have yet: it answers and waits like an empty log
 * (docs/sse-protocol.md §3.2: retry first, then pings) without waking a session object, which would
 * store an empty database for any id read. It waits on the user's object (`wait`: a socket the
 * object closes with CLOSE_KNOWN once the conversation is in the index, or "known" at once), which
 * asks nothing while it waits, so an idle tab on a new conversation costs no request; once the
 * conversation exists, it relays the log from its start as any stream. A wait the object ends with
 * CLOSE_DELETED (the account is gone) ends the stream; a lost one is opened again.
 */
export function relayOnceKnown(
  wait: () => Promise<WaitSocket | "known">,
  open: (after: number) => Promise<RelaySource>,
  after: number,
  options: RelayOptions,
): ReadableStream<Uint8Array> {
  return relay(options, async (pipe, ended) => {
    pipe.write(RETRY_HEAD);
    // A cursor into a log that does not exist (the conversation was deleted, say): reset, as an
    // empty log answers a cursor ahead of it (docs/sse-protocol.md §4), and follow from the start.
    if (after > 0)
      pipe.write(
        encoder.encode(
          `event: stream.reset\ndata: ${JSON.stringify({ type: "stream.reset", data: { reason: "cursor_ahead", firstRetainedSeq: null, lastSeq: 0 } })}\n\n`,
        ),
      );
    let wake: (() => void) | undefined;
    void pipe.gone.then(() => wake?.());
    const ping = setInterval(() => pipe.write(PING), options.pingIntervalMs);
    try {
      let reopenMs = FIRST_REOPEN_MS;
      while (!ended()) {
        const socket = await wait().catch(() => null);
        if (socket === "known") break;
        if (ended()) {
          socket?.close(1000, "viewer left");
          return null;
        }
        const outcome = await new Promise<"known" | "deleted" | "lost" | "left">((resolve) => {
          wake = () => resolve("left");
          if (!socket) return resolve("lost");
          socket.addEventListener("close", (event) =>
            resolve(event.code === CLOSE_KNOWN ? "known" : event.code === CLOSE_DELETED ? "deleted" : "lost"),
          );
          socket.addEventListener("error", () => resolve("lost"));
        });
        wake = undefined;
        try {
          socket?.close(1000, outcome === "left" ? "viewer left" : "closed");
        } catch {
          // already closed
        }
        if (outcome === "known") break;
        if (outcome === "left") return null;
        if (outcome === "deleted") throw new Error("the account was deleted");
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, reopenMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
        reopenMs = Math.min(MAX_REOPEN_MS, reopenMs * 2);
      }
    } finally {
      clearInterval(ping);
    }
    if (ended()) return null;
    return open(0);
  });
}
