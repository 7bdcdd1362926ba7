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
 * pipe (relayPipe), which the runtime reads into the response itself: per message and viewer one
 * write, no JavaScript stream in between.
 */

import { ApiError } from "../errors";
import { CLOSE_DELETED, CLOSE_KNOWN, EVENTS, LIVE, PAGE, PULL, SUBSCRIBE_PATH } from "../lib/subscription-wire";

export interface RelayOptions {
  pingIntervalMs: number;
  maxPendingBytes: number;
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
 * The browser's side of a relay: bytes written to a pipe whose readable end is the response body.
 * The runtime's own pipe (IdentityTransformStream): its readable end is read by
 * the runtime itself, natively, so a chunk costs one write here and nothing in JavaScript after it
 * (a JavaScript ReadableStream as the body costs a read, a promise and a copy per chunk, per viewer).
 * `unread` counts the bytes written and not yet taken by the reader: each write's promise settles
 * when the reader took its chunk (the pipe holds nothing beyond what it was given).
 */
export interface RelayPipe {
  readable: ReadableStream<Uint8Array>;
  write(bytes: Uint8Array): void;
  close(): void;
  /** Bytes written and not yet read. */
  unread(): number;
  /** Resolves once the unread bytes are below `bytes` (at once if they are). */
  below(bytes: number): Promise<void>;
  /** Resolves when the reader goes away (the browser left): the pipe's writes fail from then on. */
  gone: Promise<void>;
}

export function relayPipe(): RelayPipe {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  let unread = 0;
  let waiting: { bytes: number; resolve: () => void } | undefined;
  let goneResolve!: () => void;
  const gone = new Promise<void>((resolve) => (goneResolve = resolve));
  let failed = false;
  const fail = () => {
    if (failed) return;
    failed = true;
    goneResolve();
    waiting?.resolve();
    waiting = undefined;
  };
  const settle = (n: number) => {
    unread -= n;
    if (waiting && unread < waiting.bytes) {
      waiting.resolve();
      waiting = undefined;
    }
  };
  writer.closed.then(undefined, fail);
  return {
    readable: pipe.readable as ReadableStream<Uint8Array>,
    write(bytes) {
      if (failed) return;
      const n = bytes.byteLength;
      unread += n;
      writer.write(bytes).then(() => settle(n), fail);
    },
    close() {
      if (failed) return;
      failed = true;
      writer.close().catch(() => {});
      waiting?.resolve();
      waiting = undefined;
    },
    unread: () => unread,
    below(bytes) {
      if (unread < bytes || failed) return Promise.resolve();
      return new Promise<void>((resolve) => {
        waiting?.resolve();
        waiting = { bytes, resolve };
      });
    },
    gone,
  };
}

/**
 * Relays a subscription socket to a pipe's readable end (the response body). `connect` gives the
 * socket: at once (relayStream), or once the conversation exists (relayOnceKnown), writing to the
 * pipe meanwhile. One pipe for the whole stream: no stream relaying another's chunks.
 */
function relay(
  options: RelayOptions,
  connect: (pipe: RelayPipe, ended: () => boolean) => RelaySocket | Promise<RelaySocket | null>,
  pipe: RelayPipe = relayPipe(),
): ReadableStream<Uint8Array> {
  let socket: RelaySocket | null = null;
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
    if (live && pipe.unread() > options.maxPendingBytes) {
      end(true, 1000, "viewer too far behind");
      return;
    }
    pipe.write(bytes);
  };

  const attach = (s: RelaySocket) => {
    socket = s;
    // Before the first pull (no message can arrive before it): binary messages as ArrayBuffers, in order.
    s.binaryType = "arraybuffer";
    s.addEventListener("message", (event) => {
      // The object sends binary messages only: anything else is not this wire.
      const message = binary(event.data);
      const kind = message?.[0];
      if (!message || (kind !== PAGE && kind !== LIVE && kind !== EVENTS)) {
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
    });
    // The object closed it (a delete, a dev drop, a deploy): answer the close, end the browser's stream.
    s.addEventListener("close", () => end(true, 1000, "closed"));
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
      const s = await connect(pipe, () => ended);
      if (!s) return;
      if (ended) {
        try {
          s.close(1000, "viewer left");
        } catch {
          // already closed
        }
        return;
      }
      attach(s);
      await replay();
    } catch {
      end(true, 1011, "relay failed");
    }
  })();
  return pipe.readable;
}

/** Relays `socket` to the browser (`pipe`: the runtime's, unless a test gives its own). */
export function relayStream(socket: RelaySocket, options: RelayOptions, pipe?: RelayPipe): ReadableStream<Uint8Array> {
  return relay(options, () => socket, pipe);
}

/**
 * Opens a subscription to a conversation's log strictly after `after` (the object accepts it as hibernatable);
 * `snapshot`: it starts with the conversation's snapshot instead, and goes on strictly after its last event.
 */
export async function openSubscription(
  stub: { fetch(input: string, init?: RequestInit): Promise<Response> },
  after: number,
  branch?: number,
  snapshot = false,
): Promise<WebSocket> {
  const query = `after=${after}${branch !== undefined ? `&branch=${branch}` : ""}${snapshot ? "&snapshot=1" : ""}`;
  const upgrade = await stub.fetch(`https://session${SUBSCRIBE_PATH}?${query}`, { headers: { upgrade: "websocket" } });
  const socket = upgrade.webSocket;
  if (upgrade.status !== 101 || !socket)
    throw new ApiError(503, "session_unavailable", "the conversation's event log could not be opened; retry");
  socket.accept();
  return socket;
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
  open: (after: number) => Promise<RelaySocket>,
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
