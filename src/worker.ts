/**
 * The Worker: the app's assembly. Middleware (request id and headers, configuration, CORS,
 * authentication, no caching of a user's data) and the routes by resource, each a sub-app in
 * src/http/routes/. Errors map to `{ error: { code, message } }` here; the objects answer domain
 * outcomes and the routes choose HTTP statuses.
 */
import { Hono } from "hono";
import { cors } from "hono/cors";
import { readConfig } from "./config";
import { authenticate, isLocalDevelopment, type AppEnv } from "./http/app-context";
import { ApiError } from "./http/errors";
import { openApiDocument } from "./http/openapi";
import { chatRoutes } from "./http/routes/chat";
import { conversationRoutes } from "./http/routes/conversations";
import { devRoutes } from "./http/routes/dev";
import { interactionRoutes } from "./http/routes/interactions";
import { streamRoutes } from "./http/routes/streams";
import { VERSION } from "./version";

export { SessionObject } from "./objects/session";
export { UserObject } from "./objects/user";
export { SandboxEmulator } from "./emulator/emulator";

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

// ------------------------------------------------------------------ routes, by resource

// Local development only (dev login, the emulator, probes): 404 elsewhere.
app.route("/", devRoutes);
app.route("/v1/conversations", conversationRoutes);
app.route("/v1/conversations", interactionRoutes);
app.route("/v1/conversations", streamRoutes);
// The AI SDK's UI message stream protocol over the same conversations.
app.route("/v1/chat", chatRoutes);

export default app satisfies ExportedHandler<Env>;
