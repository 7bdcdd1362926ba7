// @ts-check
/**
 * The stand-in's control routes (`/_standin/*`): not part of the bridge's API. Tests read counters
 * and runs, set faults, variants and settings, and reset here. A call that is not GET must carry
 * `application/json` (415 otherwise, before anything changes), so a cross-site form cannot fault
 * or reset a developer's stand-in.
 */
import { z } from "zod";
import { jsonBody } from "./routes.mjs";
import { Faults, ResetBody, RestartBody, Settings, Variants } from "./schemas.mjs";
import { errorBody, sendJson } from "./wire.mjs";

/** @typedef {import("./bridge.mjs").Bridge} Bridge */
/** @typedef {import("./routes.mjs").Request} Request */
/** @typedef {import("node:http").ServerResponse} ServerResponse */

/**
 * The settings a partial settings body sets.
 * @param {z.infer<typeof Settings>} partial
 * @returns {Partial<import("./runs.mjs").Settings>}
 */
function settingsSet(partial) {
  return Object.fromEntries(Object.entries(partial).filter(([, v]) => v !== undefined));
}

/** @param {string | undefined} contentType */
function isJson(contentType) {
  return contentType !== undefined && contentType.split(";")[0]?.trim().toLowerCase() === "application/json";
}

/**
 * Answers one control request.
 * @param {Bridge} bridge
 * @param {Request} request
 * @param {ServerResponse} res
 */
export function handleControl(bridge, request, res) {
  const { method, segments: s } = request;
  const contentType = request.headers["content-type"];
  if (method !== "GET" && method !== "HEAD" && !isJson(Array.isArray(contentType) ? contentType[0] : contentType)) {
    sendJson(res, 415, errorBody("control routes take application/json bodies only", "unsupported_media_type"));
    return;
  }
  /** @type {unknown} */
  let body;
  if (method === "POST") {
    const parsed = jsonBody(request);
    if (!parsed.ok) return sendJson(res, 400, errorBody("request body is not valid JSON", "invalid_request_error"));
    body = parsed.value;
  }
  /**
   * @template T
   * @param {z.ZodType<T>} schema
   * @param {(value: T) => unknown} apply
   */
  const post = (schema, apply) => {
    const parsed = schema.safeParse(body);
    if (!parsed.success) return sendJson(res, 400, errorBody(z.prettifyError(parsed.error), "invalid_request_error"));
    sendJson(res, 200, apply(parsed.data));
  };
  const name = s[1];
  if (method === "GET" && s.length === 2 && name === "counters") {
    return sendJson(res, 200, { counters: bridge.counters, openStreams: bridge.writers.size });
  }
  if (s.length === 2 && name === "faults") {
    if (method === "GET") return sendJson(res, 200, { faults: bridge.faults });
    if (method === "POST") return post(Faults, (faults) => (bridge.setFaults(faults), { faults }));
  }
  if (s.length === 2 && name === "variants") {
    if (method === "GET") return sendJson(res, 200, { variants: bridge.variants });
    if (method === "POST") return post(Variants, (variants) => ((bridge.variants = variants), { variants }));
  }
  if (s.length === 2 && name === "settings") {
    if (method === "GET") return sendJson(res, 200, { settings: bridge.settings });
    if (method === "POST")
      return post(Settings, (settings) => (bridge.applySettings(settingsSet(settings)), { settings: bridge.settings }));
  }
  if (method === "POST" && s.length === 2 && name === "reset")
    return post(ResetBody, () => (bridge.reset(), { ok: true }));
  if (method === "POST" && s.length === 2 && name === "restart") {
    return post(
      RestartBody,
      (options) => (
        bridge.restart(options),
        { restarted: true, crash: options.crash === true, downUntil: new Date(bridge.downUntil).toISOString() }
      ),
    );
  }
  if (method === "GET" && s.length === 3 && name === "runs") {
    const run = bridge.runs.get(/** @type {string} */ (s[2]));
    if (!run) return sendJson(res, 404, errorBody("run not found", "not_found_error"));
    return sendJson(res, 200, {
      runId: run.id,
      kind: run.kind,
      model: run.model,
      status: run.status,
      provider: run.provider,
      sessionId: run.sessionId,
      executionId: run.executionId,
      turnId: run.turnId ?? null,
      requestDigest: run.requestDigest,
      request: run.request,
      readers: run.readers,
      interactions: [...run.interactions.values()].map((i) => ({ id: i.id, state: i.state, request: i.request })),
    });
  }
  if (method === "GET" && s.length === 3 && name === "sessions") {
    const session = bridge.sessions.get(/** @type {string} */ (s[2]));
    const oneShot = bridge.oneShotSessions.get(/** @type {string} */ (s[2]));
    if (!session && oneShot) {
      const runs = [...bridge.runs.values()]
        .filter((r) => r.kind === "one-shot" && r.sessionId === s[2])
        .map((r) => r.id);
      return sendJson(res, 200, {
        sessionId: s[2],
        api: "legacy",
        status: oneShot.closed ? "closed" : "open",
        closes: oneShot.closes,
        runs,
      });
    }
    if (!session) return sendJson(res, 404, errorBody("session not found", "not_found_error"));
    return sendJson(res, 200, {
      sessionId: session.id,
      api: "retained",
      status: session.status,
      request: session.createBody,
      runs: [...bridge.runs.values()].filter((r) => r.session === session).map((r) => r.id),
    });
  }
  sendJson(res, 404, errorBody(`no control route ${method} ${request.path}`, "not_found_error"));
}
