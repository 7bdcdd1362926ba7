/**
 * The Worker: the app's assembly. Middleware (request id and headers, configuration, CORS,
 * authentication, no caching of a user's data) and the routes by resource, each a sub-app in
 * src/http/routes/ (mounted where src/http/routes/index.ts says) whose declarations are also the
 * OpenAPI document's (src/http/openapi.ts). Errors map to `{ error: { code, message } }` here; the
 * objects answer domain outcomes and the routes choose HTTP statuses.
 */
import { Hono } from "hono";
import { cors } from "hono/cors";
import { readConfig } from "./config";
import { ApiError } from "./errors";
import { type AppEnv, authenticate } from "./http/app-context";
import { documentRoutes } from "./http/openapi";
import { AUTHENTICATED_PREFIXES, MOUNTS } from "./http/routes";

export { SandboxEmulator } from "./emulator/emulator";
export { SessionObject } from "./session/session";
export { TerminalObject } from "./terminal/terminal";
export { UserObject } from "./user/user";

const app = new Hono<AppEnv>();

app.use("*", async (c, next) => {
  const requestId = c.req.header("x-request-id")?.slice(0, 128) || crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  // A socket's upgrade (a terminal's, docs/api.md#terminals) is passed through as the object answered it.
  if (c.res.status === 101) return;
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
    allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    exposeHeaders: ["x-request-id", "retry-after"],
    maxAge: 600,
  })(c, next);
});

app.onError((err, c) => {
  const apiError = err instanceof ApiError ? err : new ApiError(500, "internal_error", "an internal error occurred");
  if (!(err instanceof ApiError) || apiError.status >= 500) {
    console.error(
      JSON.stringify({
        msg: "request failed",
        requestId: c.get("requestId"),
        path: c.req.path,
        code: apiError.code,
        error: String(err),
      }),
    );
  }
  for (const [name, value] of Object.entries(apiError.headers ?? {})) c.header(name, value);
  return c.json(apiError.toBody(), apiError.status);
});

app.notFound((c) => c.json(new ApiError(404, "not_found", `no route ${c.req.method} ${c.req.path}`).toBody(), 404));

// ------------------------------------------------------------------ authenticated

for (const prefix of AUTHENTICATED_PREFIXES) {
  app.use(prefix, authenticate);
  app.use(`${prefix}/*`, authenticate);
}

// A user's data is never cached by a browser or a proxy.
app.use("/v1/*", async (c, next) => {
  await next();
  if (c.res.headers.get("content-type")?.startsWith("application/json")) c.res.headers.set("cache-control", "no-store");
});

// ------------------------------------------------------------------ routes, by resource

for (const { prefix, routes } of MOUNTS) app.route(prefix, routes.app);
app.route("/", documentRoutes.app);

export default app satisfies ExportedHandler<Env>;
