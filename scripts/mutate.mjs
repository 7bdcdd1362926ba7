#!/usr/bin/env node
// A small mutation check: breaks the core modules on purpose, one realistic one-line bug at a time,
// and runs only the tests that should notice. A mutant the tests do not notice "survives": the
// suite is blind there. Runs in a throwaway copy of the working tree, so the tree itself is never
// touched (even if this script is killed), and each run of vitest is bounded in time: a mutant
// that makes a test hang is killed by the clock and reported as such.
//
//   npm run mutate                    every mutant, two at a time
//   npm run mutate -- --only fanout   the mutants whose id contains "fanout"
//   npm run mutate -- --list          the mutants, without running them
//   npm run mutate -- --check         only that every mutant still applies (CI runs this: no tests run)
//   npm run mutate -- --jobs 1 --timeout 180
//
// Exit status: 0 when every mutant was killed, 1 when some survived, 2 when the list is stale (a
// mutant's text no longer occurs exactly once: the code changed; update the list in scripts/mutants.mjs) or the tests do
// not pass unmutated.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

import { MUTANTS } from "./mutants.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * A mutant's text as a pattern: each run of white space in it matches any run of white space, so a
 * line the formatter wraps (or joins) is still found.
 */
function patternOf(m) {
  const escaped = m.find
    .trim()
    .split(/\s+/)
    .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(escaped.join("\\s+"), "g");
}

/**
 * Why a mutant no longer applies (the code moved on: update it), or null: its file and test files
 * exist, its text occurs exactly once, and its replacement changes it.
 */
function staleness(m) {
  const path = join(root, m.file);
  if (!existsSync(path)) return `${m.file} does not exist`;
  const missing = m.tests.filter((t) => !existsSync(join(root, t)));
  if (missing.length > 0) return `its test files ${missing.join(", ")} do not exist`;
  const count = readFileSync(path, "utf8").match(patternOf(m))?.length ?? 0;
  if (count !== 1) return `its text is found ${count} times in ${m.file}, not once`;
  if (m.find === m.replace) return "its replacement is its text";
  return null;
}

/** The vitest project (vitest.config.ts) a test file runs in. */
const PROJECT_OF = (file) =>
  file === "test/budget.test.ts" || file === "test/webhooks/budget.test.ts"
    ? "budgets"
    : file.startsWith("test/webhooks/")
      ? "webhooks"
      : file.startsWith("test/page/")
        ? "page"
        : "gateway";

function parseArgs(argv) {
  const args = { only: undefined, list: false, check: false, jobs: 2, timeoutS: 150 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--only") args.only = argv[++i];
    else if (a === "--list") args.list = true;
    else if (a === "--check") args.check = true;
    else if (a === "--jobs") args.jobs = Math.max(1, Number(argv[++i]));
    else if (a === "--timeout") args.timeoutS = Number(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

/** A copy of the working tree (sources, tests, config; not node_modules, which is linked). */
function makeCopy() {
  const dir = mkdtempSync(join(tmpdir(), "gateway-mutate-"));
  const skip = new Set(["node_modules", ".git", ".wrangler", "dist", "test-results"]);
  cpSync(root, dir, {
    recursive: true,
    filter: (src) => {
      const rel = relative(root, src);
      return rel === "" || !skip.has(rel.split("/")[0]);
    },
  });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
  return dir;
}

/** Runs vitest on some files in `dir`; answers "pass", "fail" or "timeout", and the output tail. */
function runVitest(dir, files, timeoutS) {
  const byProject = new Map();
  for (const f of files) byProject.set(PROJECT_OF(f), [...(byProject.get(PROJECT_OF(f)) ?? []), f]);
  const args = [
    "run",
    ...[...byProject.keys()].flatMap((p) => ["--project", p]),
    ...files,
    "--reporter=dot",
    "--bail=1",
  ];
  return new Promise((resolve) => {
    const child = spawn(join(dir, "node_modules", ".bin", "vitest"), args, {
      cwd: dir,
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let output = "";
    const keep = (d) => (output = (output + d).slice(-20_000));
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone already
      }
    }, timeoutS * 1000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      // vitest leaves workerd children behind when killed: end the whole group.
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone already
      }
      resolve({ result: timedOut ? "timeout" : code === 0 ? "pass" : "fail", output });
    });
  });
}

function firstFailure(output) {
  // eslint-style ANSI stripping, then the first failing test's name.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character starts what it removes
  const plain = output.replace(/\u001b\[[0-9;]*m/g, "");
  const line = plain.split("\n").find((l) => /^ FAIL /.test(l) || /✗|×/.test(l));
  return line?.trim().slice(0, 160) ?? "";
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const mutants = MUTANTS.filter((m) => !args.only || m.id.includes(args.only));
  if (args.list) {
    for (const m of mutants) console.log(`${m.id.padEnd(40)} ${m.file}  ${m.why}`);
    console.log(`${mutants.length} mutants`);
    return 0;
  }

  // A mutant whose text is not found exactly once means the code moved on: say so, do not guess.
  const stale = [];
  for (const m of mutants) {
    const problem = staleness(m);
    if (problem) {
      stale.push(m);
      console.log(`stale: ${m.id}: ${problem}`);
    }
  }
  const runnable = mutants.filter((m) => !stale.includes(m));
  if (args.check) {
    console.log(
      `${runnable.length} of ${mutants.length} mutants apply${stale.length > 0 ? `; ${stale.length} stale: update them in scripts/mutate.mjs` : ""}`,
    );
    return stale.length > 0 ? 2 : 0;
  }
  if (runnable.length === 0) return 2;

  const started = Date.now();
  const copies = Array.from({ length: Math.min(args.jobs, runnable.length) }, makeCopy);
  try {
    // The tests must pass unmutated, or every mutant would look killed.
    const allFiles = [...new Set(runnable.flatMap((m) => m.tests))];
    const baseline = await runVitest(copies[0], allFiles, args.timeoutS * 2);
    if (baseline.result !== "pass") {
      console.log(`the tests do not pass unmutated (${baseline.result}):\n${baseline.output.slice(-4000)}`);
      return 2;
    }
    console.log(
      `baseline: ${allFiles.length} test files pass unmutated (${((Date.now() - started) / 1000).toFixed(0)} s)`,
    );

    const results = [];
    let next = 0;
    const worker = async (dir) => {
      while (next < runnable.length) {
        const m = runnable[next++];
        const path = join(dir, m.file);
        const original = readFileSync(path, "utf8");
        const t0 = Date.now();
        let outcome;
        try {
          writeFileSync(
            path,
            original.replace(patternOf(m), () => m.replace),
          );
          outcome = await runVitest(dir, m.tests, args.timeoutS);
        } finally {
          writeFileSync(path, original);
        }
        const seconds = (Date.now() - t0) / 1000;
        const status =
          outcome.result === "pass" ? "SURVIVED" : outcome.result === "timeout" ? "killed (timeout)" : "killed";
        results.push({ m, status, seconds });
        const detail = outcome.result === "fail" ? `  ← ${firstFailure(outcome.output)}` : "";
        console.log(`${status.padEnd(17)} ${m.id.padEnd(40)} ${seconds.toFixed(0).padStart(4)} s${detail}`);
      }
    };
    await Promise.all(copies.map(worker));

    const survived = results.filter((r) => r.status === "SURVIVED");
    const timeouts = results.filter((r) => r.status === "killed (timeout)");
    const killed = results.length - survived.length;
    const score = ((100 * killed) / results.length).toFixed(0);
    console.log("");
    for (const r of survived) console.log(`survivor: ${r.m.id} (${r.m.file}): ${r.m.why}`);
    for (const r of timeouts) console.log(`killed only by the clock (a hang, not a failing test): ${r.m.id}`);
    console.log(
      `mutation score: ${killed}/${results.length} killed (${score}%), ${survived.length} survived, ${timeouts.length} by timeout, ${stale.length} stale; ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
    return stale.length > 0 ? 2 : survived.length > 0 ? 1 : 0;
  } finally {
    for (const dir of copies) if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
