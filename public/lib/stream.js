// @ts-check
/**
 * Following a conversation's event stream. The first connection is the stream opened with the
 * conversation's snapshot (openWithSnapshot: a fetch with the user's token, started from <head> by
 * lib/early.js; docs/sse-protocol.md §14): its first frame is what the page shows, the frames after it
 * every later event, read on from the same response. Once it ends, EventSource with a short-lived stream
 * token (it cannot send headers), resumed strictly after the page's last event. EventSource's own reconnects send
 * Last-Event-ID; a stream the server refused (an expired token) is opened again with a new token
 * after the last event applied. Each connection reads its frames back into events with its own
 * decoder (wire/frames.js: a lean delta frame continues the frame before it in the same response);
 * a frame it cannot read back is not skipped: the stream is opened again after the last event applied.
 */

import { frameDecoder, SNAPSHOT_EVENT } from "../wire/frames.js";
import { SseParser } from "../wire/sse-parser.js";
import { STREAM_EVENTS } from "./events.js";

/** @typedef {"connecting" | "replaying" | "live" | "reconnecting"} ConnectionState */
/**
 * A stream opened with its snapshot: the snapshot, the last event it reflects, and the frames after it (read on
 * once, from the same response); `close` leaves the response.
 * @typedef {{
 *   snapshot: import("./wire").Snapshot,
 *   lastEventId: number,
 *   frames: AsyncGenerator<import("../wire/sse-parser.js").SseFrame>,
 *   close: () => void,
 * }} OpenedStream
 */

const LISTENED = new Set(STREAM_EVENTS);

/**
 * Opens the conversation's stream with its snapshot (api.openStream) and reads its first frame. Throws the api's
 * error when the request is refused (404 for a conversation the user does not have), or an Error when the stream
 * ends or begins otherwise.
 * @param {import("./api.js").Api} api
 * @param {string} cid
 * @returns {Promise<OpenedStream>}
 */
export async function openWithSnapshot(api, cid) {
  const body = await api.openStream(cid);
  const reader = body.getReader();
  const frames = readFrames(reader);
  const close = () => void reader.cancel().catch(() => {});
  try {
    // Read by hand, not with for…of: leaving that loop would end the frames the page reads on.
    while (true) {
      const { done, value: frame } = await frames.next();
      if (done) break;
      if (frame.data === undefined) continue; // the retry line
      if (frame.event !== SNAPSHOT_EVENT) break;
      const { data } = JSON.parse(frame.data);
      return { snapshot: data, lastEventId: Number(frame.id), frames, close };
    }
  } catch {
    // read below as a stream that did not begin with its snapshot
  }
  close();
  throw new Error("the stream did not begin with the conversation's snapshot");
}

/**
 * The SSE frames of a response's body, as they come.
 * @param {ReadableStreamDefaultReader<Uint8Array>} reader
 */
async function* readFrames(reader) {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  while (true) {
    const { done, value } = await reader.read();
    if (done) return;
    yield* parser.push(decoder.decode(value, { stream: true }));
  }
}

const REOPEN_DELAY_MS = 1000;
const MINT_RETRY_MS = 2000;

/**
 * @param {{
 *   api: import("./api.js").Api,
 *   cid: string,
 *   after: () => number,
 *   onEvent: (event: import("./reducer-events.js").StreamEvent) => void,
 *   onReset: () => void,
 *   onState: (state: ConnectionState) => void,
 *   exists: boolean,
 *   first?: OpenedStream | null,
 * }} options  `exists`: the server has the conversation (a new one has nothing to catch up on);
 *   `first`: the stream opened with the snapshot the page shows: the first connection reads on from it, and
 *   counts as caught up once the page has its last event (each later one mints a token and reads the
 *   summary again)
 * @returns {{ close: () => void }}
 */
export function followStream({ api, cid, after, onEvent, onReset, onState, exists, first = null }) {
  let closed = false;
  /** @type {EventSource | null} */
  let source = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** The log's last event id when the stream opened: until the page reaches it, it is catching up. */
  let replayTarget = 0;

  const report = () => onState(after() < replayTarget ? "replaying" : "live");

  /** The first connection, read on from the response the snapshot came in. @type {OpenedStream | null} */
  let reading = null;

  /** @param {OpenedStream} opened */
  async function readOn(opened) {
    reading = opened;
    replayTarget = opened.lastEventId;
    report();
    const frames = frameDecoder();
    try {
      for await (const frame of opened.frames) {
        if (closed || reading !== opened) return;
        // As EventSource: a frame of a name the page does not listen for (the ping, the retry line) is nothing.
        if (frame.event === undefined || !LISTENED.has(frame.event)) continue;
        if (frame.event === "stream.reset") {
          frames.decode(frame);
          return void onReset();
        }
        const event = frames.decode(frame);
        if (!event) continue;
        onEvent(/** @type {import("./reducer-events.js").StreamEvent} */ (event));
        report();
      }
    } catch {
      // A response that ended badly, or a frame that does not read back (a delta with nothing to continue):
      // left, as at its end, for a new one strictly after the last event applied (docs/sse-protocol.md §11.2).
    }
    if (closed || reading !== opened) return;
    reading = null;
    opened.close();
    onState("reconnecting");
    timer = setTimeout(open, REOPEN_DELAY_MS);
  }

  async function open() {
    if (closed) return;
    onState(source || first ? "reconnecting" : "connecting");
    let minted;
    try {
      minted = await api.streamToken(cid);
    } catch {
      if (!closed) timer = setTimeout(open, MINT_RETRY_MS);
      return;
    }
    if (closed) return;
    source?.close();
    // ?after= for this connection (a fresh EventSource has no Last-Event-ID); its own reconnects
    // send Last-Event-ID, which the server prefers.
    const es = new EventSource(`${api.baseUrl}${minted.eventsUrl}&after=${after()}`);
    source = es;
    let frames = frameDecoder();
    es.addEventListener("open", () => {
      if (source !== es) return;
      if (!exists) return report();
      api.summary(cid).then(
        (summary) => {
          replayTarget = summary.lastEventId ?? 0;
          if (source === es) report();
        },
        () => source === es && report(),
      );
    });
    es.addEventListener("error", () => {
      // EventSource reconnects with a new response, which starts with a full frame.
      frames = frameDecoder();
      if (source !== es || closed) return;
      onState("reconnecting");
      // CLOSED: the server refused the stream (an expired token, say); EventSource gives up.
      if (es.readyState === EventSource.CLOSED) timer = setTimeout(open, REOPEN_DELAY_MS);
    });
    for (const type of STREAM_EVENTS) {
      es.addEventListener(type, (message) => {
        // Closed here (left for a new response): nothing more is read from it.
        if (source !== es || es.readyState === EventSource.CLOSED) return;
        const { data, lastEventId } = /** @type {MessageEvent} */ (message);
        if (type === "stream.reset") {
          frames.decode({ event: type, data });
          return onReset();
        }
        let event;
        try {
          event = frames.decode({ id: lastEventId, event: type, data });
        } catch {
          // A frame that does not read back (a delta with nothing to continue): the frames after it
          // could decode against the wrong part, so this response is left and a new one opened
          // strictly after the last event applied (docs/sse-protocol.md §11.2), as on a reconnect.
          return reopen(es);
        }
        if (!event) return;
        onEvent(/** @type {import("./reducer-events.js").StreamEvent} */ (event));
        report();
      });
    }
  }

  /** Leaves a response that cannot be read on and opens a new one after the last event applied. */
  function reopen(/** @type {EventSource} */ es) {
    if (source !== es || closed) return;
    es.close();
    onState("reconnecting");
    clearTimeout(timer);
    open();
  }

  if (first) readOn(first);
  else open();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      source?.close();
      source = null;
      reading?.close();
      reading = null;
    },
  };
}
