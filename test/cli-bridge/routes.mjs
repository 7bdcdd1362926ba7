// @ts-check
/**
 * The bridge's HTTP routes (the wire doc's table). Each handler
 * answers an Answer — JSON, or a stream to open — and the dispatcher writes it, so a header delay
 * fault holds every kind of answer the same way, after the work is done (as a slow network would).
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { respond } from "./asks.mjs";
import { probeHealth } from "./executor.mjs";
import {
  CancellationRequest,
  ChatCompletionRequest,
  InteractionResponseCommand,
  SessionCreateRequest,
  TurnRequest,
} from "./schemas.mjs";
import { streamRun, streamSession } from "./streams.mjs";
import {
  backendOf,
  canonicalDigest,
  capabilitiesFor,
  errorBody,
  healthBody,
  modelList,
  sendJson,
  stripUndefined,
  UNAUTHORIZED_BODY,
} from "./wire.mjs";

/** @typedef {import("./bridge.mjs").Bridge} Bridge */
/** @typedef {import("./runs.mjs").Run} Run */
/** @typedef {import("./runs.mjs").Session} Session */
/** @typedef {import("node:http").IncomingMessage} IncomingMessage */
/** @typedef {import("node:http").ServerResponse} ServerResponse */

/**
 * @typedef {{ kind: "json", status: number, body: unknown, runHeaders?: Record<string, string> }
 *   | { kind: "stream", open: (res: ServerResponse) => void }} Answer
 */

const MAX_BODY_BYTES = 1024 * 1024;
const MAX_WAIT_MS = 30_000;

/**
 * @param {number} status
 * @param {string} message
 * @param {string} type
 * @param {Record<string, unknown>} [extra]
 * @returns {Answer}
 */
function fail(status, message, type, extra) {
  return { kind: "json", status, body: errorBody(message, type, extra) };
}

/**
 * @param {number} status
 * @param {unknown} body
 * @param {Record<string, string>} [runHeaders]
 * @returns {Answer}
 */
function ok(status, body, runHeaders) {
  return { kind: "json", status, body, ...(runHeaders ? { runHeaders } : {}) };
}

/**
 * @param {import("./wire.mjs").Refusal} refusal
 * @returns {Answer}
 */
function refused(refusal) {
  if (refusal.body !== undefined)
    return {
      kind: "json",
      status: refusal.status,
      body: refusal.body,
      ...(refusal.headers ? { runHeaders: refusal.headers } : {}),
    };
  return fail(refusal.status, refusal.message, refusal.type, refusal.extra);
}

/** @param {z.ZodError} error */
function invalid(error) {
  return fail(400, z.prettifyError(error), "invalid_request_error");
}

/**
 * A request, read: method, path segments after the instance prefix, query, headers and raw body.
 * @typedef {{ method: string, path: string, segments: string[], query: URLSearchParams, headers: import("node:http").IncomingHttpHeaders, raw: string }} Request
 */

/**
 * Reads the body (at most 1 MiB).
 * @param {IncomingMessage} req
 * @returns {Promise<string | undefined>} undefined when too large
 */
export async function readBody(req) {
  /** @type {Buffer[]} */
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * @param {Request} request
 * @returns {{ ok: true, value: unknown } | { ok: false }}
 */
export function jsonBody(request) {
  if (request.raw.trim() === "") return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(request.raw) };
  } catch {
    return { ok: false };
  }
}

/**
 * `wait_ms`: a whole number of milliseconds, capped at 30 s; undefined when absent.
 * @param {URLSearchParams} query
 * @returns {number | undefined | null} null when malformed
 */
function waitMs(query) {
  const raw = query.get("wait_ms");
  if (raw === null || raw === "") return undefined;
  if (!/^\d{1,9}$/.test(raw)) return null;
  return Math.min(Number(raw), MAX_WAIT_MS);
}

/**
 * The replay cursor of `Last-Event-ID` or `X-Last-Event-Id`; 0 when absent.
 * @param {Request} request
 * @returns {number | null} null when malformed
 */
function cursorOf(request) {
  const raw = request.headers["last-event-id"] ?? request.headers["x-last-event-id"];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value.trim() === "") return 0;
  return /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : null;
}

/**
 * The run's identity headers; with the snapshot headers when asked (transcripts 08, 11b, 12).
 * @param {Bridge} bridge
 * @param {Run} run
 * @param {{ snapshot?: boolean, lastId?: number, replayExpiresAt?: boolean, bridgeMode?: boolean }} [options]
 */
function runHeaders(bridge, run, options = {}) {
  /** @type {Record<string, string>} */
  const headers = {
    "x-run-id": run.id,
    "x-run-request-digest": run.requestDigest,
    "x-run-provider": run.provider,
    "x-run-environment-id": run.environmentId,
    "x-run-session-id": run.sessionId,
    "x-run-execution-id": run.executionId,
  };
  if (options.bridgeMode) headers["x-bridge-mode"] = "byob";
  if (options.snapshot) {
    const snap = run.snapshot(bridge.settings, bridge.faults);
    headers["x-run-status"] = snap.status;
    headers["x-run-state"] = snap.state;
    headers["x-run-terminal"] = String(snap.terminal);
    headers["x-last-event-id"] = String(options.lastId ?? snap.lastSeq);
    if (options.replayExpiresAt && snap.replay.expiresAt !== null)
      headers["x-run-replay-expires-at"] = String(snap.replay.expiresAt);
  }
  return headers;
}

/**
 * A replay from `cursor` refused, or undefined: ahead of the run → 409, older than the replay
 * window → 410 with the first available id.
 * @param {Bridge} bridge
 * @param {Run} run
 * @param {number} cursor
 * @param {boolean} replaying whether the caller asked for a replay (a cursor or an attach)
 */
function replayRefusal(bridge, run, cursor, replaying) {
  const last = run.streamLastId;
  if (cursor > last) {
    return fail(
      409,
      `replay cursor ${cursor} is ahead of run ${JSON.stringify(run.id)} (last event id ${last})`,
      "invalid_replay_cursor",
      {
        run_id: run.id,
        last_event_id: last,
      },
    );
  }
  if (replaying && run.replayWindowExpired(bridge.settings)) {
    return fail(
      410,
      `replay cursor ${cursor} of run ${JSON.stringify(run.id)} is older than the replay window`,
      "expired_replay_cursor",
      {
        run_id: run.id,
        first_available_id: last + 1,
      },
    );
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The bridge's routes

/**
 * @param {Bridge} bridge
 * @param {Request} request
 * @returns {Promise<Answer>}
 */
async function chatCompletions(bridge, request) {
  const parsedJson = jsonBody(request);
  if (!parsedJson.ok) return fail(400, "request body is not valid JSON", "invalid_request_error");
  const parsed = ChatCompletionRequest.safeParse(parsedJson.value);
  if (!parsed.success) return invalid(parsed.error);
  const body = /** @type {Record<string, unknown>} */ (parsedJson.value);
  if (parsed.data.stream !== true)
    return fail(400, "the stand-in serves stream: true only", "invalid_request_error", { param: "stream" });
  const backend = backendOf(parsed.data.model);
  if (!backend)
    return fail(404, `model ${JSON.stringify(parsed.data.model)} not found`, "not_found_error", { param: "model" });
  const identity = [parsed.data.provider, parsed.data.environment_id, parsed.data.execution_id];
  if (identity.some((v) => v !== undefined) && identity.some((v) => v === undefined)) {
    return fail(
      400,
      "provider, environment_id and execution_id go together: all three or none",
      "invalid_request_error",
    );
  }
  if (!isEmptyInteractions(parsed.data.interactions)) {
    return fail(400, "one-shot runs take no interactions; use a retained session", "invalid_request_error", {
      param: "interactions",
    });
  }
  const header = request.headers["x-run-id"];
  const headerRunId = Array.isArray(header) ? header[0] : header;
  if (headerRunId !== undefined && parsed.data.run_id !== undefined && headerRunId !== parsed.data.run_id) {
    return fail(400, "X-Run-Id and run_id name different runs", "invalid_request_error");
  }
  if (
    headerRunId !== undefined &&
    (headerRunId.length === 0 || headerRunId.length > 512 || headerRunId.trim() !== headerRunId)
  ) {
    return fail(400, "X-Run-Id is not a valid id", "invalid_request_error");
  }
  const cursor = cursorOf(request);
  if (cursor === null) return fail(400, "Last-Event-ID must be a whole number", "invalid_request_error");

  const runId = parsed.data.run_id ?? headerRunId ?? randomUUID();
  const started = bridge.startOrAttachOneShot({ ...body, run_id: runId }, backend);
  if (!started.ok) return refused(started);
  const { run, attached } = started;
  if (attached) {
    const refusal = replayRefusal(bridge, run, cursor, true);
    if (refusal) return refusal;
  }
  return {
    kind: "stream",
    open: (res) =>
      streamRun(bridge, res, {
        run,
        cursor: attached ? cursor : 0,
        route: "chat",
        model: parsed.data.model,
        headers: runHeaders(bridge, run, { bridgeMode: true }),
      }),
  };
}

/** @param {unknown} interactions */
function isEmptyInteractions(interactions) {
  if (interactions === undefined || interactions === null) return true;
  if (Array.isArray(interactions)) return interactions.length === 0;
  if (typeof interactions === "object") return Object.keys(interactions).length === 0;
  return false;
}

/**
 * @param {Bridge} bridge
 * @param {string} runId
 * @param {URLSearchParams} query
 * @returns {Promise<Answer>}
 */
async function runSnapshot(bridge, runId, query) {
  const run = bridge.runs.get(runId);
  if (!run) return fail(404, "run not found", "not_found_error");
  const wait = waitMs(query);
  if (wait === null) return fail(400, "wait_ms must be a whole number of milliseconds", "invalid_request_error");
  if (wait) await run.waitTerminal(wait);
  return ok(
    200,
    run.snapshot(bridge.settings, bridge.faults),
    runHeaders(bridge, run, { snapshot: true, replayExpiresAt: true }),
  );
}

/**
 * @param {Bridge} bridge
 * @param {string} runId
 * @param {Request} request
 * @returns {Answer}
 */
function runEvents(bridge, runId, request) {
  const run = bridge.runs.get(runId);
  if (!run) return fail(404, "run not found", "not_found_error");
  const cursor = cursorOf(request);
  if (cursor === null) return fail(400, "Last-Event-ID must be a whole number", "invalid_request_error");
  const refusal = replayRefusal(bridge, run, cursor, true);
  if (refusal) return refusal;
  const headers = runHeaders(bridge, run, { snapshot: true, lastId: run.streamLastId });
  return {
    kind: "stream",
    open: (res) => streamRun(bridge, res, { run, cursor, route: "run-events", model: "cli-bridge", headers }),
  };
}

/**
 * `POST /v1/runs/:runId/cancel`: an empty body (legacy) or a digest-bound cancellation request.
 * @param {Bridge} bridge
 * @param {string} runId
 * @param {Request} request
 * @param {{ sessionId?: string }} [scope] set by the session cancel route, which takes only the digest-bound form
 * @returns {Promise<Answer>}
 */
async function cancelRun(bridge, runId, request, scope = {}) {
  const parsedJson = jsonBody(request);
  if (!parsedJson.ok) return fail(400, "request body is not valid JSON", "invalid_request_error");
  const wait = waitMs(request.query);
  if (wait === null) return fail(400, "wait_ms must be a whole number of milliseconds", "invalid_request_error");

  /** @type {z.infer<typeof CancellationRequest> | undefined} */
  let command;
  if (parsedJson.value !== undefined || scope.sessionId !== undefined) {
    const parsed = CancellationRequest.safeParse(parsedJson.value);
    if (!parsed.success) return invalid(parsed.error);
    command = parsed.data;
    const expected = canonicalDigest(
      stripUndefined({ operationId: command.operationId, run: command.run, reason: command.reason }),
    );
    if (expected !== command.requestDigest) {
      return fail(
        400,
        "requestDigest is not the canonical digest of {operationId, run, reason?}",
        "invalid_request_error",
        { param: "requestDigest" },
      );
    }
    if (scope.sessionId !== undefined) runId = command.run.runId;
    else if (command.run.runId !== runId)
      return fail(400, "run.runId does not name the run in the path", "invalid_request_error");
  }

  const found = bridge.runs.get(runId);
  const acknowledgement = command !== undefined && bridge.variants.cancelAnswer === "acknowledgement";
  // A run lost in a crash has no process to cancel. The legacy cancel answers 404 run not found;
  // a digest-bound one is taken and never ends it (docs/cli-bridge-wire.md, "Restarts, shutdowns
  // and session identity"; its body is a guess).
  if (
    found?.status === "unknown" &&
    command &&
    (scope.sessionId === undefined || found.sessionId === scope.sessionId)
  ) {
    const headers = { ...runHeaders(bridge, found, { snapshot: true, replayExpiresAt: true }), "retry-after": "1" };
    if (acknowledgement) {
      return ok(
        202,
        {
          operationId: command.operationId,
          requestDigest: command.requestDigest,
          run: command.run,
          status: "accepted",
          effect: "unknown",
        },
        headers,
      );
    }
    const body = {
      cancelled: false,
      cancel_requested: false,
      terminal: false,
      run: found.snapshot(bridge.settings, bridge.faults),
    };
    return ok(202, { ...body, operationId: command.operationId, requestDigest: command.requestDigest }, headers);
  }
  const run = found?.status === "unknown" ? undefined : found;
  if (!run || (scope.sessionId !== undefined && run.sessionId !== scope.sessionId)) {
    if (acknowledgement && command) {
      return ok(404, {
        operationId: command.operationId,
        requestDigest: command.requestDigest,
        run: command.run,
        status: "unknown",
        effect: "unknown",
        message: "run not found",
        retryable: false,
      });
    }
    return fail(404, "run not found", "not_found_error");
  }

  let replayed = false;
  if (command) {
    const ref = command.run;
    if (
      ref.provider !== run.provider ||
      ref.environmentId !== run.environmentId ||
      ref.sessionId !== run.sessionId ||
      ref.executionId !== run.executionId ||
      ref.requestDigest !== run.requestDigest
    ) {
      return fail(409, `run ${JSON.stringify(run.id)} is bound to other coordinates`, "run_identity_conflict", {
        run_id: run.id,
        expected_request_digest: run.requestDigest,
        received_request_digest: ref.requestDigest,
      });
    }
    const previous = bridge.cancelOperations.get(command.operationId);
    if (previous && previous.requestDigest !== command.requestDigest) {
      if (acknowledgement) {
        return ok(409, {
          operationId: command.operationId,
          requestDigest: command.requestDigest,
          run: command.run,
          status: "conflict",
          effect: "unknown",
          existingRequestDigest: previous.requestDigest,
        });
      }
      return fail(
        409,
        `operation ${JSON.stringify(command.operationId)} was used for another cancellation`,
        "cancellation_conflict",
        {
          existing_request_digest: previous.requestDigest,
        },
      );
    }
    replayed = previous !== undefined;
    if (!previous)
      bridge.cancelOperations.set(command.operationId, { requestDigest: command.requestDigest, runId: run.id });
  }

  const requested = bridge.requestCancel(run);
  if (wait) await run.waitTerminal(wait);
  const headers = runHeaders(bridge, run, { snapshot: true, replayExpiresAt: true });
  const status = run.terminal ? 200 : 202;
  if (!run.terminal) headers["retry-after"] = "1";
  const snapshot = run.snapshot(bridge.settings, bridge.faults);
  if (acknowledgement && command) {
    const effect = !run.terminal ? "cancel_requested" : run.status === "cancelled" ? "cancelled" : "not_live";
    return ok(
      status,
      {
        operationId: command.operationId,
        requestDigest: command.requestDigest,
        run: command.run,
        status: replayed ? "replayed" : "accepted",
        effect,
      },
      headers,
    );
  }
  const legacy = {
    cancelled: run.status === "cancelled",
    cancel_requested: requested,
    terminal: run.terminal,
    run: snapshot,
  };
  return ok(
    status,
    command ? { ...legacy, operationId: command.operationId, requestDigest: command.requestDigest } : legacy,
    headers,
  );
}

/**
 * @param {Bridge} bridge
 * @param {string} runId
 * @param {string} interactionId
 * @param {Request} request
 * @returns {Answer}
 */
function respondRoute(bridge, runId, interactionId, request) {
  const parsedJson = jsonBody(request);
  if (!parsedJson.ok) return fail(400, "request body is not valid JSON", "invalid_request_error");
  const parsed = InteractionResponseCommand.safeParse(parsedJson.value);
  if (!parsed.success) return invalid(parsed.error);
  const outcome = respond(bridge, runId, interactionId, parsed.data);
  if (!outcome.ok) return refused(outcome);
  return ok(ackHttpStatus(bridge, /** @type {string} */ (outcome.ack.status)), outcome.ack);
}

/**
 * @param {Bridge} bridge
 * @param {string} status
 */
function ackHttpStatus(bridge, status) {
  if (bridge.variants.respondStatus !== "by-status") return 200;
  switch (status) {
    case "accepted":
    case "already_resolved_same":
      return 200;
    case "unknown_run":
    case "unknown_interaction":
      return 404;
    case "already_resolved_different":
    case "binding_mismatch":
      return 409;
    case "cancelled":
    case "expired":
      return 410;
    default:
      return 400;
  }
}

/**
 * @param {Bridge} bridge
 * @param {Request} request
 * @returns {Promise<Answer>}
 */
async function createSession(bridge, request) {
  const parsedJson = jsonBody(request);
  if (!parsedJson.ok) return fail(400, "request body is not valid JSON", "invalid_request_error");
  const parsed = SessionCreateRequest.safeParse(parsedJson.value);
  if (!parsed.success) return invalid(parsed.error);
  const backend = backendOf(parsed.data.model);
  if (!backend)
    return fail(404, `model ${JSON.stringify(parsed.data.model)} not found`, "not_found_error", { param: "model" });
  if (!("nativeContinuation" in capabilitiesFor(backend, bridge.variants.piTransport))) {
    return fail(
      501,
      `backend ${JSON.stringify(backend)} does not prove native retained-session support`,
      "capability_denied",
    );
  }
  if (parsed.data.execution && parsed.data.execution.kind !== "host") {
    return fail(400, 'retained native sessions require execution.kind "host"', "invalid_request_error", {
      param: "execution",
    });
  }
  // The backend must answer its health probe first (it needs a process slot for a moment).
  const unready = await probeHealth(bridge.executor, backend, bridge.settings);
  if (unready) return fail(unready.status, unready.message, unready.type);
  const created = bridge.createSession(/** @type {Record<string, unknown>} */ (parsedJson.value), backend);
  if (!created.ok) return refused(created);
  return ok(201, created.session.view(bridge.settings, bridge.faults));
}

/**
 * @param {Bridge} bridge
 * @param {Session} session
 * @param {Request} request
 * @returns {Promise<Answer>}
 */
async function startTurn(bridge, session, request) {
  const parsedJson = jsonBody(request);
  if (!parsedJson.ok) return fail(400, "request body is not valid JSON", "invalid_request_error");
  const parsed = TurnRequest.safeParse(parsedJson.value);
  if (!parsed.success) return invalid(parsed.error);
  const started = await bridge.startTurn(session, /** @type {Record<string, unknown>} */ (parsedJson.value));
  if (!started.ok) return refused(started);
  const { settings, faults } = bridge;
  return ok(202, {
    session: session.view(settings, faults, { withRun: true }),
    run: started.admitted,
    context_boundary: started.boundary,
  });
}

/**
 * Messages (assistant parts in their final state), interaction requests and usage records of a
 * session (transcript 31).
 * @param {Session} session
 */
function transcript(session) {
  /** @type {Map<string, { id: string, role: string, parts: Map<string, unknown> }>} */
  const messages = new Map();
  /** @type {unknown[]} */
  const interactions = [];
  /** @type {unknown[]} */
  const usage = [];
  for (const { event } of session.log) {
    if (event.type === "message.part.updated") {
      const part = /** @type {{ id: string, messageID: string }} */ (event.part);
      let message = messages.get(part.messageID);
      if (!message)
        messages.set(part.messageID, (message = { id: part.messageID, role: "assistant", parts: new Map() }));
      message.parts.set(part.id, part);
    } else if (event.type === "interaction") {
      interactions.push(event.request);
    } else if (event.type === "raw") {
      const raw = /** @type {{ type?: string }} */ (event.event);
      if (raw.type === "usage") usage.push(raw);
    }
  }
  return {
    session_id: session.id,
    messages: [...messages.values()].map((m) => ({ id: m.id, role: m.role, parts: [...m.parts.values()] })),
    interactions,
    usage,
    event_count: session.log.length,
    last_event_id: String(session.log.length),
  };
}

/**
 * @param {Bridge} bridge
 * @param {Session} session
 * @param {Request} request
 * @returns {Answer}
 */
function sessionEvents(bridge, session, request) {
  const cursor = cursorOf(request);
  if (cursor === null) return fail(400, "Last-Event-ID must be a whole number", "invalid_request_error");
  if (cursor > session.log.length) {
    return fail(
      409,
      `replay cursor ${cursor} is ahead of session ${JSON.stringify(session.id)} (last event id ${session.log.length})`,
      "invalid_replay_cursor",
      {
        session_id: session.id,
        last_event_id: session.log.length,
      },
    );
  }
  if (session.replayExpired) {
    return fail(
      410,
      `replay cursor ${cursor} of session ${JSON.stringify(session.id)} is older than the replay window`,
      "expired_replay_cursor",
      {
        session_id: session.id,
        first_available_id: session.log.length + 1,
      },
    );
  }
  return { kind: "stream", open: (res) => streamSession(bridge, res, { session, cursor }) };
}

/**
 * @param {Bridge} bridge
 * @param {Session} session
 */
function detachSession(bridge, session) {
  let detached = 0;
  for (const writer of [...bridge.writers]) {
    if (writer.sessionId === session.id) {
      writer.close();
      detached++;
    }
  }
  return ok(200, { id: session.id, object: "session", detached });
}

/**
 * @param {Bridge} bridge
 * @param {string} sessionId
 */
function closeSession(bridge, sessionId) {
  const session = bridge.sessions.get(sessionId);
  if (session) {
    // A running turn is not cancelled by a close: the bridge refuses it (RetainedSessionService.close).
    if (session.busy)
      return fail(409, "active retained runs must be cancelled before the session can close", "active_run");
    session.status = "closed";
    session.endProcess();
    session.touch();
    return ok(200, session.view(bridge.settings, bridge.faults));
  }
  const oneShot = bridge.oneShotSessions.get(sessionId);
  if (!oneShot) return fail(404, "session not found", "not_found_error");
  oneShot.closed = true;
  oneShot.closes++;
  return ok(200, { id: sessionId, object: "session", status: "closed" });
}

// ---------------------------------------------------------------------------------------------
// Dispatch

/**
 * The route of a request, as counted: `METHOD /pattern`, and its handler.
 * @param {Bridge} bridge
 * @param {Request} request
 * @returns {{ route: string, handle: () => Answer | Promise<Answer> } | undefined}
 */
function matchBridgeRoute(bridge, request) {
  const { method, segments: s, query } = request;
  const at = (/** @type {string} */ pattern, /** @type {() => Answer | Promise<Answer>} */ handle) => ({
    route: `${method} ${pattern}`,
    handle,
  });
  /** @param {(session: Session) => Answer | Promise<Answer>} fn */
  const withSession = (fn) => () => {
    const session = bridge.sessions.get(/** @type {string} */ (s[2]));
    return session ? fn(session) : fail(404, "session not found", "not_found_error");
  };
  if (s[0] !== "v1") return undefined;
  const n = s.length;
  if (method === "GET" && n === 2 && s[1] === "models") return at("/v1/models", () => ok(200, modelList()));
  if (method === "GET" && n === 2 && s[1] === "capabilities") {
    return at("/v1/capabilities", async () => {
      const model = query.get("model");
      if (!model)
        return fail(400, "the model query parameter is required", "invalid_request_error", { param: "model" });
      const backend = backendOf(model);
      if (!backend) return fail(404, `model ${JSON.stringify(model)} not found`, "not_found_error", { param: "model" });
      // A capability read probes the backend's health, which needs a process slot for a moment.
      const unready = await probeHealth(bridge.executor, backend, bridge.settings);
      if (unready) return fail(unready.status, unready.message, unready.type);
      /** @type {Record<string, unknown>} */
      const doc = capabilitiesFor(backend, bridge.variants.piTransport);
      const changed = bridge.faults.capabilities?.[model];
      for (const field of changed?.omit ?? []) delete doc[field];
      return ok(200, Object.assign(doc, changed?.set));
    });
  }
  if (method === "POST" && n === 3 && s[1] === "chat" && s[2] === "completions")
    return at("/v1/chat/completions", () => chatCompletions(bridge, request));
  if (s[1] === "runs" && n >= 3) {
    const runId = /** @type {string} */ (s[2]);
    if (method === "GET" && n === 3) return at("/v1/runs/:runId", () => runSnapshot(bridge, runId, query));
    if (method === "GET" && n === 4 && s[3] === "events")
      return at("/v1/runs/:runId/events", () => runEvents(bridge, runId, request));
    if (method === "POST" && n === 4 && s[3] === "cancel")
      return at("/v1/runs/:runId/cancel", () => cancelRun(bridge, runId, request));
    if (method === "POST" && n === 6 && s[3] === "interactions" && s[5] === "respond") {
      return at("/v1/runs/:runId/interactions/:interactionId/respond", () =>
        respondRoute(bridge, runId, /** @type {string} */ (s[4]), request),
      );
    }
  }
  if (s[1] === "sessions") {
    if (method === "POST" && n === 2) return at("/v1/sessions", () => createSession(bridge, request));
    const sessionId = /** @type {string} */ (s[2]);
    if (method === "GET" && (n === 3 || (n === 4 && s[3] === "status"))) {
      return at(
        n === 3 ? "/v1/sessions/:id" : "/v1/sessions/:id/status",
        withSession((session) => ok(200, session.view(bridge.settings, bridge.faults, { withRun: true }))),
      );
    }
    if (n === 4) {
      const sub = s[3];
      if (method === "POST" && sub === "turns")
        return at(
          "/v1/sessions/:id/turns",
          withSession((session) => startTurn(bridge, session, request)),
        );
      if (method === "GET" && sub === "events")
        return at(
          "/v1/sessions/:id/events",
          withSession((session) => sessionEvents(bridge, session, request)),
        );
      if (method === "GET" && sub === "transcript")
        return at(
          "/v1/sessions/:id/transcript",
          withSession((session) => ok(200, transcript(session))),
        );
      if (method === "POST" && sub === "detach")
        return at(
          "/v1/sessions/:id/detach",
          withSession((session) => detachSession(bridge, session)),
        );
      if (method === "POST" && sub === "close")
        return at("/v1/sessions/:id/close", () => closeSession(bridge, sessionId));
      if (method === "POST" && sub === "cancel") {
        return at(
          "/v1/sessions/:id/cancel",
          withSession((session) =>
            request.raw.trim() === ""
              ? fail(400, "cancelling a session takes a digest-bound cancellation request", "invalid_request_error")
              : cancelRun(bridge, "", request, { sessionId: session.id }),
          ),
        );
      }
    }
  }
  return undefined;
}

/**
 * Answers one request to the bridge's routes (auth, routing, the header delay fault).
 * @param {Bridge} bridge
 * @param {string} token
 * @param {Request} request
 * @param {ServerResponse} res
 */
export async function handleBridge(bridge, token, request, res) {
  if (request.method === "GET" && request.path === "/health") {
    bridge.countRequest("GET /health");
    sendJson(
      res,
      200,
      healthBody({ runsRetained: bridge.runs.size, executor: bridge.executor.snapshot(bridge.settings) }),
    );
    return;
  }
  const authorization = request.headers.authorization;
  if (bridge.faults.rotateToken || authorization !== `Bearer ${token}`) {
    bridge.countRequest("401");
    sendJson(res, 401, UNAUTHORIZED_BODY);
    return;
  }
  const match = matchBridgeRoute(bridge, request);
  if (!match) {
    bridge.countRequest("404");
    sendJson(res, 404, errorBody(`no route ${request.method} ${request.path}`, "not_found_error"));
    return;
  }
  bridge.countRequest(match.route);
  const delayMs = bridge.takeHeaderDelay();
  const answer = await match.handle();
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
  if (res.destroyed) return;
  if (answer.kind === "stream") answer.open(res);
  else sendJson(res, answer.status, answer.body, answer.runHeaders);
}
