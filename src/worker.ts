/**
 * The Worker: authenticates users, derives session ids, validates every request, and hands each
 * conversation to its session Durable Object. Errors map to `{ error: { code, message } }` here.
 */
import { Hono } from "hono";
import { cors } from "hono/cors";
import { signToken } from "./auth/tokens";
import { readConfig } from "./config";
import { authenticate, conversationIdOf, isLocalDevelopment, knownConversation, knownSession, rateLimit, session, type AppEnv } from "./http/app-context";
import { readJsonBody, invalid } from "./http/body";
import { chatRoutes } from "./http/chat-routes";
import { ACK_HTTP_STATUS, ApiError, unwrapRpc } from "./http/errors";
import { openApiDocument } from "./http/openapi";
import { SSE_HEADERS } from "./lib/sse";
import { openSubscription, relayOnceKnown, relayStream } from "./http/sse-relay";
import { emulatorFetch } from "./providers";
import { Id, TurnId } from "./schemas/common";
import type { InteractionAcknowledgement } from "./schemas/contracts";
import { VERSION } from "./version";
import { AnswerBody, CancelBody, DevLoginBody, SubmitTurnBody } from "./schemas/api";
import { forbiddenPaths } from "./objects/interaction-answers";

export { SessionObject } from "./objects/session";
export { UserObject } from "./objects/user";
export { SandboxEmulator } from "./providers/emulator/emulator";

const DEV_TOKEN_TTL_SECONDS = 12 * 60 * 60;
/** JSON envelope around the message: the body limit is the message limit plus this. */
const BODY_OVERHEAD_BYTES = 16 * 1024;


const app = new Hono<AppEnv>();


app.use("*", async (c, next) => {
  const requestId = c.req.header("x-request-id")?.slice(0, 128) || crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  // A response whose headers are immutable (one passed through from a binding) gets a copy.
  if (Object.isFrozen(c.res.headers)) c.res = new Response(c.res.body, c.res);
  c.header("x-request-id", requestId);
  // The Worker's answers are data, never a page to sniff or a referrer to leak (the page's own headers: public/_headers).
  c.header("x-content-type-options", "nosniff");
  c.header("referrer-policy", "no-referrer");
});

app.use("*", async (c, next) => {
  c.set("config", readConfig(c.env));
  await next();
});

app.use("/v1/*", async (c, next) => {
  const origins = c.get("config").CORS_ORIGINS;
  if (!origins) return next();
  const allowed = origins.split(",").map((o) => o.trim());
  return cors({
    origin: (origin) => (allowed.includes("*") || allowed.includes(origin) ? origin : null),
    allowHeaders: ["authorization", "content-type", "idempotency-key", "last-event-id", "x-request-id"],
    allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
    exposeHeaders: ["x-request-id", "retry-after"],
    maxAge: 600,
  })(c, next);
});

app.onError((err, c) => {
  const apiError =
    err instanceof ApiError ? err : new ApiError(500, "internal_error", "an internal error occurred");
  if (!(err instanceof ApiError) || apiError.status >= 500) {
    console.error(JSON.stringify({ msg: "request failed", requestId: c.get("requestId"), path: c.req.path, code: apiError.code, error: String(err) }));
  }
  for (const [name, value] of Object.entries(apiError.headers ?? {})) c.header(name, value);
  return c.json(apiError.toBody(), apiError.status);
});

app.notFound((c) => c.json(new ApiError(404, "not_found", `no route ${c.req.method} ${c.req.path}`).toBody(), 404));

// ------------------------------------------------------------------ public, unauthenticated

app.get("/healthz", (c) => {
  const config = c.get("config");
  return c.json({ ok: true as const, version: VERSION, provider: config.provider, devLogin: config.DEV_LOGIN && isLocalDevelopment(c) });
});
app.get("/openapi.json", (c) => c.json(openApiDocument(VERSION)));

app.post("/v1/dev/login", async (c) => {
  const config = c.get("config");
  // Dev login exists only when enabled in local development: never in a deploy.
  if (!config.DEV_LOGIN || !isLocalDevelopment(c)) throw new ApiError(404, "not_found", "no route POST /v1/dev/login");
  const { user } = await readJsonBody(c, DevLoginBody, 4096);
  const token = await signToken(config, { sub: user }, DEV_TOKEN_TTL_SECONDS);
  return c.json({ token, user, expiresIn: DEV_TOKEN_TTL_SECONDS });
});

// Emulator control (fault injection, counters) for local runs, tests and benchmarks only.
app.all("/_emulator/*", async (c) => {
  const config = c.get("config");
  if (config.provider !== "emulator" || !isLocalDevelopment(c)) throw new ApiError(404, "not_found", `no route ${c.req.method} ${c.req.path}`);
  const url = new URL(c.req.url);
  return emulatorFetch(c.env)(new Request(`http://sandbox-emulator.local${url.pathname}${url.search}`, c.req.raw));
});

// ------------------------------------------------------------------ authenticated

app.use("/v1/conversations", authenticate);
app.use("/v1/conversations/*", authenticate);
app.use("/v1/chat", authenticate);
app.use("/v1/chat/*", authenticate);

// A user's data is never cached by a browser or a proxy.
app.use("/v1/*", async (c, next) => {
  await next();
  if (c.res.headers.get("content-type")?.startsWith("application/json")) c.res.headers.set("cache-control", "no-store");
});




app.get("/v1/conversations", async (c) => {
  const raw = c.req.query("limit");
  const limit = raw === undefined ? 50 : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ApiError(400, "invalid_request", "limit must be an integer from 1 to 200");
  const { ownerKey } = c.get("identity");
  const user = c.env.USERS.get(c.env.USERS.idFromName(ownerKey));
  return c.json({ conversations: await user.listConversations(limit) });
});


app.post("/v1/conversations/:cid/turns", async (c) => {
  const config = c.get("config");
  const { stub, context } = await session(c);
  const body = await readJsonBody(c, SubmitTurnBody, config.MAX_MESSAGE_BYTES + BODY_OVERHEAD_BYTES);
  const header = c.req.header("idempotency-key");
  if (header !== undefined) {
    const parsed = TurnId.safeParse(header);
    if (!parsed.success) throw invalid("Idempotency-Key", parsed.error);
    if (body.turnId !== undefined && body.turnId !== header) {
      throw new ApiError(400, "turn_id_mismatch", "turnId in the body and the Idempotency-Key header differ");
    }
  }
  const turnId = body.turnId ?? header;
  if (!turnId) throw new ApiError(400, "turn_id_required", "a turnId (in the body or as Idempotency-Key) is required so a retry never runs twice");
  const messageBytes = new TextEncoder().encode(body.message).length;
  if (messageBytes > config.MAX_MESSAGE_BYTES) {
    throw new ApiError(413, "message_too_large", `the message is ${messageBytes} bytes; the limit is ${config.MAX_MESSAGE_BYTES}`);
  }
  // Only a request that passed validation counts against the user's limit.
  await rateLimit(c, "turn");
  const request = {
    message: body.message,
    ...(body.model !== undefined ? { model: body.model } : {}),
    ...(body.interactions !== undefined ? { interactions: body.interactions } : {}),
  };
  const { outcome, turn } = unwrapRpc(await stub.submitTurn(context, turnId, request));
  // 202: accepted now or still running under this id; 200: the cached result of a finished turn.
  return outcome === "cached" ? c.json({ ...turn, cached: true }, 200) : c.json(turn, 202);
});

app.get("/v1/conversations/:cid/turns/:turnId", async (c) => {
  const { stub } = await knownSession(c);
  const turnId = TurnId.safeParse(c.req.param("turnId"));
  if (!turnId.success) throw invalid("turn id", turnId.error);
  return c.json(unwrapRpc(await stub.getTurn(turnId.data)));
});

app.get("/v1/conversations/:cid/events", async (c) => {
  const { stub, conversationId } = await session(c);
  // EventSource sends Last-Event-ID on its own reconnects; a reloaded page passes ?after=.
  const raw = c.req.header("last-event-id") ?? c.req.query("after") ?? "0";
  if (!/^\d{1,15}$/.test(raw.trim())) throw new ApiError(400, "invalid_cursor", "the cursor (Last-Event-ID or ?after=) must be a non-negative integer");
  await rateLimit(c, "stream");
  // The object streams the log over a hibernatable WebSocket; this Worker holds the browser's
  // response, its pings and its slow-viewer bound, so the object can hibernate between events.
  const config = c.get("config");
  const options = { pingIntervalMs: config.SSE_PING_INTERVAL_MS, maxPendingBytes: config.SSE_MAX_PENDING_BYTES };
  const after = Number(raw.trim());
  if (!(await knownConversation(c, conversationId))) {
    // Not a conversation yet: wait for it without waking (and so storing) a session object.
    return new Response(relayOnceKnown(() => knownConversation(c, conversationId), () => openSubscription(stub, after), options), { headers: SSE_HEADERS });
  }
  return new Response(relayStream(await openSubscription(stub, after), options), { headers: SSE_HEADERS });
});

app.post("/v1/conversations/:cid/stream-token", async (c) => {
  const config = c.get("config");
  const conversationId = conversationIdOf(c);
  const { userId } = c.get("identity");
  if (!config.AUTH_JWT_SECRET) throw new ApiError(501, "stream_tokens_unavailable", "stream tokens need AUTH_JWT_SECRET to sign them");
  const ttl = config.STREAM_TOKEN_TTL_SECONDS;
  const token = await signToken(config, { sub: userId, use: "stream", cid: conversationId }, ttl);
  return c.json({ token, expiresIn: ttl, eventsUrl: `/v1/conversations/${encodeURIComponent(conversationId)}/events?access_token=${token}` });
});

// Local development only: close every browser stream of a conversation (the page must reconnect).
app.post("/v1/conversations/:cid/dev/drop-streams", async (c) => {
  const config = c.get("config");
  if (!config.DEV_LOGIN || !isLocalDevelopment(c)) throw new ApiError(404, "not_found", `no route POST ${c.req.path}`);
  const { stub } = await session(c);
  return c.json({ dropped: await stub.dropReaders() });
});

// Local development only: which in-memory instance of the session object answers (benchmarks see hibernation).
app.get("/v1/conversations/:cid/dev/object", async (c) => {
  const config = c.get("config");
  if (!config.DEV_LOGIN || !isLocalDevelopment(c)) throw new ApiError(404, "not_found", `no route GET ${c.req.path}`);
  const { stub } = await session(c);
  return c.json(await stub.instanceInfo());
});

app.get("/v1/conversations/:cid", async (c) => {
  const { stub, conversationId } = await knownSession(c);
  return c.json(unwrapRpc(await stub.summary(conversationId)));
});

app.get("/v1/conversations/:cid/messages", async (c) => {
  const { stub, conversationId } = await knownSession(c);
  return c.json(unwrapRpc(await stub.messages(conversationId)));
});

app.post("/v1/conversations/:cid/cancel", async (c) => {
  const { stub, conversationId } = await session(c);
  const body = await readJsonBody(c, CancelBody, 8 * 1024);
  const ack = unwrapRpc(await stub.cancel(conversationId, body.operationId, body.reason));
  // conflict: the operation id was used for another command; unknown: whether the run stopped could not be confirmed.
  return c.json(ack, ack.status === "conflict" ? 409 : ack.status === "unknown" ? 502 : 200);
});

app.post("/v1/conversations/:cid/interactions/:iid", async (c) => {
  const { stub, conversationId } = await session(c);
  const iid = Id.safeParse(c.req.param("iid"));
  if (!iid.success) throw invalid("interaction id", iid.error);
  let forbidden: string[] = [];
  const body = await readJsonBody(c, AnswerBody, 256 * 1024, (raw) => {
    forbidden = forbiddenPaths((raw as { data?: unknown } | null)?.data, "data");
  });
  // RPC typing drops the acknowledgement's loose binding (an index signature); the shape is the session's.
  const ack = unwrapRpc(await stub.answer(conversationId, iid.data, { ...body, ...(forbidden.length ? { forbidden } : {}) })) as InteractionAcknowledgement;
  return c.json(ack, ACK_HTTP_STATUS[ack.status]);
});

app.get("/v1/conversations/:cid/usage", async (c) => {
  const { stub, conversationId } = await knownSession(c);
  return c.json(unwrapRpc(await stub.usage(conversationId)));
});

app.delete("/v1/conversations/:cid", async (c) => {
  const { stub, conversationId } = await session(c);
  return c.json(unwrapRpc(await stub.deleteConversation(conversationId)));
});

// The AI SDK's UI message stream protocol over the same conversations (src/http/chat-routes.ts).
app.route("/v1/chat", chatRoutes);

export default app satisfies ExportedHandler<Env>;
