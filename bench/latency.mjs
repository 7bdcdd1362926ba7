// Benchmark `latency`: for K in LATENCY_VIEWERS (1, 10, 50, 100, 300) viewers of one turn, (a) the upstream
// run streams the gateway opens (baseline: K readers of the raw stream, counted the same way) and
// (b) the latency a text delta gains from the raw stream to each viewer at LATENCY_FRAME_MS per
// frame (baseline: the raw stream's own inter-arrival and jitter, and, for K up to
// LATENCY_RAW_FANOUT_MAX, the raw stream itself fanned out to K readers in a turn of its own).
// Every viewer must get exactly the raw stream's deltas, in order. Also (c) the dev server's CPU
// time over each turn (workerd and wrangler's processes, from /proc), so that the CPU each extra
// viewer costs per frame is (CPU at K − CPU at 1) / (frames × (K − 1)), beside the same figure of
// the raw fan-out; and (d) the bytes of each text delta's frame as a viewer receives it.
// The first K must be 1: the others are against it.
import { DELTA_EVENT } from "../public/wire/frames.js";
import {
  deltaOf,
  env,
  follow,
  groupCpuMs,
  isTurnEnd,
  list,
  ms,
  num,
  percentile,
  signIn,
  sleep,
  tag,
  viewer,
} from "./harness.mjs";
import { cpuSeconds, runtimeBase } from "./workerd.mjs";

export const config = {
  LATENCY_WORDS: num("LATENCY_WORDS", 300),
  LATENCY_FRAME_MS: num("LATENCY_FRAME_MS", 20),
  // 50: the agents section's CPU_VIEWERS, so its CPU figure has the raw fan-out's beside it.
  LATENCY_VIEWERS: list("LATENCY_VIEWERS", "1,10,50,100,300"),
  // The raw stream fanned out to K readers, for K up to this (every K by default: item 5's added
  // p99 at 300 viewers is measured beside it). Lower it if the dev server runs out of descriptors.
  LATENCY_RAW_FANOUT_MAX: num("LATENCY_RAW_FANOUT_MAX", 300),
  // The upstream-reads baseline (K raw readers of the finished run), for K up to this: it is K by
  // construction, and 300 subrequest streams at once outrun the dev server's descriptors.
  LATENCY_RAW_READS_MAX: num("LATENCY_RAW_READS_MAX", 100),
  // Where the viewers and the raw readers read their streams: `runtime`, the runtime's own address
  // behind wrangler dev's proxy (what a deployment has: no proxy), or `proxy`, wrangler dev's port.
  // The raw fan-out cannot run through the proxy past a few dozen readers: the proxy opens a
  // connection to wrangler's Node process per chunk of each raw stream and runs out of descriptors
  // (20,000) at 100 readers; straight to the runtime, 300 raw readers hold ~350.
  LATENCY_VIA: env.LATENCY_VIA ?? "runtime",
};
const { LATENCY_WORDS, LATENCY_FRAME_MS, LATENCY_VIEWERS, LATENCY_RAW_FANOUT_MAX, LATENCY_RAW_READS_MAX, LATENCY_VIA } =
  config;

/** The text deltas of an execution's raw stream, each with its arrival time and chunk index (`frames`: all its frames). */
async function rawDeltas(base, executionId) {
  const frames = [];
  await follow(
    `${base}/_emulator/executions/${executionId}/stream`,
    {},
    (f, t, _bytes, chunk) => (frames.push({ t, data: f.data, chunk }), false),
  ).done;
  const deltas = frames
    .map((f) => ({ t: f.t, chunk: f.chunk, delta: deltaOf(JSON.parse(f.data)) }))
    .filter((f) => f.delta !== null);
  return Object.assign(deltas, { frames: frames.length });
}

/** CPU ms of the dev server so far: its whole process group, its workerd processes, and the runtime's workerd alone (wrangler's proxy apart). */
const cpuNow = (pgid) => {
  const group = groupCpuMs(pgid);
  if (!group) return null;
  return { ...group, runtime: Math.round(cpuSeconds(pgid).runtime * 1000) };
};
const cpuSince = (pgid, before) => {
  const now = cpuNow(pgid);
  return now && before
    ? { all: now.all - before.all, workerd: now.workerd - before.workerd, runtime: now.runtime - before.runtime }
    : null;
};

/**
 * One turn at LATENCY_FRAME_MS per frame, K viewers attached before it starts and the raw stream
 * of the same execution opened as soon as the turn is accepted (it replays what was already
 * emitted in its first chunk, then follows live; frames of that first chunk are not compared).
 * Also the emulator's run-stream counters around the turn: upstream reads for K viewers.
 */
async function latencyRun({ base, api, auth, problems, server }, K) {
  const cid = `latency-${K}-${tag}`;
  // Opened 50 at a time: hundreds of requests at once leave some without response headers for a
  // minute under wrangler dev.
  const viewers = [];
  for (let i = 0; i < K; i += 50) {
    const batch = Array.from({ length: Math.min(50, K - i) }, () =>
      viewer(base, cid, auth, { stopAt: (f) => isTurnEnd(f.type) }),
    );
    await Promise.all(batch.map((v) => v.opened));
    viewers.push(...batch);
  }
  await sleep(300 + K * 5); // every subscription live before the run starts
  const before = await api.get("/_emulator/counters");
  const cpuBefore = cpuNow(server.pid);
  const accepted = await api.post(
    `/v1/conversations/${cid}/turns`,
    { turnId: "t1", message: `latency [words:${LATENCY_WORDS}]` },
    auth,
  );
  const rawStream = rawDeltas(base, accepted.executionId);
  await Promise.all(viewers.map((v) => v.done));
  const cpu = cpuSince(server.pid, cpuBefore);
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
    const got = v.frames
      .filter((f) => f.type !== "stream.reset")
      .map((f) => ({ t: f.t, delta: deltaOf(f.env.data) }))
      .filter((d) => d.delta !== null);
    if (got.length !== raw.length || got.some((d, k) => d.delta !== raw[k].delta)) mismatched++;
    for (let k = 0; k < Math.min(got.length, raw.length); k++) {
      if (raw[k].chunk === 0) continue; // replayed when the raw stream opened, not live
      added.push(got[k].t - raw[k].t);
    }
  }
  // The fan-out's own spread: for each event every viewer got, its last copy's arrival less its
  // first's (one frame to K viewers is K sends and K relays in a row on the isolate's thread), and
  // how many reads (chunks, about one per message) each viewer's events came in.
  const arrivals = new Map();
  for (const v of viewers) for (const f of v.frames) arrivals.set(f.seq, [...(arrivals.get(f.seq) ?? []), f.t]);
  const spread = [...arrivals.values()].filter((ts) => ts.length === K).map((ts) => Math.max(...ts) - Math.min(...ts));
  const chunks = viewers.map((v) => new Set(v.frames.map((f) => f.chunk)).size);
  // The wire: each text delta's frame as the first viewer got it, SSE framing included.
  const deltaFrames = viewers[0].frames.filter(
    (f) => f.type === DELTA_EVENT || (f.type === "message.part.updated" && deltaOf(f.env.data) !== null),
  );
  const deltaBytes = deltaFrames.map((f) => f.bytes);
  const gaps = [];
  for (let k = 1; k < raw.length; k++) if (raw[k - 1].chunk > 0) gaps.push(raw[k].t - raw[k - 1].t);
  const jitter = gaps.map((g) => Math.abs(g - LATENCY_FRAME_MS));

  // Baseline of the upstream reads: each of K viewers reads the run upstream itself, the raw
  // stream of the same execution, counted the same way.
  const beforeRaw = await api.get("/_emulator/counters");
  const rawReads = await Promise.all(
    Array.from({ length: K <= LATENCY_RAW_READS_MAX ? K : 0 }, () => {
      let n = 0;
      return follow(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, () => (n++, false)).done.then(
        () => n,
      );
    }),
  );
  const afterRaw = await api.get("/_emulator/counters");
  const rawOpened =
    K <= LATENCY_RAW_READS_MAX
      ? (afterRaw.counters["streams.opened"] ?? 0) - (beforeRaw.counters["streams.opened"] ?? 0)
      : null;
  if (rawReads.length && new Set(rawReads).size !== 1)
    problems.push(`latency K=${K}: the raw readers got different frame counts ${[...new Set(rawReads)]}`);

  // Baseline of the latency: the raw pass-through itself fanned out to K readers (a turn of its
  // own, so the two loads do not add up), against one more raw reader as the reference.
  let rawFanout = null;
  const fanGaps = [];
  if (K <= LATENCY_RAW_FANOUT_MAX) {
    const fanCpuBefore = cpuNow(server.pid);
    const fan = await api.post(
      `/v1/conversations/${cid}-raw/turns`,
      { turnId: "t1", message: `latency [words:${LATENCY_WORDS}]` },
      auth,
    );
    // The reference first, then the readers 50 at a time (as the viewers open): what was emitted
    // before a reader opened comes in its first chunk, which is not compared.
    const reference = rawDeltas(base, fan.executionId);
    const reading = [];
    for (let i = 0; i < K; i += 50) {
      const batch = Array.from({ length: Math.min(50, K - i) }, () => rawDeltas(base, fan.executionId));
      reading.push(...batch);
      if (i + 50 < K) await sleep(20);
    }
    const [ref, ...readers] = await Promise.all([reference, ...reading]);
    const fanCpu = cpuSince(server.pid, fanCpuBefore);
    const spread = [];
    for (const r of readers) {
      for (let k = 0; k < Math.min(r.length, ref.length); k++) {
        if (r[k].chunk === 0 || ref[k].chunk === 0) continue;
        spread.push(r[k].t - ref[k].t);
      }
    }
    for (let k = 1; k < ref.length; k++) if (ref[k - 1].chunk > 0) fanGaps.push(ref[k].t - ref[k - 1].t);
    rawFanout = {
      compared: spread.length,
      addedMs: {
        p50: ms(percentile(spread, 0.5)),
        p99: ms(percentile(spread, 0.99)),
        max: ms(spread.length ? Math.max(...spread) : null),
      },
      referenceJitterMs: {
        p99: ms(
          percentile(
            fanGaps.map((g) => Math.abs(g - LATENCY_FRAME_MS)),
            0.99,
          ),
        ),
      },
      cpuMs: fanCpu,
      framesPerReader: ref.frames,
    };
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
    framesPerViewer: viewers[0].frames.length,
    cpuMs: cpu,
    deltaFrameBytes: {
      count: deltaBytes.length,
      mean: ms(deltaBytes.length ? deltaBytes.reduce((a, b) => a + b, 0) / deltaBytes.length : null),
      p50: percentile(deltaBytes, 0.5),
      max: deltaBytes.length ? Math.max(...deltaBytes) : null,
      lean: deltaFrames.filter((f) => f.type === DELTA_EVENT).length,
    },
    viewerSpreadMs: {
      p50: ms(percentile(spread, 0.5)),
      p99: ms(percentile(spread, 0.99)),
      max: ms(spread.length ? Math.max(...spread) : null),
    },
    chunksPerViewer: { min: Math.min(...chunks), max: Math.max(...chunks) },
    compared: added.length,
    addedMs: {
      p50: ms(percentile(added, 0.5)),
      p99: ms(percentile(added, 0.99)),
      max: ms(added.length ? Math.max(...added) : null),
    },
    rawInterArrivalMs: { p50: ms(percentile(gaps, 0.5)), p99: ms(percentile(gaps, 0.99)) },
    rawJitterMs: { p50: ms(percentile(jitter, 0.5)), p99: ms(percentile(jitter, 0.99)) },
    rawFanout,
    viewersMismatched: mismatched,
    seqErrors,
  };
  if (mismatched || seqErrors)
    problems.push(
      `latency K=${K}: ${mismatched} viewers did not get exactly the upstream deltas, ${seqErrors} seq gaps or repeats`,
    );
  return result;
}

export async function latency(ctx) {
  await ctx.api.post("/_emulator/faults", { frameDelayMs: LATENCY_FRAME_MS });
  // The streams' address (LATENCY_VIA), and the API's.
  const direct = LATENCY_VIA === "proxy" ? null : await runtimeBase(ctx.server.pid, () => fetch(`${ctx.base}/healthz`));
  if (LATENCY_VIA !== "proxy" && !direct)
    ctx.problems.push(
      "latency: the runtime's own address was not found; the streams were read through wrangler dev's proxy",
    );
  ctx.results.latencyVia = direct ? { via: "runtime", base: direct } : { via: "proxy", base: ctx.base };
  // The API's calls too: wrangler dev's proxy, once the raw streams passed through it, could leave a
  // later call unanswered.
  const run = direct ? { ...ctx, ...(await signIn(direct)) } : ctx;
  try {
    ctx.results.latency = [];
    for (const K of LATENCY_VIEWERS) {
      ctx.results.latency.push(await latencyRun(run, K));
      perExtraViewer(ctx.results.latency);
    }
  } finally {
    await run.api.post("/_emulator/faults", { frameDelayMs: 0 });
  }
}

/**
 * CPU per frame per extra viewer, against the run with one viewer: (CPU at K − CPU at 1) / (frames
 * × (K − 1)), in µs, for the gateway and (where it ran) the raw fan-out. Machine-wide noise is in
 * both; they come from the same run.
 */
function perExtraViewer(runs) {
  const one = runs.find((r) => r.viewers === 1);
  for (const r of runs) {
    if (!one || r === one || !r.cpuMs || !one.cpuMs) continue;
    const us = (a, b, frames, extra) => Number((((a - b) * 1000) / (frames * extra)).toFixed(1));
    const per = (a, b, frames) => ({
      all: us(a.all, b.all, frames, r.viewers - 1),
      workerd: us(a.workerd, b.workerd, frames, r.viewers - 1),
      runtime: us(a.runtime, b.runtime, frames, r.viewers - 1),
    });
    r.cpuPerFramePerExtraViewerUs = per(r.cpuMs, one.cpuMs, r.framesPerViewer);
    if (r.rawFanout?.cpuMs && one.rawFanout?.cpuMs) {
      r.rawFanout.cpuPerFramePerExtraReaderUs = per(
        r.rawFanout.cpuMs,
        one.rawFanout.cpuMs,
        r.rawFanout.framesPerReader,
      );
    }
  }
}

export function report(results) {
  const out = [];
  if (results.latency) {
    out.push(
      "",
      `latency: streams read through ${results.latencyVia?.via === "runtime" ? "the runtime's own address (not wrangler dev's proxy)" : "wrangler dev's proxy"}`,
    );
    out.push(
      `viewers  upstream streams (dispatch+reader) / raw baseline  | at ${LATENCY_FRAME_MS} ms/frame: added p50 / p99 ms  raw fan-out p50 / p99 ms  raw gap p50 / p99 ms  raw jitter p99 ms`,
    );
    for (const r of results.latency) {
      const u = r.upstream;
      const cells = [
        String(r.viewers).padStart(7),
        `${u.runStreamsOpened} (${u.dispatchStreams}+${u.readerStreams}) / ${u.baselineRunStreamsOpened ?? "-"}`.padStart(
          20,
        ),
        `${r.addedMs.p50} / ${r.addedMs.p99}`.padStart(44),
        (r.rawFanout ? `${r.rawFanout.addedMs.p50} / ${r.rawFanout.addedMs.p99}` : "-").padStart(24),
        `${r.rawInterArrivalMs.p50} / ${r.rawInterArrivalMs.p99}`.padStart(20),
        String(r.rawJitterMs.p99).padStart(18),
        `  (${r.compared} compared, ${r.viewersMismatched} viewers mismatched)`,
      ];
      out.push(cells.join(""));
    }
    out.push(
      "",
      "viewers  server CPU ms (workerd; runtime)  CPU µs per frame per extra viewer (workerd; runtime) / raw fan-out's  delta frame bytes mean / max (lean)",
    );
    for (const r of results.latency) {
      const c = r.cpuPerFramePerExtraViewerUs;
      const raw = r.rawFanout?.cpuPerFramePerExtraReaderUs;
      out.push(
        [
          String(r.viewers).padStart(7),
          (r.cpuMs ? `${r.cpuMs.all} (${r.cpuMs.workerd}; ${r.cpuMs.runtime})` : "-").padStart(34),
          `${c ? `${c.all} (${c.workerd}; ${c.runtime})` : "-"} / ${raw ? `${raw.all} (${raw.workerd}; ${raw.runtime})` : "-"}`.padStart(
            70,
          ),
          `${r.deltaFrameBytes.mean} / ${r.deltaFrameBytes.max} (${r.deltaFrameBytes.lean} of ${r.deltaFrameBytes.count})`.padStart(
            36,
          ),
        ].join(""),
      );
    }
    out.push(
      "",
      "viewers  spread of an event's copies across the viewers, last − first, p50 / p99 / max ms  reads (chunks) per viewer min / max",
    );
    for (const r of results.latency) {
      if (!r.viewerSpreadMs) continue;
      out.push(
        [
          String(r.viewers).padStart(7),
          `${r.viewerSpreadMs.p50} / ${r.viewerSpreadMs.p99} / ${r.viewerSpreadMs.max}`.padStart(79),
          `${r.chunksPerViewer.min} / ${r.chunksPerViewer.max}`.padStart(36),
        ].join(""),
      );
    }
  }
  return out;
}
