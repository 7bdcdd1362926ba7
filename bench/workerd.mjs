// The workerd processes of a dev server, read from /proc (Linux): their resident memory and the CPU
// time they have used. A dev server started by the bench runs detached, so its process group id is
// the pid it was started with. wrangler dev (4.x) runs two workerd in that group: the runtime of the
// Worker, its Durable Objects and the emulator (the one started with `--inspector-addr`), and its
// own proxy in front of it (the public port; every request and response passes through it).
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * The fields of one /proc/<pid>/stat line after the command name: `[state, ppid, pgrp, …]`
 * (the name, in parentheses, may hold spaces and parentheses itself, so it ends at the last ")").
 * @param {string} stat
 */
function statFields(stat) {
  return { name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), fields: stat.slice(stat.lastIndexOf(")") + 2).split(" ") };
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
  return { runtime: r(out.runtime), proxy: r(out.proxy), total: r(out.total), runtimeV8: r(out.runtimeV8), runtimeNative: r(out.runtimeNative) };
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

/**
 * The runtime's own address (`http://127.0.0.1:<port>`), behind wrangler dev's proxy: of the
 * loopback ports the runtime's workerd listens on (its entry, its inspector, its debug port; read
 * from /proc/net/tcp and its open sockets), the one that answers `/healthz`. Null when not found.
 */
export async function runtimeBase(pgid) {
  const runtime = workerdPids(pgid).find((pid) => roleOf(pid) === "runtime");
  if (runtime === undefined) return null;
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${runtime}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${runtime}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports = [];
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // local address (hex ip:port), state 0A = LISTEN, inode at [9].
    if (f.length > 9 && f[3] === "0A" && inodes.has(f[9]) && f[1].startsWith("0100007F:")) ports.push(parseInt(f[1].split(":")[1], 16));
  }
  for (const port of ports) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) });
      if (res.ok && (await res.json()).ok === true) return `http://127.0.0.1:${port}`;
    } catch {
      // not this one
    }
  }
  return null;
}
