#!/usr/bin/env node
// Runs node:test files, each in a `node --test` of its own, every one of them whatever the ones
// before did, `--jobs` at a time (default one). A file is not cut at a fixed time: its tests bound
// what they wait for. `--bound <s>` (default 900) is only a safety net against a hang: a file still
// running then is stopped (SIGTERM to its process group, which its dev servers' helper answers by
// stopping them, SIGKILL 10 s later) and fails, and what it never ran is counted.
//
//   node scripts/node-tests.mjs [--jobs N] [--bound S] <file>…     exit 1 when any file failed
//
// With TEST_COUNTS_DIR set, each file's tests are also written to <dir>/<its path>.counts as
// they are queued and end (scripts/test-counts.mjs), for CI's summary (scripts/ci-summary.mjs).
import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The reporter arguments for one file: node's own (TAP when not a terminal), and the counts for CI when TEST_COUNTS_DIR is set. */
export function reporterArgs(file) {
  const dir = process.env.TEST_COUNTS_DIR;
  if (!dir) return { args: [], env: {}, counts: undefined };
  mkdirSync(dir, { recursive: true });
  const counts = join(
    dir,
    `${relative(root, resolve(file))
      .replace(/^test\//, "")
      .replace(/\.test\.mjs$|\.mjs$/, "")
      .replaceAll("/", "-")}.counts`,
  );
  rmSync(counts, { force: true });
  appendFileSync(counts, "");
  return {
    counts,
    args: [
      "--test-reporter=tap",
      "--test-reporter-destination=stdout",
      `--test-reporter=${join(root, "scripts", "test-counts.mjs")}`,
      "--test-reporter-destination=stdout",
    ],
    env: { TEST_COUNTS_FILE: counts },
  };
}

function parse(argv) {
  const options = { jobs: 1, boundS: 900, files: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--jobs") options.jobs = Math.max(1, Number(argv[++i]));
    else if (argv[i] === "--bound") options.boundS = Number(argv[++i]);
    else options.files.push(argv[i]);
  }
  return options;
}

const running = new Set();

/** Runs one file; answers its exit status (null when it was stopped at its bound) and, with jobs > 1, its output. */
function runFile(file, boundS, buffered) {
  const { args, env, counts } = reporterArgs(file);
  // Node 20 has WebSocket (a real browser-like client for the terminal's tests) behind this flag; later Nodes by default.
  const child = spawn(process.execPath, ["--experimental-websocket", "--test", ...args, resolve(file)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", buffered ? "pipe" : "inherit", buffered ? "pipe" : "inherit"],
    detached: true,
  });
  running.add(child);
  let output = "";
  child.stdout?.on("data", (d) => (output += d));
  child.stderr?.on("data", (d) => (output += d));
  let stopped = false;
  const stop = () => {
    stopped = true;
    signalGroup(child, "SIGTERM");
    setTimeout(() => signalGroup(child, "SIGKILL"), 10_000).unref();
  };
  const timer = setTimeout(stop, boundS * 1000);
  return new Promise((done) =>
    child.on("exit", (code) => {
      clearTimeout(timer);
      running.delete(child);
      // What the file's process left behind in its group (a dev server's wrangler it did not stop).
      signalGroup(child, "SIGKILL");
      // A file that failed is counted failed even where it reported no test (it did not load, say).
      if (counts && code !== 0) appendFileSync(counts, `file-failed\t0\t${file}\n`);
      done({ file, code: stopped ? null : code, output });
    }),
  );
}

function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // gone already
  }
}

async function main() {
  const { jobs, boundS, files } = parse(process.argv.slice(2));
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => {
      for (const child of running) signalGroup(child, "SIGTERM");
      setTimeout(() => process.exit(1), 10_000).unref();
      // Exits once the files' processes have, as their exits empty `running`.
      const check = setInterval(() => running.size === 0 && process.exit(1), 100);
      check.unref();
    });
  }
  const results = [];
  let next = 0;
  const lane = async () => {
    while (next < files.length) {
      const file = files[next++];
      const result = await runFile(file, boundS, jobs > 1);
      if (jobs > 1) process.stdout.write(`\n### ${file}\n${result.output}`);
      if (result.code === null) console.log(`### ${file}: stopped at its bound of ${boundS} s`);
      results.push(result);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, lane));
  const failed = results.filter((r) => r.code !== 0);
  console.log(
    `### node tests: ${results.length - failed.length} of ${results.length} files passed${failed.length ? `; failed: ${failed.map((r) => `${r.file}${r.code === null ? " (stopped at its bound)" : ""}`).join(", ")}` : ""}`,
  );
  return failed.length > 0 ? 1 : 0;
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) process.exitCode = await main();
