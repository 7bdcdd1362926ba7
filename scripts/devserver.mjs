// Starts `wrangler dev` (through scripts/start.mjs) on a free port with throwaway state, waits
// until it answers, and stops it by its process group. Used by the smoke test and the benchmarks.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function listenable(port) {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address();
      server.close(() => resolve(bound));
    });
    server.on("error", reject);
  });
}

/**
 * A free port: any (the system's choice), or a free one of DEV_SERVER_PORTS (`8900-8949`: a
 * machine whose users keep to port ranges), tried from a random place in the range so servers
 * started side by side (each test file is a process of its own) rarely pick the same one.
 */
export async function freePort() {
  const range = /^(\d+)-(\d+)$/.exec(process.env.DEV_SERVER_PORTS ?? "");
  if (!range) return listenable(0);
  const [low, high] = [Number(range[1]), Number(range[2])];
  const start = Math.floor(Math.random() * (high - low + 1));
  for (let k = 0; k <= high - low; k++) {
    try {
      return await listenable(low + ((start + k) % (high - low + 1)));
    } catch {
      // taken: the next one
    }
  }
  throw new Error(`no free port in DEV_SERVER_PORTS ${process.env.DEV_SERVER_PORTS}`);
}

/**
 * The servers this process started and has not stopped (their process groups): stopped when the
 * process ends, however it ends. A test file cancelled at its bound gets SIGTERM, and its `after`
 * hooks do not run; its servers, each in a process group of its own, would otherwise keep serving.
 */
const started = new Set();
let stopsOnExit = false;

function stopAllOnExit() {
  if (stopsOnExit) return;
  stopsOnExit = true;
  const stopAll = () => {
    for (const pid of started) {
      try {
        process.kill(-pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    started.clear();
  };
  process.on("exit", stopAll);
  for (const [signal, number] of [
    ["SIGINT", 2],
    ["SIGTERM", 15],
    ["SIGHUP", 1],
  ]) {
    process.once(signal, () => {
      stopAll();
      process.exit(128 + number);
    });
  }
}

/**
 * `command args` started detached (a process group of its own, stopped when this process ends),
 * answered once its /healthz is: what every server the tests and benchmarks start shares.
 * `cleanup` runs when it is stopped (its throwaway state removed).
 */
async function spawnServer({ command, args, cwd, env, port, timeoutMs, log = false, label, cleanup = () => {} }) {
  const child = spawn(command, args, { cwd, env, stdio: log ? "inherit" : ["ignore", "pipe", "pipe"], detached: true });
  started.add(child.pid);
  stopAllOnExit();
  let output = "";
  // Keep the tail of the server's output for error reports.
  const keep = (d) => (output = (output + d).slice(-200_000));
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  function stop() {
    started.delete(child.pid);
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
    cleanup();
  }
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  while (true) {
    if (child.exitCode !== null) throw new Error(`${label} exited (${child.exitCode}):\n${output}`);
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      stop();
      throw new Error(`${label} did not answer within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  /** Kills the whole server at once (SIGKILL to its process group: nothing gets to shut down) and waits for it to exit. */
  async function killed() {
    const exited =
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise((r) => child.once("exit", r));
    started.delete(child.pid);
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    await exited;
  }
  /** Stops it and waits (at most 5 s) for it to exit, e.g. before its checkout is removed. */
  async function stopped() {
    const exited = child.exitCode !== null ? Promise.resolve() : new Promise((r) => child.once("exit", r));
    stop();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  }
  // pid: the server's process group (it was started detached), e.g. to find its workerd.
  return { base, port, pid: child.pid, stop, stopped, killed, output: () => output };
}

/**
 * `checkout`: the tree to start (default this one; the benchmarks also start an older commit's).
 * `persistTo`: the state directory to use and keep (a restart on it finds the state the last
 * server left); without it, a throwaway one removed when the server stops. `port`: a port to
 * listen on (a restart keeps its clients' base URL), else a free one. `secrets`: the gateway's
 * secrets (scripts/start.mjs's SECRET_NAMES) in its environment, never in any process's arguments.
 */
export async function startDevServer({
  timeoutMs = 60_000,
  log = false,
  vars = {},
  checkout = root,
  persistTo = undefined,
  port: fixedPort = undefined,
  secrets = {},
} = {}) {
  const port = fixedPort ?? (await freePort());
  const persist = persistTo ?? mkdtempSync(join(tmpdir(), "gateway-state-"));
  const extra = Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
  return spawnServer({
    command: process.execPath,
    args: [join(checkout, "scripts", "start.mjs"), ...extra],
    cwd: checkout,
    env: { ...process.env, ...secrets, PORT: String(port), PERSIST_TO: persist, INSPECTOR_PORT: "0" },
    port,
    timeoutMs,
    log,
    label: "wrangler dev",
    cleanup: () => {
      if (!persistTo) rmSync(persist, { recursive: true, force: true });
    },
  });
}

/**
 * `wrangler dev` of another Worker of this tree (`config`, its wrangler.toml: the emulator's own
 * server, bench/emulator-server/; the agents peer, bench/agents-peer/), on `port` or a free one,
 * with throwaway state and no inspector port of its own. `label` names it in errors.
 */
export async function startWrangler({ config, label, port = undefined, timeoutMs = 90_000 }) {
  port ??= await freePort();
  const persist = mkdtempSync(join(tmpdir(), "wrangler-state-"));
  const args = ["dev", "--config", config, "--ip", "127.0.0.1", "--port", String(port)];
  args.push("--persist-to", persist, "--inspector-port", "0");
  return spawnServer({
    command: join(root, "node_modules", ".bin", "wrangler"),
    args,
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
    port,
    timeoutMs,
    label,
    cleanup: () => rmSync(persist, { recursive: true, force: true }),
  });
}

export async function devLogin(base, user) {
  const res = await fetch(`${base}/v1/dev/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user }),
  });
  if (!res.ok) throw new Error(`dev login failed: ${res.status} ${await res.text()}`);
  return (await res.json()).token;
}

/** Reads an SSE response, calling onFrame({id, event, data}) per frame until it returns true. */
export async function readSse(response, onFrame) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let frame = {};
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return false;
      buffer += decoder.decode(value, { stream: true });
      // One pass over the buffer, one slice at the end: linear however large a burst is.
      let start = 0;
      let nl;
      while ((nl = buffer.indexOf("\n", start)) !== -1) {
        const line = buffer.charCodeAt(nl - 1) === 13 ? buffer.slice(start, nl - 1) : buffer.slice(start, nl);
        start = nl + 1;
        if (line === "") {
          if (frame.data !== undefined && onFrame(frame)) return true;
          frame = {};
        } else if (line.startsWith("id: ")) frame.id = line.slice(4);
        else if (line.startsWith("event: ")) frame.event = line.slice(7);
        else if (line.startsWith("data: "))
          frame.data = frame.data === undefined ? line.slice(6) : `${frame.data}\n${line.slice(6)}`;
      }
      buffer = buffer.slice(start);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
