// @ts-check
/**
 * The event stream's frames (docs/sse-protocol.md §11, "Lean delta frames"): how a log event goes
 * on the wire and how a reader gets the event back. One module for both sides: the session object
 * encodes with it (src/session/subscriptions.ts), and every reader decodes with it — the chat page
 * (public/lib/stream.js), the Worker's AI SDK stream (src/http/ui-stream.ts), the tests.
 *
 * Every event goes as a full frame — `event: <type>`, `data: <the envelope's JSON>` — except a
 * text or reasoning delta that continues the part of the frame just before it in the same
 * response. That one goes as
 *
 *     id: <seq>
 *     event: message.part.delta
 *     data: {"d":"<the delta>","t":<ms after the previous frame's at>}
 *
 * and stands for the `message.part.updated` event whose seq is the frame's id, whose turnId,
 * executionId and part (less its `text`) are the previous frame's, whose data is `{ part, delta }`,
 * and whose `at` is the previous frame's plus `t` milliseconds (no `t`: the same instant). The
 * encoder sends that form only when the event rebuilt this way is byte for byte the stored one;
 * anything else goes full. The first event frame of a response, and of each replay page, is full.
 *
 * Pure: no I/O, no clock. Frames are `{ id, event, data }` triples; the SSE text is the caller's.
 */

/**
 * The wire name of a stream's snapshot frame (docs/sse-protocol.md §14): the first frame of a stream opened with
 * `?snapshot=1`, `{ type, data: { summary, messages, branches, usage } }`, its id the last event it reflects. Not a
 * log event: a reader takes it before it decodes the frames after it.
 */
export const SNAPSHOT_EVENT = "conversation.snapshot";

/** The wire name of a lean delta frame (not a log event type: it stands for a `message.part.updated`). */
export const DELTA_EVENT = "message.part.delta";
const PART_UPDATED = "message.part.updated";

/**
 * A log event as readers see it (src/schemas/api.ts `EventEnvelope`).
 * @typedef {{ seq: number, turnId: string | null, executionId: string | null, type: string, data: Record<string, unknown>, usage?: unknown, usageMode?: string, at: string }} Envelope
 */

/** @typedef {{ id: string, event: string, data: string }} Frame  one SSE event frame's fields */

/**
 * What the next frame may continue: the previous frame's event, rebuilt (null: none, the next
 * frame goes full).
 * @typedef {Envelope | null} FrameContext
 */

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The event a delta frame stands for, after `previous`; null when `previous` cannot be continued
 * (no previous frame, or one that is not a part's update).
 * @param {FrameContext} previous
 * @param {number} seq
 * @param {string} delta
 * @param {number} ms
 * @returns {Envelope | null}
 */
function continued(previous, seq, delta, ms) {
  if (!previous || previous.type !== PART_UPDATED || !isObject(previous.data.part)) return null;
  const at = Date.parse(previous.at) + ms;
  if (!Number.isFinite(at)) return null;
  const { text: _text, ...part } = previous.data.part;
  return {
    seq,
    turnId: previous.turnId,
    executionId: previous.executionId,
    type: PART_UPDATED,
    data: { part, delta },
    at: new Date(at).toISOString(),
  };
}

/**
 * Encodes one log event after `previous` (the frame before it in the same response).
 * @param {FrameContext} previous
 * @param {{ seq: number, type: string, envelope: string }} row  the event as the log holds it: its JSON text
 * @param {Envelope} [built]  the event `row.envelope` was written from, when the caller holds it (not
 *   parsed again; the caller changes it no more)
 * @returns {{ frame: Frame, context: Envelope }}  the frame, and what the next frame may continue
 */
export function encodeEvent(previous, row, built) {
  /** @type {Envelope} */
  const event = built ?? JSON.parse(row.envelope);
  const full = { frame: { id: String(row.seq), event: row.type, data: row.envelope }, context: event };
  if (row.type !== PART_UPDATED || !previous || typeof event.data?.delta !== "string") return full;
  const ms = Date.parse(event.at) - Date.parse(previous.at);
  if (!Number.isSafeInteger(ms)) return full;
  const lean = continued(previous, row.seq, event.data.delta, ms);
  // Only when the rebuilt event is exactly the stored one: same ids, same part, nothing else.
  if (!lean || JSON.stringify(lean) !== row.envelope) return full;
  return {
    frame: {
      id: String(row.seq),
      event: DELTA_EVENT,
      data: JSON.stringify(ms === 0 ? { d: event.data.delta } : { d: event.data.delta, t: ms }),
    },
    context: lean,
  };
}

/**
 * The event a frame carries after `previous` (the event of the frame before it in the same
 * response, or null), or null for a frame that carries none: what `frameDecoder` applies, for a
 * reader that keeps the previous event itself. Throws on a delta frame with nothing to continue.
 * @param {FrameContext} previous
 * @param {{ id?: string, event?: string, data?: string }} frame  a frame with data
 * @returns {Envelope | null}
 */
export function decodeAfter(previous, frame) {
  if (frame.data === undefined || frame.id === undefined || frame.id === "") return null;
  const seq = Number(frame.id);
  if (frame.event === DELTA_EVENT) {
    const lean = JSON.parse(frame.data);
    const event =
      isObject(lean) && typeof lean.d === "string" && (lean.t === undefined || Number.isSafeInteger(lean.t))
        ? continued(previous, seq, lean.d, typeof lean.t === "number" ? lean.t : 0)
        : null;
    if (!event) throw new Error(`delta frame ${frame.id} continues no part update`);
    return event;
  }
  const event = JSON.parse(frame.data);
  return isObject(event) && typeof event.seq === "number" ? /** @type {Envelope} */ (event) : null;
}

/**
 * A reader's side: one decoder per response (a new response starts with a full frame). `decode`
 * answers the event a frame carries, or null for a frame that carries none (no data: a ping or the
 * retry line, which change nothing; no id: `stream.reset`, after which nothing is continued). A
 * delta frame with nothing to continue throws: the server never sends one.
 */
export function frameDecoder() {
  /** @type {FrameContext} */
  let previous = null;
  return {
    /**
     * @param {{ id?: string, event?: string, data?: string }} frame
     * @returns {Envelope | null}
     */
    decode(frame) {
      // No data: a comment (the ping) or the retry line, which carry nothing and change nothing.
      if (frame.data === undefined) return null;
      // A frame of the server's own (stream.reset, no id): what follows starts afresh.
      previous = decodeAfter(previous, frame);
      return previous;
    },
  };
}
