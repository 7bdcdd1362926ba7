/**
 * A turn's UI message stream (src/ai-sdk/chunks.ts) followed live: the conversation's event
 * stream, relayed from the session object as for any browser (./sse-relay.ts: paged replay,
 * pings, the slow-viewer bound), read here and written as the protocol's chunks. One reader of
 * the log per viewer, no second store: the native stream and this one are views of the same log.
 */
import { frameDecoder } from "../../public/wire/frames.js";
import { frameChunk, type TurnResponse, type UiChunk } from "../ai-sdk/chunks";
import { SSE_HEADERS, SseParser } from "../lib/sse";
import type { EventEnvelope } from "../schemas/api";
import { type RelayOptions, type RelaySource, relayStream } from "./sse-relay";

/** The protocol's response headers (the SDK's own `UI_MESSAGE_STREAM_HEADERS`). */
const UI_STREAM_HEADERS: Record<string, string> = { ...SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1" };

const encoder = new TextEncoder();
const MAX_EVENT_BYTES = 2 * 1024 * 1024;
const PING = encoder.encode(": ping\n\n");
const DONE = encoder.encode("data: [DONE]\n\n");

/** The error chunk's text when the log's stream ends before the turn does. */
export const STREAM_ENDED =
  "stream_ended: the turn's event stream ended before the turn did; resume the stream (GET /v1/chat/:id/stream) or reload the messages";

const encode = (chunks: UiChunk[]) => encoder.encode(chunks.map(frameChunk).join(""));

/** Writes a finished, known body: a finished turn's replay, or a response with nothing to follow. */
export function uiStreamResponse(body: string): Response {
  return new Response(encoder.encode(`${body}data: [DONE]\n\n`), { headers: UI_STREAM_HEADERS });
}

export function followTurn(source: RelaySource, response: TurnResponse, options: RelayOptions): Response {
  const native = relayStream(source, options).getReader();
  // An event holds an upstream frame of up to 1 MiB plus its envelope (test/large-frames.test.ts).
  const parser = new SseParser(MAX_EVENT_BYTES);
  const decoder = new TextDecoder();
  // The events back from their frames (a lean delta frame continues the frame before it).
  const events = frameDecoder();
  let closed = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encode(response.begin()));
    },
    async pull(controller) {
      while (!closed) {
        const { done, value } = await native.read();
        if (done) {
          // The log's stream ended before the turn did (the conversation was deleted, the object
          // went away, the relay dropped it): not the turn's end, so the response says so rather
          // than ending as if the turn completed. The SDK's client is then in error, and
          // `resumeStream()` (GET /v1/chat/:id/stream) picks the turn up from its start.
          closed = true;
          controller.enqueue(encode([{ type: "error", errorText: STREAM_ENDED }]));
          controller.enqueue(DONE);
          controller.close();
          return;
        }
        let wrote = false;
        for (const frame of parser.push(decoder.decode(value, { stream: true }))) {
          if (frame.data === undefined) {
            if (frame.comments.length > 0) {
              controller.enqueue(PING);
              wrote = true;
            }
            continue;
          }
          if (frame.event === "stream.reset") {
            // The turn's events are no longer held from where this response needs them.
            controller.enqueue(
              encode([
                { type: "error", errorText: "stream_reset: the turn's events are no longer held; reload the messages" },
              ]),
            );
            wrote = true;
            closed = true;
            break;
          }
          let event: EventEnvelope | null;
          try {
            event = events.decode(frame) as EventEnvelope | null;
          } catch {
            // A frame that does not read as an event (never sent by the session object): the text
            // after it could not be trusted, so the response ends here, saying so.
            controller.enqueue(
              encode([
                {
                  type: "error",
                  errorText: "stream_unreadable: an event of the turn could not be read; reload the messages",
                },
              ]),
            );
            wrote = true;
            closed = true;
            break;
          }
          if (!event) continue;
          const chunks = response.feed(event);
          if (chunks.length > 0) {
            controller.enqueue(encode(chunks));
            wrote = true;
          }
          if (response.finished) {
            closed = true;
            break;
          }
        }
        if (closed) {
          controller.enqueue(DONE);
          controller.close();
          await native.cancel().catch(() => undefined);
          return;
        }
        if (wrote) return;
      }
    },
    async cancel() {
      // The client went away: only this view ends; the run goes on.
      closed = true;
      await native.cancel().catch(() => undefined);
    },
  });
  return new Response(body, { headers: UI_STREAM_HEADERS });
}
