#!/usr/bin/env node
// Runs the gateway locally with `wrangler dev` (the `local` environment of wrangler.toml, which alone
// has the Sandbox emulator) against the emulator, or against the provider the configuration names.
// No account, no login: dev login is on (loopback only).
//
// Configuration, each later source winning over the earlier ones for the names it sets:
//   1. fixed local-only secrets (AUTH_JWT_SECRET, SESSION_ID_SECRET), stable across restarts so
//      local conversations stay reachable;
//   2. the dev vars file wrangler would read (`.dev.vars.local`, else `.dev.vars`), or the files
//      given with `--env-file`: a file that sets only some names keeps the defaults for the others;
//   3. the gateway's secrets from this process's environment (SECRET_NAMES), so a bearer token
//      need not be written in a file or in any process's arguments;
//   4. `--var NAME:value` arguments (wrangler's own: visible to every process, so not for secrets).
// 1–3 reach wrangler as one private env file that is never on disk (a named pipe served from this
// process's memory: scripts/private-env.mjs), and the secrets taken from the environment are not
// passed on in wrangler's.
//
// Stopping: a SIGINT, SIGTERM or SIGHUP to this process is passed to wrangler, and this process exits
// when wrangler has; so does this process losing its parent (npm killed with SIGKILL, say).
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { privateEnvFile, removeLeftovers } from "./private-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const port = process.env.PORT ?? "8787";

const LOCAL_DEFAULTS = {
  AUTH_JWT_SECRET: "local-development-only-jwt-secret-0123456789",
  SESSION_ID_SECRET: "local-development-only-session-secret-0123456789",
};
/** The gateway's secrets (docs/configuration.md#configuration) read from the environment. */
const SECRET_NAMES = ["AUTH_JWT_SECRET", "SESSION_ID_SECRET", "TANGLE_API_KEY", "CLI_BRIDGE_TOKEN"];

/**
 * Reads a dotenv file as wrangler does (`NAME=value`, optional `export`, values quoted with ' " or `,
 * `#` comments after unquoted values, `\n` in double quotes a line break).
 * @param {string} text
 * @returns {Record<string, string>}
 */
function parseDotenv(text) {
  /** @type {Record<string, string>} */
  const out = {};
  const line =
    /^\s*(?:export\s+)?([\w.-]+)\s*=[ \t]*('(?:\\'|[^'])*'|"(?:\\"|[^"])*"|`(?:\\`|[^`])*`|[^#\r\n]*)?[ \t]*(?:#.*)?$/gm;
  for (const match of text.replace(/\r\n?/g, "\n").matchAll(line)) {
    const name = /** @type {string} */ (match[1]);
    let value = (match[2] ?? "").trim();
    const quote = value[0];
    if ((quote === "'" || quote === '"' || quote === "`") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
    }
    out[name] = value;
  }
  return out;
}

/**
 * One `NAME=value` line that wrangler's env file reader gives back exactly: a quote the value does
 * not contain, and `$` escaped (env files are expanded, `.dev.vars` is not).
 * @param {string} name
 * @param {string} value
 */
function envLine(name, value) {
  const escaped = value.replace(/\$/g, "\\$");
  const quote = ["'", "`"].find((q) => !value.includes(q) && !value.includes("\n") && !value.includes("\r"));
  if (quote) return `${name}=${quote}${escaped}${quote}`;
  if (!value.includes('"') && !/\\[nr]/.test(value))
    return `${name}="${escaped.replace(/\n/g, "\\n").replace(/\r/g, "\\r")}"`;
  throw new Error(
    `${name}: its value holds ', \` and " (or a line break with a quote): it cannot be passed to wrangler; change it`,
  );
}

// `--env-file` given to this script replaces the dev vars file, as it does for wrangler.
const passed = [];
const envFiles = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const arg = /** @type {string} */ (argv[i]);
  if (arg === "--env-file" && argv[i + 1] !== undefined) envFiles.push(resolve(/** @type {string} */ (argv[++i])));
  else if (arg.startsWith("--env-file=")) envFiles.push(resolve(arg.slice("--env-file=".length)));
  else passed.push(arg);
}
if (envFiles.length === 0) {
  const devVars = [".dev.vars.local", ".dev.vars"].map((name) => join(root, name)).find((path) => existsSync(path));
  if (devVars) envFiles.push(devVars);
}

/** @type {Record<string, string>} */
const vars = { ...LOCAL_DEFAULTS };
for (const path of envFiles) Object.assign(vars, parseDotenv(readFileSync(path, "utf8")));
const childEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "true",
};
for (const name of SECRET_NAMES) {
  const value = process.env[name];
  if (value !== undefined && value !== "") vars[name] = value;
  delete childEnv[name];
}

// What killed starts left behind (their private env files' directories) goes first.
removeLeftovers();
/** @type {ReturnType<typeof privateEnvFile>} */
let envFile;
try {
  envFile = privateEnvFile(
    `${Object.entries(vars)
      .map(([name, value]) => envLine(name, value))
      .join("\n")}\n`,
  );
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(2);
}

const args = [
  "dev",
  "--env",
  "local",
  "--ip",
  "127.0.0.1",
  "--port",
  port,
  "--var",
  "DEV_LOGIN:true",
  "--env-file",
  envFile.path,
];
if (process.env.PERSIST_TO) args.push("--persist-to", process.env.PERSIST_TO);
if (process.env.INSPECTOR_PORT) args.push("--inspector-port", process.env.INSPECTOR_PORT);
args.push(...passed);

const child = spawn(join(root, "node_modules", ".bin", "wrangler"), args, {
  cwd: root,
  stdio: "inherit",
  env: childEnv,
});
// A signal to this process stops wrangler (and its workerd) with it: `kill` of `npm start`, a closed
// terminal, Ctrl-C. This process exits when wrangler has.
let stopping = false;
const stop = (/** @type {NodeJS.Signals} */ signal) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  stopping = true;
  child.kill(signal);
};
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));
// A hang-up (the terminal closed) is passed on as SIGTERM: wrangler's launcher passes SIGINT and
// SIGTERM on to wrangler itself, not SIGHUP.
process.on("SIGHUP", () => stop("SIGTERM"));
// So does losing the process that started this one (`npm start` killed with SIGKILL, say): nothing
// would be left to stop wrangler.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent && !stopping) stop("SIGTERM");
}, 500).unref();
child.on("error", (error) => {
  envFile.close();
  console.error(`could not start wrangler: ${error.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  envFile.close();
  process.exit(code ?? (signal ? 1 : 0));
});
