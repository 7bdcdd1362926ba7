// What every benchmark of bench/run.mjs shares: the dev server they run against (started with the
// per-user rate limits raised) and a signed-in client of it, the readers that time a stream
// (follow, viewer, timedRead), the statistics (percentile) and the throughput table that prints a
// figure beside its baseline and their ratio. Each benchmark is a file of its own beside this one
// (relay, replay, latency, rows, idle), the cost model is cost.mjs; bench/README.md has the figures.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DELTA_EVENT, decodeAfter } from "../public/wire/frames.js";
import { devLogin, readSse, startDevServer } from "../scripts/devserver.mjs";
import { quietInspector } from "./workerd.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

export const env = process.env;
export const num = (name, fallback) => Number(env[name] ?? fallback);
export const list = (name, fallback) =>
  String(env[name] ?? fallback)
    .split(",")
    .filter(Boolean)
    .map(Number);

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** This run's tag: every conversation a benchmark opens is named with it. */
export const tag = Date.now().toString(36);
export const isTurnEnd = (type) => type === "turn.completed" || type === "turn.failed" || type === "turn.cancelled";
export const utf8 = (s) => Buffer.byteLength(s, "utf8");

export function percentile(values, q) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
export const ms = (v) => (v === null ? null : Number(v.toFixed(2)));

// ------------------------------------------------------------------ the server

/** Whether a frame is a part's snapshot that turn-end compaction left at the end of a run (a full part update with its whole text, no delta). */
function compactedRunEnd(f) {
  if (f.event !== "message.part.updated") return false;
  try {
    const data = JSON.parse(f.data).data;
    return typeof data?.part?.text === "string" && data.delta === undefined;
  } catch {
    return false;
  }
}

/** The limits a single user meets in production are per user; a benchmark is one user doing a lot. */
const BENCH_VARS = {
  RATE_LIMIT_STREAMS_PER_MINUTE: "100000",
  RATE_LIMIT_TURNS_PER_MINUTE: "1000",
  ...Object.fromEntries(
    (env.BENCH_SERVER_VARS ?? "")
      .split(",")
      .filter(Boolean)
      .map((kv) => kv.split("=")),
  ),
};

/**
 * A port for a server the bench starts: with `BENCH_PORTS=first-last` (a range of this machine's
 * ports the run may use, e.g. when other work shares the machine), the next one of that range that
 * is free now; without it, undefined (the server picks a free port of the system's).
 */
let nextPort = 0;
export async function benchPort() {
  const range = /^(\d+)-(\d+)$/.exec(env.BENCH_PORTS ?? "");
  if (!range) return undefined;
  const [first, last] = [Number(range[1]), Number(range[2])];
  for (let i = 0; i <= last - first; i++) {
    const port = first + ((nextPort + i) % (last - first + 1));
    if (await portFree(port)) {
      nextPort = port - first + 1;
      return port;
    }
  }
  throw new Error(`BENCH_PORTS ${env.BENCH_PORTS}: no port of the range is free`);
}
const portFree = (port) =>
  new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });

/**
 * How long a dev server the bench starts may take to answer (BENCH_SERVER_START_S, 180 s): wrangler
 * builds the Worker and starts two runtimes first, which on a loaded machine takes minutes.
 */
const SERVER_START_MS = num("BENCH_SERVER_START_S", 180) * 1000;

/**
 * `wrangler dev` of this tree, or of `checkout` (an older commit's worktree), for a benchmark run,
 * with the runtime's network reports to wrangler's inspector proxy off (quietInspector);
 * `inspectorQuiet` says whether they are. Stopped with the run when it is interrupted.
 */
export async function startBenchServer(options = {}) {
  const server = await startDevServer({
    port: await benchPort(),
    ...options,
    // A section's own shorter bound (idle's `before`, page-load's) does not undercut the run's.
    timeoutMs: Math.max(options.timeoutMs ?? 0, SERVER_START_MS),
    vars: { ...BENCH_VARS, ...options.vars },
  });
  const done = untilInterrupted(() => server.stop());
  const { stop, stopped } = server;
  server.stop = () => (done(), stop());
  server.stopped = () => (done(), stopped());
  server.inspectorQuiet = await quietInspector(server.pid, () => fetchGet(`${server.base}/healthz`));
  return server;
}

/**
 * Whether a dev server still serves: its process group alive and `/healthz` answered within
 * `withinMs` (a loaded machine answers late, not never).
 */
export async function serving(server, withinMs = 30_000) {
  try {
    process.kill(server.pid, 0);
  } catch {
    return false;
  }
  try {
    const res = await fetchGet(`${server.base}/healthz`, { signal: AbortSignal.timeout(withinMs) });
    await res.text();
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * CPU time (user + system, ms) the processes of a process group have used so far: the dev server's
 * (it is started detached, its pid is its group), `workerd` alone and all of them (wrangler's own
 * Node processes too). Read from /proc: Linux only; null elsewhere.
 */
export function groupCpuMs(pgid) {
  const TICK_MS = 10; // USER_HZ, 100 on Linux
  let all = 0;
  let workerd = 0;
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        // fields[2] the process group; fields[11], [12] utime and stime in ticks.
        if (Number(fields[2]) !== pgid) continue;
        const ms = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
        all += ms;
        if (stat.includes("(workerd)")) workerd += ms;
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    return null;
  }
  return { all, workerd };
}

/** A client of `base`, signed in by dev login: `{ base, api, auth }`, what every benchmark is given. */
export async function signIn(base) {
  return { base, api: client(base), auth: { authorization: `Bearer ${await devLogin(base, "bench")}` } };
}

/** What to undo when the run is interrupted (Ctrl-C, a timeout): servers started, worktrees added. */
const onInterrupt = new Set();

/** Runs `undo` if the run is interrupted before the returned function is called. */
export function untilInterrupted(undo) {
  onInterrupt.add(undo);
  return () => onInterrupt.delete(undo);
}

/** What is registered to undo now: a mark for undoSince. */
export const undoMark = () => new Set(onInterrupt);

/**
 * Undoes what was registered since `mark` and is still registered: the servers and worktrees of a
 * section abandoned at its deadline (bench/run.mjs), so its work left running fails instead of
 * loading the sections after it.
 */
export function undoSince(mark) {
  for (const undo of [...onInterrupt]) {
    if (mark.has(undo)) continue;
    onInterrupt.delete(undo);
    try {
      undo();
    } catch {
      // gone already
    }
  }
}

/** On SIGINT or SIGTERM: everything registered is undone, and the process exits 130. */
export function stopOnSignal() {
  const stop = () => {
    for (const undo of onInterrupt) undo();
    process.exit(130);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

/**
 * Runs `fn(dir, sameDeps)` on an older commit `ref` (a baseline: `BENCH_BEFORE_REF`, the page-load
 * benchmark's `PAGE_LOAD_BEFORE_REF`): a detached git worktree in the temp dir, with this tree's
 * node_modules when package.json and the lock are the same (else its own `npm ci`), removed
 * afterwards, also when the run is interrupted.
 */
export async function atCommit(ref, problems, fn) {
  const dir = join(tmpdir(), `bench-at-${ref.replace(/[^\w.-]/g, "_")}-${process.pid}`);
  const git = (...args) => execFileSync("git", ["-C", root, ...args], { stdio: ["ignore", "pipe", "pipe"] }).toString();
  const done = untilInterrupted(() => {
    try {
      git("worktree", "remove", "--force", dir);
    } catch {
      // not added yet
    }
  });
  try {
    git("worktree", "add", "--detach", dir, ref);
    // The same installed tree: the lock's packages alike (a dependency named in package.json since,
    // already installed at the same version, changes only the lock's root entry).
    const installed = (lock) => JSON.stringify({ ...JSON.parse(lock).packages, "": undefined });
    const sameDeps =
      installed(git("show", `${ref}:package-lock.json`)) ===
      installed(readFileSync(join(root, "package-lock.json"), "utf8"));
    if (sameDeps) symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
    else execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "ignore" });
    return await fn(dir, sameDeps);
  } finally {
    try {
      git("worktree", "remove", "--force", dir);
    } catch (err) {
      problems.push(`could not remove the worktree ${dir} of ${ref}: ${err.message}`);
    }
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    git("worktree", "prune");
    done();
  }
}

/**
 * Whether a request failed because the connection it was sent on was closed under it: a kept-alive
 * connection the server (wrangler dev's proxy) closed while it sat idle in the pool, which a loaded
 * machine makes likely (a gdb read, a collection, a slow section leave the pool idle for seconds).
 */
const closedUnder = (err) =>
  err?.name === "TypeError" && ["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"].includes(err.cause?.code);

/**
 * `fetch` for a GET, or a request that sets what it sets however often it is sent: sent once more when the connection was closed
 * under it (closedUnder), never for anything else.
 */
export async function fetchGet(url, init = {}) {
  try {
    return await fetch(url, init);
  } catch (err) {
    if (!closedUnder(err)) throw err;
    return fetch(url, init);
  }
}

/** A JSON client of `base` (the gateway's dev server, or the emulator's own: bench/agents.mjs). */
export function client(base) {
  async function call(method, path, body, headers = {}, idempotent = method === "GET") {
    const res = await (idempotent ? fetchGet : fetch)(`${base}${path}`, {
      signal: AbortSignal.timeout(120_000),
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
    return JSON.parse(text);
  }
  return {
    post: (path, body, headers) => call("POST", path, body, headers),
    get: (path, headers) => call("GET", path, undefined, headers),
    /** The emulator's faults set (the same body twice sets the same): sent again as a GET is. */
    faults: (body) => call("POST", "/_emulator/faults", body, {}, true),
  };
}

// ------------------------------------------------------------------ reading streams

/**
 * Follows one SSE response. Every frame is stamped with the time its chunk arrived
 * (performance.now() right after the read), its UTF-8 size on the wire and the chunk's index;
 * `onFrame` returns true to stop. Linear in the size of a burst (one pass, one slice).
 */
export function follow(url, headers, onFrame) {
  const abort = new AbortController();
  let opened;
  const openedP = new Promise((resolve, reject) => (opened = { resolve, reject }));
  openedP.catch(() => {});
  const done = (async () => {
    let res;
    const noHeaders = setTimeout(() => abort.abort(new Error(`${url}: no response headers within 60 s`)), 60_000);
    try {
      res = await fetchGet(url, { headers, signal: abort.signal });
    } catch (err) {
      opened.reject(err);
      throw err;
    } finally {
      clearTimeout(noHeaders);
    }
    if (!res.ok) {
      const err = new Error(`${url}: ${res.status} ${await res.text()}`);
      opened.reject(err);
      throw err;
    }
    opened.resolve();
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let frame = {};
    let frameBytes = 0;
    let chunk = -1;
    let total = 0;
    try {
      while (true) {
        const { done: end, value } = await reader.read();
        if (end) return { total, ended: "stream" };
        const t = performance.now();
        chunk++;
        total += value.byteLength;
        buffer += decoder.decode(value, { stream: true });
        let start = 0;
        let nl;
        while ((nl = buffer.indexOf("\n", start)) !== -1) {
          const line = buffer.charCodeAt(nl - 1) === 13 ? buffer.slice(start, nl - 1) : buffer.slice(start, nl);
          frameBytes += utf8(buffer.slice(start, nl)) + 1;
          start = nl + 1;
          if (line === "") {
            if (frame.data !== undefined && onFrame(frame, t, frameBytes, chunk)) return { total, ended: "stopped" };
            frame = {};
            frameBytes = 0;
          } else if (line.startsWith("id: ")) frame.id = line.slice(4);
          else if (line.startsWith("event: ")) frame.event = line.slice(7);
          else if (line.startsWith("data: "))
            frame.data = frame.data === undefined ? line.slice(6) : `${frame.data}\n${line.slice(6)}`;
        }
        buffer = buffer.slice(start);
      }
    } catch (err) {
      if (abort.signal.aborted) return { total, ended: "closed" };
      throw err;
    } finally {
      reader.cancel().catch(() => {});
    }
  })();
  done.catch(() => {});
  return { opened: openedP, done, close: () => abort.abort() };
}

/** A viewer's frame record as its event (a frame without an id, stream.reset: its own data). */
function envelopeOf(rec) {
  const unread = [];
  for (let r = rec; r && r.parsed === undefined; r = r.type === DELTA_EVENT ? r.prev : undefined) unread.push(r);
  for (let i = unread.length - 1; i >= 0; i--) {
    const r = unread[i];
    const previous = r.prev?.parsed?.seq !== undefined ? r.prev.parsed : null;
    r.parsed =
      r.id === undefined ? JSON.parse(r.data) : decodeAfter(previous, { id: r.id, event: r.type, data: r.data });
  }
  return rec.parsed;
}

/**
 * A browser on a conversation's event stream: keeps every frame (envelope parsed), checks seqs,
 * and lets the caller wait for a frame. It stays open until closed or `stopAt` matches.
 */
export function viewer(base, cid, auth, { after = 0, stopAt } = {}) {
  const v = { frames: [], waiters: [], ended: null, seqErrors: 0, lastSeq: after };
  const check = () => {
    v.waiters = v.waiters.filter((w) => {
      for (; w.from < v.frames.length; w.from++) {
        if (w.pred(v.frames[w.from])) {
          w.resolve(v.frames[w.from]);
          return false;
        }
      }
      if (v.ended) w.reject(new Error(`viewer of ${cid} ended (${v.ended}) before the awaited frame`));
      return !v.ended;
    });
  };
  v.stream = follow(`${base}/v1/conversations/${cid}/events?after=${after}`, auth, (f, t, bytes, chunk) => {
    const seq = Number(f.id);
    // Every event exactly once, in order: seq is the log's own, one more than the last, except
    // before a part's snapshot, where a finished turn's compaction removed a run of deltas
    // (docs/sse-protocol.md §13: the snapshot, at the run's last seq, carries the part's whole text).
    if (seq !== v.lastSeq + 1 && !(seq > v.lastSeq && compactedRunEnd(f))) v.seqErrors++;
    v.lastSeq = Math.max(v.lastSeq, seq);
    // The envelope is read when first asked for: the next viewer's chunk waits for this one's work.
    // A lean delta frame continues the frame before it (public/wire/frames.js), so each record knows
    // its predecessor, and reading one reads the unread run before it, in order.
    const rec = {
      seq,
      type: f.event,
      id: f.id,
      data: f.data,
      t,
      bytes,
      chunk,
      prev: v.frames.at(-1),
      parsed: undefined,
      get env() {
        return envelopeOf(this);
      },
    };
    v.frames.push(rec);
    check();
    return stopAt ? stopAt(rec) : false;
  });
  v.done = v.stream.done.then(
    (r) => ((v.ended = r.ended), check(), r),
    (err) => ((v.ended = `error: ${err.message}`), check(), { ended: v.ended }),
  );
  v.opened = v.stream.opened;
  v.waitFor = (pred, timeoutMs = 120_000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`viewer of ${cid}: no awaited frame within ${timeoutMs} ms`)),
        timeoutMs,
      );
      v.waiters.push({
        pred,
        from: 0,
        resolve: (x) => (clearTimeout(timer), resolve(x)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      check();
    });
  v.close = () => v.stream.close();
  return v;
}
export const turnEndOf = (turnId) => (f) => f.env.turnId === turnId && isTurnEnd(f.type);

/** The text deltas of a stream, in order: the k-th delta upstream is the k-th a viewer gets. */
/**
 * The text a part's update adds: its `delta`; or, for a text or reasoning part's whole update (no
 * `delta`, `part.text`), the text it sets: in the bench's live streams that is a part's first
 * update, which the gateway sends whole (docs/sse-protocol.md §12), and the upstream's first delta.
 */
export const deltaOf = (data) => {
  if (!data) return null;
  if (typeof data.delta === "string") return data.delta;
  const part = data.part;
  return part && (part.type === "text" || part.type === "reasoning") && typeof part.text === "string"
    ? part.text
    : null;
};

/**
 * Reads a stream to `stopAt` (or its end): frames counted, seconds from the first agent frame to the last.
 * `onFrame` is called at every frame read; with `from` (a function answering a `performance.now()` time),
 * only the frames read at or after that time are counted and timed (the frames of a run before its
 * release, say).
 */
export async function timedRead(url, headers, stopAt, headersWithinMs = 120_000, { from, onFrame } = {}) {
  // No headers in time is reported as such (Node's own limit is 300 s, and says only "fetch failed").
  const abort = new AbortController();
  const timer = setTimeout(
    () => abort.abort(new Error(`${url}: no response headers within ${headersWithinMs / 1000} s`)),
    headersWithinMs,
  );
  let res;
  try {
    res = await fetchGet(url, { headers, signal: abort.signal });
  } catch (err) {
    throw abort.signal.aborted ? abort.signal.reason : err;
  } finally {
    clearTimeout(timer);
  }
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  let frames = 0;
  let first = 0;
  let last = 0;
  await readSse(res, (f) => {
    const now = performance.now();
    onFrame?.(f);
    // The gateway's turn.accepted comes at dispatch, before the agent's first frame: the clock
    // starts after it, so the figure is throughput, not dispatch latency.
    if (f.event === "turn.accepted") return false;
    if (from && now < from()) return stopAt(f);
    if (frames === 0) first = now;
    last = now;
    frames++;
    return stopAt(f);
  });
  if (frames === 0) throw new Error(`${url}: the stream ended with no frame (did wrangler dev reload?)`);
  return { frames, seconds: Math.max(last - first, 0.001) / 1000 };
}
export const sseTurnEnd = (f) => isTurnEnd(f.event);
export const streamEnd = () => false;

/** dev/object once the object's writes have settled (two reads in a row agree). */
export async function settledObject(api, cid, auth) {
  let last = await api.get(`/v1/conversations/${cid}/dev/object`, auth);
  for (let i = 0; i < 20; i++) {
    await sleep(250);
    const next = await api.get(`/v1/conversations/${cid}/dev/object`, auth);
    if (next.instance === last.instance && next.rowsWritten === last.rowsWritten && next.log.events === last.log.events)
      return { ...next, at: performance.now() };
    last = next;
  }
  return { ...last, at: performance.now() };
}

// ------------------------------------------------------------------ reporting

/**
 * A throughput figure beside its baseline: frames per second of both and their ratio, as the
 * results record it (relay.mjs, replay.mjs).
 */
export function throughput({ frames, rate, baseline, target }) {
  return {
    frames,
    framesPerSecond: Math.round(rate),
    baselineFramesPerSecond: Math.round(baseline),
    ratio: Number((rate / baseline).toFixed(2)),
    target,
  };
}

/** The throughput table: each relay and replay figure, its baseline and their ratio. */
export function throughputReport(results) {
  const out = [];
  const relays = Object.entries(results).filter(([name]) => name.startsWith("relay_") || name === "replay_log");
  if (relays.length) {
    out.push("throughput          frames   frames/s   baseline/s   ratio   target");
    for (const [name, r] of relays) {
      out.push(
        `${name.padEnd(18)} ${String(r.frames).padStart(7)} ${String(r.framesPerSecond).padStart(10)} ${String(r.baselineFramesPerSecond).padStart(12)} ${String(r.ratio).padStart(7)}   ${r.target}`,
      );
    }
  }
  return out;
}
