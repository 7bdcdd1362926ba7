// The workerd processes of a dev server, read from /proc (Linux): their resident memory and the CPU
// time they have used. A dev server started by the bench runs detached, so its process group id is
// the pid it was started with. wrangler dev (4.x) runs two workerd in that group: the runtime of the
// Worker, its Durable Objects and the emulator (the one started with `--inspector-addr`), and its
// own proxy in front of it (the public port; every request and response passes through it).
import { readdirSync, readFileSync } from "node:fs";

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

/** Resident memory (VmRSS, MiB) of the group's workerd processes: `runtime`, `proxy` and their `total`. */
export function rssMiB(pgid) {
  const out = { runtime: 0, proxy: 0, total: 0 };
  for (const pid of workerdPids(pgid)) {
    try {
      const kB = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
      out[roleOf(pid)] += kB / 1024;
      out.total += kB / 1024;
    } catch {
      // gone meanwhile
    }
  }
  return { runtime: Number(out.runtime.toFixed(1)), proxy: Number(out.proxy.toFixed(1)), total: Number(out.total.toFixed(1)) };
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
