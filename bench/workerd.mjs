// The workerd processes of a dev server, read from /proc (Linux): their resident memory and the CPU
// time they have used. A dev server started by the bench runs detached, so its process group id is
// the pid it was started with; every workerd of that group is its runtime (wrangler dev runs one).
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

/** Resident memory of the group's workerd processes, in MiB (VmRSS of /proc/<pid>/status). */
export function rssMiB(pgid) {
  let kB = 0;
  for (const pid of workerdPids(pgid)) {
    try {
      kB += Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      // gone meanwhile
    }
  }
  return Number((kB / 1024).toFixed(1));
}

/** CPU seconds (user + system) the group's workerd processes have used so far. */
export function cpuSeconds(pgid) {
  let ticks = 0;
  for (const pid of workerdPids(pgid)) {
    try {
      const { fields } = statFields(readFileSync(`/proc/${pid}/stat`, "utf8"));
      // utime and stime are the 14th and 15th fields of the line, [11] and [12] after the name.
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks / TICKS_PER_SECOND;
}
