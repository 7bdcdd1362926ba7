/**
 * The event stream (docs/sse-protocol.md), the stream tokens EventSource needs, and the bootstrap a page
 * opens a conversation with: what it shows and a token to follow it, in one round trip. The Worker holds
 * each browser's response (../sse-relay.ts) and subscribes to the session object over a
 * hibernatable WebSocket. Mounted at `/v1/conversations`; declared once (../route-declaration.ts).
 */
import type { Context } from "hono";
import { z } from "zod";
import { signToken } from "../../auth/tokens";
import { ApiError } from "../../errors";
import { SSE_HEADERS } from "../../lib/sse";
import { ConversationBootstrapSchema, EventEnvelopeSchema, StreamTokenAnswer } from "../../schemas/api";
import { ConversationId } from "../../schemas/common";
import type { ConversationSnapshot } from "../../session/session";
import {
  type AppEnv,
  awaitConversation,
  conversationIdOf,
  knownConversation,
  knownSession,
  rateLimit,
  requireConversation,
  session,
} from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, eventStream, json } from "../route-declaration";
import { openSubscription, relayOnceKnown, relayStream } from "../sse-relay";

/** The cursor: the last event id seen (a non-negative integer; surrounding whitespace is allowed). */
const Cursor = z
  .string()
  .trim()
  .regex(/^\d{1,15}$/)
  .describe("The seq of the last event seen: the stream goes on strictly after it");

export const streamRoutes = new DeclaredRoutes();

streamRoutes.serve(
  {
    method: "get",
    path: "/:cid/events",
    summary:
      "The conversation's events as Server-Sent Events, strictly after the cursor (or its snapshot, then every event after it), then live",
    params: { cid: ConversationId },
    headers: { "Last-Event-ID": Cursor.optional() },
    query: {
      after: Cursor.optional(),
      branch: z
        .string()
        .regex(/^\d{1,7}$/)
        .optional()
        .describe(
          "Replay only this branch's history (the events of the turns on its path, and the conversation's own, such as branch.switched); live events of every branch follow",
        ),
      snapshot: z
        .literal("1")
        .optional()
        .describe(
          "Open with the conversation's snapshot: the first event is conversation.snapshot (its summary, messages, branches and usage, its id the last event it reflects), then every event after it, live (docs/sse-protocol.md §14). Not with after or branch; a reconnect's Last-Event-ID resumes without it. A conversation the user does not have is 404",
        ),
    },
    answers: {
      200: eventStream(
        EventEnvelopeSchema,
        "text/event-stream; each frame's data is an Event, except a conversation.snapshot frame (with ?snapshot=1, the first: {type, data: the bootstrap's summary, messages, branches and usage}) and a message.part.delta frame, a delta continuing the previous frame's part: {d, t?}, the Event rebuilt from the previous frame (docs/sse-protocol.md §11)",
      ),
    },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub, conversationId } = await session(c);
    const snapshotParam = c.req.query("snapshot");
    if (snapshotParam !== undefined && snapshotParam !== "1")
      throw new ApiError(
        400,
        "invalid_request",
        "snapshot must be 1 (open the stream with the conversation's snapshot)",
      );
    if (snapshotParam !== undefined && (c.req.query("after") !== undefined || c.req.query("branch") !== undefined))
      throw new ApiError(
        400,
        "invalid_request",
        "snapshot=1 sets the cursor itself (its last event): pass no after or branch with it",
      );
    // A reconnect (Last-Event-ID) resumes after its last event: the snapshot is for the first opening only.
    const snapshot = snapshotParam !== undefined && c.req.header("last-event-id") === undefined;
    // EventSource sends Last-Event-ID on its own reconnects; a reloaded page passes ?after=.
    const cursor = Cursor.safeParse(c.req.header("last-event-id") ?? c.req.query("after") ?? "0");
    if (!cursor.success)
      throw new ApiError(400, "invalid_cursor", "the cursor (Last-Event-ID or ?after=) must be a non-negative integer");
    const branchParam = c.req.query("branch");
    if (branchParam !== undefined && !/^\d{1,7}$/.test(branchParam))
      throw new ApiError(
        400,
        "invalid_request",
        "branch must be a non-negative integer (a branch id from GET …/branches)",
      );
    const branch = branchParam === undefined ? undefined : Number(branchParam);
    await rateLimit(c, "stream");
    // The object streams the log over a hibernatable WebSocket; this Worker holds the browser's
    // response, its pings and its slow-viewer bound, so the object can hibernate between events.
    const config = c.get("config");
    const options = { pingIntervalMs: config.SSE_PING_INTERVAL_MS, maxPendingBytes: config.SSE_MAX_PENDING_BYTES };
    const after = Number(cursor.data);
    if (snapshot) {
      // The snapshot is of a conversation the user has (404 otherwise, as …/bootstrap): its events follow it.
      await requireConversation(c, conversationId);
      return new Response(
        relayStream(await openSubscription(stub, options.maxPendingBytes, 0, undefined, true), options),
        {
          headers: SSE_HEADERS,
        },
      );
    }
    if (!(await knownConversation(c, conversationId))) {
      // Not a conversation yet: wait for it without waking (and so storing) a session object.
      return new Response(
        relayOnceKnown(
          () => awaitConversation(c, conversationId),
          (from) => openSubscription(stub, options.maxPendingBytes, from, branch),
          after,
          options,
        ),
        { headers: SSE_HEADERS },
      );
    }
    return new Response(relayStream(await openSubscription(stub, options.maxPendingBytes, after, branch), options), {
      headers: SSE_HEADERS,
    });
  },
);

streamRoutes.serve(
  {
    method: "post",
    path: "/:cid/stream-token",
    summary: "A short-lived token for EventSource (which cannot send headers), bound to the user and this conversation",
    params: { cid: ConversationId },
    answers: { 200: json(StreamTokenAnswer, "The token and the events URL that accepts it") },
    errors: [400, 401, 501],
  },
  async (c) => {
    const minted = await streamTokenOf(c, conversationIdOf(c));
    if (!minted)
      throw new ApiError(501, "stream_tokens_unavailable", "stream tokens need AUTH_JWT_SECRET to sign them");
    return c.json(minted);
  },
);

streamRoutes.serve(
  {
    method: "get",
    path: "/:cid/bootstrap",
    summary:
      "Open a conversation in one request: its summary, messages, branches and usage (read at once) and a stream token",
    params: { cid: ConversationId },
    answers: {
      200: json(
        ConversationBootstrapSchema,
        "The conversation; follow its events strictly after messages.lastEventId with the stream token",
      ),
    },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub, conversationId } = await knownSession(c);
    const snapshot = stub.bootstrap(conversationId);
    const streamToken = await streamTokenOf(c, conversationId);
    // The summary's open `interactions` make the RPC's inferred type `never`: the object's own type, then.
    const answer: ConversationSnapshot = unwrapRpc(await snapshot);
    return c.json({ ...answer, streamToken });
  },
);

/**
 * A stream token for the user and this conversation (POST …/stream-token, GET …/bootstrap); null where this
 * deployment cannot sign one (no AUTH_JWT_SECRET: its user tokens come from a JWKS).
 */
async function streamTokenOf(
  c: Context<AppEnv>,
  conversationId: string,
): Promise<z.infer<typeof StreamTokenAnswer> | null> {
  const config = c.get("config");
  if (!config.AUTH_JWT_SECRET) return null;
  const ttl = config.STREAM_TOKEN_TTL_SECONDS;
  const token = await signToken(config, { sub: c.get("identity").userId, use: "stream", cid: conversationId }, ttl);
  return {
    token,
    expiresIn: ttl,
    eventsUrl: `/v1/conversations/${encodeURIComponent(conversationId)}/events?access_token=${token}`,
  };
}
