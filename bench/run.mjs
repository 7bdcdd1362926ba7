#!/usr/bin/env node
// Benchmarks against `wrangler dev` and the emulator, each figure beside a baseline measured in
// the same run. Prints a summary and writes bench/results/latest.json (figures in bench/README.md).
//
//   npm run bench                                  every section below, on this tree
//   BENCH_BEFORE_REF=4ee4fd7 npm run bench         also the idle figure of that commit (a git
//                                                  worktree in the temp dir, removed afterwards)
//
// Sections (BENCH_ONLY=relay,replay,latency,rows,idle,before runs a subset):
//   relay     frames/s to 1 and 10 live readers; baseline the raw stream to as many readers
//   replay    a finished log of REPLAY_WORDS (10,000) frames read from the start; baseline raw
//   latency   for K in LATENCY_VIEWERS (1,10,100): upstream run streams opened for one turn with K
//             viewers (baseline: K readers of the raw stream), and the latency a frame gains from
//             the raw stream to a viewer at LATENCY_FRAME_MS (20 ms = 50 frames/s), for
//             LATENCY_WORDS (300) one-word deltas; and, for K up to LATENCY_RAW_FANOUT_MAX (10), the
//             same for the raw stream itself fanned out to K readers, in a turn of its own
//   rows      SQLite rows written and bytes stored for ROWS_SMALL_WORDS (500) and ROWS_WORDS
//             (5,000) word answers at ROWS_FRAME_MS (2) per frame, bytes on the wire to one viewer;
//             baseline the raw stream's bytes
//   idle      how long a session object with IDLE_VIEWERS (3) open viewers stays in memory after a
//             turn: one conversation per IDLE_PROBES_S entry, each probed once after that idle time
//   before    (only with BENCH_BEFORE_REF) the same on the old commit, probed by dev/drop-streams
//             after each of BEFORE_PROBES_S
// The cost model (COST_* below) is computed from the measured figures.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { devLogin, readSse, startDevServer } from "../scripts/devserver.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const env = process.env;
const num = (name, fallback) => Number(env[name] ?? fallback);
const list = (name, fallback) => String(env[name] ?? fallback).split(",").filter(Boolean).map(Number);

const RELAY_WORDS = num("RELAY_WORDS", 3000);
const REPLAY_WORDS = num("REPLAY_WORDS", 10000);
const LATENCY_WORDS = num("LATENCY_WORDS", 300);
const LATENCY_FRAME_MS = num("LATENCY_FRAME_MS", 20);
const LATENCY_VIEWERS = list("LATENCY_VIEWERS", "1,10,100");
// The raw stream fanned out to K readers, for K up to this: under wrangler dev every chunk of a
// subrequest body (each raw reader is one) is forwarded to the dev server, and 100 of them at
// 50 frames/s open connections faster than they close, until workerd runs out of descriptors.
const LATENCY_RAW_FANOUT_MAX = num("LATENCY_RAW_FANOUT_MAX", 10);
const ROWS_SMALL_WORDS = num("ROWS_SMALL_WORDS", 500);
const ROWS_WORDS = num("ROWS_WORDS", 5000);
// The rows turns are paced (ms per frame): unpaced, a one-part answer is a burst of quadratic size
// upstream (5,000 words: 72 MB of cumulative part.text at once), which on a loaded 2-core machine
// starves the dev server for minutes.
const ROWS_FRAME_MS = num("ROWS_FRAME_MS", 2);
const IDLE_VIEWERS = num("IDLE_VIEWERS", 3);
const IDLE_PROBES_S = list("IDLE_PROBES_S", "4,6,8,9,10,11,12,14,16,20");
const BEFORE_REF = env.BENCH_BEFORE_REF ?? "";
const BEFORE_PROBES_S = list("BEFORE_PROBES_S", "12,20,30");
const ONLY = env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(",")) : null;
const runs = (section) => (ONLY ? ONLY.has(section) : section !== "before" || BEFORE_REF !== "");

// The cost model's workload (bench/README.md, "Cost"): per month, USERS users each keep a tab
// open TAB_HOURS a day and send TURNS turns of WORDS words a day, each turn streaming TURN_SECONDS.
const COST = {
  users: num("COST_USERS", 1000),
  days: num("COST_DAYS", 30),
  tabHoursPerDay: num("COST_TAB_HOURS", 8),
  turnsPerDay: num("COST_TURNS", 20),
  wordsPerTurn: num("COST_WORDS", 500),
  turnSeconds: num("COST_TURN_SECONDS", 25),
  streamsPerDay: num("COST_STREAMS", 1),
};

const results = { config: { RELAY_WORDS, REPLAY_WORDS, LATENCY_WORDS, LATENCY_FRAME_MS, LATENCY_VIEWERS, LATENCY_RAW_FANOUT_MAX, ROWS_SMALL_WORDS, ROWS_WORDS, ROWS_FRAME_MS, IDLE_VIEWERS, IDLE_PROBES_S, BEFORE_REF, BEFORE_PROBES_S } };
const problems = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const tag = Date.now().toString(36);
const GATEWAY_OWN = /^(turn\.|usage\.updated$|budget\.|interaction\.|warning$)/;
const isTurnEnd = (type) => type === "turn.completed" || type === "turn.failed" || type === "turn.cancelled";
const utf8 = (s) => Buffer.byteLength(s, "utf8");

function percentile(values, q) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
const ms = (v) => (v === null ? null : Number(v.toFixed(2)));

/**
 * Follows one SSE response. Every frame is stamped with the time its chunk arrived
 * (performance.now() right after the read), its UTF-8 size on the wire and the chunk's index;
 * `onFrame` returns true to stop. Linear in the size of a burst (one pass, one slice).
 */
function follow(url, headers, onFrame) {
  const abort = new AbortController();
  let opened;
  const openedP = new Promise((resolve, reject) => (opened = { resolve, reject }));
  openedP.catch(() => {});
  const done = (async () => {
    let res;
    const noHeaders = setTimeout(() => abort.abort(new Error(`${url}: no response headers within 60 s`)), 60_000);
    try {
      res = await fetch(url, { headers, signal: abort.signal });
    } catch (err) {
      opened.reject(err);
      throw err;
    } finally {
      clearTimeout(noHeaders);
    }
    if (!res.ok) {
      const err = new Error(`${url}: ${res.status} ${await res.text()}`);
      opened.reject(err);
      throw err;
    }
    opened.resolve();
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let frame = {};
    let frameBytes = 0;
    let chunk = -1;
    let total = 0;
    try {
      while (true) {
        const { done: end, value } = await reader.read();
        if (end) return { total, ended: "stream" };
        const t = performance.now();
        chunk++;
        total += value.byteLength;
        buffer += decoder.decode(value, { stream: true });
        let start = 0;
        let nl;
        while ((nl = buffer.indexOf("\n", start)) !== -1) {
          const line = buffer.charCodeAt(nl - 1) === 13 ? buffer.slice(start, nl - 1) : buffer.slice(start, nl);
          frameBytes += utf8(buffer.slice(start, nl)) + 1;
          start = nl + 1;
          if (line === "") {
            if (frame.data !== undefined && onFrame(frame, t, frameBytes, chunk)) return { total, ended: "stopped" };
            frame = {};
            frameBytes = 0;
          } else if (line.startsWith("id: ")) frame.id = line.slice(4);
          else if (line.startsWith("event: ")) frame.event = line.slice(7);
          else if (line.startsWith("data: ")) frame.data = frame.data === undefined ? line.slice(6) : `${frame.data}\n${line.slice(6)}`;
        }
        buffer = buffer.slice(start);
      }
    } catch (err) {
      if (abort.signal.aborted) return { total, ended: "closed" };
      throw err;
    } finally {
      reader.cancel().catch(() => {});
    }
  })();
  done.catch(() => {});
  return { opened: openedP, done, close: () => abort.abort() };
}

/**
 * A browser on a conversation's event stream: keeps every frame (envelope parsed), checks seqs,
 * and lets the caller wait for a frame. It stays open until closed or `stopAt` matches.
 */
function viewer(base, cid, auth, { after = 0, stopAt } = {}) {
  const v = { frames: [], waiters: [], ended: null, seqErrors: 0, lastSeq: after };
  const check = () => {
    v.waiters = v.waiters.filter((w) => {
      for (; w.from < v.frames.length; w.from++) {
        if (w.pred(v.frames[w.from])) {
          w.resolve(v.frames[w.from]);
          return false;
        }
      }
      if (v.ended) w.reject(new Error(`viewer of ${cid} ended (${v.ended}) before the awaited frame`));
      return !v.ended;
    });
  };
  v.stream = follow(`${base}/v1/conversations/${cid}/events?after=${after}`, auth, (f, t, bytes, chunk) => {
    const seq = Number(f.id);
    // Every event exactly once, in order: seq is the log's own, one more than the last.
    if (seq !== v.lastSeq + 1) v.seqErrors++;
    v.lastSeq = Math.max(v.lastSeq, seq);
    // The envelope is parsed when first asked for: the next viewer's chunk waits for this one's work.
    const rec = { seq, type: f.event, data: f.data, t, bytes, chunk, parsed: undefined, get env() { return (this.parsed ??= JSON.parse(this.data)); } };
    v.frames.push(rec);
    check();
    return stopAt ? stopAt(rec) : false;
  });
  v.done = v.stream.done.then(
    (r) => ((v.ended = r.ended), check(), r),
    (err) => ((v.ended = `error: ${err.message}`), check(), { ended: v.ended }),
  );
  v.opened = v.stream.opened;
  v.waitFor = (pred, timeoutMs = 120_000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`viewer of ${cid}: no awaited frame within ${timeoutMs} ms`)), timeoutMs);
      v.waiters.push({ pred, from: 0, resolve: (x) => (clearTimeout(timer), resolve(x)), reject: (e) => (clearTimeout(timer), reject(e)) });
      check();
    });
  v.close = () => v.stream.close();
  return v;
}
const turnEndOf = (turnId) => (f) => f.env.turnId === turnId && isTurnEnd(f.type);

/** The text deltas of a stream, in order: the k-th delta upstream is the k-th a viewer gets. */
const deltaOf = (data) => (data && typeof data.delta === "string" ? data.delta : null);

function client(base) {
  async function call(method, path, body, headers = {}) {
    const res = await fetch(`${base}${path}`, {
      signal: AbortSignal.timeout(120_000),
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
    return JSON.parse(text);
  }
  return {
    post: (path, body, headers) => call("POST", path, body, headers),
    get: (path, headers) => call("GET", path, undefined, headers),
  };
}

// ------------------------------------------------------------------ the sections

/** Reads a stream to `stopAt` (or its end): frames counted, seconds from the first agent frame to the last. */
async function timedRead(url, headers, stopAt) {
  const res = await fetch(url, { headers });
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  let frames = 0;
  let first = 0;
  let last = 0;
  await readSse(res, (f) => {
    const now = performance.now();
    // The gateway's turn.accepted comes at dispatch, before the agent's first frame: the clock
    // starts after it, so the figure is throughput, not dispatch latency.
    if (f.event === "turn.accepted") return false;
    if (frames === 0) first = now;
    last = now;
    frames++;
    return stopAt(f);
  });
  if (frames === 0) throw new Error(`${url}: the stream ended with no frame (did wrangler dev reload?)`);
  return { frames, seconds: Math.max(last - first, 0.001) / 1000 };
}
const sseTurnEnd = (f) => isTurnEnd(f.event);
const streamEnd = () => false;

async function relay({ base, api, auth }) {
  // [paragraphs]: the answer in 25-word text parts, so frames keep the size real ones have
  // (one part whose text grows with the whole answer would make the raw frames quadratic).
  for (const readers of [1, 10]) {
    const cid = `relay-${readers}-${tag}`;
    const pending = Array.from({ length: readers }, () => timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, sseTurnEnd));
    await sleep(300); // readers attached before the run starts
    const accepted = await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: `relay [words:${RELAY_WORDS}] [paragraphs]` }, auth);
    const reads = await Promise.all(pending);
    const rate = Math.min(...reads.map((r) => r.frames / r.seconds));
    // Baseline: the same frames passed through raw (the emulator's stream, through the same Worker) to as many readers.
    const raws = await Promise.all(Array.from({ length: readers }, () => timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd)));
    const baseline = Math.min(...raws.map((r) => r.frames / r.seconds));
    results[`relay_${readers}_reader${readers > 1 ? "s" : ""}`] = {
      frames: reads[0].frames,
      framesPerSecond: Math.round(rate),
      baselineFramesPerSecond: Math.round(baseline),
      ratio: Number((rate / baseline).toFixed(2)),
      target: "ratio >= 0.5",
    };
  }
}

async function replay({ base, api, auth }) {
  const cid = `replay-${tag}`;
  const accepted = await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: `replay [words:${REPLAY_WORDS}] [paragraphs]` }, auth);
  await timedRead(`${base}/v1/conversations/${cid}/events`, auth, sseTurnEnd);
  const read = await timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, sseTurnEnd);
  const raw = await timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd);
  const rate = read.frames / read.seconds;
  const baseline = raw.frames / raw.seconds;
  results.replay_log = {
    frames: read.frames,
    framesPerSecond: Math.round(rate),
    baselineFramesPerSecond: Math.round(baseline),
    ratio: Number((rate / baseline).toFixed(2)),
    target: "framesPerSecond >= 30000",
  };
}

/** The text deltas of an execution's raw stream, each with its arrival time and chunk index. */
async function rawDeltas(base, executionId) {
  const frames = [];
  await follow(`${base}/_emulator/executions/${executionId}/stream`, {}, (f, t, _bytes, chunk) => (frames.push({ t, data: f.data, chunk }), false)).done;
  return frames.map((f) => ({ t: f.t, chunk: f.chunk, delta: deltaOf(JSON.parse(f.data)) })).filter((f) => f.delta !== null);
}

/**
 * One turn at LATENCY_FRAME_MS per frame, K viewers attached before it starts and the raw stream
 * of the same execution opened as soon as the turn is accepted (it replays what was already
 * emitted in its first chunk, then follows live; frames of that first chunk are not compared).
 * Also the emulator's run-stream counters around the turn: upstream reads for K viewers.
 */
async function latencyRun({ base, api, auth }, K) {
  const cid = `latency-${K}-${tag}`;
  const viewers = Array.from({ length: K }, () => viewer(base, cid, auth, { stopAt: (f) => isTurnEnd(f.type) }));
  await Promise.all(viewers.map((v) => v.opened));
  await sleep(300 + K * 5); // every subscription live before the run starts
  const before = await api.get("/_emulator/counters");
  const accepted = await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: `latency [words:${LATENCY_WORDS}]` }, auth);
  const rawStream = rawDeltas(base, accepted.executionId);
  await Promise.all(viewers.map((v) => v.done));
  const raw = await rawStream;
  await sleep(300); // the gateway's reader closes after `done`
  const after = await api.get("/_emulator/counters");
  const delta = (name) => (after.counters[name] ?? 0) - (before.counters[name] ?? 0);

  // Lost, duplicated, out of order: every viewer must get exactly the raw stream's deltas.
  let mismatched = 0;
  let seqErrors = 0;
  const added = [];
  for (const v of viewers) {
    seqErrors += v.seqErrors;
    const got = v.frames.filter((f) => f.type !== "stream.reset").map((f) => ({ t: f.t, delta: deltaOf(f.env.data) })).filter((d) => d.delta !== null);
    if (got.length !== raw.length || got.some((d, k) => d.delta !== raw[k].delta)) mismatched++;
    for (let k = 0; k < Math.min(got.length, raw.length); k++) {
      if (raw[k].chunk === 0) continue; // replayed when the raw stream opened, not live
      added.push(got[k].t - raw[k].t);
    }
  }
  const gaps = [];
  for (let k = 1; k < raw.length; k++) if (raw[k - 1].chunk > 0) gaps.push(raw[k].t - raw[k - 1].t);
  const jitter = gaps.map((g) => Math.abs(g - LATENCY_FRAME_MS));

  // Baseline of the upstream reads: each of K viewers reads the run upstream itself, the raw
  // stream of the same execution, counted the same way.
  const beforeRaw = await api.get("/_emulator/counters");
  const rawReads = await Promise.all(
    Array.from({ length: K }, () => {
      let n = 0;
      return follow(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, () => (n++, false)).done.then(() => n);
    }),
  );
  const afterRaw = await api.get("/_emulator/counters");
  const rawOpened = (afterRaw.counters["streams.opened"] ?? 0) - (beforeRaw.counters["streams.opened"] ?? 0);
  if (new Set(rawReads).size !== 1) problems.push(`latency K=${K}: the raw readers got different frame counts ${[...new Set(rawReads)]}`);

  // Baseline of the latency: the raw pass-through itself fanned out to K readers (a turn of its
  // own, so the two loads do not add up), against one more raw reader as the reference.
  let rawFanout = null;
  if (K <= LATENCY_RAW_FANOUT_MAX) {
    const fan = await api.post(`/v1/conversations/${cid}-raw/turns`, { turnId: "t1", message: `latency [words:${LATENCY_WORDS}]` }, auth);
    const [reference, ...readers] = await Promise.all(Array.from({ length: K + 1 }, () => rawDeltas(base, fan.executionId)));
    const spread = [];
    for (const r of readers) {
      for (let k = 0; k < Math.min(r.length, reference.length); k++) {
        if (r[k].chunk === 0 || reference[k].chunk === 0) continue;
        spread.push(r[k].t - reference[k].t);
      }
    }
    rawFanout = { compared: spread.length, addedMs: { p50: ms(percentile(spread, 0.5)), p99: ms(percentile(spread, 0.99)) } };
  }

  const result = {
    viewers: K,
    upstream: {
      // The raw stream this benchmark opened itself is not the gateway's.
      runStreamsOpened: delta("streams.opened") - 1,
      dispatchStreams: delta("runs.dispatches"),
      readerStreams: delta("runs.replays"),
      baselineRunStreamsOpened: rawOpened,
    },
    frames: raw.length,
    compared: added.length,
    addedMs: { p50: ms(percentile(added, 0.5)), p99: ms(percentile(added, 0.99)), max: ms(added.length ? Math.max(...added) : null) },
    rawInterArrivalMs: { p50: ms(percentile(gaps, 0.5)), p99: ms(percentile(gaps, 0.99)) },
    rawJitterMs: { p50: ms(percentile(jitter, 0.5)), p99: ms(percentile(jitter, 0.99)) },
    rawFanout,
    viewersMismatched: mismatched,
    seqErrors,
  };
  if (mismatched || seqErrors) problems.push(`latency K=${K}: ${mismatched} viewers did not get exactly the upstream deltas, ${seqErrors} seq gaps or repeats`);
  return result;
}

async function latency(ctx) {
  await ctx.api.post("/_emulator/faults", { frameDelayMs: LATENCY_FRAME_MS });
  try {
    results.latency = [];
    for (const K of LATENCY_VIEWERS) results.latency.push(await latencyRun(ctx, K));
  } finally {
    await ctx.api.post("/_emulator/faults", { frameDelayMs: 0 });
  }
}

/** dev/object once the object's writes have settled (two reads in a row agree). */
async function settledObject(api, cid, auth) {
  let last = await api.get(`/v1/conversations/${cid}/dev/object`, auth);
  for (let i = 0; i < 20; i++) {
    await sleep(250);
    const next = await api.get(`/v1/conversations/${cid}/dev/object`, auth);
    if (next.instance === last.instance && next.rowsWritten === last.rowsWritten && next.log.events === last.log.events) return { ...next, at: performance.now() };
    last = next;
  }
  return { ...last, at: performance.now() };
}

/**
 * Rows written and bytes stored for one answer, with one viewer attached (it also keeps the
 * measurement honest: the frames it gets are what was relayed). Baseline: the raw stream's bytes
 * for the same run (every frame carries the part's whole text so far).
 */
async function rowsTurn({ base, api, auth }, v, cid, turnId, words) {
  const start = await settledObject(api, cid, auth);
  const accepted = await api.post(`/v1/conversations/${cid}/turns`, { turnId, message: `rows [words:${words}]` }, auth);
  const end = await v.waitFor(turnEndOf(turnId), 300_000);
  const stop = await settledObject(api, cid, auth);
  const frames = v.frames.filter((f) => f.env.turnId === turnId);
  const relayed = frames.filter((f) => !GATEWAY_OWN.test(f.type));
  const answer = end.env.data?.result?.text ?? "";
  const deltaBytes = relayed.reduce((n, f) => n + utf8(deltaOf(f.env.data) ?? ""), 0);
  const textParts = new Set(relayed.filter((f) => deltaOf(f.env.data) !== null).map((f) => f.env.data.part?.id));
  let rawFrames = 0;
  const raw = await follow(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, () => (rawFrames++, false)).done;
  const sameInstance = start.instance === stop.instance;
  const out = {
    words,
    sameInstance,
    instances: sameInstance ? [start.instance] : [start.instance, stop.instance],
    seconds: Number(((stop.at - start.at) / 1000).toFixed(1)),
    relayedFrames: relayed.length,
    gatewayFrames: frames.length - relayed.length,
    eventsStored: stop.log.events - start.log.events,
    rowsWritten: sameInstance ? stop.rowsWritten - start.rowsWritten : null,
    rowsPerRelayedFrame: sameInstance ? Number(((stop.rowsWritten - start.rowsWritten) / relayed.length).toFixed(3)) : null,
    answerBytes: utf8(answer),
    deltaBytes,
    answerTextParts: textParts.size,
    storedBytes: stop.log.bytes - start.log.bytes,
    wireBytes: frames.reduce((n, f) => n + f.bytes, 0),
    rawFrames,
    rawBytes: raw.total,
  };
  out.storedPerWord = Number((out.storedBytes / words).toFixed(1));
  out.storedPerAnswerByte = Number((out.storedBytes / out.answerBytes).toFixed(2));
  out.wirePerAnswerByte = Number((out.wireBytes / out.answerBytes).toFixed(2));
  out.rawPerAnswerByte = Number((out.rawBytes / out.answerBytes).toFixed(2));
  // What each stored frame costs beyond three times its share of the answer.
  out.storedOver3xPerFrame = Math.round((out.storedBytes - 3 * out.answerBytes) / frames.length);
  out.wireOver3xPerFrame = Math.round((out.wireBytes - 3 * out.answerBytes) / frames.length);
  if (out.eventsStored !== frames.length) problems.push(`rows ${words} words: ${out.eventsStored} events stored, the viewer got ${frames.length}`);
  return out;
}

async function rows(ctx) {
  const { api } = ctx;
  await api.post("/_emulator/faults", { frameDelayMs: ROWS_FRAME_MS });
  try {
    await rowsMeasured(ctx);
  } finally {
    await api.post("/_emulator/faults", { frameDelayMs: 0 });
  }
}

async function rowsMeasured(ctx) {
  const { base, api, auth } = ctx;
  const cid = `rows-${tag}`;
  const v = viewer(base, cid, auth);
  await v.opened;
  // A first turn creates the conversation (schema, binding, title): not part of the figures.
  await api.post(`/v1/conversations/${cid}/turns`, { turnId: "warm", message: "rows warm-up [words:10]" }, auth);
  await v.waitFor(turnEndOf("warm"));
  const turns = [];
  for (const words of [ROWS_SMALL_WORDS, ROWS_WORDS]) {
    let out;
    for (let attempt = 1; attempt <= 2; attempt++) {
      out = await rowsTurn(ctx, v, cid, `w${words}-${attempt}`, words);
      if (out.sameInstance) break;
    }
    if (!out.sameInstance) problems.push(`rows ${words} words: the session object changed instance during the turn twice; rows not measured`);
    turns.push(out);
  }
  v.close();
  if (v.seqErrors) problems.push(`rows: the viewer saw ${v.seqErrors} seq gaps or repeats`);
  const [small, large] = turns;
  // rows = perTurn + perFrame × relayed frames, from the two sizes.
  let fit = null;
  if (small.rowsWritten !== null && large.rowsWritten !== null) {
    const perFrame = (large.rowsWritten - small.rowsWritten) / (large.relayedFrames - small.relayedFrames);
    fit = { perFrame: Number(perFrame.toFixed(4)), perTurn: Number((small.rowsWritten - perFrame * small.relayedFrames).toFixed(1)) };
  }
  // ≤ 3 × answer bytes + a constant per frame: the constant the small answer needs must do for the large one.
  const constant = Math.max(0, small.storedOver3xPerFrame);
  const wireConstant = Math.max(0, small.wireOver3xPerFrame);
  const largeFrames = large.relayedFrames + large.gatewayFrames;
  results.rows = {
    turns,
    fit,
    target: {
      storedConstantPerFrame: constant,
      storedMet: large.storedBytes <= 3 * large.answerBytes + constant * largeFrames * 1.05,
      wireConstantPerFrame: wireConstant,
      wireMet: large.wireBytes <= 3 * large.answerBytes + wireConstant * largeFrames * 1.05,
    },
  };
}

/**
 * Idle conversations with viewers open: one per probe time. Each runs a turn with IDLE_VIEWERS
 * viewers, lets the object settle, then waits its probe time untouched and asks dev/object once:
 * the same instance (still in memory) or a new one (evicted meanwhile). Then a second turn: every
 * viewer must get it exactly once, through an object that hibernated with their subscriptions.
 */
async function idle({ base, api, auth }) {
  await api.post("/_emulator/faults", { frameDelayMs: 0 });
  const probes = await Promise.all(
    IDLE_PROBES_S.map(async (seconds, i) => {
      const cid = `idle-${i}-${tag}`;
      const viewers = Array.from({ length: IDLE_VIEWERS }, () => viewer(base, cid, auth));
      await Promise.all(viewers.map((v) => v.opened));
      await sleep(300);
      await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: "idle [words:20]" }, auth);
      await Promise.all(viewers.map((v) => v.waitFor(turnEndOf("t1"))));
      const settled = await settledObject(api, cid, auth);
      const idleFrom = performance.now();
      await sleep(seconds * 1000);
      const sent = performance.now();
      const probe = await api.get(`/v1/conversations/${cid}/dev/object`, auth);
      // A new instance's age: ~0 when the probe itself woke it (nothing else did, pings included).
      const ageSeconds = Number(((Date.now() - probe.startedAt) / 1000).toFixed(2));
      const openBefore = viewers.filter((v) => !v.ended).length;
      await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t2", message: "after idle [words:20]" }, auth);
      await Promise.all(viewers.map((v) => v.waitFor(turnEndOf("t2"))));
      viewers.forEach((v) => v.close());
      const t2 = viewers.map((v) => v.frames.filter((f) => f.env.turnId === "t2").length);
      return {
        probeSeconds: seconds,
        idleSeconds: Number(((sent - idleFrom) / 1000).toFixed(2)),
        sameInstance: probe.instance === settled.instance,
        instanceAgeSeconds: ageSeconds,
        subscriptions: probe.subscriptions,
        viewersOpen: openBefore,
        secondTurnFrames: t2,
        seqErrors: viewers.reduce((n, v) => n + v.seqErrors, 0),
      };
    }),
  );
  for (const p of probes) {
    if (!p.sameInstance && p.instanceAgeSeconds > 1) problems.push(`idle ${p.probeSeconds} s: something woke the object ${p.instanceAgeSeconds} s before the probe`);
    if (p.seqErrors || new Set(p.secondTurnFrames).size !== 1) problems.push(`idle ${p.probeSeconds} s: viewers' second turn frames ${p.secondTurnFrames}, ${p.seqErrors} seq gaps or repeats`);
    if (p.subscriptions !== IDLE_VIEWERS || p.viewersOpen !== IDLE_VIEWERS) problems.push(`idle ${p.probeSeconds} s: ${p.subscriptions} subscriptions, ${p.viewersOpen} viewers open at the probe`);
  }
  const same = probes.filter((p) => p.sameInstance).map((p) => p.idleSeconds);
  const evicted = probes.filter((p) => !p.sameInstance).map((p) => p.idleSeconds);
  const lastSame = same.length ? Math.max(...same) : null;
  const firstNew = evicted.length ? Math.min(...evicted) : null;
  if (firstNew === null) problems.push(`idle: the session object was still in memory after ${lastSame} s idle (never evicted): it did not hibernate`);
  if (lastSame !== null && firstNew !== null && lastSame > firstNew) problems.push(`idle: not monotonic (still in memory after ${lastSame} s, evicted after ${firstNew} s)`);
  results.idle = { viewers: IDLE_VIEWERS, probes, evictedBetweenSeconds: [lastSame, firstNew] };
}

/**
 * The old design (BENCH_BEFORE_REF): the session object held the browsers' SSE responses. It has
 * no dev/object route; dev/drop-streams answers how many streams the in-memory instance holds, so
 * IDLE_VIEWERS after an idle time (with the viewers still open) means it was never evicted.
 */
let beforeCleanup;
async function before() {
  const dir = join(tmpdir(), `bench-before-${process.pid}`);
  let server;
  const git = (...args) => execFileSync("git", ["-C", root, ...args], { stdio: ["ignore", "pipe", "pipe"] }).toString();
  beforeCleanup = () => {
    server?.stop();
    try {
      git("worktree", "remove", "--force", dir);
    } catch {
      // not added yet
    }
  };
  try {
    git("worktree", "add", "--detach", dir, BEFORE_REF);
    let sameDeps = true;
    try {
      git("diff", "--quiet", BEFORE_REF, "HEAD", "--", "package.json", "package-lock.json");
    } catch {
      sameDeps = false;
    }
    if (sameDeps) symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
    else execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "ignore" });
    server = await startDevServer({ checkout: dir, timeoutMs: 90_000, vars: { RATE_LIMIT_STREAMS_PER_MINUTE: "100000", RATE_LIMIT_TURNS_PER_MINUTE: "1000" } });
    const base = server.base;
    const api = client(base);
    const auth = { authorization: `Bearer ${await devLogin(base, "bench")}` };
    await api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, auth);
    await api.post("/_emulator/faults", { frameDelayMs: 0 });
    const probes = await Promise.all(
      BEFORE_PROBES_S.map(async (seconds, i) => {
        const cid = `before-${i}-${tag}`;
        const viewers = Array.from({ length: IDLE_VIEWERS }, () => viewer(base, cid, auth));
        await Promise.all(viewers.map((v) => v.opened));
        await sleep(300);
        await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: "idle [words:20]" }, auth);
        await Promise.all(viewers.map((v) => v.waitFor(turnEndOf("t1"))));
        await sleep(500);
        const idleFrom = performance.now();
        await sleep(seconds * 1000);
        const openBefore = viewers.filter((v) => !v.ended).length;
        const sent = performance.now();
        const { dropped } = await api.post(`/v1/conversations/${cid}/dev/drop-streams`, {}, auth);
        await Promise.race([Promise.all(viewers.map((v) => v.done)), sleep(2000)]);
        viewers.forEach((v) => v.close());
        return { probeSeconds: seconds, idleSeconds: Number(((sent - idleFrom) / 1000).toFixed(2)), viewersOpen: openBefore, streamsHeld: dropped, inMemory: dropped === IDLE_VIEWERS };
      }),
    );
    results.before = { ref: BEFORE_REF, sameDeps, viewers: IDLE_VIEWERS, probes };
  } finally {
    await server?.stopped();
    try {
      git("worktree", "remove", "--force", dir);
    } catch (err) {
      problems.push(`before: could not remove the worktree ${dir}: ${err.message}`);
    }
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    git("worktree", "prune");
    beforeCleanup = undefined;
  }
}

// ------------------------------------------------------------------ the cost model

/** Cloudflare Workers Paid, Durable Objects (developers.cloudflare.com/durable-objects/platform/pricing/). */
const PRICE = {
  requests: { included: 1e6, perMillion: 0.15 },
  gbSeconds: { included: 400_000, perMillion: 12.5 },
  rowsWritten: { included: 50e6, perMillion: 1.0 },
  gbPerObject: 128 / 1000, // 128 MB, as Cloudflare's own examples compute it
};
const billed = (quantity, { included, perMillion }) => Number(((Math.max(0, quantity - included) * perMillion) / 1e6).toFixed(2));

function cost() {
  const idleS = results.idle?.evictedBetweenSeconds?.[1] ?? results.idle?.evictedBetweenSeconds?.[0];
  const rowsTurn500 = results.rows?.turns?.find((t) => t.words === ROWS_SMALL_WORDS);
  if (idleS == null || !rowsTurn500?.rowsWritten || !results.rows.fit) return;
  const c = COST;
  const perMonth = c.users * c.days;
  // Rows per turn: the measured rows of a turn of this many words (per-turn rows + rows per frame ×
  // frames), two setAlarm() (each billed as a row) and the user object's three index upserts.
  const frames = (c.wordsPerTurn / ROWS_SMALL_WORDS) * rowsTurn500.relayedFrames;
  const sessionRows = results.rows.fit.perTurn + results.rows.fit.perFrame * frames;
  const rowsPerTurn = sessionRows + 2 + 3;
  // DO requests per turn: Worker → user (rate limit) and → session (submitTurn); session → user
  // (ensureEnvironment, three conversation-index updates). Per browser stream: the rate limit and
  // the stream itself (before: an HTTP request into the object; after: the WebSocket upgrade, plus
  // one incoming pull message, billed 20:1).
  const requestsPerTurn = 6;
  const streamRequests = { before: 2, after: 2 + 1 / 20 };
  const activeBefore = c.tabHoursPerDay * 3600;
  const activeAfter = c.turnsPerDay * (c.turnSeconds + idleS) + c.streamsPerDay * idleS;
  const activeAfterDocs = c.turnsPerDay * c.turnSeconds;
  const line = (activeS, streamReq) => {
    const gbs = perMonth * activeS * PRICE.gbPerObject;
    const requests = perMonth * (c.turnsPerDay * requestsPerTurn + c.streamsPerDay * streamReq);
    const rowsW = perMonth * c.turnsPerDay * rowsPerTurn;
    const out = {
      activeSecondsPerUserDay: Number(activeS.toFixed(1)),
      gbSeconds: Math.round(gbs),
      durationUsd: billed(gbs, PRICE.gbSeconds),
      requests: Math.round(requests),
      requestsUsd: billed(requests, PRICE.requests),
      rowsWritten: Math.round(rowsW),
      rowsUsd: billed(rowsW, PRICE.rowsWritten),
    };
    out.totalUsd = Number((out.durationUsd + out.requestsUsd + out.rowsUsd).toFixed(2));
    return out;
  };
  results.cost = {
    workload: c,
    measured: { evictionDelaySeconds: idleS, framesPerTurn: Number(frames.toFixed(1)), sessionRowsPerTurn: Number(sessionRows.toFixed(1)), rowsPerTurn: Number(rowsPerTurn.toFixed(1)) },
    before: line(activeBefore, streamRequests.before),
    after: line(activeAfter, streamRequests.after),
    afterIfIdleWindowUnbilled: line(activeAfterDocs, streamRequests.after),
  };
}

// ------------------------------------------------------------------ run

const server = await startDevServer({ vars: { RATE_LIMIT_STREAMS_PER_MINUTE: "100000", RATE_LIMIT_TURNS_PER_MINUTE: "1000" } });
// Interrupted (Ctrl-C, a timeout): the servers this run started go with it.
const stopOnSignal = () => {
  server.stop();
  beforeCleanup?.();
  process.exit(130);
};
process.once("SIGINT", stopOnSignal);
process.once("SIGTERM", stopOnSignal);
const started = performance.now();
let serverLog = "";
results.loadAverage = { start: loadavg().map((l) => Number(l.toFixed(2))) };
const seconds = {};
try {
  const base = server.base;
  const api = client(base);
  const auth = { authorization: `Bearer ${await devLogin(base, "bench")}` };
  const ctx = { base, api, auth };
  // Warm up: provision the sandbox and compile everything once.
  await api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, auth);
  await timedRead(`${base}/v1/conversations/warm/events`, auth, sseTurnEnd);
  await api.post("/_emulator/faults", { frameDelayMs: 0 });
  const sections = { relay, replay, latency, rows, idle };
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
  if (/Reloading local server|Local server updated/.test(server.output())) problems.push("wrangler dev reloaded during the run (src/ changed): run again");
  serverLog = server.output();
  server.stop();
}
if (runs("before") && BEFORE_REF && process.exitCode !== 1) {
  const t = performance.now();
  try {
    await before();
  } catch (err) {
    console.error(`benchmark (before) failed: ${err.stack ?? err}`);
    process.exitCode = 1;
  }
  seconds.before = Number(((performance.now() - t) / 1000).toFixed(1));
}
cost();
results.loadAverage.end = loadavg().map((l) => Number(l.toFixed(2)));
results.seconds = { ...seconds, total: Number(((performance.now() - started) / 1000).toFixed(1)) };
results.problems = problems;

// ------------------------------------------------------------------ report

const out = [];
const relays = Object.entries(results).filter(([name]) => name.startsWith("relay_") || name === "replay_log");
if (relays.length) {
  out.push("throughput          frames   frames/s   baseline/s   ratio   target");
  for (const [name, r] of relays) {
    out.push(`${name.padEnd(18)} ${String(r.frames).padStart(7)} ${String(r.framesPerSecond).padStart(10)} ${String(r.baselineFramesPerSecond).padStart(12)} ${String(r.ratio).padStart(7)}   ${r.target}`);
  }
}
if (results.latency) {
  out.push("", `viewers  upstream streams (dispatch+reader) / raw baseline  | at ${LATENCY_FRAME_MS} ms/frame: added p50 / p99 ms  raw fan-out p50 / p99 ms  raw gap p50 / p99 ms  raw jitter p99 ms`);
  for (const r of results.latency) {
    const u = r.upstream;
    const cells = [
      String(r.viewers).padStart(7),
      `${u.runStreamsOpened} (${u.dispatchStreams}+${u.readerStreams}) / ${u.baselineRunStreamsOpened}`.padStart(20),
      `${r.addedMs.p50} / ${r.addedMs.p99}`.padStart(44),
      (r.rawFanout ? `${r.rawFanout.addedMs.p50} / ${r.rawFanout.addedMs.p99}` : "-").padStart(24),
      `${r.rawInterArrivalMs.p50} / ${r.rawInterArrivalMs.p99}`.padStart(20),
      String(r.rawJitterMs.p99).padStart(18),
      `  (${r.compared} compared, ${r.viewersMismatched} viewers mismatched)`,
    ];
    out.push(cells.join(""));
  }
}
if (results.rows) {
  out.push("", "rows & bytes   relayed  rows  rows/frame  answer B  stored B  stored/answer  wire/answer  raw/answer  text parts");
  for (const t of results.rows.turns) {
    out.push(`${String(t.words).padStart(5)} words  ${String(t.relayedFrames).padStart(8)} ${String(t.rowsWritten).padStart(5)} ${String(t.rowsPerRelayedFrame).padStart(11)} ${String(t.answerBytes).padStart(9)} ${String(t.storedBytes).padStart(9)} ${String(t.storedPerAnswerByte).padStart(14)} ${String(t.wirePerAnswerByte).padStart(12)} ${String(t.rawPerAnswerByte).padStart(11)} ${String(t.answerTextParts).padStart(11)}`);
  }
  out.push(`fit: rows = ${results.rows.fit?.perTurn} per turn + ${results.rows.fit?.perFrame} per relayed frame; ≤ 3× answer + constant/frame: stored ${results.rows.target.storedMet ? "met" : "NOT met"}, wire ${results.rows.target.wireMet ? "met" : "NOT met"}`);
}
if (results.idle) {
  out.push("", `idle with ${IDLE_VIEWERS} viewers: ${results.idle.probes.map((p) => `${p.idleSeconds}s:${p.sameInstance ? "same" : "new"}`).join(" ")} → evicted between ${results.idle.evictedBetweenSeconds.join(" and ")} s`);
}
if (results.before) {
  out.push(`before (${results.before.ref}): ${results.before.probes.map((p) => `${p.idleSeconds}s:${p.streamsHeld} streams held`).join(" ")}`);
}
if (results.cost) {
  out.push("", "cost per month        GB-s          $   requests      $   rows written      $    total $");
  for (const k of ["before", "after", "afterIfIdleWindowUnbilled"]) {
    const r = results.cost[k];
    out.push(`${k.padEnd(18)} ${String(r.gbSeconds).padStart(12)} ${String(r.durationUsd).padStart(9)} ${String(r.requests).padStart(10)} ${String(r.requestsUsd).padStart(6)} ${String(r.rowsWritten).padStart(14)} ${String(r.rowsUsd).padStart(6)} ${String(r.totalUsd).padStart(10)}`);
  }
}
if (problems.length) out.push("", "PROBLEMS:", ...problems.map((p) => `  - ${p}`));
out.push("", `seconds: ${JSON.stringify(results.seconds)}`);
console.log(out.join("\n"));
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "latest.json"), JSON.stringify({ at: new Date().toISOString(), node: process.version, results }, null, 2));
// The dev server's output (tail), to look into any problem reported above.
writeFileSync(join(here, "results", "server.log"), serverLog);
if (problems.length && !process.exitCode) process.exitCode = 2;
