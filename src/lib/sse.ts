/**
 * The one SSE encoder and the one SSE parser of the project.
 *
 * The parser follows the WHATWG event-stream rules: CR, LF and CRLF line endings, `data:` lines
 * joined with LF, fields in any order within a frame (CLI Bridge writes `data:` before `id:`),
 * comment lines, and a bounded frame size.
 */

export interface SseFrame {
  /** The `id:` field as sent, or undefined when the frame carried none. */
  id?: string;
  /** The `event:` field, or undefined (which means "message"). */
  event?: string;
  /** The joined `data:` lines, or undefined when the frame had no data line. */
  data?: string;
  /** Comment lines (without the leading colon and one optional space). */
  comments: string[];
  retry?: number;
  /** The frame exceeded the size bound: its data was discarded (id and event are kept if seen). */
  tooLarge?: boolean;
}

const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

/** Incremental parser: feed text chunks, get complete frames back. */
export class SseParser {
  /** The line in progress, in the pieces it came in (joined once, at its end: linear in its length). */
  private pieces: string[] = [];
  private pendingLength = 0;
  private pendingCr = false;
  private frame: SseFrame = { comments: [] };
  private dataLines: string[] | undefined;
  private frameBytes = 0;
  /** Inside an over-long line whose start was discarded: ignore up to its end. */
  private skippingLine = false;

  constructor(private readonly maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {}

  push(chunk: string): SseFrame[] {
    const frames: SseFrame[] = [];
    let text = chunk;
    if (this.pendingCr) {
      // A CR ended the previous chunk: a following LF belongs to it.
      if (text.startsWith("\n")) text = text.slice(1);
      this.pendingCr = false;
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
      const line = this.pieces.length > 0 ? this.pieces.join("") + tail : tail;
      this.pieces = [];
      this.pendingLength = 0;
      if (i === cr) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCr = true;
        }
      }
      start = i + 1;
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    if (start < text.length && !this.skippingLine) {
      this.pieces.push(text.slice(start));
      this.pendingLength += text.length - start;
    }
    if (this.frameBytes + this.pendingLength > this.maxFrameBytes) {
      // An over-long line: drop what we hold of it and the rest of it when it ends.
      this.frame.tooLarge = true;
      this.dataLines = undefined;
      this.pieces = [];
      this.pendingLength = 0;
      this.skippingLine = true;
    }
    return frames;
  }

  /** Ends the input: an unterminated frame is dropped, as the event-stream rules say. */
  end(): void {
    this.pieces = [];
    this.pendingLength = 0;
    this.reset();
  }

  private reset(): void {
    this.frame = { comments: [] };
    this.dataLines = undefined;
    this.frameBytes = 0;
  }

  private line(line: string): SseFrame | undefined {
    if (this.skippingLine) {
      this.skippingLine = false;
      return undefined;
    }
    if (line === "") {
      const frame = this.frame;
      if (this.dataLines && !frame.tooLarge) frame.data = this.dataLines.join("\n");
      const empty =
        frame.data === undefined &&
        frame.id === undefined &&
        frame.event === undefined &&
        frame.comments.length === 0 &&
        frame.retry === undefined &&
        !frame.tooLarge;
      this.reset();
      return empty ? undefined : frame;
    }
    this.frameBytes += line.length + 1;
    if (this.frameBytes > this.maxFrameBytes) {
      this.frame.tooLarge = true;
      this.dataLines = undefined;
    }
    const colon = line.indexOf(":");
    if (colon === 0) {
      this.frame.comments.push(line.slice(1).replace(/^ /, ""));
      return undefined;
    }
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        if (!this.frame.tooLarge) (this.dataLines ??= []).push(value);
        break;
      case "event":
        this.frame.event = value;
        break;
      case "id":
        // An id containing NUL is ignored by the spec.
        if (!value.includes("\0")) this.frame.id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.frame.retry = Number(value);
        break;
      default:
        break;
    }
    return undefined;
  }
}

/** Reads a byte stream (or a reader of one) as SSE frames. */
export async function* readSseFrames(
  body: ReadableStream<Uint8Array> | Pick<ReadableStreamDefaultReader<Uint8Array>, "read" | "cancel">,
  maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
): AsyncGenerator<SseFrame> {
  const parser = new SseParser(maxFrameBytes);
  const decoder = new TextDecoder();
  const reader = "getReader" in body ? body.getReader() : body;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const frame of parser.push(decoder.decode(value, { stream: true }))) yield frame;
    }
    const tail = decoder.decode();
    if (tail) for (const frame of parser.push(tail)) yield frame;
    parser.end();
  } finally {
    reader.cancel().catch(() => {});
  }
}

function assertSingleLine(name: string, value: string): void {
  if (/[\r\n\0]/.test(value)) throw new Error(`SSE ${name} must be a single line without NUL`);
}

/** Encodes one frame. `data` is written as one `data:` line per line of text. */
export function encodeSseFrame(frame: { id?: string | number; event?: string; data: string; retry?: number }): string {
  let out = "";
  if (frame.retry !== undefined) out += `retry: ${Math.max(0, Math.floor(frame.retry))}\n`;
  if (frame.id !== undefined) {
    const id = String(frame.id);
    assertSingleLine("id", id);
    out += `id: ${id}\n`;
  }
  if (frame.event !== undefined) {
    assertSingleLine("event", frame.event);
    out += `event: ${frame.event}\n`;
  }
  for (const line of frame.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

export function encodeSseRetry(retryMs: number): string {
  return `retry: ${Math.max(0, Math.floor(retryMs))}\n\n`;
}

export const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  // no-transform above keeps Cloudflare and other proxies from compressing (and so buffering) it.
  "x-accel-buffering": "no",
};
