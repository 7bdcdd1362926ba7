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
 * as a view of the message itself, never decoded or encoded again here.
 */
import { EVENTS, LIVE, PAGE, PULL, SUBSCRIBE_PATH } from "../lib/subscription-wire";
import { ApiError } from "./errors";

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
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // An ArrayBuffer, of this realm or another's (the check that does not depend on the realm).
  if (Object.prototype.toString.call(data) === "[object ArrayBuffer]") return new Uint8Array(data as ArrayBuffer);
  return undefined;
}

export function relayStream(socket: RelaySocket, options: RelayOptions): ReadableStream<Uint8Array> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let live = false;
  let ended = false;
  let pageArrived: (() => void) | undefined;
  let pingTimer: ReturnType<typeof setInterval> | undefined;
  // Before the first pull (no message can arrive before it): binary messages as ArrayBuffers, in order.
  socket.binaryType = "arraybuffer";

  const end = (closeSocket: boolean, code = 1000, reason = "") => {
    if (ended) return;
    ended = true;
    if (pingTimer !== undefined) clearInterval(pingTimer);
    pageArrived?.();
    pageArrived = undefined;
    try {
      controller.close();
    } catch {
      // the browser already went away
    }
    if (closeSocket) {
      try {
        socket.close(code, reason);
      } catch {
        // already closed
      }
    }
  };

  const write = (bytes: Uint8Array) => {
    if (ended) return;
    // Bytes queued and not yet read by the browser (the queue counts chunk bytes), counted before
    // this message: a viewer is too far behind when what it has not read yet passes the bound, so
    // one message larger than the bound reaches a viewer that keeps up.
    const queued = HIGH_WATER_MARK_BYTES - (controller.desiredSize ?? 0);
    if (live && queued > options.maxPendingBytes) {
      end(true, 1000, "viewer too far behind");
      return;
    }
    try {
      controller.enqueue(bytes);
    } catch {
      end(true, 1000, "viewer gone");
    }
  };

  socket.addEventListener("message", (event) => {
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
  socket.addEventListener("close", () => end(true, 1000, "closed"));
  socket.addEventListener("error", () => end(false));

  return new ReadableStream<Uint8Array>(
    {
      start: (c) => {
        controller = c;
      },
      pull: () => {
        if (live || ended) return;
        return new Promise<void>((resolve) => {
          pageArrived = resolve;
          try {
            socket.send(PULL);
          } catch {
            end(false);
          }
        });
      },
      cancel: () => end(true, 1000, "viewer left"),
    },
    { highWaterMark: HIGH_WATER_MARK_BYTES, size: (chunk) => chunk.byteLength },
  );
}

/** Opens a subscription to a conversation's log strictly after `after` (the object accepts it as hibernatable). */
export async function openSubscription(stub: { fetch(input: string, init?: RequestInit): Promise<Response> }, after: number, branch?: number): Promise<WebSocket> {
  const query = `after=${after}${branch !== undefined ? `&branch=${branch}` : ""}`;
  const upgrade = await stub.fetch(`https://session${SUBSCRIBE_PATH}?${query}`, { headers: { upgrade: "websocket" } });
  const socket = upgrade.webSocket;
  if (upgrade.status !== 101 || !socket) throw new ApiError(503, "session_unavailable", "the conversation's event log could not be opened; retry");
  socket.accept();
  return socket;
}

/** How often a stream of a conversation that does not exist yet asks whether it does (backing off). */
const FIRST_POLL_MS = 250;
const MAX_POLL_MS = 3_000;
const RETRY_HEAD = encoder.encode("retry: 2000\n\n");

/**
 * The stream of a conversation the user does not have yet: it answers and waits like an empty log
 * (docs/sse-protocol.md §3.2: retry first, then pings) without waking a session object, which would
 * store an empty database for any id read. It asks the user's index, backing off, whether the
 * conversation exists; once it does, it relays the log from `after` as any stream.
 */
export function relayOnceKnown(known: () => Promise<boolean>, open: (after: number) => Promise<RelaySocket>, after: number, options: RelayOptions): ReadableStream<Uint8Array> {
  let inner: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let closed = false;
  let wake: (() => void) | undefined;
  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(RETRY_HEAD);
      // A cursor into a log that does not exist (the conversation was deleted, say): reset, as an
      // empty log answers a cursor ahead of it (docs/sse-protocol.md §4), and follow from the start.
      if (after > 0) controller.enqueue(encoder.encode(`event: stream.reset\ndata: ${JSON.stringify({ type: "stream.reset", data: { reason: "cursor_ahead", firstRetainedSeq: null, lastSeq: 0 } })}\n\n`));
    },
    async pull(controller) {
      if (!inner) {
        let pollMs = FIRST_POLL_MS;
        let sincePoll = 0;
        let sincePing = 0;
        while (!closed && !(sincePoll === 0 && (await known()))) {
          const step = Math.min(pollMs - sincePoll, options.pingIntervalMs - sincePing);
          await sleep(step);
          if (closed) return;
          sincePoll += step;
          sincePing += step;
          if (sincePing >= options.pingIntervalMs) {
            controller.enqueue(PING);
            sincePing = 0;
          }
          if (sincePoll >= pollMs) {
            sincePoll = 0;
            pollMs = Math.min(MAX_POLL_MS, Math.ceil(pollMs * 1.5));
          }
        }
        if (closed) return;
        inner = relayStream(await open(0), options).getReader();
      }
      const { done, value } = await inner.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel() {
      closed = true;
      wake?.();
      return inner?.cancel();
    },
  });
}
