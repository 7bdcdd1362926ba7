/**
 * The one SSE encoder and the one SSE parser of the project (the parser is shared with the chat page:
 * public/wire/sse-parser.js).
 */

import { DEFAULT_MAX_FRAME_BYTES, type SseFrame, SseParser } from "../../public/wire/sse-parser.js";

export type { SseFrame };
export { SseParser };

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
