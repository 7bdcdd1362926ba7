/**
 * Local development only (docs/configuration.md#deploy: what protects the development-only routes): dev login,
 * the emulator's control routes, and the conversation probes for the page and the benchmarks. Each
 * is behind `devOnly`, which answers 404 (as for a route that does not exist) unless the deployment
 * itself is local and the request came to a loopback host. Mounted at `/`; each route declared
 * once (../route-declaration.ts). Dev login is in the OpenAPI document; the emulator's control
 * routes (docs/emulator.md#the-emulators-control-routes-local-only) and the probes are left out of it, each saying why.
 */
import type { MiddlewareHandler } from "hono";
import { signToken } from "../../auth/tokens";
import { ApiError } from "../../errors";
import { emulatorFetch } from "../../providers";
import { DevLoginAnswer, DevLoginBody } from "../../schemas/api";
import { ConversationId } from "../../schemas/common";
import { type AppEnv, isLocalDevelopment, session } from "../app-context";
import { DeclaredRoutes, json } from "../route-declaration";

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

/** The most a control route's body may hold (faults, variants and direct runs take a few kilobytes). */
const CONTROL_MAX_BODY_BYTES = 1024 * 1024;

/**
 * A control call's body, read whole before the emulator sees it and sent on as bytes. Handed on as
 * the client's stream, it was piped into the emulator as the emulator read it: a control route that
 * answers without reading (415 to a body that is not JSON, 404 to an unknown path) left the pipe to
 * read the client's body after the answer went out, an uncaught TypeError in the Worker that made
 * `wrangler dev` restart it under the requests beside it.
 */
async function controlBody(request: Request): Promise<ArrayBuffer> {
  const tooLarge = () =>
    new ApiError(413, "payload_too_large", `the body is larger than ${CONTROL_MAX_BODY_BYTES} bytes`);
  if (Number(request.headers.get("content-length") ?? "0") > CONTROL_MAX_BODY_BYTES) throw tooLarge();
  const body = await request.arrayBuffer();
  if (body.byteLength > CONTROL_MAX_BODY_BYTES) throw tooLarge();
  return body;
}

export const devRoutes = new DeclaredRoutes();

devRoutes.serve(
  {
    method: "post",
    path: "/v1/dev/login",
    summary: "Local development only: a token for any user name (DEV_LOGIN on a loopback host)",
    guard: devOnly("devLogin"),
    body: DevLoginBody,
    answers: { 200: json(DevLoginAnswer, "A user token") },
    errors: [400, 404, 415],
  },
  async (c, readBody) => {
    const { user } = await readBody(4096);
    const token = await signToken(c.get("config"), { sub: user }, DEV_TOKEN_TTL_SECONDS);
    return c.json({ token, user, expiresIn: DEV_TOKEN_TTL_SECONDS });
  },
);

devRoutes.serve(
  {
    method: "all",
    path: "/_emulator/*",
    summary: "Emulator control (fault injection, counters) for local runs, tests and benchmarks",
    guard: devOnly("emulator"),
    answers: {},
    undocumented:
      "the emulator's own API, passed through; docs/emulator.md#the-emulators-control-routes-local-only documents it",
  },
  async (c) => {
    const url = new URL(c.req.url);
    const target = `http://sandbox-emulator.local${url.pathname}${url.search}`;
    const { method } = c.req;
    const body = method === "GET" || method === "HEAD" ? undefined : await controlBody(c.req.raw);
    return emulatorFetch(c.env)(new Request(target, { method, headers: c.req.raw.headers, body }));
  },
);

devRoutes.serve(
  {
    method: "post",
    path: "/v1/conversations/:cid/dev/drop-streams",
    summary: "Close every browser stream of a conversation (the page must reconnect). Authenticated by the app",
    guard: devOnly("devLogin"),
    params: { cid: ConversationId },
    answers: {},
    undocumented: "a local-development probe for reconnect tests; README.md#public-api-v1 describes it",
  },
  async (c) => {
    const { stub } = await session(c);
    return c.json({ dropped: await stub.closeBrowserStreams() });
  },
);

devRoutes.serve(
  {
    method: "get",
    path: "/v1/conversations/:cid/dev/object",
    summary: "Which in-memory instance of the session object answers (the benchmarks see hibernation)",
    guard: devOnly("devLogin"),
    params: { cid: ConversationId },
    answers: {},
    undocumented: "a local-development probe for the benchmarks; README.md#public-api-v1 describes it",
  },
  async (c) => {
    const { stub } = await session(c);
    return c.json(await stub.instanceInfo());
  },
);
