/**
 * The CLI Bridge stand-in (test/cli-bridge/standin.mjs) checked against the recorded exchanges
 * with a real bridge (recorded.ts): the provider is only proven against the wire if its test peer
 * is. Every test talks to the stand-in over HTTP from the Workers runtime, each in a stand-in
 * instance of its own (`/i/<name>`: its own runs, counters, faults and variants), so the recorded
 * run and session ids can be used as they are and no fault leaks into another test.
 *
 * Answers are compared with the recordings after `normalize`, which blanks only what differs from
 * one run to the next: digests the server computes over its own request encoding, clocks, CLI
 * session UUIDs and chunk ids. Digests that are test vectors (transcripts 25–28) are compared
 * exactly.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { recorded } from "./recorded";

const testEnv = env as unknown as Record<string, string>;
const ROOT = testEnv.CLI_BRIDGE_URL!;
const TOKEN = testEnv.CLI_BRIDGE_TOKEN!;
const CODEX = "codex/default";
const PI = "pi/tangle-router/fake-echo";

// JSON read back from the stand-in: the assertions check it field by field, and `any` keeps the
// many nested reads legible.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let counter = 0;
function unique(prefix: string): string {
  counter++;
  return `${prefix}-${Date.now().toString(36)}-${counter}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

interface Call {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** The bearer to send; `null` sends none. Defaults to the stand-in's token. */
  bearer?: string | null;
  signal?: AbortSignal;
}

/** One stand-in instance: the bridge's routes with a bearer, and its control routes. */
class StandIn {
  constructor(readonly base: string) {}

  fetch(path: string, call: Call = {}): Promise<Response> {
    const headers: Record<string, string> = { ...call.headers };
    if (call.bearer !== null) headers.authorization = `Bearer ${call.bearer ?? TOKEN}`;
    let body: string | undefined;
    if (call.body !== undefined) {
      body = typeof call.body === "string" ? call.body : JSON.stringify(call.body);
      headers["content-type"] ??= "application/json";
    }
    return fetch(`${this.base}${path}`, {
      method: call.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      body,
      signal: call.signal,
    });
  }

  async json(path: string, call: Call = {}): Promise<{ status: number; headers: Headers; body: Json; text: string }> {
    const res = await this.fetch(path, call);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
  }

  /** A control route; a body makes it a JSON POST. Answers the parsed body of a 200. */
  async control(path: string, body?: unknown): Promise<Json> {
    const res = await fetch(`${this.base}/_standin${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    return JSON.parse(text);
  }

  /** `POST /v1/chat/completions` with `stream: true` and one user message. */
  chat(
    runId: string | undefined,
    content: string,
    options: {
      model?: string;
      extra?: Record<string, unknown>;
      headers?: Record<string, string>;
      signal?: AbortSignal;
    } = {},
  ): Promise<Response> {
    return this.fetch("/v1/chat/completions", {
      body: { model: options.model ?? CODEX, stream: true, messages: [{ role: "user", content }], ...options.extra },
      headers: { ...(runId === undefined ? {} : { "x-run-id": runId }), ...options.headers },
      signal: options.signal,
    });
  }

  async createSession(sessionId: string, extra: Record<string, unknown> = {}): Promise<Json> {
    const res = await this.json("/v1/sessions", { body: { session_id: sessionId, model: PI, cwd: "<cwd>", ...extra } });
    expect(res.status, res.text).toBe(201);
    return res.body;
  }

  async turn(sessionId: string, body: Record<string, unknown>): Promise<{ status: number; body: Json; text: string }> {
    return this.json(`/v1/sessions/${sessionId}/turns`, { body });
  }

  /**
   * Waits until the run has an interaction waiting for its answer, and answers its request. Read
   * from the control route so no reader attaches to the run (its `x-run-state` stays `detached`);
   * the wire form of the same request is compared with the recording elsewhere.
   */
  async pendingAsk(runId: string): Promise<Json> {
    const run = await eventually(
      () => this.control(`/runs/${runId}`),
      (r) => r.interactions.some((i: Json) => i.state === "pending"),
    );
    return run.interactions.find((i: Json) => i.state === "pending").request;
  }
}

function standIn(name: string): StandIn {
  return new StandIn(`${ROOT}/i/${unique(name)}`);
}

/** Reads an SSE body as it arrives; remembers an error (a severed stream) instead of throwing it. */
class StreamReader {
  text = "";
  done = false;
  error: unknown;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();

  constructor(res: Response) {
    this.reader = res.body!.getReader();
  }

  /** Reads until `enough(text)`, the end of the body, or an error; throws after `timeoutMs`. */
  async until(enough: (text: string) => boolean, timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!this.done && !enough(this.text)) {
      const left = deadline - Date.now();
      const next = await Promise.race([
        this.reader.read(),
        sleep(Math.max(left, 0)).then(() => "timeout" as const),
      ]).catch((error: unknown) => {
        this.error = error;
        return { done: true as const, value: undefined };
      });
      if (next === "timeout") throw new Error(`no end of stream within ${timeoutMs} ms; read so far:\n${this.text}`);
      if (next.done) this.done = true;
      else this.text += this.decoder.decode(next.value, { stream: true });
    }
    return this.text;
  }

  rest(timeoutMs = 5000): Promise<string> {
    return this.until(() => false, timeoutMs);
  }

  cancel(): void {
    void this.reader.cancel().catch(() => undefined);
  }
}

async function readAll(res: Response, timeoutMs = 5000): Promise<string> {
  return new StreamReader(res).rest(timeoutMs);
}

/** The blocks of an SSE body, without their blank-line terminators. */
function sseFrames(text: string): string[] {
  return text.split("\n\n").filter((block) => block.length > 0);
}

function dataOf(frame: string): string {
  return frame
    .split("\n")
    .find((line) => line.startsWith("data: "))!
    .slice("data: ".length);
}

function idsOf(text: string): string[] {
  return [...text.matchAll(/^id: (.*)$/gm)].map((m) => m[1]!);
}

/** Blanks what differs between two runs of the same exchange; everything else must match. */
function normalize(text: string): string {
  return text
    .replace(/sha256:[0-9a-f]{64}/g, "sha256:<digest>")
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<iso-time>")
    .replace(/(?<=[:[,])1\d{12}(?=[,}\]])/g, "<ms>")
    .replace(/"created":\d{10}/g, '"created":<s>')
    .replace(/chatcmpl-[0-9a-f]{24}/g, "chatcmpl-<id>")
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
    .replace(/permission-applied\.v1:[0-9a-f]{32}-1/g, "permission-applied.v1:<token>-1");
}

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

/** RFC 8785 canonical JSON, the test's own (the stand-in has its own; transcript 26 pins both). */
function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonical(record[key])}`)
    .join(",")}}`;
}

async function digest(value: unknown): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical(value)));
  return `sha256:${[...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The exact run control ref the `X-Run-*` headers of an answer name. */
function controlRef(headers: Headers): Json {
  return {
    runId: headers.get("x-run-id"),
    provider: headers.get("x-run-provider"),
    environmentId: headers.get("x-run-environment-id"),
    sessionId: headers.get("x-run-session-id"),
    executionId: headers.get("x-run-execution-id"),
    requestDigest: headers.get("x-run-request-digest"),
  };
}

/** An InteractionResponseCommand for `request` with the test's own command digest. */
async function respondCommand(
  operationId: string,
  request: Json,
  response: Json,
  bindingPatch: Json = {},
): Promise<Json> {
  const binding = { ...request.binding, requestDigest: request.requestDigest, ...bindingPatch };
  return { operationId, binding, response, commandDigest: await digest({ binding, response }) };
}

function respondPath(runId: string, interactionId: string): string {
  return `/v1/runs/${encodeURIComponent(runId)}/interactions/${encodeURIComponent(interactionId)}/respond`;
}

const HEADERS_OF_A_STREAM = [
  "cache-control",
  "content-type",
  "x-bridge-mode",
  "x-run-environment-id",
  "x-run-execution-id",
  "x-run-id",
  "x-run-provider",
  "x-run-session-id",
];

describe("the stand-in's health, auth and catalog", () => {
  it("serves GET /health without a bearer, both backends ready, in the recorded shape (01)", async () => {
    const res = await new StandIn(ROOT).json("/health", { bearer: null });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const want = JSON.parse(recorded["01-health"].body);
    expect(Object.keys(res.body)).toEqual(Object.keys(want));
    expect(res.body.status).toBe("ok");
    expect(res.body.backends.map((b: Json) => [b.name, b.state, b.version])).toEqual(
      want.backends.map((b: Json) => [b.name, b.state, b.version]),
    );
    expect(Object.keys(res.body.memory)).toEqual(Object.keys(want.memory));
  });

  it("answers the recorded 401 on every other route without the right bearer, before anything runs (02)", async () => {
    const bridge = standIn("auth");
    const routes: Array<[string, string]> = [
      ["GET", "/v1/models"],
      ["GET", "/v1/capabilities?model=codex/default"],
      ["POST", "/v1/chat/completions"],
      ["GET", "/v1/runs/r"],
      ["GET", "/v1/runs/r/events"],
      ["POST", "/v1/runs/r/cancel"],
      ["POST", "/v1/runs/r/interactions/i/respond"],
      ["POST", "/v1/sessions"],
      ["POST", "/v1/sessions/s/turns"],
      ["GET", "/v1/sessions/s"],
      ["GET", "/v1/sessions/s/events"],
      ["GET", "/v1/sessions/s/transcript"],
      ["POST", "/v1/sessions/s/close"],
      ["GET", "/v1/no-such-route"],
    ];
    const body = JSON.stringify({ model: CODEX, stream: true, messages: [{ role: "user", content: "hi" }] });
    for (const bearer of [null, "wrong-token", TOKEN.toUpperCase()]) {
      for (const [method, path] of routes) {
        const res = await bridge.json(path, { method, bearer, ...(method === "POST" ? { body } : {}) });
        expect(res.status, `${method} ${path} with ${bearer}`).toBe(401);
        expect(res.headers.get("content-type")).toBe("application/json");
        expect(res.text).toBe(recorded["02-models-no-bearer"].body);
      }
    }
    expect((await bridge.control("/counters")).counters.runsStarted).toEqual({});
  });

  it("lists the recorded models and capability documents; 400 without a model, 404 for an unknown one (03, 04, 20)", async () => {
    const bridge = standIn("catalog");
    expect((await bridge.json("/v1/models")).text).toBe(recorded["03-models"].body);

    const codex = await bridge.json(`/v1/capabilities?model=${encodeURIComponent(CODEX)}`);
    expect(codex.status).toBe(200);
    expect(codex.text).toBe(recorded["04-capabilities-codex"].body);
    expect(codex.body.interactions).toBeUndefined();
    expect(codex.body.nativeContinuation).toBeUndefined();

    const pi = await bridge.json(`/v1/capabilities?model=${encodeURIComponent(PI)}`);
    expect(pi.body).toEqual(JSON.parse(recorded["20-ret-create"].body).capabilities);
    expect(pi.body.interactions.kinds).toEqual(["permission"]);
    expect(pi.body.nativeContinuation).toEqual({ atomicBoundary: true, requestIdempotency: true });
    expect(pi.body.retainedControl).toEqual({
      exactRunIdentity: true,
      resultIdentity: true,
      eventIdentity: true,
      cancellationIdempotency: true,
    });

    const missing = await bridge.json("/v1/capabilities");
    expect(missing.status).toBe(400);
    expect(missing.body.error.type).toBe("invalid_request_error");
    const unknown = await bridge.json("/v1/capabilities?model=codex/no-such-model");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.type).toBe("not_found_error");
  });
});

describe("one-shot runs on POST /v1/chat/completions", () => {
  const STREAM1 = {
    model: CODEX,
    stream: true,
    messages: [{ role: "user", content: "hello bridge peer" }],
    cwd: "<cwd>",
  };

  async function stream1(bridge: StandIn, headers: Record<string, string> = {}): Promise<Response> {
    return bridge.fetch("/v1/chat/completions", { body: STREAM1, headers: { "x-run-id": "run-stream-1", ...headers } });
  }

  it("streams the recorded bytes: X-Run-* headers, ': connected', a comment frame with id 1, data before id, usage on the finish chunk, [DONE] without id (05)", async () => {
    const bridge = standIn("stream1");
    const res = await stream1(bridge);
    expect(res.status).toBe(200);
    const want = recorded["05-stream1"];
    for (const name of HEADERS_OF_A_STREAM)
      expect(res.headers.get(name), name).toBe(want.headers[name as keyof typeof want.headers]);
    expect(res.headers.get("x-run-request-digest")).toMatch(/^sha256:[0-9a-f]{64}$/);
    const text = await readAll(res);
    expect(normalize(text)).toBe(normalize(want.body));
    // The layout, spelled out: the comment frame's id comes first; every data frame's id follows its data.
    const frames = sseFrames(text);
    expect(frames[0]).toBe(": connected");
    expect(frames[1]).toBe("id: 1\n: bridge-metadata");
    for (const frame of frames.slice(2, -1)) expect(frame).toMatch(/^data: \{.*\}\nid: \d+$/);
    expect(frames.at(-1)).toBe("data: [DONE]");
  });

  it("replays after Last-Event-ID exclusively on the same POST, with new chunk ids and no second CLI run (06)", async () => {
    const bridge = standIn("replay");
    const first = await stream1(bridge);
    const firstText = await readAll(first);
    const replay = await stream1(bridge, { "last-event-id": "3" });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("x-run-request-digest")).toBe(first.headers.get("x-run-request-digest"));
    for (const name of HEADERS_OF_A_STREAM)
      expect(replay.headers.get(name), name).toBe(recorded["06-stream1-replay-after-3"].headers[name as "x-run-id"]);
    const replayText = await readAll(replay);
    expect(normalize(replayText)).toBe(normalize(recorded["06-stream1-replay-after-3"].body));
    expect(idsOf(replayText)).toEqual(["4", "5", "6"]);
    const chunkId = (text: string) => /chatcmpl-[0-9a-f]{24}/.exec(text)![0];
    expect(chunkId(replayText)).not.toBe(chunkId(firstText));

    // Attaching without a cursor replays the whole run, comment frame included.
    const again = await readAll(await stream1(bridge));
    expect(idsOf(again)).toEqual(["1", "2", "3", "4", "5", "6"]);
    const counters = (await bridge.control("/counters")).counters;
    expect(counters.runsStarted).toEqual({ [CODEX]: 1 });
    expect(counters.attaches).toBe(2);
  });

  it("refuses the same run id with another body: 409 run_identity_conflict with both digests (07)", async () => {
    const bridge = standIn("conflict");
    const first = await stream1(bridge);
    await readAll(first);
    const other = await bridge.json("/v1/chat/completions", {
      body: { ...STREAM1, messages: [{ role: "user", content: "something else" }] },
      headers: { "x-run-id": "run-stream-1" },
    });
    expect(other.status).toBe(409);
    const want = JSON.parse(recorded["07-conflict"].body);
    expect(Object.keys(other.body.error)).toEqual(Object.keys(want.error));
    expect(other.body.error.message).toBe(want.error.message);
    expect(other.body.error.type).toBe("run_identity_conflict");
    expect(other.body.error.run_id).toBe("run-stream-1");
    expect(other.body.error.expected_request_digest).toBe(first.headers.get("x-run-request-digest"));
    expect(other.body.error.received_request_digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(other.body.error.received_request_digest).not.toBe(other.body.error.expected_request_digest);
    // The body's run_id is the same identity as the header.
    const viaBody = await bridge.fetch("/v1/chat/completions", { body: { ...STREAM1, run_id: "run-stream-1" } });
    expect(viaBody.headers.get("x-run-request-digest")).toBe(first.headers.get("x-run-request-digest"));
    await readAll(viaBody);
    const both = await bridge.json("/v1/chat/completions", {
      body: { ...STREAM1, run_id: "run-a" },
      headers: { "x-run-id": "run-b" },
    });
    expect(both.status).toBe(400);
  });

  it("answers the run snapshot with its headers (08) and 404 for an unknown run (08b)", async () => {
    const bridge = standIn("snapshot");
    const stream = await stream1(bridge);
    await readAll(stream);
    const snap = await bridge.json("/v1/runs/run-stream-1");
    expect(snap.status).toBe(200);
    const want = recorded["08-run-get"];
    const wantBody = JSON.parse(want.body);
    for (const name of [
      "content-type",
      "x-last-event-id",
      "x-run-environment-id",
      "x-run-execution-id",
      "x-run-id",
      "x-run-provider",
      "x-run-session-id",
      "x-run-state",
      "x-run-status",
      "x-run-terminal",
    ]) {
      expect(snap.headers.get(name), name).toBe(want.headers[name as keyof typeof want.headers]);
    }
    expect(snap.headers.get("x-run-request-digest")).toBe(stream.headers.get("x-run-request-digest"));
    expect(snap.headers.get("x-run-replay-expires-at")).toBe(String(snap.body.replay.expiresAt));
    expect(Object.keys(snap.body)).toEqual(Object.keys(wantBody));
    expect(Object.keys(snap.body.replay)).toEqual(Object.keys(wantBody.replay));
    const { requestDigest: _d, startedAt: _s, endedAt, replay, identityExpiresAt, ...rest } = snap.body;
    const {
      requestDigest: _wd,
      startedAt: _ws,
      endedAt: _we,
      replay: wantReplay,
      identityExpiresAt: _wi,
      ...wantRest
    } = wantBody;
    expect(rest).toEqual(wantRest);
    expect({ ...replay, retainedBytes: 0, expiresAt: 0 }).toEqual({ ...wantReplay, retainedBytes: 0, expiresAt: 0 });
    expect(replay.expiresAt - endedAt).toBe(wantReplay.expiresAt - wantBody.endedAt);
    expect(identityExpiresAt - endedAt).toBe(wantBody.identityExpiresAt - wantBody.endedAt);

    const unknown = await bridge.json("/v1/runs/no-such-run");
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe(recorded["08b-run-unknown"].body);
  });

  it("refuses a cursor ahead of the run with 409 invalid_replay_cursor, on the events route and on the POST; X-Last-Event-Id works too", async () => {
    const bridge = standIn("cursor");
    await readAll(await stream1(bridge));
    const ahead = await bridge.json("/v1/runs/run-stream-1/events", { headers: { "last-event-id": "7" } });
    expect(ahead.status).toBe(409);
    expect(ahead.body.error.type).toBe("invalid_replay_cursor");
    const aheadPost = await stream1(bridge, { "last-event-id": "99" });
    expect(aheadPost.status).toBe(409);
    expect((await aheadPost.json<Json>()).error.type).toBe("invalid_replay_cursor");
    const malformed = await bridge.json("/v1/runs/run-stream-1/events", { headers: { "last-event-id": "abc" } });
    expect(malformed.status).toBe(400);

    const tail = await bridge.fetch("/v1/runs/run-stream-1/events", { headers: { "x-last-event-id": "5" } });
    expect(tail.headers.get("x-last-event-id")).toBe("6");
    expect(tail.headers.get("x-run-status")).toBe("done");
    const text = await readAll(tail);
    expect(idsOf(text)).toEqual(["6"]);
    expect(text).toMatch(/^: connected\n\ndata: \{.*"model":"cli-bridge".*\}\nid: 6\n\ndata: \[DONE\]\n\n$/);
  });

  it("writes Pi usage as usage-only chunks with empty choices, model_requests included, then a finish chunk (41)", async () => {
    const bridge = standIn("pi-oneshot");
    const res = await bridge.chat("run-pi-oneshot-1", "one shot via pi", { model: PI });
    expect(res.headers.get("x-run-provider")).toBe("pi");
    expect(normalize(await readAll(res))).toBe(normalize(recorded["41-pi-oneshot"].body));
  });

  it("answers [chunks:1] in one chunk, usage counted as recorded (43)", async () => {
    const bridge = standIn("chunks1");
    const res = await bridge.chat("run-stream-2", "[chunks:1] hi");
    expect(normalize(await readAll(res))).toBe(normalize(recorded["43-stream2"].body));
    const three = await readAll(await bridge.chat(unique("run"), "[chunks:2] one two three"));
    expect([...three.matchAll(/"content":"([^"]*)"/g)].map((m) => m[1])).toEqual(["echo: one ", "two three"]);
  });

  it("writes [tool] as a tool_calls delta, [error] and [exit:N] as an error frame then [DONE]", async () => {
    const bridge = standIn("words");
    const tool = await readAll(await bridge.chat(unique("run"), "[tool] look"));
    const toolChunk = JSON.parse(dataOf(sseFrames(tool)[2]!));
    expect(toolChunk.choices[0].delta.tool_calls).toEqual([
      { index: 0, id: "call_1", type: "function", function: { name: "shell", arguments: '{"command":"echo fake"}' } },
    ]);
    expect(tool).toContain('"content":"look"');

    for (const [prompt, message] of [
      ["[error] oops", "codex reported an error: scripted error"],
      ["[exit:3] bye", "codex exited with code 3"],
    ] as const) {
      const runId = unique("run");
      const text = await readAll(await bridge.chat(runId, prompt));
      const frames = sseFrames(text);
      expect(frames.at(-2)).toBe(
        `data: ${JSON.stringify({ error: { message, type: "backend_error" } })}\nid: ${idsOf(text).at(-1)}`,
      );
      expect(frames.at(-1)).toBe("data: [DONE]");
      expect(text).not.toContain('"finish_reason":"stop"');
      expect((await bridge.json(`/v1/runs/${runId}`)).body.status).toBe("error");
    }
    const clean = await readAll(await bridge.chat(unique("run"), "[exit:0] fine"));
    expect(clean).toContain('"finish_reason":"stop"');
  });

  it("[estimated], [measured], [requests:N] and [served:M] shape the usage chunks; the echo and the model field stay as recorded", async () => {
    const bridge = standIn("usage-words");
    const chunksOf = (text: string) =>
      sseFrames(text)
        .filter((f) => f.startsWith("data: {"))
        .map((f) => JSON.parse(dataOf(f)));
    const codex = chunksOf(
      await readAll(await bridge.chat(unique("run"), "[estimated] [requests:2] [served:gpt-5.4,gpt-5.4-mini] hi")),
    );
    const finish = codex.at(-1);
    expect(finish).toMatchObject({
      model: CODEX,
      usage: { model_requests: 2, estimated: true, cost_known: false },
      provider_models: ["gpt-5.4", "gpt-5.4-mini"],
    });
    expect(codex.map((c) => c.choices[0]?.delta?.content).join("")).toBe("echo: hi");
    const measured = chunksOf(await readAll(await bridge.chat(unique("run"), "[measured] hi"))).at(-1);
    expect(measured.usage.estimated).toBe(false);
    expect(measured).not.toHaveProperty("provider_models");
    const pi = chunksOf(
      await readAll(await bridge.chat(unique("run"), "[estimated] [served:fake-echo] [requests:3] hi", { model: PI })),
    ).filter((c) => c.usage);
    expect(pi.map((c) => [c.usage.estimated, c.usage.model_requests, c.provider_models])).toEqual([
      [true, undefined, ["fake-echo"]],
      [true, 3, undefined],
    ]);
  });

  it("keeps a [hang] run going without its reader; re-attach, cancel 202 then 200, and the cancelled stream's error frame (09, 11b, 12, 13, 15)", async () => {
    const bridge = standIn("hang");
    const live = new StreamReader(await bridge.chat("run-hang-1", "[hang] wait for me"));
    await live.until((t) => t.includes("id: 2\n\n"));
    live.cancel();
    expect(normalize(live.text)).toBe(normalize(recorded["09-hang1"].body));

    const detached = await eventually(
      () => bridge.json("/v1/runs/run-hang-1"),
      (r) => r.body.attachedReaders === 0,
    );
    expect(detached.body).toMatchObject({ status: "running", state: "detached", terminal: false, lastSeq: 2 });

    const events = await bridge.fetch("/v1/runs/run-hang-1/events", { headers: { "last-event-id": "1" } });
    expect(events.headers.get("x-last-event-id")).toBe("2");
    expect(events.headers.get("x-run-status")).toBe("running");
    expect(events.headers.get("x-run-terminal")).toBe("false");
    expect(events.headers.get("x-bridge-mode")).toBeNull();
    const reattached = readAll(events);

    const first = await bridge.json("/v1/runs/run-hang-1/cancel", { method: "POST" });
    expect(first.status).toBe(202);
    const want12 = recorded["12-cancel1"];
    for (const name of ["retry-after", "x-last-event-id", "x-run-state", "x-run-status", "x-run-terminal"]) {
      expect(first.headers.get(name), name).toBe(want12.headers[name as keyof typeof want12.headers]);
    }
    const wantFirst = JSON.parse(want12.body);
    expect(Object.keys(first.body)).toEqual(Object.keys(wantFirst));
    expect(Object.keys(first.body.run)).toEqual(Object.keys(wantFirst.run));
    expect(first.body).toMatchObject({
      cancelled: false,
      cancel_requested: true,
      terminal: false,
      run: { status: "running", state: "cancelling", endedAt: null },
    });
    expect(first.body.run.cancelRequestedAt).toEqual(expect.any(Number));

    const second = await bridge.json("/v1/runs/run-hang-1/cancel?wait_ms=5000", { method: "POST" });
    expect(second.status).toBe(200);
    const want13 = recorded["13-cancel2"];
    for (const name of ["x-last-event-id", "x-run-state", "x-run-status", "x-run-terminal"]) {
      expect(second.headers.get(name), name).toBe(want13.headers[name as keyof typeof want13.headers]);
    }
    expect(second.headers.get("retry-after")).toBeNull();
    expect(second.headers.get("x-run-replay-expires-at")).toBe(String(second.body.run.replay.expiresAt));
    expect(second.body).toMatchObject({
      cancelled: true,
      cancel_requested: false,
      terminal: true,
      run: { status: "cancelled", state: "terminal", lastSeq: 3 },
    });

    expect(normalize(await reattached)).toBe(normalize(recorded["11b-hang1-events-after-1"].body));
    const snap = await bridge.json("/v1/runs/run-hang-1");
    const want15 = JSON.parse(recorded["15-hang1-get"].body);
    expect(snap.body).toMatchObject({
      status: want15.status,
      state: want15.state,
      terminal: true,
      lastSeq: want15.lastSeq,
      lifetimeExpiresAt: null,
    });
    expect(snap.body.cancelRequestedAt).toBe(first.body.run.cancelRequestedAt);
    expect((await bridge.control("/counters")).counters.cancels).toBe(2);
  });

  it("takes a digest-bound cancellation: a wrong digest is 400; answered as the legacy body plus its ids; an operation reused for another request is 409", async () => {
    const bridge = standIn("cancel-digest");
    const runId = unique("run");
    const res = await bridge.chat(runId, "[hang] stop me");
    const stream = new StreamReader(res);
    await stream.until((t) => t.includes("id: 2\n\n"));
    const run = controlRef(res.headers);
    const request = { operationId: "op-cancel-1", run, reason: "the user pressed Stop" };
    const requestDigest = await digest(request);

    const wrong = await bridge.json(`/v1/runs/${runId}/cancel`, {
      body: { ...request, requestDigest: await digest({ ...request, reason: "other" }) },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.type).toBe("invalid_request_error");
    const mismatched = await bridge.json(`/v1/runs/${runId}/cancel`, {
      body: {
        ...request,
        run: { ...run, executionId: "other" },
        requestDigest: await digest({ ...request, run: { ...run, executionId: "other" } }),
      },
    });
    expect(mismatched.status).toBe(409);
    expect(mismatched.body.error.type).toBe("run_identity_conflict");
    // Refused before anything changed: still running (its POST reader attached), not cancelling.
    expect((await bridge.json(`/v1/runs/${runId}`)).body).toMatchObject({ state: "running", cancelRequestedAt: null });

    const accepted = await bridge.json(`/v1/runs/${runId}/cancel`, { body: { ...request, requestDigest } });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({
      cancelled: false,
      cancel_requested: true,
      terminal: false,
      operationId: "op-cancel-1",
      requestDigest,
    });
    const confirmed = await bridge.json(`/v1/runs/${runId}/cancel?wait_ms=5000`, {
      body: { ...request, requestDigest },
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({
      cancelled: true,
      cancel_requested: false,
      terminal: true,
      operationId: "op-cancel-1",
      requestDigest,
    });
    const reused = await bridge.json(`/v1/runs/${runId}/cancel`, {
      body: { operationId: "op-cancel-1", run, requestDigest: await digest({ operationId: "op-cancel-1", run }) },
    });
    expect(reused.status).toBe(409);
    expect(reused.body.error.type).toBe("cancellation_conflict");

    const text = await stream.rest();
    expect(sseFrames(text).slice(-2)).toEqual([
      `data: {"error":{"message":"run ${runId} was cancelled by the caller before it produced a terminal answer","type":"run_cancelled"}}\nid: 3`,
      "data: [DONE]",
    ]);
  });

  it("answers a digest-bound cancellation with a CancellationAcknowledgement under the acknowledgement variant", async () => {
    const bridge = standIn("cancel-ack");
    await bridge.control("/variants", { cancelAnswer: "acknowledgement" });
    const runId = unique("run");
    const res = await bridge.chat(runId, "[hang] stop me");
    const stream = new StreamReader(res);
    await stream.until((t) => t.includes("id: 2\n\n"));
    const run = controlRef(res.headers);
    const requestDigest = await digest({ operationId: "op-1", run });

    const accepted = await bridge.json(`/v1/runs/${runId}/cancel`, {
      body: { operationId: "op-1", run, requestDigest },
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({
      operationId: "op-1",
      requestDigest,
      run,
      status: "accepted",
      effect: "cancel_requested",
    });
    const replayed = await bridge.json(`/v1/runs/${runId}/cancel?wait_ms=5000`, {
      body: { operationId: "op-1", run, requestDigest },
    });
    expect(replayed.status).toBe(200);
    expect(replayed.body).toEqual({ operationId: "op-1", requestDigest, run, status: "replayed", effect: "cancelled" });
    const otherDigest = await digest({ operationId: "op-1", run, reason: "again" });
    const conflict = await bridge.json(`/v1/runs/${runId}/cancel`, {
      body: { operationId: "op-1", run, reason: "again", requestDigest: otherDigest },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({
      operationId: "op-1",
      requestDigest: otherDigest,
      run,
      status: "conflict",
      effect: "unknown",
      existingRequestDigest: requestDigest,
    });
    await stream.rest();

    const doneId = unique("run");
    const done = await bridge.chat(doneId, "quick");
    await readAll(done);
    const doneRef = controlRef(done.headers);
    const late = await bridge.json(`/v1/runs/${doneId}/cancel`, {
      body: { operationId: "op-2", run: doneRef, requestDigest: await digest({ operationId: "op-2", run: doneRef }) },
    });
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ status: "accepted", effect: "not_live" });
  });

  it("applies the one-shot request rules: interactions refused, provider/environment/execution together, run ids, session_id continuity", async () => {
    const bridge = standIn("rules");
    const refusedAsk = await bridge.json("/v1/chat/completions", {
      body: {
        model: CODEX,
        stream: true,
        messages: [{ role: "user", content: "hi" }],
        interactions: { permission: true },
      },
    });
    expect(refusedAsk.status).toBe(400);
    expect(refusedAsk.body.error.type).toBe("invalid_request_error");
    await readAll(await bridge.chat(unique("run"), "hi", { extra: { interactions: {} } }));

    const partial = await bridge.json("/v1/chat/completions", {
      body: { model: CODEX, stream: true, messages: [{ role: "user", content: "hi" }], provider: "cli-bridge" },
    });
    expect(partial.status).toBe(400);
    const explicit = await bridge.chat(unique("run"), "hi", {
      extra: { provider: "cli-bridge", environment_id: "cli-bridge", execution_id: "exec-7" },
    });
    expect([explicit.headers.get("x-run-provider"), explicit.headers.get("x-run-execution-id")]).toEqual([
      "cli-bridge",
      "exec-7",
    ]);
    await readAll(explicit);

    const minted = await bridge.chat(undefined, "hi");
    expect(minted.headers.get("x-run-id")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await readAll(minted);
    expect(
      (
        await bridge.json("/v1/chat/completions", {
          body: { model: "codex/nope", stream: true, messages: [{ role: "user", content: "hi" }] },
        })
      ).status,
    ).toBe(404);

    const conversation = unique("conv");
    const execution = { kind: "host", jail: { mode: "fs-jail" } };
    const runs = [unique("turn-1"), unique("turn-2")];
    for (const runId of runs) {
      const res = await bridge.chat(runId, `turn of ${runId}`, {
        extra: { session_id: conversation, cwd: "/work", execution },
      });
      expect(res.headers.get("x-run-session-id")).toBe(conversation);
      expect(res.headers.get("x-run-execution-id")).toBe(runId);
      await readAll(res);
    }
    for (const runId of runs) {
      const seen = await bridge.control(`/runs/${runId}`);
      expect(seen.request).toMatchObject({ session_id: conversation, cwd: "/work", execution, run_id: runId });
      expect(JSON.stringify(seen)).not.toContain(TOKEN);
    }
    const closed = await bridge.json(`/v1/sessions/${conversation}/close`, { method: "POST" });
    expect(closed.status).toBe(200);
  });
});

describe("retained Pi sessions", () => {
  it("replays the recorded session: create, two turns, events, a permission answered and retried, transcript (20–31)", async () => {
    const bridge = standIn("retained");
    const created = await bridge.json("/v1/sessions", { body: { session_id: "ret-sess-1", model: PI, cwd: "<cwd>" } });
    expect(created.status).toBe(201);
    expect(normalize(created.text)).toBe(normalize(recorded["20-ret-create"].body));

    const turn1 = await bridge.turn("ret-sess-1", {
      message: "first retained turn",
      turn_id: "ret-turn-1",
      run_id: "ret-run-1",
      execution_id: "ret-exec-1",
    });
    expect(turn1.status).toBe(202);
    expect(normalize(turn1.text)).toBe(normalize(recorded["21-ret-turn1"].body));

    const run1 = await bridge.json("/v1/runs/ret-run-1?wait_ms=15000");
    expect(normalize(run1.text)).toBe(normalize(recorded["22-ret-run1-get"].body));
    for (const name of [
      "x-last-event-id",
      "x-run-provider",
      "x-run-session-id",
      "x-run-execution-id",
      "x-run-state",
      "x-run-status",
    ]) {
      expect(run1.headers.get(name), name).toBe(recorded["22-ret-run1-get"].headers[name as "x-run-id"]);
    }

    const events1 = await bridge.fetch("/v1/sessions/ret-sess-1/events");
    expect(events1.headers.get("x-run-id")).toBeNull();
    expect(normalize(await readAll(events1))).toBe(normalize(recorded["23-ret-events1"].body));

    const turn2 = await bridge.turn("ret-sess-1", {
      message: "[permission] second turn",
      turn_id: "ret-turn-2",
      run_id: "ret-run-2",
      execution_id: "ret-exec-2",
    });
    expect(turn2.status).toBe(202);
    expect(normalize(turn2.text)).toBe(normalize(recorded["24-ret-turn2"].body));

    const request = await bridge.pendingAsk("ret-run-2");
    // Test vector: the request digest is the canonical digest of the request without it.
    expect(request.requestDigest).toBe("sha256:ebde4e44b439d9f6002e267e352983dd7d29c5ccd9610ad6a808f767b31b1594");
    const { requestDigest, ...unsigned } = request;
    expect(await digest(unsigned)).toBe(requestDigest);

    const events2 = await bridge.fetch("/v1/runs/ret-run-2/events");
    for (const name of [
      "x-last-event-id",
      "x-run-provider",
      "x-run-session-id",
      "x-run-execution-id",
      "x-run-state",
      "x-run-status",
      "x-run-terminal",
    ]) {
      expect(events2.headers.get(name), name).toBe(recorded["25-ret-run2-events"].headers[name as "x-run-id"]);
    }
    const rest = readAll(events2);

    // Test vector: transcript 26, sent as recorded, is accepted; its retry gets the same answer.
    const command = recorded["26-respond-cmd"].body;
    expect(await digest({ binding: JSON.parse(command).binding, response: JSON.parse(command).response })).toBe(
      JSON.parse(command).commandDigest,
    );
    const ack = await bridge.json(respondPath("ret-run-2", "ret-run-2:interaction:perm-1"), { body: command });
    expect(ack.status).toBe(200);
    expect(ack.text).toBe(recorded["27-respond"].body);
    const retry = await bridge.json(respondPath("ret-run-2", "ret-run-2:interaction:perm-1"), { body: command });
    expect(retry.text).toBe(recorded["28-respond-retry"].body);

    expect(normalize(await rest)).toBe(normalize(recorded["25-ret-run2-events"].body));
    expect(normalize((await bridge.json("/v1/runs/ret-run-2?wait_ms=15000")).text)).toBe(
      normalize(recorded["29-ret-run2-get"].body),
    );
    expect(normalize(await readAll(await bridge.fetch("/v1/sessions/ret-sess-1/events")))).toBe(
      normalize(recorded["30-ret-session-events-all"].body),
    );
    expect(normalize((await bridge.json("/v1/sessions/ret-sess-1/transcript")).text)).toBe(
      normalize(recorded["31-ret-transcript"].body),
    );

    const session = await bridge.json("/v1/sessions/ret-sess-1");
    expect(session.body).toMatchObject({
      status: "idle",
      turns: 2,
      run_id: "ret-run-2",
      run: { id: "ret-run-2", status: "done" },
    });
    const replayFrom = await readAll(
      await bridge.fetch("/v1/sessions/ret-sess-1/events", { headers: { "last-event-id": "23" } }),
    );
    expect(idsOf(replayFrom)).toEqual(["24", "25"]);
    const runFrom = await readAll(
      await bridge.fetch("/v1/runs/ret-run-2/events", { headers: { "last-event-id": "12" } }),
    );
    expect(idsOf(runFrom)).toEqual(["13", "14"]);
    expect(runFrom).not.toContain("[DONE]");
    expect((await bridge.json("/v1/runs/ret-run-2/events", { headers: { "last-event-id": "15" } })).status).toBe(409);
    expect((await bridge.json("/v1/sessions/ret-sess-1/events", { headers: { "last-event-id": "26" } })).status).toBe(
      409,
    );
  });

  it("denies the tool on a denied ask, and acknowledges every other answer by the contract's table", async () => {
    const bridge = standIn("asks");
    const sessionId = unique("sess");
    const runId = unique("run");
    await bridge.createSession(sessionId);
    expect(
      (
        await bridge.turn(sessionId, {
          message: "[permission] try it",
          run_id: runId,
          turn_id: unique("turn"),
          execution_id: unique("exec"),
        })
      ).status,
    ).toBe(202);
    const request = await bridge.pendingAsk(runId);
    const path = respondPath(runId, request.id);
    const deny = { id: request.id, outcome: "accepted", data: { grant: ["deny"] } };

    const badDigest = { ...(await respondCommand("op-bad", request, deny)), commandDigest: `sha256:${"0".repeat(64)}` };
    const refused = await bridge.json(path, { body: badDigest });
    expect(refused.status).toBe(400);
    expect(refused.body.error.type).toBe("invalid_request_error");

    const bareString = await bridge.json(path, {
      body: await respondCommand("op-string", request, { ...deny, data: { grant: "deny" } }),
    });
    expect(bareString.body).toMatchObject({ status: "invalid_response", message: expect.stringContaining("grant") });
    const undeclared = await bridge.json(path, {
      body: await respondCommand("op-extra", request, { ...deny, data: { grant: ["deny"], feedback: "no" } }),
    });
    expect(undeclared.body).toMatchObject({ status: "invalid_response", message: expect.stringContaining("feedback") });
    const mismatch = await bridge.json(path, {
      body: await respondCommand("op-mismatch", request, deny, { sessionId: "someone-else" }),
    });
    expect(mismatch.body.status).toBe("binding_mismatch");

    const first = await bridge.json(path, { body: await respondCommand("op-a", request, deny) });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      operationId: "op-a",
      binding: { ...request.binding, requestDigest: request.requestDigest },
      commandDigest: first.body.commandDigest,
      status: "accepted",
    });
    expect((await bridge.json(path, { body: await respondCommand("op-a", request, deny) })).text).toBe(first.text);
    expect(
      (
        await bridge.json(path, {
          body: await respondCommand("op-a", request, { ...deny, data: { grant: ["allow_once"] } }),
        })
      ).body.status,
    ).toBe("already_resolved_different");
    expect((await bridge.json(path, { body: await respondCommand("op-b", request, deny) })).body.status).toBe(
      "already_resolved_same",
    );
    expect(
      (
        await bridge.json(path, {
          body: await respondCommand("op-c", request, { ...deny, data: { grant: ["allow_once"] } }),
        })
      ).body.status,
    ).toBe("already_resolved_different");

    const unknownAsk = {
      ...request,
      id: `${runId}:interaction:perm-9`,
      binding: { ...request.binding, interactionId: `${runId}:interaction:perm-9` },
    };
    const ghost = await bridge.json(respondPath(runId, unknownAsk.id), {
      body: await respondCommand("op-ghost", unknownAsk, { ...deny, id: unknownAsk.id }),
    });
    expect(ghost.body.status).toBe("unknown_interaction");
    const noRun = await bridge.json(respondPath("no-such-run", request.id), {
      body: await respondCommand("op-norun", request, deny),
    });
    expect(noRun.body.status).toBe("unknown_run");
    await bridge.control("/variants", { respondStatus: "by-status" });
    expect(
      (
        await bridge.json(respondPath(runId, unknownAsk.id), {
          body: await respondCommand("op-ghost-2", unknownAsk, { ...deny, id: unknownAsk.id }),
        })
      ).status,
    ).toBe(404);

    const done = await bridge.json(`/v1/runs/${runId}?wait_ms=5000`);
    expect(done.body.status).toBe("done");
    const events = await readAll(await bridge.fetch(`/v1/runs/${runId}/events`));
    expect(events).toContain(":deny");
    expect(events).not.toContain('"type":"tool"');
    expect(events).toContain('"text":"echo: try it"');
    expect((await bridge.control("/counters")).counters.responds).toBeGreaterThanOrEqual(12);
  });

  it("runs the tool on an allow, also sent as a bare string under the array-or-string variant; [tool] uses it without asking", async () => {
    const bridge = standIn("allow");
    await bridge.control("/variants", { selectAnswer: "array-or-string" });
    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    const runId = unique("run");
    await bridge.turn(sessionId, { message: "[permission] go", run_id: runId });
    const request = await bridge.pendingAsk(runId);
    const ack = await bridge.json(respondPath(runId, request.id), {
      body: await respondCommand("op-allow", request, {
        id: request.id,
        outcome: "accepted",
        data: { grant: "allow_once" },
      }),
    });
    expect(ack.body.status).toBe("accepted");
    await bridge.json(`/v1/runs/${runId}?wait_ms=5000`);
    const events = await readAll(await bridge.fetch(`/v1/runs/${runId}/events`));
    expect(events).toContain(":allow_once");
    expect(events.match(/"type":"tool"/g)?.length).toBe(2);

    const toolRun = unique("run");
    await bridge.turn(sessionId, { message: "[tool] list", run_id: toolRun });
    await bridge.json(`/v1/runs/${toolRun}?wait_ms=5000`);
    const toolEvents = await readAll(await bridge.fetch(`/v1/runs/${toolRun}/events`));
    expect(toolEvents).not.toContain("event: interaction");
    expect(toolEvents).toContain(
      '"status":"completed","input":{},"output":{"content":[{"type":"text","text":"fake\\n"}]}',
    );
  });

  it("streams a running turn live (52); refuses a second turn while one runs; cancelling ends the session: failed/cancelled pair, then 409 invalid_state (53–55)", async () => {
    const bridge = standIn("ret-cancel");
    await bridge.createSession("ret-sess-2");
    expect(
      (
        await bridge.turn("ret-sess-2", {
          message: "[slow:30] live one two three four five six",
          turn_id: "r2-t1",
          run_id: "r2-1",
          execution_id: "r2-e1",
        })
      ).status,
    ).toBe(202);
    expect(normalize(await readAll(await bridge.fetch("/v1/runs/r2-1/events")))).toBe(
      normalize(recorded["52-ret2-live"].body),
    );

    const hangTurn = { message: "[hang] hold on", turn_id: "r2-t2", run_id: "r2-2", execution_id: "r2-e2" };
    const hang = await bridge.turn("ret-sess-2", hangTurn);
    expect(hang.status).toBe(202);
    expect(normalize(hang.text)).toBe(normalize(recorded["53-ret2-turn2-hang"].body));
    await eventually(
      () => bridge.json("/v1/runs/r2-2"),
      (r) => r.body.canonicalLastSeq === 4,
    );

    const busy = await bridge.turn("ret-sess-2", { message: "meanwhile", turn_id: "r2-t3", run_id: "r2-3" });
    expect(busy.status).toBe(409);
    expect(busy.body.error.type).toBe("invalid_state");
    const repeat = await bridge.turn("ret-sess-2", hangTurn);
    expect(repeat.status).toBe(202);
    expect(repeat.body.run.id).toBe("r2-2");
    const changed = await bridge.turn("ret-sess-2", { ...hangTurn, message: "[hang] changed" });
    expect(changed.status).toBe(409);
    expect(changed.body.error.type).toBe("run_identity_conflict");
    expect((await bridge.control("/counters")).counters.runsStarted).toEqual({ [PI]: 2 });

    const cancel = await bridge.json("/v1/runs/r2-2/cancel?wait_ms=5000", { method: "POST" });
    expect(cancel.status).toBe(200);
    expect(normalize(cancel.text)).toBe(normalize(recorded["54-ret2-cancel"].body));
    for (const name of ["x-last-event-id", "x-run-provider", "x-run-state", "x-run-status", "x-run-terminal"]) {
      expect(cancel.headers.get(name), name).toBe(recorded["54-ret2-cancel"].headers[name as "x-run-id"]);
    }
    const tail = sseFrames(
      await readAll(await bridge.fetch("/v1/runs/r2-2/events", { headers: { "last-event-id": "4" } })),
    );
    expect(idsOf(tail.join("\n\n"))).toEqual(["5", "6", "7"]);
    expect(tail.at(-1)).toMatch(
      /^event: status\ndata: \{.*"event":\{"type":"status","status":"failed","detail":"cancelled"\}\}\nid: 7$/,
    );

    const after = await bridge.json("/v1/sessions/ret-sess-2/turns", {
      body: { message: "next", turn_id: "r2-t4", run_id: "r2-4" },
    });
    expect(after.status).toBe(409);
    expect(after.text).toBe(recorded["55-ret2-turn-after-cancel"].body);
    expect((await bridge.json("/v1/sessions/ret-sess-2")).body.status).toBe("cancelled");
  });

  it("closes an outstanding ask when its run is cancelled; answering it then is `cancelled`", async () => {
    const bridge = standIn("ask-cancel");
    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    const runId = unique("run");
    await bridge.turn(sessionId, { message: "[permission] wait", run_id: runId });
    const request = await bridge.pendingAsk(runId);
    const cancel = await bridge.json(`/v1/runs/${runId}/cancel?wait_ms=5000`, { method: "POST" });
    expect(cancel.body).toMatchObject({ cancelled: true, terminal: true });
    const ack = await bridge.json(respondPath(runId, request.id), {
      body: await respondCommand("op-late", request, {
        id: request.id,
        outcome: "accepted",
        data: { grant: ["allow_once"] },
      }),
    });
    expect(ack.body.status).toBe("cancelled");
    const events = await readAll(await bridge.fetch(`/v1/runs/${runId}/events`));
    expect(events).toContain(`"event":{"type":"interaction.cancel","id":"${request.id}","reason":"run cancelled"}`);
    expect(events).not.toContain('"type":"tool"');
  });

  it("cancels a session's running turn with a digest-bound request on /v1/sessions/:id/cancel; an empty body is 400", async () => {
    const bridge = standIn("session-cancel");
    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    const runId = unique("run");
    await bridge.turn(sessionId, { message: "[hang] forever", run_id: runId });
    const empty = await bridge.json(`/v1/sessions/${sessionId}/cancel`, { method: "POST" });
    expect(empty.status).toBe(400);
    const snap = (await bridge.json(`/v1/runs/${runId}`)).body;
    const run = {
      runId,
      provider: snap.provider,
      environmentId: snap.environmentId,
      sessionId: snap.sessionId,
      executionId: snap.executionId,
      requestDigest: snap.requestDigest,
    };
    const cancel = await bridge.json(`/v1/sessions/${sessionId}/cancel?wait_ms=5000`, {
      body: { operationId: "op-s", run, requestDigest: await digest({ operationId: "op-s", run }) },
    });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ cancelled: true, cancel_requested: true, terminal: true, operationId: "op-s" });
    expect((await bridge.json(`/v1/sessions/${sessionId}`)).body.status).toBe("cancelled");
  });

  it("refuses Codex sessions with 501 capability_denied (40) and checks turn bodies", async () => {
    const bridge = standIn("sessions");
    const codex = await bridge.json("/v1/sessions", { body: { session_id: unique("sess"), model: CODEX } });
    expect(codex.status).toBe(501);
    expect(codex.text).toBe(recorded["40-codex-session-refused"].body);

    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    // A session is created once: the same create again is refused like another one (the bridge's SessionStore).
    for (const cwd of ["<cwd>", "/elsewhere"]) {
      const again = await bridge.json("/v1/sessions", { body: { session_id: sessionId, model: PI, cwd } });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({
        error: {
          message: `retained session ${JSON.stringify(sessionId)} already exists`,
          type: "session_identity_conflict",
        },
      });
    }
    expect((await bridge.turn(sessionId, { message: "no run id" })).status).toBe(400);
    expect((await bridge.turn(sessionId, { message: "misspelt", run_id: unique("run"), turnId: "t" })).status).toBe(
      400,
    );
    expect(
      (await bridge.turn(sessionId, { message: "ask", run_id: unique("run"), interactions: { question: true } }))
        .status,
    ).toBe(400);
    expect((await bridge.turn("no-such-session", { message: "hi", run_id: unique("run") })).status).toBe(404);
    const runId = unique("run");
    const turn = await bridge.turn(sessionId, { message: "hi", run_id: runId, turn_id: "t-1" });
    expect(turn.body.run).toMatchObject({
      id: runId,
      provider: "cli-bridge",
      environmentId: "cli-bridge",
      sessionId,
      executionId: runId,
    });
    await bridge.json(`/v1/runs/${runId}?wait_ms=5000`);
    const reused = await bridge.turn(sessionId, { message: "hi again", run_id: unique("run"), turn_id: "t-1" });
    expect(reused.status).toBe(409);
    expect(reused.body.error.type).toBe("run_identity_conflict");
    const close = await bridge.json(`/v1/sessions/${sessionId}/close`, { method: "POST" });
    expect(close.body.status).toBe("closed");
    expect((await bridge.turn(sessionId, { message: "after close", run_id: unique("run") })).body.error.type).toBe(
      "invalid_state",
    );
  });
});

describe("faults", () => {
  it("severs the next stream after N frames; a re-attach with the last id finishes the run", async () => {
    const bridge = standIn("sever");
    await bridge.control("/faults", { severStreams: { afterFrames: 3, count: 1 } });
    const runId = unique("run");
    const severed = new StreamReader(await bridge.chat(runId, "[slow:40] one two three four"));
    await severed.rest();
    expect(severed.error).toBeDefined();
    expect(idsOf(severed.text)).toEqual(["1", "2", "3"]);
    const rest = await readAll(await bridge.fetch(`/v1/runs/${runId}/events`, { headers: { "last-event-id": "3" } }));
    expect(idsOf(rest)).toEqual(["4", "5", "6", "7"]);
    expect(rest.endsWith("data: [DONE]\n\n")).toBe(true);
    expect((await bridge.control("/counters")).counters.runsStarted).toEqual({ [CODEX]: 1 });
  });

  it("expires the replay window: replays of existing runs answer 410 expired_replay_cursor with the first available id", async () => {
    const bridge = standIn("expire");
    const runId = unique("run");
    await readAll(await bridge.chat(runId, "hello bridge peer"));
    await bridge.control("/faults", { expireReplay: true });
    const expired = await bridge.json(`/v1/runs/${runId}/events`, { headers: { "last-event-id": "2" } });
    expect(expired.status).toBe(410);
    expect(expired.body.error).toMatchObject({ type: "expired_replay_cursor", first_available_id: 7 });
    const viaPost = await bridge.json("/v1/chat/completions", {
      body: { model: CODEX, stream: true, messages: [{ role: "user", content: "hello bridge peer" }] },
      headers: { "x-run-id": runId, "last-event-id": "2" },
    });
    expect(viaPost.status).toBe(410);
    expect((await bridge.json(`/v1/runs/${runId}`)).body.replay).toMatchObject({ expired: true, firstAvailableSeq: 7 });
    const fresh = unique("run");
    await readAll(await bridge.chat(fresh, "new"));
    expect((await bridge.fetch(`/v1/runs/${fresh}/events`, { headers: { "last-event-id": "1" } })).status).toBe(200);
    await bridge.control("/faults", {});
    expect((await bridge.fetch(`/v1/runs/${runId}/events`, { headers: { "last-event-id": "2" } })).status).toBe(200);
  });

  it("refuses every authenticated route with the recorded 401 while the token is rotated", async () => {
    const bridge = standIn("rotate");
    await bridge.control("/faults", { rotateToken: true });
    const models = await bridge.json("/v1/models");
    expect(models.status).toBe(401);
    expect(models.text).toBe(recorded["02-models-no-bearer"].body);
    expect(
      (
        await bridge.json("/v1/chat/completions", {
          body: { model: CODEX, stream: true, messages: [{ role: "user", content: "hi" }] },
        })
      ).status,
    ).toBe(401);
    expect((await bridge.json("/health", { bearer: null })).status).toBe(200);
    expect((await new StandIn(ROOT).json("/v1/models")).status).toBe(200);
    await bridge.control("/faults", {});
    expect((await bridge.json("/v1/models")).status).toBe(200);
  });

  it("delays response headers past a client's header timeout; the run started anyway and a retry attaches", async () => {
    const bridge = standIn("headers");
    await bridge.control("/faults", { delayHeaders: { ms: 1500, count: 1 } });
    const runId = unique("run");
    await expect(bridge.chat(runId, "slow headers", { signal: AbortSignal.timeout(300) })).rejects.toThrow();
    expect((await bridge.control(`/runs/${runId}`)).runId).toBe(runId);
    const startedAt = Date.now();
    const retry = await bridge.chat(runId, "slow headers");
    expect(Date.now() - startedAt).toBeLessThan(1000);
    expect(idsOf(await readAll(retry))).toEqual(["1", "2", "3", "4", "5"]);
    const counters = (await bridge.control("/counters")).counters;
    expect(counters.runsStarted).toEqual({ [CODEX]: 1 });
    expect(counters.attaches).toBe(1);
  });

  it("stalls a stream body mid-way: no byte for N ms, then the rest", async () => {
    const bridge = standIn("stall");
    await bridge.control("/settings", { keepaliveMs: 50 });
    await bridge.control("/faults", { stallStreams: { afterFrames: 2, ms: 700 } });
    const reader = new StreamReader(await bridge.chat(unique("run"), "one two three"));
    await reader.until((t) => t.includes("id: 2\n\n"));
    const stalledAt = Date.now();
    const before = reader.text.length;
    await reader.until((t) => t.length > before);
    expect(Date.now() - stalledAt).toBeGreaterThanOrEqual(600);
    const text = await reader.rest();
    expect(idsOf(text)).toEqual(["1", "2", "3", "4", "5", "6"]);
  });

  it("answers status unknown for unfinished runs (after a bridge restart), or for all runs", async () => {
    const bridge = standIn("unknown");
    const doneId = unique("run");
    await readAll(await bridge.chat(doneId, "finished"));
    const hangId = unique("run");
    const hang = new StreamReader(await bridge.chat(hangId, "[hang] pending"));
    await hang.until((t) => t.includes("id: 2\n\n"));
    await bridge.control("/faults", { unknownRunStatus: "unfinished" });
    const unknown = await bridge.json(`/v1/runs/${hangId}`);
    expect([unknown.body.status, unknown.headers.get("x-run-status")]).toEqual(["unknown", "unknown"]);
    expect((await bridge.json(`/v1/runs/${doneId}`)).body.status).toBe("done");
    await bridge.control("/faults", { unknownRunStatus: "all" });
    expect((await bridge.json(`/v1/runs/${doneId}`)).body.status).toBe("unknown");
    await bridge.control("/faults", {});
    await bridge.json(`/v1/runs/${hangId}/cancel?wait_ms=5000`, { method: "POST" });
    await hang.rest();
  });
});

describe("the capabilities fault", () => {
  it("serves one route's document without the omitted fields and with the set ones as given; other routes as recorded", async () => {
    const bridge = standIn("capabilities");
    const full = (await bridge.json(`/v1/capabilities?model=${encodeURIComponent(PI)}`)).body;
    await bridge.control("/faults", {
      capabilities: {
        [PI]: { omit: ["interactions", "branching"], set: { streaming: "none", futureGroup: { flag: true } } },
      },
    });
    const changed = (await bridge.json(`/v1/capabilities?model=${encodeURIComponent(PI)}`)).body;
    const { interactions: _i, branching: _b, streaming: _s, ...kept } = full;
    expect(changed).toEqual({ ...kept, streaming: "none", futureGroup: { flag: true } });
    expect((await bridge.json(`/v1/capabilities?model=${encodeURIComponent(CODEX)}`)).text).toBe(
      recorded["04-capabilities-codex"].body,
    );
    await bridge.control("/faults", {});
    expect((await bridge.json(`/v1/capabilities?model=${encodeURIComponent(PI)}`)).body).toEqual(full);
  });
});

describe("restarts, shutdown cancels and session identity (a real bridge's exchanges, issue 18)", () => {
  const LOST_TURN = (id: string) =>
    JSON.stringify({
      error: {
        message: `native session ${JSON.stringify(id)} was lost across bridge restart; its continuation is unknown`,
        type: "unknown_session",
      },
    });

  it("a crash mid-run (kill -9, then a restart): open streams drop, runs in flight read unknown and never terminal, their events replay up to the crash, the legacy cancel is 404", async () => {
    const bridge = standIn("crash");
    const oneShot = unique("run");
    const live = new StreamReader(await bridge.chat(oneShot, "[hang] crash me"));
    await live.until((t) => t.includes("id: 2\n\n"));
    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    const retained = unique("run");
    await bridge.turn(sessionId, { message: "[hang] crash me too", run_id: retained });
    await eventually(
      () => bridge.json(`/v1/runs/${retained}`),
      (r) => r.body.canonicalLastSeq === 4,
    );
    const done = unique("run");
    await readAll(await bridge.chat(done, "finished before"));

    expect(await bridge.control("/restart", { crash: true })).toMatchObject({ restarted: true, crash: true });
    // The reader's connection dropped: no cancelled frame, no [DONE].
    await live.rest();
    expect(live.text).not.toContain("[DONE]");
    expect(live.text).not.toContain("run_cancelled");

    for (const runId of [oneShot, retained]) {
      // wait_ms does not wait for an end that no process will write.
      const snap = await bridge.json(`/v1/runs/${runId}?wait_ms=30000`);
      expect(snap.body, runId).toMatchObject({ status: "unknown", terminal: false, endedAt: null });
      expect([snap.headers.get("x-run-status"), snap.headers.get("x-run-terminal")]).toEqual(["unknown", "false"]);
      const cancel = await bridge.json(`/v1/runs/${runId}/cancel`, { method: "POST" });
      expect(cancel.status).toBe(404);
      expect(cancel.text).toBe(recorded["08b-run-unknown"].body);
      // The digest-bound form is taken, and can never be confirmed.
      const snap2 = snap.body;
      const ref = {
        runId,
        provider: snap2.provider,
        environmentId: snap2.environmentId,
        sessionId: snap2.sessionId,
        executionId: snap2.executionId,
        requestDigest: snap2.requestDigest,
      };
      const command = { operationId: unique("op"), run: ref };
      const bound = await bridge.json(`/v1/runs/${runId}/cancel?wait_ms=30000`, {
        body: { ...command, requestDigest: await digest(command) },
      });
      expect(bound.status).toBe(202);
      expect(bound.headers.get("retry-after")).toBe("1");
      expect(bound.body).toMatchObject({
        cancelled: false,
        terminal: false,
        run: { status: "unknown", terminal: false },
        operationId: command.operationId,
      });
      await bridge.control("/variants", { cancelAnswer: "acknowledgement" });
      const acked = await bridge.json(`/v1/runs/${runId}/cancel`, {
        body: { ...command, requestDigest: await digest(command) },
      });
      expect([acked.status, acked.body.status, acked.body.effect]).toEqual([202, "accepted", "unknown"]);
      await bridge.control("/variants", {});
      expect((await bridge.json(`/v1/runs/${runId}`)).body).toMatchObject({ status: "unknown", terminal: false });
    }
    expect((await bridge.json(`/v1/runs/${done}`)).body.status).toBe("done");

    // The events up to the crash, then the stream ends: nothing terminal.
    const replay = await bridge.fetch(`/v1/runs/${oneShot}/events`);
    expect(replay.headers.get("x-run-status")).toBe("unknown");
    const replayed = await readAll(replay);
    expect(idsOf(replayed)).toEqual(["1", "2"]);
    expect(replayed).not.toContain("[DONE]");
    const retainedReplay = await readAll(await bridge.fetch(`/v1/runs/${retained}/events`));
    expect(idsOf(retainedReplay)).toEqual(["1", "2", "3", "4"]);
    expect(retainedReplay).not.toContain('"status":"failed"');
    expect((await bridge.control("/counters")).counters.restarts).toBe(1);
  });

  it("restores a retained session that ran a turn as unknown (a turn on it is 404 unknown_session); a session that ran none still takes turns", async () => {
    const bridge = standIn("restored");
    const used = unique("sess");
    await bridge.createSession(used);
    const first = unique("run");
    await bridge.turn(used, { message: "before the restart", run_id: first });
    await bridge.json(`/v1/runs/${first}?wait_ms=5000`);
    const fresh = unique("sess");
    await bridge.createSession(fresh);
    await bridge.control("/restart", {});

    const view = await bridge.json(`/v1/sessions/${used}`);
    expect(view.body).toMatchObject({ id: used, status: "unknown" });
    const turn = await bridge.turn(used, { message: "after the restart", run_id: unique("run") });
    expect(turn.status).toBe(404);
    expect(turn.text).toBe(LOST_TURN(used));
    // Its past stays readable.
    expect((await bridge.json(`/v1/runs/${first}`)).body.status).toBe("done");
    const runId = unique("run");
    expect((await bridge.turn(fresh, { message: "first turn", run_id: runId })).status).toBe(202);
    expect((await bridge.json(`/v1/runs/${runId}?wait_ms=5000`)).body.status).toBe("done");
  });

  it("a graceful restart cancels its runs by itself (the cancelled frames, no cancel request counted) and records no end: back up, they read unknown", async () => {
    const bridge = standIn("shutdown");
    const oneShot = unique("run");
    const live = new StreamReader(await bridge.chat(oneShot, "[hang] shut me down"));
    await live.until((t) => t.includes("id: 2\n\n"));
    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    const retained = unique("run");
    await bridge.turn(sessionId, { message: "[hang] me too", run_id: retained });
    await eventually(
      () => bridge.json(`/v1/runs/${retained}`),
      (r) => r.body.canonicalLastSeq === 4,
    );

    await bridge.control("/restart", {});
    const text = await live.rest();
    const frames = sseFrames(text);
    expect(dataOf(frames.at(-2)!)).toBe(
      JSON.stringify({
        error: { message: `run ${oneShot} was cancelled because the bridge is shutting down`, type: "run_cancelled" },
      }),
    );
    expect(frames.at(-1)).toBe("data: [DONE]");
    // The bridge's Run.dispose cancels in memory and persists nothing: as after a crash.
    for (const runId of [oneShot, retained]) {
      expect((await bridge.json(`/v1/runs/${runId}`)).body, runId).toMatchObject({
        status: "unknown",
        terminal: false,
        cancelRequestedAt: null,
      });
    }
    expect((await bridge.json(`/v1/sessions/${sessionId}`)).body.status).toBe("unknown");
    const events = await readAll(
      await bridge.fetch(`/v1/runs/${retained}/events`, { headers: { "last-event-id": "4" } }),
    );
    expect(sseFrames(events).at(-1)).toMatch(
      /"event":\{"type":"status","status":"failed","detail":"cancelled"\}\}\nid: 7$/,
    );
    expect((await bridge.control("/counters")).counters.cancels).toBe(0);
  });

  it("while down after a restart every connection is reset; then the bridge answers again; it can also forget its one-shot runs", async () => {
    const bridge = standIn("down");
    const oneShot = unique("run");
    await readAll(await bridge.chat(oneShot, "remember me"));
    await bridge.control("/restart", { crash: true, downMs: 400, forgetOneShotRuns: true });
    await expect(bridge.fetch("/health", { bearer: null })).rejects.toThrow();
    // Polled slowly: each reset connection is also logged by the Workers runtime.
    for (let up = false; !up; ) {
      await sleep(150);
      up = await bridge.fetch("/health", { bearer: null }).then(
        (r) => r.status === 200,
        () => false,
      );
    }
    expect((await bridge.json(`/v1/runs/${oneShot}`)).status).toBe(404);
  });

  it("keeps a lost run's event stream open after its backlog under the `hold` variant (keepalives only)", async () => {
    const bridge = standIn("hold");
    await bridge.control("/settings", { keepaliveMs: 30 });
    await bridge.control("/variants", { lostRunEvents: "hold" });
    const runId = unique("run");
    const live = new StreamReader(await bridge.chat(runId, "[hang] held"));
    await live.until((t) => t.includes("id: 2\n\n"));
    await bridge.control("/restart", { crash: true });
    await live.rest();
    const held = new StreamReader(await bridge.fetch(`/v1/runs/${runId}/events`));
    const text = await held.until((t) => /id: 2\n\n(: keepalive\n\n){2}/.test(t));
    held.cancel();
    expect(idsOf(text)).toEqual(["1", "2"]);
    expect(text).not.toContain("[DONE]");
  });

  it("owns a session id by the API that used it first: 409 session_identity_conflict, both ways", async () => {
    const bridge = standIn("identity");
    const legacy = unique("sess");
    await readAll(await bridge.chat(unique("run"), "one-shot first", { extra: { session_id: legacy } }));
    const retainedOnLegacy = await bridge.json("/v1/sessions", { body: { session_id: legacy, model: PI } });
    expect(retainedOnLegacy.status).toBe(409);
    expect(retainedOnLegacy.text).toBe(
      JSON.stringify({
        error: {
          message: `session id ${JSON.stringify(legacy)} is already owned by the legacy session API and cannot be used by the retained session API`,
          type: "session_identity_conflict",
        },
      }),
    );

    const retained = unique("sess");
    await bridge.createSession(retained);
    const runId = unique("run");
    const legacyOnRetained = await bridge.chat(runId, "one-shot after", { extra: { session_id: retained } });
    expect(legacyOnRetained.status).toBe(409);
    expect(await legacyOnRetained.text()).toBe(
      JSON.stringify({
        error: {
          message: `session id ${JSON.stringify(retained)} is already owned by the retained session API and cannot be used by the legacy session API`,
          type: "session_identity_conflict",
        },
      }),
    );
    expect((await bridge.json(`/v1/runs/${runId}`)).status).toBe(404);
    expect((await bridge.control("/counters")).counters.runsStarted).toEqual({ [CODEX]: 1 });
  });

  it("writes the permission-applied notice with the session's own nonce, numbered per notice", async () => {
    const bridge = standIn("notify");
    const notices: string[] = [];
    for (const sessionId of [unique("sess"), unique("sess")]) {
      await bridge.createSession(sessionId);
      for (let turn = 0; turn < 2; turn++) {
        const runId = unique("run");
        await bridge.turn(sessionId, { message: "[permission] go", run_id: runId });
        const request = await bridge.pendingAsk(runId);
        await bridge.json(respondPath(runId, request.id), {
          body: await respondCommand(unique("op"), request, {
            id: request.id,
            outcome: "accepted",
            data: { grant: ["allow_once"] },
          }),
        });
        await bridge.json(`/v1/runs/${runId}?wait_ms=5000`);
        const events = await readAll(await bridge.fetch(`/v1/runs/${runId}/events`));
        notices.push(/cli-bridge\.permission-applied\.v1:([0-9a-f]{32}-\d+):allow_once/.exec(events)![1]!);
      }
    }
    const [a1, a2, b1] = notices.map((n) => n.split("-"));
    expect(a1![0]).toBe(a2![0]);
    expect(b1![0]).not.toBe(a1![0]);
    expect(notices.map((n) => n.split("-")[1])).toEqual(["1", "2", "1", "2"]);
  });

  it("misattributes terminal snapshots and run envelopes under their faults", async () => {
    const bridge = standIn("misattributed");
    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    const runId = unique("run");
    await bridge.turn(sessionId, { message: "whose run", run_id: runId });
    const honest = (await bridge.json(`/v1/runs/${runId}?wait_ms=5000`)).body;
    await bridge.control("/faults", { misattributedSnapshots: "run-id", misattributedEnvelopes: true });
    expect((await bridge.json(`/v1/runs/${runId}`)).body).toMatchObject({
      id: `${runId}-other`,
      requestDigest: honest.requestDigest,
    });
    const events = await readAll(await bridge.fetch(`/v1/runs/${runId}/events`));
    expect(events).toContain(`"runId":"${runId}-other"`);
    expect(events).not.toContain(`"runId":"${runId}"`);
    await bridge.control("/faults", { misattributedSnapshots: "request-digest" });
    expect((await bridge.json(`/v1/runs/${runId}`)).body).toMatchObject({
      id: runId,
      requestDigest: `sha256:${"0".repeat(64)}`,
    });
  });

  it("serves Pi one-shot under the piTransport variant: the generic document, 501 for sessions, one-shot runs with Pi usage", async () => {
    const bridge = standIn("pi-one-shot");
    await bridge.control("/variants", { piTransport: "one-shot" });
    const doc = (await bridge.json(`/v1/capabilities?model=${encodeURIComponent(PI)}`)).body;
    expect(doc).toEqual((await bridge.json(`/v1/capabilities?model=${CODEX}`)).body);
    expect((await bridge.json("/v1/sessions", { body: { session_id: unique("sess"), model: PI } })).status).toBe(501);
    const res = await bridge.chat(unique("run"), "one shot via pi", {
      model: PI,
      extra: { session_id: unique("sess") },
    });
    expect(res.headers.get("x-run-provider")).toBe("pi");
    expect(await readAll(res)).toContain('"model_requests":1');
  });
});

describe("variants, settings and control routes", () => {
  it("writes id before data under the id-first field order, on both formats", async () => {
    const bridge = standIn("order");
    await bridge.control("/variants", { fieldOrder: "id-first" });
    const text = await readAll(await bridge.chat(unique("run"), "hi there"));
    for (const frame of sseFrames(text).slice(2, -1)) expect(frame).toMatch(/^id: \d+\ndata: \{.*\}$/);
    const sessionId = unique("sess");
    await bridge.createSession(sessionId);
    const runId = unique("run");
    await bridge.turn(sessionId, { message: "hi", run_id: runId });
    await bridge.json(`/v1/runs/${runId}?wait_ms=5000`);
    const events = await readAll(await bridge.fetch(`/v1/runs/${runId}/events`));
    for (const frame of sseFrames(events)) expect(frame).toMatch(/^event: [a-z.-]+\nid: \d+\ndata: \{.*\}$/);
    expect((await bridge.control("/variants")).variants).toEqual({ fieldOrder: "id-first" });
  });

  it("sends ': keepalive' comments, without ids, on the interval set", async () => {
    const bridge = standIn("keepalive");
    await bridge.control("/settings", { keepaliveMs: 40 });
    const text = await readAll(await bridge.chat(unique("run"), "[slow:150] a b"));
    expect(text).toContain("\n\n: keepalive\n\n");
    for (const frame of sseFrames(text).filter((f) => f.includes("keepalive"))) expect(frame).toBe(": keepalive");
    expect(idsOf(text)).toEqual(["1", "2", "3", "4", "5"]);
  });

  it("takes JSON only (415 otherwise, nothing changed), validates faults, resets with exactly {}", async () => {
    const bridge = standIn("control");
    await bridge.control("/faults", { rotateToken: true });
    for (const [path, contentType] of [
      ["/faults", "text/plain"],
      ["/variants", "application/x-www-form-urlencoded"],
      ["/settings", "text/plain;charset=utf-8"],
      ["/reset", "application/jsonp"],
    ] as const) {
      const res = await fetch(`${bridge.base}/_standin${path}`, {
        method: "POST",
        headers: { "content-type": contentType },
        body: "{}",
      });
      expect(res.status, path).toBe(415);
    }
    expect((await bridge.control("/faults")).faults).toEqual({ rotateToken: true });
    const bad = await fetch(`${bridge.base}/_standin/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dropEverything: true }),
    });
    expect(bad.status).toBe(400);
    const notEmpty = await fetch(`${bridge.base}/_standin/reset`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ all: true }),
    });
    expect(notEmpty.status).toBe(400);
    await bridge.control("/faults", {});

    const runId = unique("run");
    await readAll(await bridge.chat(runId, "hi"));
    const counters = (await bridge.control("/counters")).counters;
    expect(counters.requests["POST /v1/chat/completions"]).toBe(1);
    expect(counters.runsStarted).toEqual({ [CODEX]: 1 });
    expect(await bridge.control("/reset", {})).toEqual({ ok: true });
    expect((await bridge.json(`/v1/runs/${runId}`)).status).toBe(404);
    expect((await bridge.control("/counters")).counters.runsStarted).toEqual({});
    expect((await bridge.control("/faults")).faults).toEqual({});
  });
});

describe("the test's own canonical digest", () => {
  it("reproduces the recorded command digest (26) and interaction request digest (25)", async () => {
    const command = JSON.parse(recorded["26-respond-cmd"].body);
    expect(await digest({ binding: command.binding, response: command.response })).toBe(command.commandDigest);
    const interaction = sseFrames(recorded["25-ret-run2-events"].body).find((f) => f.startsWith("event: interaction"))!;
    const { requestDigest, ...request } = JSON.parse(dataOf(interaction)).event.request;
    expect(await digest(request)).toBe(requestDigest);
  });
});
