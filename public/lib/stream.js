// @ts-check
/**
 * Following a conversation's event stream: EventSource with a short-lived stream token (it cannot
 * send headers), resumed strictly after the page's last event. EventSource's own reconnects send
 * Last-Event-ID; a stream the server refused (an expired token) is opened again with a new token
 * after the last event applied. Each connection reads its frames back into events with its own
 * decoder (wire/frames.js: a lean delta frame continues the frame before it in the same response);
 * a frame it cannot read back is not skipped: the stream is opened again after the last event applied.
 */

import { frameDecoder } from "../wire/frames.js";
import { STREAM_EVENTS } from "./events.js";

/** @typedef {"connecting" | "replaying" | "live" | "reconnecting"} ConnectionState */

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
 *   first?: { streamToken: import("./wire").StreamToken, lastEventId: number } | null,
 * }} options  `exists`: the server has the conversation (a new one has nothing to catch up on);
 *   `first`: the conversation's bootstrap read both already: the first connection uses its token, and
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

  async function open() {
    if (closed) return;
    onState(source ? "reconnecting" : "connecting");
    const bootstrap = first;
    first = null;
    let minted = bootstrap?.streamToken;
    if (!minted) {
      try {
        minted = await api.streamToken(cid);
      } catch {
        if (!closed) timer = setTimeout(open, MINT_RETRY_MS);
        return;
      }
      if (closed) return;
    }
    source?.close();
    // ?after= for this connection (a fresh EventSource has no Last-Event-ID); its own reconnects
    // send Last-Event-ID, which the server prefers.
    const es = new EventSource(`${api.baseUrl}${minted.eventsUrl}&after=${after()}`);
    source = es;
    let frames = frameDecoder();
    /** @type {number | null} */
    let known = bootstrap?.lastEventId ?? null;
    es.addEventListener("open", () => {
      if (source !== es) return;
      if (!exists) return report();
      // The bootstrap's last event, for this response's first opening (EventSource's own reconnects
      // open it again: the summary says then how far the log has gone).
      if (known !== null) {
        replayTarget = known;
        known = null;
        return report();
      }
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

  open();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      source?.close();
      source = null;
    },
  };
}
