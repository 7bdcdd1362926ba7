/**
 * Local development only (README "Deploy": what protects the development-only routes): dev login,
 * the emulator's control routes, and the conversation probes for the page and the benchmarks. Each
 * is behind `devOnly`, which answers 404 (as for a route that does not exist) unless the deployment
 * itself is local and the request came to a loopback host.
 */
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { signToken } from "../../auth/tokens";
import { emulatorFetch } from "../../providers";
import { DevLoginBody } from "../../schemas/api";
import { isLocalDevelopment, session, type AppEnv } from "../app-context";
import { readJsonBody } from "../body";
import { ApiError } from "../errors";

const DEV_TOKEN_TTL_SECONDS = 12 * 60 * 60;

/**
 * The one guard of every local-only route. `devLogin`: dev login must be on (`DEV_LOGIN`);
 * `emulator`: the provider must be the emulator. Both need local development.
 */
function devOnly(needs: "devLogin" | "emulator"): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const config = c.get("config");
    const on = needs === "devLogin" ? config.DEV_LOGIN : config.provider === "emulator";
    if (!on || !isLocalDevelopment(c)) throw new ApiError(404, "not_found", `no route ${c.req.method} ${c.req.path}`);
    await next();
  };
}

export const devRoutes = new Hono<AppEnv>();

devRoutes.post("/v1/dev/login", devOnly("devLogin"), async (c) => {
  const { user } = await readJsonBody(c, DevLoginBody, 4096);
  const token = await signToken(c.get("config"), { sub: user }, DEV_TOKEN_TTL_SECONDS);
  return c.json({ token, user, expiresIn: DEV_TOKEN_TTL_SECONDS });
});

// Emulator control (fault injection, counters) for local runs, tests and benchmarks.
devRoutes.all("/_emulator/*", devOnly("emulator"), async (c: Context<AppEnv>) => {
  const url = new URL(c.req.url);
  return emulatorFetch(c.env)(new Request(`http://sandbox-emulator.local${url.pathname}${url.search}`, c.req.raw));
});

// Close every browser stream of a conversation (the page must reconnect). Authenticated by the app.
devRoutes.post("/v1/conversations/:cid/dev/drop-streams", devOnly("devLogin"), async (c) => {
  const { stub } = await session(c);
  return c.json({ dropped: await stub.dropReaders() });
});

// Which in-memory instance of the session object answers (the benchmarks see hibernation).
devRoutes.get("/v1/conversations/:cid/dev/object", devOnly("devLogin"), async (c) => {
  const { stub } = await session(c);
  return c.json(await stub.instanceInfo());
});
