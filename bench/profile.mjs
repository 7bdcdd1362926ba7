#!/usr/bin/env node
// Where the runtime's isolate spends its time while PROFILE_CONVERSATIONS (50) new conversations run
// a turn of PROFILE_WORDS (200) words at PROFILE_FRAME_MS (40 ms) at once, PROFILE_VIEWERS (1) viewers
// each: the workload of the `agents` section's 50 at once (issue 24, item 1); with
// PROFILE_CONVERSATIONS=1 PROFILE_VIEWERS=300 PROFILE_WORDS=1000 PROFILE_FRAME_MS=5, its CPU per
// extra viewer at 300 (item 5). Under `wrangler dev` the Worker,
// every session object and the emulator share that one isolate, so its busy time bounds how fast the
// 50 turns can finish.
//
//   npm run profile                       (node bench/profile.mjs)
//   PROFILE_CONVERSATIONS=10 PROFILE_TOP=40 npm run profile
//   PROFILE_CONVERSATIONS=1 PROFILE_WORDS=10000 PROFILE_FRAME_MS=0 PROFILE_TAGS=[paragraphs] npm run profile
//                                         (the `stall` section's unpaced burst)
//   PROFILE_EMULATOR=apart npm run profile (the emulator on a server of its own: the gateway's isolate alone)
//
// The runtime's inspector `Profiler` samples every PROFILE_SAMPLE_US (200 µs). Prints the isolate's
// busy time beside the turns' wall time, and the functions with the most self time and the most
// total time (a function counted once per sample however deep it recurses), each with its file and
// line in the bundle wrangler built. Writes bench/results/profile.cpuprofile (open it in Chrome's
// DevTools, Performance panel), profile.json (the tables) and profile-bundle.js (the bundle its line
// numbers point at). A measurement to find where to cut,
// not a figure of issue 24: the `agents` section measures those.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startApart } from "./emulator-apart.mjs";
import {
  isTurnEnd,
  num,
  percentile,
  signIn,
  sseTurnEnd,
  startBenchServer,
  stopOnSignal,
  tag,
  timedRead,
  turnEndOf,
  untilInterrupted,
  viewer,
} from "./harness.mjs";
import { cpuSeconds, inspectWorker, runtimeBase } from "./workerd.mjs";

const C = {
  CONVERSATIONS: num("PROFILE_CONVERSATIONS", 50),
  VIEWERS: num("PROFILE_VIEWERS", 1),
  WORDS: num("PROFILE_WORDS", 200),
  FRAME_MS: num("PROFILE_FRAME_MS", 40),
  SAMPLE_US: num("PROFILE_SAMPLE_US", 200),
  TOP: num("PROFILE_TOP", 30),
  // More of the emulator's script tags for each turn: `[paragraphs]` with PROFILE_FRAME_MS=0 is the `stall` section's burst.
  TAGS: process.env.PROFILE_TAGS ?? "",
  // Where the viewers read: `proxy` (wrangler dev's port, as the agents section's viewers) or `runtime` (its own address, as latency's).
  VIA: process.env.PROFILE_VIA ?? "proxy",
  // Where the emulator runs: `same` (in the gateway's runtime, as `npm start` runs it) or `apart` (a server of
  // its own, the gateway pointed at it over HTTP as the agents section's cpu and concurrent parts: emulator-apart.mjs):
  // apart, the profile is the gateway's alone.
  EMULATOR: process.env.PROFILE_EMULATOR ?? "same",
};
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");

/** Self and total sample counts per function (name, file, line) of a V8 CPU profile. */
function tally(profile, sourceOf = () => "") {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const keyOf = (n) => {
    const f = n.callFrame;
    const file = f.url ? f.url.replace(/^.*\//, "") : "";
    const source = f.url ? sourceOf(f.lineNumber) : "";
    return `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}${source ? ` (${source})` : ""}`;
  };
  const self = new Map();
  const total = new Map();
  let busy = 0;
  for (const id of profile.samples) {
    const node = byId.get(id);
    // (program) and (garbage collector) are the isolate's own work: busy, as JavaScript is.
    if (node.callFrame.functionName === "(idle)") continue;
    busy++;
    const k = keyOf(node);
    self.set(k, (self.get(k) ?? 0) + 1);
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const key = keyOf(byId.get(at));
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + 1);
    }
  }
  return { self, total, busy };
}

/**
 * The source file of a line of the bundle wrangler dev built (esbuild marks each module's start with
 * a `// src/…` comment): a function of the 0-based line; "" when the bundle is not found.
 */
function bundleSources(checkout, copyTo) {
  const tmp = join(checkout, ".wrangler", "tmp");
  const bundles = existsSync(tmp)
    ? readdirSync(tmp)
        .map((d) => join(tmp, d, "worker.js"))
        .filter((f) => existsSync(f))
        .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
    : [];
  if (bundles.length === 0) return () => "";
  const text = readFileSync(bundles[0], "utf8");
  // Kept beside the profile: its lines are what the profile's line numbers point at.
  writeFileSync(copyTo, text);
  const starts = [];
  text.split("\n").forEach((line, i) => {
    const m = /^\/\/ ((?:src|node_modules)\/\S+)$/.exec(line);
    if (m) starts.push([i, m[1].replace(/^node_modules\/(?:\.pnpm\/)?((?:@[^/]+\/)?[^/]+).*$/, "$1")]);
  });
  return (line) => {
    let lo = 0;
    let hi = starts.length - 1;
    let found = "";
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid][0] <= line) (found = starts[mid][1]), (lo = mid + 1);
      else hi = mid - 1;
    }
    return found;
  };
}

async function main() {
  if (C.EMULATOR !== "same" && C.EMULATOR !== "apart") throw new Error(`PROFILE_EMULATOR=${C.EMULATOR}: same or apart`);
  const apart = C.EMULATOR === "apart" ? await startApart({ results: {}, problems: [] }) : null;
  const server = apart ? apart.server : await startBenchServer();
  untilInterrupted(() => (apart ?? server).stop());
  stopOnSignal();
  try {
    const { base, api, auth } = apart ?? (await signIn(server.base));
    if (!apart) {
      await api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, auth);
      await timedRead(`${base}/v1/conversations/warm/events`, auth, sseTurnEnd);
    }
    await (apart ? apart.emulator.api : api).post("/_emulator/faults", { frameDelayMs: C.FRAME_MS });
    const poke = () => fetch(`${base}/healthz`);
    const session = await inspectWorker(server.pid, poke);
    if (!session) throw new Error("profile: the runtime's inspector was not found");
    const cids = Array.from({ length: C.CONVERSATIONS }, (_, i) => `profile-${i}-${tag}`);
    const streams = C.VIA === "runtime" ? await runtimeBase(server.pid, () => fetch(`${base}/healthz`)) : base;
    if (!streams) throw new Error("profile: the runtime's own address was not found");
    const viewers = cids.map((cid) =>
      Array.from({ length: C.VIEWERS }, () => viewer(streams, cid, auth, { stopAt: (f) => isTurnEnd(f.type) })),
    );
    await Promise.all(viewers.flat().map((v) => v.opened));
    await new Promise((r) => setTimeout(r, 300 + C.CONVERSATIONS * C.VIEWERS * 10));
    await session.call("Profiler.enable");
    await session.call("Profiler.setSamplingInterval", { interval: C.SAMPLE_US });
    await session.call("Profiler.start");
    const cpu0 = cpuSeconds(server.pid);
    const t0 = performance.now();
    const ends = await Promise.all(
      cids.map(async (cid, i) => {
        await api.post(
          `/v1/conversations/${cid}/turns`,
          { turnId: "t1", message: `profile [words:${C.WORDS}]${C.TAGS ? ` ${C.TAGS}` : ""}` },
          auth,
        );
        await Promise.all(viewers[i].map((v) => v.waitFor(turnEndOf("t1"), 600_000)));
        return performance.now() - t0;
      }),
    );
    const cpu1 = cpuSeconds(server.pid);
    const { profile } = await session.call("Profiler.stop");
    session.close();
    viewers.flat().forEach((v) => v.close());
    mkdirSync(join(here, "results"), { recursive: true });
    const { self, total, busy } = tally(profile, bundleSources(root, join(here, "results", "profile-bundle.js")));
    const sampleMs = (profile.endTime - profile.startTime) / 1000 / profile.samples.length;
    const secs = (n) => Number(((n * sampleMs) / 1000).toFixed(2));
    const top = (m) =>
      [...m]
        .sort((a, b) => b[1] - a[1])
        .slice(0, C.TOP)
        .map(([k, n]) => ({ fn: k, seconds: secs(n), share: Number((n / busy).toFixed(3)) }));
    const out = {
      config: C,
      wallSeconds: Number((Math.max(...ends) / 1000).toFixed(2)),
      p50Seconds: Number((percentile(ends, 0.5) / 1000).toFixed(2)),
      profiledSeconds: Number(((profile.endTime - profile.startTime) / 1e6).toFixed(2)),
      busySeconds: secs(busy),
      runtimeCpuSeconds: cpu0 && cpu1 ? Number((cpu1.runtime - cpu0.runtime).toFixed(2)) : null,
      self: top(self),
      total: top(total),
    };
    writeFileSync(join(here, "results", "profile.cpuprofile"), JSON.stringify(profile));
    writeFileSync(join(here, "results", "profile.json"), JSON.stringify(out, null, 2));
    console.log(
      `${C.CONVERSATIONS} turns of ${C.WORDS} words at ${C.FRAME_MS} ms at once, ${C.VIEWERS} viewer(s) each: last ended after ${out.wallSeconds} s (p50 ${out.p50Seconds} s); isolate busy ${out.busySeconds} s of ${out.profiledSeconds} s profiled; runtime CPU ${out.runtimeCpuSeconds} s`,
    );
    for (const [title, rows] of [
      ["self", out.self],
      ["total", out.total],
    ]) {
      console.log(`\n${title} time, s (share of busy):`);
      for (const r of rows)
        console.log(`${String(r.seconds).padStart(7)}  ${(r.share * 100).toFixed(1).padStart(5)}%  ${r.fn}`);
    }
  } catch (err) {
    console.error(`profile failed: ${err.stack ?? err}\n--- server output (tail) ---\n${server.output().slice(-3000)}`);
    process.exitCode = 1;
  } finally {
    (apart ?? server).stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
