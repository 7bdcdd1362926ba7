// @ts-check
/**
 * The one SSE parser of the project, shared by the Worker and its tests (src/lib/sse.ts re-exports it) and
 * the chat page (lib/stream.js reads its first connection, a fetch, with it).
 *
 * It follows the WHATWG event-stream rules: CR, LF and CRLF line endings, `data:` lines joined with LF,
 * fields in any order within a frame (CLI Bridge writes `data:` before `id:`), comment lines, and a
 * bounded frame size. Pure: text in, frames out.
 */

/**
 * @typedef {{
 *   id?: string,
 *   event?: string,
 *   data?: string,
 *   comments: string[],
 *   retry?: number,
 *   tooLarge?: boolean,
 * }} SseFrame  `id`: the `id:` field as sent (absent when the frame carried none); `event`: absent means
 *   "message"; `data`: the joined `data:` lines (absent when the frame had none); `comments`: comment
 *   lines (without the leading colon and one optional space); `tooLarge`: the frame exceeded the size
 *   bound, its data was discarded (id and event are kept if seen)
 */

export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

/** Incremental parser: feed text chunks, get complete frames back. */
export class SseParser {
  /** The line in progress, in the pieces it came in (joined once, at its end: linear in its length). */
  /** @type {string[]} */
  #pieces = [];
  #pendingLength = 0;
  #pendingCr = false;
  /** @type {SseFrame} */
  #frame = { comments: [] };
  /** @type {string[] | undefined} */
  #dataLines;
  #frameBytes = 0;
  /** Inside an over-long line whose start was discarded: ignore up to its end. */
  #skippingLine = false;
  #maxFrameBytes;

  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /**
   * @param {string} chunk
   * @returns {SseFrame[]}
   */
  push(chunk) {
    /** @type {SseFrame[]} */
    const frames = [];
    let text = chunk;
    if (this.#pendingCr) {
      // A CR ended the previous chunk: a following LF belongs to it.
      if (text.startsWith("\n")) text = text.slice(1);
      this.#pendingCr = false;
    }
    // Lines found with indexOf (a native scan), not a loop over characters: an upstream frame may
    // carry a part's whole text so far, so a turn's frames add up to its answer's length squared.
    let start = 0;
    let lf = text.indexOf("\n");
    let cr = text.indexOf("\r");
    while (true) {
      if (lf !== -1 && lf < start) lf = text.indexOf("\n", start);
      if (cr !== -1 && cr < start) cr = text.indexOf("\r", start);
      let i = lf === -1 ? cr : cr === -1 || lf < cr ? lf : cr;
      if (i === -1) break;
      const tail = text.slice(start, i);
      const line = this.#pieces.length > 0 ? this.#pieces.join("") + tail : tail;
      this.#pieces = [];
      this.#pendingLength = 0;
      if (i === cr) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.#pendingCr = true;
        }
      }
      start = i + 1;
      const frame = this.#line(line);
      if (frame) frames.push(frame);
    }
    if (start < text.length && !this.#skippingLine) {
      this.#pieces.push(text.slice(start));
      this.#pendingLength += text.length - start;
    }
    if (this.#frameBytes + this.#pendingLength > this.#maxFrameBytes) {
      // An over-long line: drop what we hold of it and the rest of it when it ends.
      this.#frame.tooLarge = true;
      this.#dataLines = undefined;
      this.#pieces = [];
      this.#pendingLength = 0;
      this.#skippingLine = true;
    }
    return frames;
  }

  /** Ends the input: an unterminated frame is dropped, as the event-stream rules say. */
  end() {
    this.#pieces = [];
    this.#pendingLength = 0;
    this.#reset();
  }

  #reset() {
    this.#frame = { comments: [] };
    this.#dataLines = undefined;
    this.#frameBytes = 0;
  }

  /**
   * @param {string} line
   * @returns {SseFrame | undefined}
   */
  #line(line) {
    if (this.#skippingLine) {
      this.#skippingLine = false;
      return undefined;
    }
    if (line === "") {
      const frame = this.#frame;
      if (this.#dataLines && !frame.tooLarge) frame.data = this.#dataLines.join("\n");
      const empty =
        frame.data === undefined &&
        frame.id === undefined &&
        frame.event === undefined &&
        frame.comments.length === 0 &&
        frame.retry === undefined &&
        !frame.tooLarge;
      this.#reset();
      return empty ? undefined : frame;
    }
    this.#frameBytes += line.length + 1;
    if (this.#frameBytes > this.#maxFrameBytes) {
      this.#frame.tooLarge = true;
      this.#dataLines = undefined;
    }
    const colon = line.indexOf(":");
    if (colon === 0) {
      this.#frame.comments.push(line.slice(1).replace(/^ /, ""));
      return undefined;
    }
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        if (!this.#frame.tooLarge) (this.#dataLines ??= []).push(value);
        break;
      case "event":
        this.#frame.event = value;
        break;
      case "id":
        // An id containing NUL is ignored by the spec.
        if (!value.includes("\0")) this.#frame.id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.#frame.retry = Number(value);
        break;
      default:
        break;
    }
    return undefined;
  }
}
