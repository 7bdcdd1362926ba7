#!/usr/bin/env node
// Benchmarks against `wrangler dev` and the emulator, each figure beside a baseline measured in
// the same run: a raw pass-through stream of the same frames (the emulator's own replay of the
// execution, through the same Worker). Prints a table and writes bench/results/latest.json.
//
//   npm run bench                 (RELAY_WORDS=3000 REPLAY_WORDS=10000 by default)
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { devLogin, readSse, startDevServer } from "../scripts/devserver.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const RELAY_WORDS = Number(process.env.RELAY_WORDS ?? 3000);
const REPLAY_WORDS = Number(process.env.REPLAY_WORDS ?? 10000);

const server = await startDevServer();
const base = server.base;
const results = {};

async function post(path, body, headers = {}) {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * Reads a stream to its turn end (or stream end); answers the frames counted and the seconds from
 * the first upstream frame to the last. The gateway's own turn.accepted comes at dispatch, before
 * the agent's first frame, so the clock starts after it: the figure is throughput, not dispatch latency.
 */
async function timedRead(url, headers, stopAt) {
  const res = await fetch(url, { headers });
  let frames = 0;
  let first = 0;
  let last = 0;
  await readSse(res, (f) => {
    const now = performance.now();
    if (f.event === "turn.accepted") return false;
    if (frames === 0) first = now;
    last = now;
    frames++;
    return stopAt(f);
  });
  return { frames, seconds: Math.max(last - first, 0.001) / 1000 };
}

const turnEnd = (f) => f.event === "turn.completed" || f.event === "turn.failed";
const streamEnd = () => false;

try {
  const token = await devLogin(base, "bench");
  const auth = { authorization: `Bearer ${token}` };
  // Warm up: provision the sandbox and compile everything once.
  await post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, auth);
  await timedRead(`${base}/v1/conversations/warm/events`, auth, turnEnd);
  await post("/_emulator/faults", { frameDelayMs: 0 });

  // Relay: frames/s reaching 1 and 10 live readers while the run streams.
  for (const readers of [1, 10]) {
    const cid = `relay-${readers}`;
    const pending = Array.from({ length: readers }, () => timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, turnEnd));
    await new Promise((r) => setTimeout(r, 300)); // readers attached before the run starts
    const accepted = await post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: `relay [words:${RELAY_WORDS}]` }, auth);
    const reads = await Promise.all(pending);
    const rate = Math.min(...reads.map((r) => r.frames / r.seconds));
    // Baseline: the same frames passed through raw (the emulator's stream, through the same Worker) to as many readers.
    const raws = await Promise.all(
      Array.from({ length: readers }, () => timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd)),
    );
    const baseline = Math.min(...raws.map((r) => r.frames / r.seconds));
    results[`relay_${readers}_reader${readers > 1 ? "s" : ""}`] = {
      frames: reads[0].frames,
      framesPerSecond: Math.round(rate),
      baselineFramesPerSecond: Math.round(baseline),
      ratio: Number((rate / baseline).toFixed(2)),
      target: "ratio >= 0.5",
    };
  }

  // Replay: a finished 10,000-frame log read from the start.
  {
    const cid = "replay";
    const accepted = await post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: `replay [words:${REPLAY_WORDS}]` }, auth);
    await timedRead(`${base}/v1/conversations/${cid}/events`, auth, turnEnd);
    const replay = await timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, turnEnd);
    const raw = await timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd);
    const rate = replay.frames / replay.seconds;
    const baseline = raw.frames / raw.seconds;
    results.replay_log = {
      frames: replay.frames,
      framesPerSecond: Math.round(rate),
      baselineFramesPerSecond: Math.round(baseline),
      ratio: Number((rate / baseline).toFixed(2)),
      target: "framesPerSecond >= 30000",
    };
  }
} catch (err) {
  console.error(`benchmark failed: ${err.stack ?? err}\n--- server output (tail) ---\n${server.output().slice(-4000)}`);
  process.exitCode = 1;
} finally {
  server.stop();
}

console.log("benchmark            frames   frames/s   baseline/s   ratio   target");
for (const [name, r] of Object.entries(results)) {
  console.log(`${name.padEnd(20)} ${String(r.frames).padStart(6)} ${String(r.framesPerSecond).padStart(10)} ${String(r.baselineFramesPerSecond).padStart(12)} ${String(r.ratio).padStart(7)}   ${r.target}`);
}
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "latest.json"), JSON.stringify({ at: new Date().toISOString(), node: process.version, results }, null, 2));
