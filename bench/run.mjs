#!/usr/bin/env node
// Benchmarks against `wrangler dev` and the emulator, each figure beside a baseline measured in
// the same run. Prints a summary and writes bench/results/latest.json (figures in bench/README.md).
//
//   npm run bench                                  every benchmark below, on this tree
//   BENCH_BEFORE_REF=4ee4fd7 npm run bench         also the idle figure of that commit (a git
//                                                  worktree in the temp dir, removed afterwards)
//   BENCH_ONLY=relay,latency npm run bench         a subset (relay,replay,latency,rows,idle,agents,
//                                                  memory,page-load,before)
//   PAGE_LOAD_BEFORE_REF=0e361c4 BENCH_ONLY=page-load npm run bench
//                                                  the page over a slow link, here and on that commit
//
// One file per benchmark beside this one, each with its configuration (environment variables) at
// its top: relay.mjs, replay.mjs, latency.mjs, rows.mjs, idle.mjs (and its baseline `before`),
// agents.mjs (the AIChatAgent peer beside the gateway), memory.mjs (a dev server of its own),
// page-load.mjs (Chromium over a throttled link);
// cost.mjs computes the cost model from their figures, summary.mjs lays issue 24's figures beside
// their baselines; harness.mjs holds what they share, workerd.mjs reads the runtime's /proc. This
// file starts the server, runs them in this order, and prints and writes what they measured.
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as agents from "./agents.mjs";
import * as cost from "./cost.mjs";
import {
  signIn,
  sseTurnEnd,
  startBenchServer,
  stopOnSignal,
  throughputReport,
  timedRead,
  untilInterrupted,
} from "./harness.mjs";
import * as idle from "./idle.mjs";
import * as latency from "./latency.mjs";
import * as memory from "./memory.mjs";
import * as pageLoad from "./page-load.mjs";
import * as relay from "./relay.mjs";
import * as replay from "./replay.mjs";
import * as rows from "./rows.mjs";
import * as stall from "./stall.mjs";
import * as summary from "./summary.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const { BEFORE_REF } = idle.config;
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(",")) : null;
const runs = (section) => (ONLY ? ONLY.has(section) : section !== "before" || BEFORE_REF !== "");

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

// BENCH_SERVER_CHECKOUT=<dir>: the server of another checkout (an older commit's worktree, with
// node_modules), measured by this tree's benchmarks: a before/after of the same figures.
// BENCH_PORT: the port of this server (a machine shared by several runs, each in a range of its
// own); else a free one. The sections that start servers of their own take free ports.
const server = await startBenchServer({
  ...(process.env.BENCH_SERVER_CHECKOUT ? { checkout: process.env.BENCH_SERVER_CHECKOUT } : {}),
  ...(process.env.BENCH_PORT ? { port: Number(process.env.BENCH_PORT) } : {}),
});
// Interrupted (Ctrl-C, a timeout): the servers this run started go with it.
untilInterrupted(() => server.stop());
stopOnSignal();
if (!server.inspectorQuiet)
  problems.push(
    "the runtime's network reports to wrangler dev's inspector proxy could not be turned off (no inspector answered): every subrequest chunk also costs a request to wrangler's Node process",
  );
const started = performance.now();
let serverLog = "";
results.loadAverage = { start: loadavg().map((l) => Number(l.toFixed(2))) };
const seconds = {};
try {
  const ctx = { ...(await signIn(server.base)), results, problems, server };
  const { base, api, auth } = ctx;
  // Warm up: provision the sandbox and compile everything once.
  await api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, auth);
  await timedRead(`${base}/v1/conversations/warm/events`, auth, sseTurnEnd);
  await api.post("/_emulator/faults", { frameDelayMs: 0 });
  // latency last of the sections on this server: its 300 raw readers can leave wrangler dev's proxy
  // out of descriptors (bench/README.md), and memory and page-load start servers of their own.
  const sections = {
    relay: relay.relay,
    replay: replay.replay,
    stall: stall.stall,
    rows: rows.rows,
    idle: idle.idle,
    agents: agents.agents,
    latency: latency.latency,
    memory: memory.memory,
    "page-load": pageLoad.pageLoad,
  };
  for (const [name, fn] of Object.entries(sections)) {
    if (!runs(name)) continue;
    const t = performance.now();
    await fn(ctx);
    seconds[name] = Number(((performance.now() - t) / 1000).toFixed(1));
    console.error(`bench: ${name} done in ${seconds[name]} s`);
  }
} catch (err) {
  console.error(`benchmark failed: ${err.stack ?? err}\n--- server output (tail) ---\n${server.output().slice(-4000)}`);
  process.exitCode = 1;
} finally {
  // wrangler dev rebuilds and restarts the Worker when src/ changes: every open stream breaks.
  if (/Reloading local server|Local server updated/.test(server.output()))
    problems.push("wrangler dev reloaded during the run (src/ changed): run again");
  serverLog = server.output();
  server.stop();
}
if (runs("before") && BEFORE_REF && process.exitCode !== 1) {
  const t = performance.now();
  try {
    await idle.before({ results, problems });
  } catch (err) {
    console.error(`benchmark (before) failed: ${err.stack ?? err}`);
    process.exitCode = 1;
  }
  seconds.before = Number(((performance.now() - t) / 1000).toFixed(1));
}
cost.cost(results, rows.config.ROWS_SMALL_WORDS);
results.loadAverage.end = loadavg().map((l) => Number(l.toFixed(2)));
results.seconds = { ...seconds, total: Number(((performance.now() - started) / 1000).toFixed(1)) };
results.problems = problems;
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
];
if (problems.length) out.push("", "PROBLEMS:", ...problems.map((p) => `  - ${p}`));
out.push("", `seconds: ${JSON.stringify(results.seconds)}`);
console.log(out.join("\n"));
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(
  join(here, "results", "latest.json"),
  JSON.stringify({ at: new Date().toISOString(), node: process.version, results }, null, 2),
);
// The dev server's output (tail), to look into any problem reported above.
writeFileSync(join(here, "results", "server.log"), serverLog);
if (problems.length && !process.exitCode) process.exitCode = 2;
