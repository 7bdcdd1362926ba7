import { env, SELF } from "cloudflare:test";
import { SignJWT } from "jose";
import { frameDecoder } from "../public/wire/frames.js";
import { applyPartUpdate } from "../public/wire/part-text.js";
import { readSseFrames, type SseFrame } from "../src/lib/sse";
import { ProviderError } from "../src/providers/errors";
import type { EventEnvelope } from "../src/session/store/records";

export const BASE = "http://127.0.0.1:8787";
const testEnv = env as unknown as Record<string, string>;

export async function tokenFor(
  user: string,
  options: { secret?: string; audience?: string; expiresAt?: number | string; issuedAt?: number } = {},
): Promise<string> {
  let jwt = new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(user)
    .setIssuedAt(options.issuedAt)
    .setExpirationTime(options.expiresAt ?? "1h");
  const audience = options.audience ?? testEnv.AUTH_AUDIENCE;
  if (audience) jwt = jwt.setAudience(audience);
  return jwt.sign(new TextEncoder().encode(options.secret ?? testEnv.AUTH_JWT_SECRET));
}

let counter = 0;
/** A unique id per call: storage is shared by the tests of one file. */
export function uid(prefix: string): string {
  counter++;
  return `${prefix}-${Date.now().toString(36)}-${counter}`;
}

export interface ApiOptions {
  method?: string;
  body?: unknown;
  token?: string;
  headers?: Record<string, string>;
}

export function api(path: string, options: ApiOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json";
  return SELF.fetch(`${BASE}${path}`, {
    method: options.method ?? (options.body !== undefined ? "POST" : "GET"),
    headers,
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === "string"
          ? options.body
          : JSON.stringify(options.body),
  });
}

export async function json<T = any>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

export async function emulator(path: string, body?: unknown): Promise<any> {
  const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"));
  const response = await stub.fetch(`http://sandbox-emulator.local${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.json();
}

export async function counters(): Promise<Record<string, number>> {
  return (await emulator("/_emulator/counters")).counters;
}

export async function setFaults(faults: Record<string, unknown>): Promise<void> {
  await emulator("/_emulator/faults", faults);
}

export interface CollectedStream {
  frames: SseFrame[];
  events: EventEnvelope[];
  lastId: string | undefined;
}

/** More events than any scripted conversation of the suite produces: a stream past it is looping. */
const MAX_COLLECTED_EVENTS = 5_000;

/**
 * Reads an SSE response until `until` says stop, then cancels it. Answers every frame and the
 * parsed event envelopes. Fails at once, naming the ids, on an id that does not increase (a
 * duplicate, or a replay that includes its cursor) and past `maxEvents` events; fails after
 * `timeoutMs`. A stream that repeats itself would otherwise keep a test reading until memory runs out.
 */
export async function collect(
  response: Response,
  until: (event: EventEnvelope, all: EventEnvelope[]) => boolean,
  options: { timeoutMs?: number; maxEvents?: number } = {},
): Promise<CollectedStream> {
  const frames: SseFrame[] = [];
  const events: EventEnvelope[] = [];
  let lastId: string | undefined;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs ?? 10_000);
  const body = response.body!;
  // The events back from their frames: a lean delta frame continues the one before it.
  const decoder = frameDecoder();
  try {
    const iterator = readSseFrames(body);
    const timeout = new Promise<never>((_, reject) =>
      abort.signal.addEventListener("abort", () =>
        reject(new Error(`timed out after ${events.length} events: ${events.map((e) => e.type).join(",")}`)),
      ),
    );
    while (true) {
      const next = await Promise.race([iterator.next(), timeout]);
      if (next.done) break;
      const frame = next.value;
      frames.push(frame);
      if (frame.id !== undefined) {
        if (lastId !== undefined && !(Number(frame.id) > Number(lastId))) {
          await iterator.return(undefined);
          throw new Error(
            `event id ${frame.id} after ${lastId}: an SSE stream's ids must increase (a duplicate or an inclusive cursor)`,
          );
        }
        lastId = frame.id;
      }
      const event = decoder.decode(frame) as EventEnvelope | null;
      if (event) {
        events.push(event);
        if (events.length > (options.maxEvents ?? MAX_COLLECTED_EVENTS)) {
          await iterator.return(undefined);
          throw new Error(`more than ${options.maxEvents ?? MAX_COLLECTED_EVENTS} events without the expected one`);
        }
        if (until(event, events)) {
          await iterator.return(undefined);
          break;
        }
      }
    }
  } finally {
    clearTimeout(timer);
  }
  return { frames, events, lastId };
}

export const isTurnEnd = (e: EventEnvelope) =>
  e.type === "turn.completed" || e.type === "turn.failed" || e.type === "turn.cancelled";

export async function sendTurn(
  token: string,
  cid: string,
  turnId: string,
  message: string,
  extra: Record<string, unknown> = {},
): Promise<Response> {
  return api(`/v1/conversations/${cid}/turns`, { token, body: { turnId, message, ...extra } });
}

/** Waits until a turn is no longer running (polling the public route). */
export async function waitForTurn(token: string, cid: string, turnId: string, timeoutMs = 10_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    if (turn.status !== "running" && turn.status !== "pending") return turn;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`turn ${turnId} still running after ${timeoutMs} ms`);
}

/** The ProviderError a promise rejects with (anything else fails the test). */
export async function upstreamRejection(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error("expected a rejection");
}

/** A Sandbox API call made to the emulator directly, as another process holding an account key would make it. */
export async function upstream(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<Response> {
  const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"));
  return stub.fetch(`http://sandbox-emulator.local${path}`, {
    method,
    headers: {
      authorization: "Bearer another-process",
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/**
 * Lets a run the emulator holds (`[hold]`: stopped after its first step, src/emulator/holds.ts) go
 * on: waits until it is held (it may not have reached its hold yet), then releases it.
 */
export async function release(executionId: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { held, status } = await emulator(`/_emulator/executions/${executionId}/hold`);
    if (held) break;
    if (status !== "running") throw new Error(`execution ${executionId} ended (${status}) before its hold`);
    if (Date.now() > deadline) throw new Error(`execution ${executionId} was not held within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const answer = await emulator(`/_emulator/executions/${executionId}/release`, {});
  if (answer.ok !== true) throw new Error(`the release of ${executionId} was refused: ${JSON.stringify(answer)}`);
}

/** Each part's text, the events applied in order (docs/sse-protocol.md §1.6). */
export function partTexts(events: EventEnvelope[]): Map<string, string | undefined> {
  const texts = new Map<string, string | undefined>();
  for (const e of events) {
    if (e.type !== "message.part.updated") continue;
    const part = e.data.part as Record<string, unknown>;
    texts.set(
      part.id as string,
      applyPartUpdate(texts.get(part.id as string), {
        part,
        ...(typeof e.data.delta === "string" ? { delta: e.data.delta } : {}),
      }),
    );
  }
  return texts;
}

/** Sends a turn and waits for its end: the turn as GET …/turns/:turnId shows it, and the sandbox it ran in. */
export async function runTurn(token: string, cid: string, message: string, extra: Record<string, unknown> = {}) {
  const turnId = uid("turn");
  const res = await sendTurn(token, cid, turnId, message, extra);
  if (res.status !== 202) throw new Error(`turn ${turnId} was not accepted: ${res.status} ${await res.text()}`);
  const accepted = await json(res);
  const turn = await waitForTurn(token, cid, turnId);
  const sandboxId = (await emulator(`/_emulator/executions/${accepted.executionId}`)).sandboxId as string;
  return { turnId, turn, sandboxId, executionId: accepted.executionId as string };
}

/** A user whose sandbox exists (one finished turn `t1`), with the conversation it ran in. */
export async function userWithSandbox(): Promise<{ token: string; cid: string; sandboxId: string }> {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const res = await sendTurn(token, cid, "t1", "hello");
  if (res.status !== 202) throw new Error(`the first turn was not accepted: ${res.status}`);
  await waitForTurn(token, cid, "t1");
  const view = await json(await api("/v1/environment", { token }));
  return { token, cid, sandboxId: view.environment.environmentId };
}
