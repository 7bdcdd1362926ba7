/**
 * The wire between the Worker, which holds a browser's SSE response, and the session object,
 * which holds the log: one hibernatable WebSocket per browser stream.
 *
 * Worker → object: `{"op":"pull"}`, "send me the next replay page" (the Worker asks only when its
 * browser has room, so a long replay never piles up in memory). Object → Worker: binary messages
 * whose first byte says what follows, the rest being SSE bytes (UTF-8, whole frames) that the
 * Worker writes to the browser as they are, without decoding them:
 *   P  a replay page (the Worker pulls again when its browser has room);
 *   L  caught up: from now on events are pushed (the rest may hold the stream's head);
 *   E  live events, pushed as they are appended: a batch in one or more messages, each of whole
 *      frames and at most LIVE_MESSAGE_BYTES (a single frame larger than that goes alone);
 *   D  a direct stream is offered (the rest is its id): the Worker opens DIRECT_PATH?id=<id>;
 *      live events keep coming on the socket until
 *   H  hand-over: the live events after this message go on the direct stream the object just
 *      answered; the Worker pipes that response into its browser's natively, and the socket's
 *      messages after H wait until the object ends it (they follow it, in order).
 * A direct stream is offered only to a subscription that asked for one (`direct=1`), while the
 * object is awake and busy anyway: it ends after DIRECT_QUIET_MS without a live event, so an idle
 * conversation holds only hibernatable sockets (src/session/direct-streams.ts).
 * The object encodes a live batch once and sends the same bytes to every socket. Messages of one
 * stream are written to one SSE response, in order: a lean delta frame may continue the last frame
 * of the message before it. The object closes
 * the socket to end a stream (a deleted conversation, a dev drop); the Worker closes it when the
 * browser goes away or falls too far behind, or on a message it does not know (a text message).
 */
import { z } from "zod";

export const SUBSCRIBE_PATH = "/subscribe";

export const PullMessage = z.strictObject({ op: z.literal("pull") });
export const PULL = JSON.stringify({ op: "pull" } satisfies z.infer<typeof PullMessage>);

export const PAGE = 0x50; // "P"
export const LIVE = 0x4c; // "L"
export const EVENTS = 0x45; // "E"
export const DIRECT = 0x44; // "D"
export const HANDOVER = 0x48; // "H"
type MessageKind = typeof PAGE | typeof LIVE | typeof EVENTS | typeof DIRECT | typeof HANDOVER;

/** Where the Worker opens a direct stream: ?id=<the D message's id>&max=<its slow-viewer bound in bytes>. */
export const DIRECT_PATH = "/direct";

/**
 * The bound of a live message's SSE bytes. A WebSocket message a Worker receives over 1 MiB was
 * closed with 1009 (the limit was raised since, to 32 MiB for Durable Objects): a quarter of the
 * old limit, as a replay page's (subscriptions.ts DEFAULT_PAGE_BYTES), keeps well inside both.
 */
export const LIVE_MESSAGE_BYTES = 256 * 1024;

const encoder = new TextEncoder();

/** One object → Worker message: the kind byte, then the SSE text as UTF-8 (a buffer of its own, exactly that long). */
export function wireMessage(kind: MessageKind, sse: string): Uint8Array {
  const body = encoder.encode(sse);
  const bytes = new Uint8Array(1 + body.byteLength);
  bytes[0] = kind;
  bytes.set(body, 1);
  return bytes;
}

/** One object → Worker message of SSE bytes already encoded: the kind byte, then the parts in order. */
export function wireMessageOf(kind: MessageKind, parts: readonly Uint8Array[]): Uint8Array {
  let length = 1;
  for (const part of parts) length += part.byteLength;
  const bytes = new Uint8Array(length);
  bytes[0] = kind;
  let at = 1;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return bytes;
}

/** Close codes the object uses (4000–4999 are the application's own). */
export const CLOSE_DROPPED = 4000;
export const CLOSE_DELETED = 4001;
export const CLOSE_PROTOCOL = 4002;

/**
 * A stream of a conversation the user does not have yet waits on the user's object, not by asking
 * again and again: the Worker opens a hibernatable WebSocket to AWAIT_PATH?conversation=<id> (the
 * object answers 204 instead when it has the conversation already), and the object closes it with
 * CLOSE_KNOWN once the conversation is in its index. No message goes either way.
 */
export const AWAIT_PATH = "/await";
export const CLOSE_KNOWN = 4003;
