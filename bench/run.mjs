#!/usr/bin/env node
// Benchmarks against `wrangler dev` and the emulator, each figure beside a baseline measured in
// the same run. Prints a summary and writes bench/results/latest.json (figures in bench/README.md).
//
//   npm run bench                                  every benchmark below, on this tree
//   BENCH_BEFORE_REF=4ee4fd7 npm run bench         also the idle figure of that commit (a git
//                                                  worktree in the temp dir, removed afterwards)
//   BENCH_ONLY=relay,latency npm run bench         a subset (relay,replay,latency,rows,idle,agents,
//                                                  memory,terminal,page-load,before)
//   PAGE_LOAD_BEFORE_REF=0e361c4 BENCH_ONLY=page-load npm run bench
//                                                  the page over a slow link, here and on that commit
//   BENCH_FAIL=relay,memory:kill npm run bench     the bench's own failure path, tested: the named
//                                                  sections fail (`:kill` first kills the shared dev
//                                                  server and lets the section fail on its own)
//
// One file per benchmark beside this one, each with its configuration (environment variables) at
// its top: relay.mjs, replay.mjs, latency.mjs, rows.mjs, idle.mjs (and its baseline `before`),
// agents.mjs (the AIChatAgent peer beside the gateway), memory.mjs (a dev server of its own),
// page-load.mjs (Chromium over a throttled link);
// cost.mjs computes the cost model from their figures, summary.mjs lays issue 24's figures beside
// their baselines; harness.mjs holds what they share, workerd.mjs reads the runtime's /proc. This
// file starts the server, runs them in this order, and prints and writes what they measured.
//
// Every section runs whatever happened to the ones before it: an exception (a `fetch failed`, a
// deadline) is that section's failure, recorded in latest.json and the summary, and the next section
// runs, on a fresh dev server when the shared one no longer answers. The exit code says which
// sections were not ok (bench/outcome.mjs, bench/README.md).
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as agents from "./agents.mjs";
import * as cost from "./cost.mjs";
import {
  num,
  serving,
  signIn,
  sseTurnEnd,
  startBenchServer,
  stopOnSignal,
  throughputReport,
  timedRead,
  undoMark,
  undoSince,
} from "./harness.mjs";
import * as idle from "./idle.mjs";
import * as latency from "./latency.mjs";
import * as memory from "./memory.mjs";
import { exitCode, failureText, outcomeLines, outcomeOf, ranWithin, sectionsOfExitCode } from "./outcome.mjs";
import * as pageLoad from "./page-load.mjs";
import * as relay from "./relay.mjs";
import * as replay from "./replay.mjs";
import * as rows from "./rows.mjs";
import * as stall from "./stall.mjs";
import * as summary from "./summary.mjs";
import * as terminal from "./terminal.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { BEFORE_REF } = idle.config;
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",")) : null;
const runs = (section) => (ONLY ? ONLY.has(section) : section !== "before" || BEFORE_REF !== "");
/** A section that has not ended this long after it started is abandoned as failed (its servers stopped). */
const SECTION_DEADLINE_MS = num("BENCH_SECTION_DEADLINE_S", 3600) * 1000;
/** BENCH_FAIL=section[:kill],…: those sections fail, to test this file's failure path (bench/README.md). */
const INJECTED = new Map(
  (process.env.BENCH_FAIL ?? "")
    .split(",")
    .filter(Boolean)
    .map((s) => {
      const [name, how = "throw"] = s.split(":");
      return [name, how];
    }),
);

const results = {
  config: {
    ...relay.config,
    ...replay.config,
    ...stall.config,
    ...latency.config,
    ...rows.config,
    ...idle.config,
    ...agents.config,
    ...memory.config,
    ...pageLoad.config,
  },
};
const problems = [];
stopOnSignal();

// ------------------------------------------------------------------ the shared dev server

// BENCH_SERVER_CHECKOUT=<dir>: the server of another checkout (an older commit's worktree, with
// node_modules), measured by this tree's benchmarks: a before/after of the same figures.
// BENCH_PORT: the port of this server (a machine shared by several runs, each in a range of its
// own); else a free one (of BENCH_PORTS when set). The sections that start servers of their own take
// free ports.
const RELOADED = /Reloading local server|Local server updated/g;
let shared = null;
let serverLog = "";
let serversStarted = 0;

/** The shared dev server's context, the server started (and warmed up) now if there is none or it stopped answering. */
async function sharedServer() {
  if (shared && (await serving(shared.server))) {
    // A section that failed may have left the emulator slowed down.
    await shared.ctx.api.post("/_emulator/faults", { frameDelayMs: 0 });
    return { ctx: shared.ctx, fresh: false };
  }
  const died = shared !== null;
  // Not a problem of the section about to run (its outcome says it ran on a fresh server).
  if (shared) retire();
  const server = await startBenchServer({
    ...(process.env.BENCH_SERVER_CHECKOUT ? { checkout: process.env.BENCH_SERVER_CHECKOUT } : {}),
    ...(process.env.BENCH_PORT ? { port: Number(process.env.BENCH_PORT) } : {}),
  });
  serversStarted++;
  shared = { server, ctx: null };
  if (!server.inspectorQuiet)
    problems.push(
      "the runtime's network reports to wrangler dev's inspector proxy could not be turned off (no inspector answered): every subrequest chunk also costs a request to wrangler's Node process",
    );
  const ctx = { ...(await signIn(server.base)), results, problems, server };
  // Warm up: provision the sandbox and compile everything once.
  await ctx.api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, ctx.auth);
  await timedRead(`${ctx.base}/v1/conversations/warm/events`, ctx.auth, sseTurnEnd);
  await ctx.api.post("/_emulator/faults", { frameDelayMs: 0 });
  shared.ctx = ctx;
  return { ctx, fresh: died };
}

/** Stops the shared server and keeps its output for bench/results/server.log. */
function retire() {
  if (!shared) return;
  serverLog += `${serverLog ? "\n" : ""}--- dev server ${serversStarted} ---\n${shared.server.output()}`;
  shared.server.stop();
  shared = null;
}
const reloads = () => (shared ? (shared.server.output().match(RELOADED) ?? []).length : 0);

// ------------------------------------------------------------------ the sections

// Unawaited promises that reject (a reader's `fetch failed` nobody waited on yet) and exceptions
// thrown from callbacks are the section's problems, not the end of the run.
let current = null;
const stray = (what) => (err) => {
  const line = `${current ?? "the run"}: ${what}: ${err?.stack?.split("\n").slice(0, 2).join(" ") ?? err}`;
  (current ? sectionProblems : problems).push(line);
};
let sectionProblems = [];
process.on("unhandledRejection", stray("a promise nobody awaited rejected"));
process.on("uncaughtException", stray("an exception thrown from a callback"));

const outcomes = {};
const started = performance.now();
results.loadAverage = { start: loadavg().map((l) => Number(l.toFixed(2))) };

/**
 * Runs one section: `fn(ctx)` on the shared server (`onShared`) or given `{ results, problems }`.
 * Whatever it throws, or its deadline, is its failure; the problems reported meanwhile are its own.
 */
async function section(name, fn, { onShared }) {
  if (!runs(name)) return;
  current = name;
  sectionProblems = [];
  const before = problems.length;
  let mark = undoMark();
  const t = performance.now();
  let error = null;
  let fresh = false;
  let reloadsBefore = 0;
  let failure;
  try {
    let ctx = { results, problems };
    if (onShared) {
      ({ ctx, fresh } = await sharedServer());
      reloadsBefore = reloads();
      // The shared server is not the section's to stop when it fails.
      mark = undoMark();
    }
    const injected = INJECTED.get(name);
    if (injected === "kill" && shared) await shared.server.killed();
    else if (injected !== undefined) throw new Error("failure injected (BENCH_FAIL)");
    failure = await ranWithin(() => fn(ctx), SECTION_DEADLINE_MS);
  } catch (err) {
    // Its server would not start, or its failure was injected.
    failure = { message: failureText(err), overdue: false, err };
  }
  if (failure) {
    error = failure.message;
    const err = failure.err;
    console.error(
      `bench: ${name} failed: ${err?.stack ?? err}${err?.cause ? `\ncause: ${err.cause.stack ?? err.cause}` : ""}`,
    );
    if (shared) console.error(`--- server output (tail) ---\n${shared.server.output().slice(-4000)}`);
    // What it started and left running (a server of its own, a worktree) stops with it; abandoned at
    // its deadline, its work still runs on the shared server: that server goes too.
    undoSince(mark);
    if (failure.overdue && onShared) retire();
  }
  // wrangler dev rebuilds and restarts the Worker when src/ changes: every open stream breaks.
  if (onShared && reloads() > reloadsBefore)
    problems.push(`${name}: wrangler dev reloaded during the section (src/ changed): run again`);
  const own = [...problems.slice(before), ...sectionProblems];
  outcomes[name] = outcomeOf({
    error,
    problems: own,
    seconds: Number(((performance.now() - t) / 1000).toFixed(1)),
    freshServer: fresh,
  });
  problems.push(...sectionProblems.filter((p) => !problems.includes(p)));
  current = null;
  console.error(`bench: ${name} ${outcomes[name].status} in ${outcomes[name].seconds} s`);
}

// latency last of the sections on the shared server but page-load: its 300 raw readers can leave
// wrangler dev's proxy out of descriptors (bench/README.md); memory starts a server of its own.
await section("relay", relay.relay, { onShared: true });
await section("replay", replay.replay, { onShared: true });
await section("stall", stall.stall, { onShared: true });
await section("rows", rows.rows, { onShared: true });
await section("idle", idle.idle, { onShared: true });
await section("agents", agents.agents, { onShared: true });
await section("latency", latency.latency, { onShared: true });
await section("memory", memory.memory, { onShared: false });
await section("terminal", terminal.terminal, { onShared: false });
await section("page-load", pageLoad.pageLoad, { onShared: true });
retire();
await section("before", idle.before, { onShared: false });

cost.cost(results, rows.config.ROWS_SMALL_WORDS);
results.loadAverage.end = loadavg().map((l) => Number(l.toFixed(2)));
results.seconds = {
  ...Object.fromEntries(Object.entries(outcomes).map(([name, o]) => [name, o.seconds])),
  total: Number(((performance.now() - started) / 1000).toFixed(1)),
};
results.problems = problems;
results.sections = outcomes;
results.exitCode = exitCode(outcomes);
results.summary = summary.figures(results);

const out = [
  ...throughputReport(results),
  ...replay.report(results),
  ...stall.report(results),
  ...latency.report(results),
  ...rows.report(results),
  ...idle.report(results),
  ...agents.report(results),
  ...memory.report(results),
  ...pageLoad.report(results),
  ...cost.report(results),
  ...summary.report(results),
  ...outcomeLines(outcomes),
];
if (problems.length) out.push("", "PROBLEMS:", ...problems.map((p) => `  - ${p}`));
out.push("", `seconds: ${JSON.stringify(results.seconds)}`, `load average: ${JSON.stringify(results.loadAverage)}`);
console.log(out.join("\n"));
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(
  join(here, "results", "latest.json"),
  JSON.stringify({ at: new Date().toISOString(), node: process.version, results }, null, 2),
);
// The dev servers' output (tail), to look into any problem reported above.
writeFileSync(join(here, "results", "server.log"), serverLog);
if (results.exitCode) console.error(`bench: exit code ${results.exitCode} (${sectionsOfExitCode(results.exitCode)})`);
process.exit(results.exitCode);
