#!/usr/bin/env node
// @ts-check
/**
 * The CLI Bridge stand-in: a plain Node HTTP server that behaves like a real CLI Bridge on the
 * wire (routes, headers, SSE framing, run identity, replay, cancel, retained sessions and
 * permission asks), driven by scripted Codex and Pi CLIs. It is an independent peer of the
 * gateway: it imports nothing from src/. See README.md beside it.
 *
 *   node test/cli-bridge/standin.mjs --port 3344 --token xyz
 *
 * Paths under `/i/<name>/` reach a separate stand-in instance of that name (its own runs, sessions,
 * counters, faults, variants and settings), so a test that sets faults can keep them to itself.
 */
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { Bridge } from "./bridge.mjs";
import { handleControl } from "./control.mjs";
import { handleBridge, readBody } from "./routes.mjs";
import { errorBody, sendJson } from "./wire.mjs";

/** @typedef {import("./runs.mjs").Settings} Settings */

/** The recorded bridge's keepalive interval. */
const DEFAULT_KEEPALIVE_MS = 15_000;
/** The gap between scripted chunks when the prompt sets none ([slow:N] does). */
const DEFAULT_CHUNK_DELAY_MS = 5;
/** How long a killed CLI takes to exit: long enough that a cancel without wait_ms answers 202. */
const DEFAULT_CANCEL_DELAY_MS = 100;
/** Replay retention after a run ends (transcript 08: expiresAt = endedAt + 1 h). */
const DEFAULT_REPLAY_WINDOW_MS = 3_600_000;
/** The bridge's defaults (its src/executors/host.ts and src/backends/health.ts): 4 process slots, a 60 s wait for one, 3.5 s for a probe. */
const DEFAULT_MAX_CONCURRENCY = 4;
const DEFAULT_ACQUIRE_DEADLINE_MS = 60_000;
const DEFAULT_HEALTH_PROBE_TIMEOUT_MS = 3_500;

const INSTANCE_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Starts a stand-in. `root`: settings of the root instance only, over the others' (instances keep
 * the defaults).
 * @param {{ port?: number, host?: string, token?: string, root?: Partial<Settings> } & Partial<Settings>} [options]
 * @returns {Promise<{ url: string, port: number, close(): Promise<void> }>}
 */
export async function startStandIn({
  port = 0,
  host = "127.0.0.1",
  token = "standin-token",
  root = {},
  ...settings
} = {}) {
  /** @type {Settings} */
  const defaults = {
    keepaliveMs: settings.keepaliveMs ?? DEFAULT_KEEPALIVE_MS,
    chunkDelayMs: settings.chunkDelayMs ?? DEFAULT_CHUNK_DELAY_MS,
    cancelDelayMs: settings.cancelDelayMs ?? DEFAULT_CANCEL_DELAY_MS,
    replayWindowMs: settings.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
    maxConcurrency: settings.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY,
    acquireDeadlineMs: settings.acquireDeadlineMs ?? DEFAULT_ACQUIRE_DEADLINE_MS,
    healthProbeTimeoutMs: settings.healthProbeTimeoutMs ?? DEFAULT_HEALTH_PROBE_TIMEOUT_MS,
    // A bridge set up for Pi as the gateway's README says (the real default is `off`).
    jailMode: settings.jailMode ?? "fs-jail",
  };
  /** @type {Map<string, Bridge>} */
  const instances = new Map([["", new Bridge({ ...defaults, ...root })]]);

  const server = createServer(
    (/** @type {import("node:http").IncomingMessage} */ req, /** @type {import("node:http").ServerResponse} */ res) => {
      handle(req, res).catch((error) => {
        console.error("cli-bridge stand-in:", error);
        if (!res.headersSent) sendJson(res, 500, errorBody("stand-in failure", "internal_error"));
        else res.destroy();
      });
    },
  );

  /**
   * @param {import("node:http").IncomingMessage} req
   * @param {import("node:http").ServerResponse} res
   */
  async function handle(req, res) {
    const url = new URL(req.url ?? "/", "http://stand-in.local");
    let segments;
    try {
      segments = url.pathname
        .split("/")
        .filter(Boolean)
        .map((s) => decodeURIComponent(s));
    } catch {
      return sendJson(res, 400, errorBody("malformed path", "invalid_request_error"));
    }
    let instance = "";
    if (segments[0] === "i") {
      if (!segments[1] || !INSTANCE_NAME.test(segments[1]))
        return sendJson(res, 404, errorBody("no such instance path", "not_found_error"));
      instance = segments[1];
      segments = segments.slice(2);
    }
    let bridge = instances.get(instance);
    if (!bridge) instances.set(instance, (bridge = new Bridge(defaults)));
    // A bridge between a restart's stop and its start answers nothing: the connection is reset.
    if (bridge.down && segments[0] !== "_standin") {
      req.socket.destroy();
      return;
    }

    const raw = await readBody(req);
    if (raw === undefined)
      return sendJson(res, 413, errorBody("request body is larger than 1 MiB", "request_too_large"));
    const request = {
      method: req.method ?? "GET",
      path: `/${segments.join("/")}`,
      segments,
      query: url.searchParams,
      headers: req.headers,
      raw,
    };
    if (segments[0] === "_standin") return handleControl(bridge, request, res);
    return handleBridge(bridge, token, request, res);
  }

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(undefined));
  });
  const address = server.address();
  const boundPort = typeof address === "object" && address ? address.port : port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${boundPort}`,
    port: boundPort,
    close() {
      for (const bridge of instances.values()) bridge.reset();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * `--port N --host H --token T --keepalive-ms N --chunk-delay-ms N --cancel-delay-ms N --replay-window-ms N
 *  --max-concurrency N --acquire-deadline-ms N --health-probe-timeout-ms N --jail-mode off|write-jail|fs-jail`
 * @param {string[]} argv
 */
function parseArgs(argv) {
  /** @type {Record<string, string>} */
  const flags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m?.[1]) throw new Error(`unexpected argument ${arg}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value`);
    flags[m[1]] = value;
  }
  /** @param {string} name */
  const int = (name) => {
    const v = flags[name];
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new Error(`--${name} must be a whole number`);
    return Number(v);
  };
  const known = [
    "port",
    "host",
    "token",
    "keepalive-ms",
    "chunk-delay-ms",
    "cancel-delay-ms",
    "replay-window-ms",
    "max-concurrency",
    "acquire-deadline-ms",
    "health-probe-timeout-ms",
    "jail-mode",
  ];
  for (const name of Object.keys(flags)) if (!known.includes(name)) throw new Error(`unknown option --${name}`);
  return {
    port: int("port") ?? 3344,
    host: flags.host ?? "127.0.0.1",
    token: flags.token ?? process.env.CLI_BRIDGE_TOKEN ?? "standin-token",
    keepaliveMs: int("keepalive-ms"),
    chunkDelayMs: int("chunk-delay-ms"),
    cancelDelayMs: int("cancel-delay-ms"),
    replayWindowMs: int("replay-window-ms"),
    maxConcurrency: int("max-concurrency"),
    acquireDeadlineMs: int("acquire-deadline-ms"),
    healthProbeTimeoutMs: int("health-probe-timeout-ms"),
    jailMode: jailModeOf(flags["jail-mode"]),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const options = parseArgs(process.argv.slice(2));
    const standIn = await startStandIn(stripUnset(options));
    console.log(`CLI Bridge stand-in listening on ${standIn.url}`);
    const stop = () => void standIn.close().then(() => process.exit(0));
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  }
}

/**
 * @param {string | undefined} value
 * @returns {"off" | "write-jail" | "fs-jail" | undefined}
 */
function jailModeOf(value) {
  if (value === undefined || value === "off" || value === "write-jail" || value === "fs-jail") return value;
  throw new Error("--jail-mode must be off, write-jail or fs-jail");
}

/**
 * @template {Record<string, unknown>} T
 * @param {T} record
 */
function stripUnset(record) {
  return /** @type {T} */ (Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)));
}
