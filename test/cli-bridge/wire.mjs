// @ts-check
/**
 * The CLI Bridge wire as the stand-in writes it: canonical digests, SSE frames, JSON answers and
 * error bodies, the model catalog and capability documents. Written from the wire doc and the
 * recorded exchanges with a real bridge; nothing here is shared with the gateway's own code, so the
 * gateway's provider is checked against an independent peer.
 */
import { createHash } from "node:crypto";

// ---------------------------------------------------------------------------------------------
// Canonical JSON (RFC 8785) and digests

/**
 * RFC 8785 canonical JSON: keys sorted by UTF-16 code units, no whitespace, strings and numbers as
 * `JSON.stringify` writes them. `undefined`, non-finite numbers, lone surrogates and non-plain
 * objects are refused.
 * @param {unknown} value
 * @returns {string}
 */
export function canonicalJson(value) {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("canonical JSON refuses non-finite numbers");
      return JSON.stringify(value);
    case "string":
      if (!value.isWellFormed()) throw new TypeError("canonical JSON refuses lone surrogates");
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(",")}]`;
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw new TypeError("canonical JSON refuses non-plain objects");
      const record = /** @type {Record<string, unknown>} */ (value);
      // Array.prototype.sort compares UTF-16 code units, which is the order RFC 8785 asks for.
      const keys = Object.keys(record).sort();
      return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
    }
    default:
      throw new TypeError(`canonical JSON refuses ${typeof value}`);
  }
}

/**
 * `sha256:<hex>` over the UTF-8 bytes of the canonical JSON of `value`.
 * @param {unknown} value
 */
export function canonicalDigest(value) {
  return `sha256:${createHash("sha256").update(canonicalJson(value), "utf8").digest("hex")}`;
}

/**
 * A copy without the keys whose value is `undefined` (absent optional fields are stripped before
 * hashing, never hashed as `undefined`).
 * @template {Record<string, unknown>} T
 * @param {T} record
 * @returns {T}
 */
export function stripUndefined(record) {
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [key, value] of Object.entries(record)) if (value !== undefined) out[key] = value;
  return /** @type {T} */ (out);
}

// ---------------------------------------------------------------------------------------------
// SSE frames, byte for byte as the recorded bridge writes them

/** The first bytes of every OpenAI-format stream (transcripts 05, 06, 11b). */
export const CONNECTED_FRAME = ": connected\n\n";
export const KEEPALIVE_FRAME = ": keepalive\n\n";
export const DONE_FRAME = "data: [DONE]\n\n";

/**
 * A comment frame that carries an id and no data (`id: 1` then `: bridge-metadata`).
 * @param {number} id
 * @param {string} comment
 */
export function commentFrameWithId(id, comment) {
  return `id: ${id}\n: ${comment}\n\n`;
}

/**
 * A data frame. The recorded bridge writes `event:` (retained streams only), then `data:`, then
 * `id:`; the `id-first` field order is a variant (a parser must accept both).
 * @param {{ data: string, id?: number | string, event?: string, order?: "data-first" | "id-first" }} frame
 */
export function dataFrame({ data, id, event, order = "data-first" }) {
  if (/[\r\n]/.test(data) || (event !== undefined && /[\r\n]/.test(event))) {
    throw new Error("an SSE field value cannot contain a line break");
  }
  const eventLine = event === undefined ? "" : `event: ${event}\n`;
  const idLine = id === undefined ? "" : `id: ${id}\n`;
  const dataLine = `data: ${data}\n`;
  return order === "id-first" ? `${eventLine}${idLine}${dataLine}\n` : `${eventLine}${dataLine}${idLine}\n`;
}

// ---------------------------------------------------------------------------------------------
// JSON answers

/**
 * `{ error: { message, type, …extra } }`, the body of every refusal on the bridge's routes.
 * @param {string} message
 * @param {string} type
 * @param {Record<string, unknown>} [extra]
 */
export function errorBody(message, type, extra = {}) {
  return { error: { message, type, ...extra } };
}

/**
 * The outcome of an operation that may be refused: `{ ok: true, … }` or an HTTP refusal.
 * @template T
 * A refusal may carry a whole body of its own shape and headers (the 429 of a saturated executor).
 * @typedef {({ ok: true } & T) | Refusal} Outcome
 */

/**
 * @typedef {{ ok: false, status: number, message: string, type: string, extra?: Record<string, unknown>, body?: unknown, headers?: Record<string, string> }} Refusal
 */

/**
 * @param {number} status
 * @param {string} message
 * @param {string} type
 * @param {Record<string, unknown>} [extra]
 * @returns {{ ok: false, status: number, message: string, type: string, extra?: Record<string, unknown> }}
 */
export function refuse(status, message, type, extra) {
  return { ok: false, status, message, type, ...(extra ? { extra } : {}) };
}

/** The 401 every authenticated route answers without the right bearer (transcript 02). */
export const UNAUTHORIZED_BODY = errorBody("Unauthorized", "invalid_authentication_error");

/**
 * Headers sorted by name, lowercase: the recorded bridge writes its run-scoped answers (snapshots,
 * cancels, streams) this way.
 * @param {Record<string, string>} headers
 * @returns {Record<string, string>}
 */
export function sortedHeaders(headers) {
  const entries = Object.entries(headers).map(
    ([name, value]) => /** @type {[string, string]} */ ([name.toLowerCase(), value]),
  );
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

/**
 * A JSON answer. Plain answers carry `Content-Type` as the recorded bridge writes it; run-scoped
 * ones pass their lowercase `x-run-*` headers, and the content type joins them in sorted order.
 * @param {import("node:http").ServerResponse} res
 * @param {number} status
 * @param {unknown} body
 * @param {Record<string, string>} [runHeaders]
 */
export function sendJson(res, status, body, runHeaders) {
  const text = JSON.stringify(body);
  const headers = runHeaders
    ? sortedHeaders({ "content-type": "application/json", ...runHeaders })
    : { "Content-Type": "application/json" };
  res.writeHead(status, { ...headers, "Content-Length": String(Buffer.byteLength(text)) });
  res.end(text);
}

/** The headers of every SSE answer (transcript 05), before its run headers. */
export const SSE_HEADERS = {
  "cache-control": "no-cache",
  connection: "keep-alive",
  "content-type": "text/event-stream",
  "transfer-encoding": "chunked",
};

// ---------------------------------------------------------------------------------------------
// Catalog and capability documents (transcripts 03, 04, 20)

/** @typedef {"codex" | "pi"} Backend */

/** @type {ReadonlyArray<{ id: string, backend: Backend }>} */
const MODELS = [
  { id: "codex/default", backend: "codex" },
  { id: "codex/gpt-5-codex", backend: "codex" },
  { id: "codex/gpt-5.4", backend: "codex" },
  { id: "codex/gpt-5.5", backend: "codex" },
  { id: "pi/tangle-router/fake-echo", backend: "pi" },
];

/**
 * @param {string} model
 * @returns {Backend | undefined}
 */
export function backendOf(model) {
  return MODELS.find((m) => m.id === model)?.backend;
}

export function modelList() {
  return { object: "list", data: MODELS.map((m) => ({ id: m.id, object: "model", backend: m.backend })) };
}

const STREAMING = { live: true, replay: true, detach: true, turnIdempotency: true };
const RETAINED_CONTROL = {
  exactRunIdentity: true,
  resultIdentity: true,
  eventIdentity: true,
  cancellationIdempotency: true,
};
const BRANCHING = { checkpoint: false, fork: false };

/** Codex routes: one-shot only; replay and detach, no interactions, no native continuation (transcript 04). */
function codexCapabilities() {
  return {
    profile: {
      namedProfiles: false,
      systemPrompt: { replace: true, append: true },
      instructions: true,
      tools: true,
      permissions: true,
      mcp: true,
      subagents: true,
      resources: { files: true, instructions: true, tools: true, skills: true, agents: true, commands: true },
      hooks: false,
      modes: true,
      runtimeUpdate: false,
      validation: true,
    },
    streaming: { ...STREAMING },
    sessions: { continue: true, list: false, messages: false },
    retainedControl: { ...RETAINED_CONTROL },
    workspace: { read: false, write: false, exec: false, git: false, upload: false, download: false },
    branching: { ...BRANCHING },
    placement: true,
    usage: true,
    confidential: false,
    observation: {
      identity: true,
      lifecycle: true,
      endpoint: true,
      placement: true,
      resources: false,
      resourceUse: false,
      modelUsage: true,
      computeBilling: false,
      accountUsage: false,
    },
  };
}

/** Pi routes: retained native sessions with permission interactions (transcript 20). */
function piCapabilities() {
  return {
    profile: {
      namedProfiles: false,
      systemPrompt: { replace: true, append: true },
      instructions: true,
      tools: true,
      permissions: true,
      mcp: false,
      subagents: true,
      resources: { files: false, instructions: true, tools: false, skills: true, agents: true, commands: true },
      hooks: false,
      modes: true,
      runtimeUpdate: false,
      validation: true,
      extensions: ["pi"],
    },
    streaming: { ...STREAMING },
    sessions: { continue: true, list: true, messages: true },
    retainedControl: { ...RETAINED_CONTROL },
    nativeContinuation: { atomicBoundary: true, requestIdempotency: true },
    interactions: {
      kinds: ["permission"],
      answerFieldTypes: ["select"],
      responseScopes: ["interaction"],
      secretAnswers: false,
      concurrentRequests: false,
      replay: true,
      responseIdempotency: true,
    },
    workspace: { read: true, write: true, exec: true, git: true, upload: false, download: false },
    branching: { ...BRANCHING },
    placement: true,
    usage: true,
    confidential: false,
  };
}

/**
 * A route's capability document. Under the `piTransport: "one-shot"` variant a Pi route answers
 * the generic one-shot document a bridge gives every non-native backend (the one recorded for
 * Codex), as a bridge that does not prove Pi's native continuation would.
 * @param {Backend} backend
 * @param {"retained" | "one-shot"} [piTransport]
 */
export function capabilitiesFor(backend, piTransport = "retained") {
  return backend === "pi" && piTransport === "retained" ? piCapabilities() : codexCapabilities();
}

/** @param {number} runsRetained */
function memoryBody(runsRetained) {
  const usage = process.memoryUsage();
  return {
    heap_used_bytes: usage.heapUsed,
    heap_total_bytes: usage.heapTotal,
    heap_limit_bytes: 4345298944,
    heap_used_pct: Math.round((usage.heapUsed / 4345298944) * 1000) / 10,
    rss_bytes: usage.rss,
    external_bytes: usage.external,
    runs_retained: runsRetained,
    run_replay_bytes: 0,
  };
}

/**
 * The health answer (transcript 01), with the clock's times and the executor's counts. Its
 * backends' verdicts are cached ones (a real bridge answers so within BRIDGE_HEALTH_CACHE_MS of a
 * ready probe), so it answers at once even when every slot is taken.
 * @param {{ runsRetained: number, executor: Record<string, unknown> }} stats
 */
export function healthBody({ runsRetained, executor }) {
  const now = new Date().toISOString();
  const idlePool = {
    in_flight: 0,
    max: 4,
    queued: 0,
    acquire_deadline_ms: 60000,
    max_acquire_deadline_ms: 900000,
    acquires: 0,
    timeouts: 0,
  };
  return {
    status: "ok",
    cached_verdicts: true,
    oldest_probed_at: now,
    backends: [
      { name: "codex", state: "ready", version: "codex-cli 0.0.0-fake", probed_at: now, cached: true },
      { name: "pi", state: "ready", version: "0.0.0-fake-pi", probed_at: now, cached: true },
    ],
    admission: {
      active: 0,
      live: 0,
      stale: 0,
      unbound: 0,
      oldestHeldMs: null,
      reclaimed: 0,
      queued: 0,
      maxActive: 8,
      maxQueue: 16,
      reservedActive: 2,
      bulkMaxActive: 6,
      activeByClass: { reserved: 0, bulk: 0 },
      queuedByClass: { reserved: 0, bulk: 0 },
    },
    // The host executor's live counts; the systemd-scoped one (Linux) is not used by the stand-in's CLIs.
    executor: {
      ...executor,
      scoped_host: { ...idlePool, reserved: 2, bulk_in_flight: 0, bulk_max: 2, queued_reserved: 0, queued_bulk: 0 },
    },
    memory: memoryBody(runsRetained),
    ts: now,
  };
}
