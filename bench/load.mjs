#!/usr/bin/env node
// Load: many conversations and viewers at once against `npm start`'s server (its own wrangler dev on
// loopback, throwaway state), with the emulator's upstream faults on and viewers that drop and
// reconnect. Bounded in count and in time. Reports turns completed, frames delivered vs expected
// (per conversation, by seq: every viewer must see every event of the log exactly once), reconnects,
// delivery latency and the workerd process's memory. Prints a table; writes bench/results/load.json.
//
//   npm run load                          40 conversations × 5 viewers × 3 turns, at most 240 s
//   LOAD_CONVERSATIONS=40 LOAD_VIEWERS=5 LOAD_TURNS=2 LOAD_DEADLINE_S=300 npm run load
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { devLogin, startDevServer } from "../scripts/devserver.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const CONVERSATIONS = Math.min(Number(process.env.LOAD_CONVERSATIONS ?? 40), 200);
const VIEWERS = Math.min(Number(process.env.LOAD_VIEWERS ?? 5), 20);
const TURNS = Math.min(Number(process.env.LOAD_TURNS ?? 3), 10);
const DEADLINE_S = Math.min(Number(process.env.LOAD_DEADLINE_S ?? 240), 900);
/** A viewer drops its own stream after this many frames now and then (a flaky network). */
const VIEWER_DROP_EVERY = 25;
/** Upstream faults, on for the whole run: severed run streams, repeated frames, inclusive replays. */
const FAULTS = { dropStreamAfterFrames: 15, dropStreams: 1_000_000, repeatFrames: true, inclusiveReplay: true };

const started = Date.now();
const deadline = started + DEADLINE_S * 1000;
const overdue = () => Date.now() > deadline;

// The limits a single user would meet in production are per user; this run has one user per
// conversation but many reconnects, so the stream limit is raised for it.
const server = await startDevServer({
  vars: { RATE_LIMIT_STREAMS_PER_MINUTE: "100000", RATE_LIMIT_TURNS_PER_MINUTE: "1000", SSE_PING_INTERVAL_MS: "1000" },
});
const base = server.base;
if (new URL(base).hostname !== "127.0.0.1") throw new Error("loopback only");

/** RSS of the workerd process of our server (the dev server's process group), in MiB. */
function workerdRssMiB() {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // fields[2] is the process group; ours is the dev server's pid (it was started detached).
      if (Number(fields[2]) !== server.pid || !stat.includes("(workerd)")) continue;
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, "utf8"));
      if (rss) total += Number(rss[1]);
    } catch {
      // gone meanwhile
    }
  }
  return total / 1024;
}

/** The answer's status and JSON body; a body that is not JSON (the runtime's own error page) as `{ text }`. */
async function answer(res) {
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: { text: text.slice(0, 300) } };
  }
}

async function post(path, body, token) {
  return answer(
    await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }),
  );
}

async function get(path, token) {
  return answer(await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } }));
}

const stats = {
  turnsSent: 0,
  turnsCompleted: 0,
  turnsOther: {},
  reconnects: 0,
  viewerDrops: 0,
  serverDrops: 0,
  latenciesMs: [],
  errors: [],
};

/**
 * One viewer: reads the conversation's stream from the start, records every id it receives, and
 * reconnects with Last-Event-ID whenever its stream ends or it drops it, until it has seen `target()`.
 */
async function viewer(cid, token, target, seen) {
  let last = 0;
  let sinceDrop = 0;
  while (!overdue()) {
    const goal = target();
    if (goal !== null && last >= goal) return;
    const abort = new AbortController();
    let res;
    try {
      res = await fetch(`${base}/v1/conversations/${cid}/events`, {
        headers: { authorization: `Bearer ${token}`, "last-event-id": String(last) },
        signal: abort.signal,
      });
    } catch (err) {
      stats.errors.push(`open ${cid}: ${err.message}`);
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    if (res.status !== 200) {
      stats.errors.push(`open ${cid}: ${res.status} ${await res.text()}`);
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let frame = {};
    let dropped = false;
    try {
      reading: while (true) {
        // Pings come every second here: five silent seconds mean a dead stream.
        const timer = setTimeout(() => abort.abort(), 5_000);
        const { done, value } = await reader.read().finally(() => clearTimeout(timer));
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let start = 0;
        let nl;
        while ((nl = buffer.indexOf("\n", start)) !== -1) {
          const line = buffer.slice(start, nl);
          start = nl + 1;
          if (line === "") {
            if (frame.id !== undefined) {
              const seq = Number(frame.id);
              const envelope = JSON.parse(frame.data);
              seen.set(seq, (seen.get(seq) ?? 0) + 1);
              // From the event's append to this viewer, reconnects included; a repeat is not a delivery.
              if (seen.get(seq) === 1) stats.latenciesMs.push(Date.now() - Date.parse(envelope.at));
              last = seq;
              sinceDrop++;
              const end = target();
              if (end !== null && last >= end) break reading;
              if (sinceDrop >= VIEWER_DROP_EVERY && Math.random() < 0.5) {
                // The network drops: resume from the last id.
                sinceDrop = 0;
                dropped = true;
                stats.viewerDrops++;
                break reading;
              }
            }
            frame = {};
          } else if (line.startsWith("id: ")) frame.id = line.slice(4);
          else if (line.startsWith("data: ")) frame.data = line.slice(6);
        }
        buffer = buffer.slice(start);
        // The log's end becomes known after the last turn: a ping (every second) brings us here.
        const end = target();
        if ((end !== null && last >= end) || overdue()) break;
      }
    } catch (err) {
      if (!abort.signal.aborted) stats.errors.push(`read ${cid}: ${err.message}`);
    } finally {
      abort.abort();
      reader.cancel().catch(() => {});
    }
    const end = target();
    if (end !== null && last >= end) return;
    stats.reconnects++;
    if (!dropped) await new Promise((r) => setTimeout(r, 50));
  }
}

async function conversation(i) {
  const cid = `load-${i}`;
  const token = await devLogin(base, `load-user-${i}`);
  let lastEventId = null; // known once every turn has ended
  const seen = Array.from({ length: VIEWERS }, () => new Map());
  const viewers = seen.map((s) => viewer(cid, token, () => lastEventId, s));
  for (let t = 0; t < TURNS && !overdue(); t++) {
    const turnId = `turn-${t}`;
    stats.turnsSent++;
    const sent = await post(
      `/v1/conversations/${cid}/turns`,
      { turnId, message: t % 2 ? `turn ${t} [long]` : `turn ${t}` },
      token,
    );
    if (sent.status !== 202) {
      stats.errors.push(`send ${cid}/${turnId}: ${sent.status} ${JSON.stringify(sent.body)}`);
      continue;
    }
    while (!overdue()) {
      const turn = await get(`/v1/conversations/${cid}/turns/${turnId}`, token);
      if (turn.status !== 200) {
        // The route itself failed (the runtime overloaded): say so, and ask again.
        stats.errors.push(`poll ${cid}/${turnId}: ${turn.status} ${JSON.stringify(turn.body)}`);
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      if (turn.body.status === "completed") {
        stats.turnsCompleted++;
        break;
      }
      if (turn.body.status !== "running" && turn.body.status !== "pending") {
        stats.turnsOther[turn.body.status] = (stats.turnsOther[turn.body.status] ?? 0) + 1;
        break;
      }
      // Now and then the server drops every browser stream of the conversation (a deploy).
      if (Math.random() < 0.02) {
        const dropped = await post(`/v1/conversations/${cid}/dev/drop-streams`, {}, token);
        stats.serverDrops += dropped.body.dropped ?? 0;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let summary = await get(`/v1/conversations/${cid}`, token);
  while (summary.status !== 200 && !overdue()) {
    stats.errors.push(`summary ${cid}: ${summary.status} ${JSON.stringify(summary.body)}`);
    await new Promise((r) => setTimeout(r, 250));
    summary = await get(`/v1/conversations/${cid}`, token);
  }
  lastEventId = summary.body.lastEventId ?? 0;
  await Promise.all(viewers);
  // Every viewer must have seen 1..lastEventId, each once.
  let delivered = 0;
  let lost = 0;
  let duplicated = 0;
  for (const s of seen) {
    for (let seq = 1; seq <= lastEventId; seq++) {
      const n = s.get(seq) ?? 0;
      if (n === 0) lost++;
      if (n > 1) duplicated += n - 1;
    }
    for (const n of s.values()) delivered += n;
  }
  return { cid, lastEventId, expected: lastEventId * VIEWERS, delivered, lost, duplicated };
}

const percentile = (values, p) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

let exitCode = 0;
try {
  // Warm up: compile, provision one sandbox, then turn the faults on.
  const warm = await devLogin(base, "load-warm");
  await post("/v1/conversations/warm/turns", { turnId: "w", message: "warm up" }, warm);
  for (let i = 0; i < 100 && (await get("/v1/conversations/warm/turns/w", warm)).body.status === "running"; i++)
    await new Promise((r) => setTimeout(r, 100));
  const faults = await post("/_emulator/faults", FAULTS);
  if (faults.status !== 200) throw new Error(`faults: ${faults.status} ${JSON.stringify(faults.body)}`);
  const rssIdle = workerdRssMiB();
  let rssPeak = rssIdle;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, workerdRssMiB())), 500);
  const t0 = Date.now();
  const results = await Promise.all(Array.from({ length: CONVERSATIONS }, (_, i) => conversation(i)));
  const seconds = (Date.now() - t0) / 1000;
  clearInterval(sampler);
  const rssEnd = workerdRssMiB();
  const counters = (await (await fetch(`${base}/_emulator/counters`)).json()).counters;

  const sum = (k) => results.reduce((n, r) => n + r[k], 0);
  const report = {
    at: new Date().toISOString(),
    setup: {
      conversations: CONVERSATIONS,
      viewersPerConversation: VIEWERS,
      turnsPerConversation: TURNS,
      faults: FAULTS,
      viewerDropEvery: VIEWER_DROP_EVERY,
      deadlineSeconds: DEADLINE_S,
    },
    seconds: Math.round(seconds),
    timedOut: overdue(),
    turns: { sent: stats.turnsSent, completed: stats.turnsCompleted, other: stats.turnsOther },
    frames: {
      expected: sum("expected"),
      delivered: sum("delivered"),
      lost: sum("lost"),
      duplicated: sum("duplicated"),
    },
    reconnects: { total: stats.reconnects, viewerDrops: stats.viewerDrops, serverDroppedStreams: stats.serverDrops },
    latencyMs: {
      p50: percentile(stats.latenciesMs, 50),
      p99: percentile(stats.latenciesMs, 99),
      max: percentile(stats.latenciesMs, 100),
    },
    upstream: { streamsOpened: counters["streams.opened"] ?? 0, replays: counters["runs.replays"] ?? 0 },
    workerdRssMiB: { idle: Math.round(rssIdle), peak: Math.round(rssPeak), end: Math.round(rssEnd) },
    errors: stats.errors.slice(0, 20),
  };
  const ok =
    report.frames.lost === 0 &&
    report.frames.duplicated === 0 &&
    report.frames.delivered === report.frames.expected &&
    !report.timedOut &&
    report.turns.completed === report.turns.sent;
  if (!ok) exitCode = 1;

  console.log(
    `load: ${CONVERSATIONS} conversations × ${VIEWERS} viewers × ${TURNS} turns, faults ${JSON.stringify(FAULTS)}, ${report.seconds} s${report.timedOut ? " (DEADLINE REACHED)" : ""}`,
  );
  console.log(
    `turns completed      ${report.turns.completed} / ${report.turns.sent}${Object.keys(report.turns.other).length ? ` (other: ${JSON.stringify(report.turns.other)})` : ""}`,
  );
  console.log(
    `frames delivered     ${report.frames.delivered} / ${report.frames.expected} expected; lost ${report.frames.lost}, duplicated ${report.frames.duplicated}`,
  );
  console.log(
    `reconnects           ${report.reconnects.total} (viewer drops ${report.reconnects.viewerDrops}, streams dropped by the server ${report.reconnects.serverDroppedStreams})`,
  );
  console.log(
    `upstream             ${report.upstream.streamsOpened} run streams opened, ${report.upstream.replays} of them replays after a severed stream`,
  );
  console.log(
    `delivery latency     p50 ${report.latencyMs.p50} ms, p99 ${report.latencyMs.p99} ms, max ${report.latencyMs.max} ms`,
  );
  console.log(
    `workerd RSS          idle ${report.workerdRssMiB.idle} MiB, peak ${report.workerdRssMiB.peak} MiB, end ${report.workerdRssMiB.end} MiB`,
  );
  if (report.errors.length) console.log(`errors (first ${report.errors.length}):\n  ${report.errors.join("\n  ")}`);
  console.log(ok ? "OK: every viewer saw every event exactly once" : "FAILED: see above");
  mkdirSync(join(here, "results"), { recursive: true });
  writeFileSync(join(here, "results", "load.json"), `${JSON.stringify(report, null, 2)}\n`);
} catch (err) {
  exitCode = 1;
  console.error(`load failed: ${err.stack}\n${server.output().slice(-3000)}`);
} finally {
  server.stop();
}
process.exit(exitCode);
