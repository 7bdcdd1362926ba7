// The workerd processes of a dev server, read from /proc (Linux): their resident memory and the CPU
// time they have used. A dev server started by the bench runs detached, so its process group id is
// the pid it was started with. wrangler dev (4.x) runs two workerd in that group: the runtime of the
// Worker, its Durable Objects and the emulator (the one started with `--inspector-addr`), and its
// own proxy in front of it (the public port; every request and response passes through it).
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * The fields of one /proc/<pid>/stat line after the command name: `[state, ppid, pgrp, …]`
 * (the name, in parentheses, may hold spaces and parentheses itself, so it ends at the last ")").
 * @param {string} stat
 */
function statFields(stat) {
  return {
    name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
    fields: stat.slice(stat.lastIndexOf(")") + 2).split(" "),
  };
}

/** The pids of the workerd processes in process group `pgid`. */
export function workerdPids(pgid) {
  const pids = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const { name, fields } = statFields(readFileSync(`/proc/${entry}/stat`, "utf8"));
      // fields[2] is the process group.
      if (name === "workerd" && Number(fields[2]) === pgid) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const GiB4 = 4 * 1024 ** 3;

/**
 * Resident MiB of one process inside V8's pointer-compression cage: the 4 GiB-aligned region that
 * holds the JavaScript heap (V8 reserves it whole and commits pages from it; the rest of the
 * reservation is the largest mapping, resident nothing). Everything else resident is native:
 * workerd, SQLite, buffers. BigInt addresses: they pass 2^53.
 */
function v8HeapMiB(pid) {
  const maps = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
    if (m) maps.push({ start: BigInt(`0x${m[1]}`), end: BigInt(`0x${m[2]}`), kB: 0 });
    else if (line.startsWith("Rss:") && maps.length) maps[maps.length - 1].kB = Number(/(\d+)/.exec(line)?.[1] ?? 0);
  }
  const reservation = maps.reduce((a, b) => (b.end - b.start > (a?.end ?? 0n) - (a?.start ?? 0n) ? b : a), null);
  if (!reservation || reservation.end - reservation.start < BigInt(GiB4 / 4)) return null;
  const base = (reservation.start / BigInt(GiB4)) * BigInt(GiB4);
  const kB = maps.filter((m) => m.start >= base && m.start < base + BigInt(GiB4)).reduce((n, m) => n + m.kB, 0);
  return kB / 1024;
}

/**
 * Resident memory (VmRSS, MiB) of the group's workerd processes: `runtime`, `proxy` and their
 * `total`; and of the runtime's, `runtimeV8` (its JavaScript heap, v8HeapMiB) and `runtimeNative`.
 */
export function rssMiB(pgid) {
  const out = { runtime: 0, proxy: 0, total: 0, runtimeV8: null, runtimeNative: null };
  for (const pid of workerdPids(pgid)) {
    try {
      const kB = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
      const role = roleOf(pid);
      out[role] += kB / 1024;
      out.total += kB / 1024;
      if (role === "runtime") out.runtimeV8 = v8HeapMiB(pid);
    } catch {
      // gone meanwhile
    }
  }
  if (out.runtimeV8 !== null) out.runtimeNative = out.runtime - out.runtimeV8;
  const r = (v) => (v === null ? null : Number(v.toFixed(1)));
  return {
    runtime: r(out.runtime),
    proxy: r(out.proxy),
    total: r(out.total),
    runtimeV8: r(out.runtimeV8),
    runtimeNative: r(out.runtimeNative),
  };
}

/** The role of a workerd of the group: `runtime` (started with `--inspector-addr`) or `proxy`. */
function roleOf(pid) {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--inspector-addr") ? "runtime" : "proxy";
}

/** CPU seconds (user + system) the group's workerd processes have used so far: `runtime`, `proxy`, `total`. */
export function cpuSeconds(pgid) {
  const out = { runtime: 0, proxy: 0, total: 0 };
  for (const pid of workerdPids(pgid)) {
    try {
      const { fields } = statFields(readFileSync(`/proc/${pid}/stat`, "utf8"));
      // utime and stime are the 14th and 15th fields of the line, [11] and [12] after the name.
      const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
      out[roleOf(pid)] += seconds;
      out.total += seconds;
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The inodes of process `pid`'s sockets. */
function socketInodes(pid) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** The TCP ports process `pid` listens on (its sockets' inodes, found in /proc/<pid>/net/tcp in state LISTEN). */
function listeningPorts(pid) {
  const inodes = socketInodes(pid);
  const ports = [];
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // f[1] local address (hex ip:port), f[3] state (0A: LISTEN), f[9] inode.
    if (f[3] === "0A" && inodes.has(f[9])) ports.push(parseInt(f[1].split(":")[1], 16));
  }
  return ports;
}

/** The remote ports of the TCP connections process `pid` holds open (state ESTABLISHED). */
function connectedPorts(pid) {
  const inodes = socketInodes(pid);
  const ports = new Set();
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // f[2] remote address (hex ip:port), f[3] state (01: ESTABLISHED), f[9] inode.
    if (f[3] === "01" && inodes.has(f[9])) ports.add(parseInt(f[2].split(":")[1], 16));
  }
  return ports;
}

/**
 * The runtime's ports that answer HTTP: its entry and its inspector, told from its third, its debug
 * port (`--debug-port`, wrangler's dev registry), which speaks Cap'n Proto: an HTTP request there
 * breaks that RPC connection ("incoming RPC message exceeds size limit" in the runtime's log, the
 * request's first bytes read as a message's size). wrangler dev's proxy holds connections to the
 * first two (it forwards every request to the entry and keeps its inspector proxy's session open)
 * and none to the debug port, so only the ports the proxy is connected to are asked anything;
 * `poke` (a request through the proxy) first, so that the proxy has a connection to the entry.
 */
export async function runtimeHttpPorts(pgid, poke) {
  const pids = workerdPids(pgid);
  const runtime = pids.find((pid) => roleOf(pid) === "runtime");
  if (runtime === undefined) return [];
  await poke().catch(() => undefined);
  const connected = new Set();
  for (const pid of pids.filter((p) => roleOf(p) === "proxy")) {
    try {
      for (const port of connectedPorts(pid)) connected.add(port);
    } catch {
      // gone meanwhile
    }
  }
  return listeningPorts(runtime).filter((port) => connected.has(port));
}

/**
 * A DevTools protocol session with the isolate of the runtime's worker whose target id starts with
 * `core:user:` (the gateway's Worker, its Durable Objects and the emulator: one isolate).
 * `call(method, params)` answers the result. The runtime keeps one inspector session per isolate,
 * and wrangler dev's own inspector proxy (in its proxy workerd, the target whose URL ends in `/ws`)
 * holds it once started, so that proxy is tried first (it refuses a handshake with a User-Agent and
 * no allowed Origin, as Node's WebSocket sends: the Origin is set to loopback), then the runtime's own
 * inspector (`--inspector-addr`, the port that answers /json/list). A session counts once it answers
 * `Runtime.getHeapUsage` within 5 s. The runtime handles a message when the isolate is next entered,
 * so while a call waits, `poke` (a request to the Worker) is sent every half second; a call
 * unanswered within 30 s rejects. `close()` ends the session. Null when no such isolate answers.
 */
export async function inspectWorker(pgid, poke) {
  const pids = workerdPids(pgid);
  // wrangler's own inspector proxy first (its proxy workerd has no debug port: every port it listens on
  // speaks HTTP); the runtime's own inspector only when that gives no session, and asked only on the
  // runtime's HTTP ports (runtimeHttpPorts).
  const sources = [
    {
      role: "proxy",
      ports: async () => pids.filter((p) => roleOf(p) === "proxy").flatMap((pid) => listeningPorts(pid)),
      pick: (t) => String(t.webSocketDebuggerUrl).endsWith("/ws"),
    },
    { role: "runtime", ports: () => runtimeHttpPorts(pgid, poke), pick: (t) => String(t.id).startsWith("core:user:") },
  ];
  for (const { role, ports, pick } of sources) {
    for (const port of await ports()) {
      let target;
      try {
        const list = await (
          await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(2000) })
        ).json();
        target = Array.isArray(list) ? list.find(pick) : undefined;
      } catch {
        // not an inspector
      }
      if (!target) continue;
      const session = await openInspector(target.webSocketDebuggerUrl, poke).catch(() => null);
      if (!session) continue;
      const answers = await session.call("Runtime.getHeapUsage", {}, 5_000).then(
        () => true,
        () => false,
      );
      if (answers) return { ...session, target: role === "runtime" ? target.id : `wrangler:${target.id}` };
      session.close();
    }
  }
  return null;
}

/**
 * Stops the runtime reporting network traffic to wrangler dev's inspector proxy (`Network.disable`
 * on its one session, which wrangler enables when it connects). Enabled, the runtime reports every
 * chunk of every subrequest body (a session object's read of its run's stream, each raw reader of
 * the baselines) as an event, and the proxy posts each event to wrangler's own Node process as a
 * request of its own and keeps it in a buffer no DevTools reads: at 300 raw readers it held 20,000
 * sockets (its descriptor limit) within half a minute, and requests through it failed ("Too many
 * open files"). A deployment has no inspector. Answers whether it was done (false: no inspector
 * answered; the caller reports it).
 */
export async function quietInspector(pgid, poke) {
  const session = await inspectWorker(pgid, poke).catch(() => null);
  if (!session) return false;
  try {
    await session.call("Network.disable");
    return true;
  } catch {
    return false;
  } finally {
    session.close();
  }
}

/** A DevTools protocol session over `url` (see inspectWorker): `{ call(method, params, withinMs = 30 s), close }`. */
async function openInspector(url, poke) {
  const ws = new WebSocket(url, { headers: { origin: "http://127.0.0.1" } });
  const pending = new Map();
  let next = 0;
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data));
    const p = m.id !== undefined && pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error) p.reject(new Error(`inspector ${p.method}: ${m.error.message}`));
    else p.resolve(m.result);
  };
  await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the inspector at ${url} did not open a session within 10 s`)),
      10_000,
    );
    ws.onopen = () => (clearTimeout(timer), resolve());
    ws.onerror = () => (clearTimeout(timer), reject(new Error(`the inspector at ${url} refused the session`)));
  });
  const call = async (method, params = {}, withinMs = 30_000) => {
    const id = ++next;
    const answered = new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
    ws.send(JSON.stringify({ id, method, params }));
    const deadline = Date.now() + withinMs;
    while (true) {
      const tick = new Promise((resolve) => setTimeout(() => resolve(pending), 500));
      const got = await Promise.race([answered, tick]);
      if (got !== pending) return got;
      if (Date.now() > deadline) throw new Error(`inspector ${method}: no answer within ${withinMs / 1000} s`);
      await poke().catch(() => undefined);
    }
  };
  return { call, close: () => ws.close() };
}

/**
 * The worker isolate's JavaScript heap after a full collection (MiB): `usedMiB` what is still
 * reachable (what the Worker, its objects and the emulator hold, and the runtime's own JavaScript
 * objects), `totalMiB` what V8 keeps for that isolate's heap; `before…` the same just before it.
 * Null without an inspector.
 */
export async function collectedHeapMiB(pgid, poke) {
  const session = await inspectWorker(pgid, poke);
  if (!session) return null;
  try {
    const before = await session.call("Runtime.getHeapUsage");
    await session.call("HeapProfiler.enable");
    await session.call("HeapProfiler.collectGarbage");
    const after = await session.call("Runtime.getHeapUsage");
    const mib = (b) => Number((b / 1024 ** 2).toFixed(1));
    return {
      beforeUsedMiB: mib(before.usedSize),
      beforeTotalMiB: mib(before.totalSize),
      usedMiB: mib(after.usedSize),
      totalMiB: mib(after.totalSize),
    };
  } finally {
    session.close();
  }
}

/**
 * The runtime's own address (`http://127.0.0.1:<port>`), behind wrangler dev's proxy: of the
 * runtime's HTTP ports (its entry and its inspector: runtimeHttpPorts), the one that answers
 * `/healthz`. Null when not found.
 */
export async function runtimeBase(pgid, poke) {
  for (const port of await runtimeHttpPorts(pgid, poke)) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) });
      if (res.ok && (await res.json()).ok === true) return `http://127.0.0.1:${port}`;
    } catch {
      // not this one
    }
  }
  return null;
}

/** tcmalloc's figures read by allocatorMiB, by the name it reports in MiB. */
const ALLOCATOR_PROPERTIES = {
  inUse: "generic.current_allocated_bytes",
  physical: "generic.physical_memory_used",
  heap: "generic.heap_size",
  pageHeapFree: "tcmalloc.pageheap_free_bytes",
  released: "tcmalloc.pageheap_unmapped_bytes",
  cachesFree: "tcmalloc.central_cache_free",
  transferFree: "tcmalloc.transfer_cache_free",
  cpuFree: "tcmalloc.cpu_free",
  metadata: "tcmalloc.metadata_bytes",
};

/**
 * The runtime's native memory as its allocator (tcmalloc, linked into workerd) accounts for it, in
 * MiB: `inUse` what the process's native code holds (workerd, SQLite, buffers; V8's JavaScript heap
 * is outside, in its cage), `physical` what the allocator keeps resident, `pageHeapFree` freed pages
 * it keeps mapped, `released` those it gave back, and its caches' free bytes. Read with gdb attached
 * for about two seconds (bench/tcmalloc.py). `release: true` then asks it to give every free page
 * back (`releasedNowMiB`): what workerd never asks, since it runs no background release. Null when
 * gdb is missing or the call failed (a problem for the caller to report, never a zero).
 */
export function allocatorMiB(pgid, { release = false } = {}) {
  const runtime = workerdPids(pgid).find((pid) => roleOf(pid) === "runtime");
  if (runtime === undefined) return null;
  const script = new URL("./tcmalloc.py", import.meta.url).pathname;
  const env = {
    ...process.env,
    TC_PROPS: Object.values(ALLOCATOR_PROPERTIES).join(","),
    ...(release ? { TC_RELEASE: "1" } : {}),
  };
  const run = spawnSync("gdb", ["-p", String(runtime), "-batch", "-nx", "-q", "-x", script], {
    env,
    encoding: "utf8",
    timeout: 60_000,
  });
  if (run.error || run.status !== 0) return null;
  const bytes = new Map();
  for (const line of run.stdout.split("\n")) {
    const m = /^TC (\S+) (\d+|None)$/.exec(line);
    if (m) bytes.set(m[1], m[2] === "None" ? null : Number(m[2]));
  }
  const mib = (b) => (b === null || b === undefined ? null : Number((b / 1024 ** 2).toFixed(1)));
  const out = Object.fromEntries(Object.entries(ALLOCATOR_PROPERTIES).map(([k, name]) => [k, mib(bytes.get(name))]));
  if (out.inUse === null) return null;
  if (release) out.releasedNowMiB = mib(bytes.get("released"));
  return out;
}
