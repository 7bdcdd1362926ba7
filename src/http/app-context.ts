/**
 * What every route of the Worker shares: the app's context type, local-development detection,
 * authentication, the conversation's session object and the per-user rate limits.
 */
import type { Context } from "hono";
import { deriveOwnerKey, deriveSessionId } from "../auth/ids";
import { bearerToken, verifyUserToken } from "../auth/tokens";
import type { Config } from "../config";
import { ApiError, type RpcResult } from "../errors";
import { AWAIT_PATH } from "../lib/subscription-wire";
import { ConversationId } from "../schemas/common";
import type { SessionContext } from "../session/session";
import { invalid } from "./body";
import { refusalStatus, unwrapRpc } from "./errors";

interface Identity {
  userId: string;
  ownerKey: string;
  /** The token's `iat` (seconds), null when it has none: places the token before or after an account's deletion. */
  issuedAt: number | null;
}

export type AppEnv = { Bindings: Env; Variables: { config: Config; identity: Identity; requestId: string } };

/**
 * Local development: the deployment itself is local (wrangler.toml's `local` environment, which
 * `npm start` and the tests use; a deploy has no emulator binding, whatever its vars say) and the
 * request came to a loopback host. A remote caller can forge a Host header, not a deployment.
 */
/** The signed-in user's object (their sandbox, index, webhooks and agent settings). */
export function userObject(c: Context<AppEnv>) {
  return c.env.USERS.get(c.env.USERS.idFromName(c.get("identity").ownerKey));
}

export function isLocalDevelopment(c: Context<AppEnv>): boolean {
  const host = new URL(c.req.url).hostname;
  return c.get("config").local && (host === "127.0.0.1" || host === "localhost" || host === "[::1]" || host === "::1");
}

const EVENTS_PATH = /^\/v1\/conversations\/([^/]+)\/events$/;
const TERMINAL_SOCKET_PATH = /^\/v1\/environment\/terminals\/([^/]+)\/ws$/;

/**
 * A terminal token offered as a WebSocket subprotocol, `bearer.<base64url token>` (as the Sandbox's own
 * terminal takes one: a token in a URL ends up in logs), with the offered protocol to echo; null when none.
 */
export function subprotocolToken(header: string | undefined): { token: string; protocol: string } | null {
  for (const offered of (header ?? "").split(",").map((p) => p.trim())) {
    if (!offered.startsWith("bearer.")) continue;
    const encoded = offered.slice("bearer.".length);
    if (!/^[A-Za-z0-9_-]{1,8192}$/.test(encoded)) continue;
    try {
      const padded = encoded.replaceAll("-", "+").replaceAll("_", "/");
      return { token: atob(padded + "=".repeat((4 - (padded.length % 4)) % 4)), protocol: offered };
    } catch {
      // Not base64url: not a token.
    }
  }
  return null;
}

/** The path's segment, decoded, or 400. */
function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ApiError(400, "invalid_request", "the path is not valid percent-encoding");
  }
}

/** The user's bearer token (or, on an events route, a stream token): the identity of the request. */
export async function authenticate(c: Context<AppEnv>, next: () => Promise<void>): Promise<void> {
  const config = c.get("config");
  const header = c.req.header("authorization");
  const streamToken = c.req.query("access_token");
  const events = EVENTS_PATH.exec(c.req.path);
  let userId: string;
  let issuedAt: unknown;
  const terminal = TERMINAL_SOCKET_PATH.exec(c.req.path);
  const terminalToken =
    terminal && header === undefined
      ? (streamToken ?? subprotocolToken(c.req.header("sec-websocket-protocol"))?.token)
      : undefined;
  if (header === undefined && streamToken !== undefined && events && c.req.method === "GET") {
    // EventSource cannot send headers: a short-lived stream token, bound to the user and this
    // conversation, is accepted here and nowhere else.
    const verified = await verifyUserToken(config, streamToken, "stream");
    if (verified.claims.cid !== segment(events[1]!)) {
      throw new ApiError(401, "token_claim_invalid", "this stream token is for another conversation");
    }
    userId = verified.userId;
    issuedAt = verified.claims.iat;
  } else if (terminalToken !== undefined && terminal && c.req.method === "GET") {
    // A browser's WebSocket cannot send headers either: a terminal token, bound to the user and this
    // terminal (in `?access_token=` or a `bearer.` subprotocol), is accepted on its socket and nowhere
    // else (docs/api.md#terminals).
    const verified = await verifyUserToken(config, terminalToken, "terminal");
    if (verified.claims.tid !== segment(terminal[1]!)) {
      throw new ApiError(401, "token_claim_invalid", "this terminal token is for another terminal");
    }
    userId = verified.userId;
    issuedAt = verified.claims.iat;
  } else {
    const verified = await verifyUserToken(config, bearerToken(header));
    ({ userId } = verified);
    issuedAt = verified.claims.iat;
  }
  const identity = {
    userId,
    ownerKey: await deriveOwnerKey(config.SESSION_ID_SECRET, userId),
    issuedAt: typeof issuedAt === "number" ? issuedAt : null,
  };
  c.set("identity", identity);
  // An account being deleted (or deleted, for a token issued before) is served nothing but its own account routes.
  const account = c.req.path === "/v1/me" || c.req.path === "/v1/me/";
  unwrapRpc(await c.env.USERS.get(c.env.USERS.idFromName(identity.ownerKey)).accountGate(identity.issuedAt, account));
  await next();
}

export function conversationIdOf(c: Context<AppEnv>, raw = c.req.param("cid")): string {
  const parsed = ConversationId.safeParse(raw);
  if (!parsed.success) throw invalid("conversation id", parsed.error);
  return parsed.data;
}

/** The conversation's session object (its id derived from the user and the conversation id). */
export async function session(c: Context<AppEnv>, conversationId = conversationIdOf(c)) {
  const { userId, ownerKey } = c.get("identity");
  const sessionId = await deriveSessionId(c.get("config").SESSION_ID_SECRET, userId, conversationId);
  const stub = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sessionId));
  const context: SessionContext = { sessionId, conversationId, ownerKey };
  return { stub, context, conversationId };
}

/**
 * The user's per-minute limit on this kind of request: a place taken now (429 with Retry-After once
 * the limit is reached), before the request does its work. Answers how to give the place back, for a
 * request that turned out to do none (`limitedTurn`).
 */
export async function rateLimit(c: Context<AppEnv>, kind: "turn" | "stream"): Promise<{ release(): Promise<void> }> {
  const config = c.get("config");
  const perMinute = kind === "turn" ? config.RATE_LIMIT_TURNS_PER_MINUTE : config.RATE_LIMIT_STREAMS_PER_MINUTE;
  const { ownerKey } = c.get("identity");
  const user = c.env.USERS.get(c.env.USERS.idFromName(ownerKey));
  const verdict = await user.admit(kind, perMinute);
  if (verdict.ok) {
    const { at } = verdict;
    return { release: () => user.releaseAdmission(kind, at) };
  }
  throw new ApiError(
    429,
    "rate_limited",
    `at most ${perMinute} ${kind === "turn" ? "turn submissions" : "event streams"} a minute per user; retry in ${verdict.retryAfterSeconds} s`,
    {
      kind,
      perMinute,
      retryAfterSeconds: verdict.retryAfterSeconds,
    },
    { "retry-after": String(verdict.retryAfterSeconds) },
  );
}

/**
 * Sends a turn under the user's turn limit (docs/api.md#errors-and-limits): the place is taken before
 * the send and kept only when the send did work: a new turn started or queued, or a dispatch that
 * failed upstream (a 5xx: upstream was called, or may have been). A refusal (a 4xx: the conversation
 * busy, a turn id sent with other content, an unknown parent turn, an interaction kind not offered, a
 * budget spent) and an answer from what is known already (a finished turn's cached result, the same
 * turn still running or waiting in the queue) give it back.
 */
export async function limitedTurn<T extends { outcome: string }>(
  c: Context<AppEnv>,
  send: () => Promise<RpcResult<T>>,
): Promise<RpcResult<T>> {
  const place = await rateLimit(c, "turn");
  const result = await send();
  const didWork = result.ok
    ? result.value.outcome === "accepted" || result.value.outcome === "queued"
    : refusalStatus(result.refusal.code) >= 500;
  if (!didWork) await place.release().catch(() => undefined);
  return result;
}

/**
 * Whether the user's index has the conversation. Reading a conversation that does not exist must
 * store nothing, and a session object's storage exists as soon as the object is woken: reads of an
 * unknown conversation are answered here, without waking it.
 */
export async function knownConversation(c: Context<AppEnv>, conversationId: string): Promise<boolean> {
  return c.env.USERS.get(c.env.USERS.idFromName(c.get("identity").ownerKey)).knows(conversationId);
}

/**
 * Waits on the user's object for a conversation it does not have yet (src/lib/subscription-wire.ts
 * AWAIT_PATH): a socket it closes once the conversation exists, or "known" when it does already.
 */
export async function awaitConversation(c: Context<AppEnv>, conversationId: string): Promise<WebSocket | "known"> {
  const stub = c.env.USERS.get(c.env.USERS.idFromName(c.get("identity").ownerKey));
  const res = await stub.fetch(`https://user${AWAIT_PATH}?conversation=${encodeURIComponent(conversationId)}`, {
    headers: { upgrade: "websocket" },
  });
  if (res.status === 204) return "known";
  const socket = res.webSocket;
  if (res.status !== 101 || !socket)
    throw new ApiError(
      503,
      "user_unavailable",
      "the user's index could not be asked to wait for the conversation; retry",
    );
  socket.accept();
  return socket;
}

/** A 404 for a conversation the user does not have, before any session object is woken. */
export async function requireConversation(c: Context<AppEnv>, conversationId: string): Promise<void> {
  if (!(await knownConversation(c, conversationId)))
    throw new ApiError(404, "conversation_not_found", `no conversation ${conversationId}`);
}

/** The session object of a conversation the user has (404 otherwise, nothing woken). */
export async function knownSession(c: Context<AppEnv>, conversationId = conversationIdOf(c)) {
  await requireConversation(c, conversationId);
  return session(c, conversationId);
}
