/**
 * The wire between the Worker, which holds a browser's SSE response, and the session object,
 * which holds the log: one hibernatable WebSocket per browser stream.
 *
 * Worker → object: `{"op":"pull"}`, "send me the next replay page" (the Worker asks only when its
 * browser has room, so a long replay never piles up in memory). Object → Worker: text messages
 * whose first character says what follows, the rest being SSE bytes to write to the browser as
 * they are:
 *   P  a replay page (the Worker pulls again when its browser has room);
 *   L  caught up: from now on events are pushed (the rest may hold the stream's head);
 *   E  live events, pushed as they are appended.
 * The object closes the socket to end a stream (a deleted conversation, a dev drop); the Worker
 * closes it when the browser goes away or falls too far behind.
 */
import { z } from "zod";

export const SUBSCRIBE_PATH = "/subscribe";

export const PullMessage = z.strictObject({ op: z.literal("pull") });
export const PULL = JSON.stringify({ op: "pull" } satisfies z.infer<typeof PullMessage>);

export const PAGE = "P";
export const LIVE = "L";
export const EVENTS = "E";

/** Close codes the object uses (4000–4999 are the application's own). */
export const CLOSE_DROPPED = 4000;
export const CLOSE_DELETED = 4001;
export const CLOSE_PROTOCOL = 4002;
