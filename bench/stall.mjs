// Benchmark `stall` (issue 38, item 3): while one conversation takes in an unpaced burst of
// STALL_WORDS (10,000) one-word deltas (`[paragraphs]`, as `replay`), how long `/healthz` and a second
// conversation's live frames wait, beside the same with no burst. Under `wrangler dev` the Worker,
// every session object and the emulator share one isolate: work that never yields to the event loop
// holds every other request and every other conversation's frames until it is done.
//
// Each phase: a second conversation runs a turn of STALL_LIVE_WORDS (200) words at STALL_FRAME_MS
// (40 ms a frame), one viewer attached before it, while `/healthz` is asked one request at a time
// (every 20 ms) until that turn ends. Baseline: that alone. Burst: the same, with the burst's turn
// sent STALL_BURST_AFTER_MS (1,000 ms) into it (its frames at once: frame delay 0). Figures, p50 / p99 /
// max: each /healthz request's wait; each text delta's lateness at the viewer, its arrival less the
// first delta's arrival less its place on the emulator's schedule (the i-th delta is due i × frame
// delay after the first; the emulator keeps its own schedule). Target: p99 of each ≤ its baseline's
// + 100 ms.
import { deltaOf, num, percentile, sleep, tag, turnEndOf, viewer } from "./harness.mjs";

export const config = {
  STALL_WORDS: num("STALL_WORDS", 10000),
  STALL_LIVE_WORDS: num("STALL_LIVE_WORDS", 200),
  STALL_FRAME_MS: num("STALL_FRAME_MS", 40),
  STALL_BURST_AFTER_MS: num("STALL_BURST_AFTER_MS", 1000),
};
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

const stats = (values) => {
  const r = (v) => (v === null || v === undefined ? null : Number(v.toFixed(1)));
  return {
    n: values.length,
    p50: r(percentile(values, 0.5)),
    p99: r(percentile(values, 0.99)),
    max: r(values.length ? Math.max(...values) : null),
  };
};

/** /healthz asked one request at a time (every 20 ms) until `done` settles: each request's wait, ms. */
async function healthzWaits(base, done) {
  let finished = false;
  done.then(
    () => (finished = true),
    () => (finished = true),
  );
  const waits = [];
  while (!finished) {
    const t = performance.now();
    await (await fetch(`${base}/healthz`)).text();
    waits.push(performance.now() - t);
    await sleep(20);
  }
  return waits;
}

/** One phase: a paced turn in a conversation of its own, viewed live, /healthz probed; `during` runs meanwhile. */
async function phase({ base, api, auth }, name, during) {
  const cid = `stall-live-${name}-${tag}`;
  const v = viewer(base, cid, auth, { stopAt: turnEndOf("t1") });
  await v.opened;
  await api.post("/_emulator/faults", { frameDelayMs: config.STALL_FRAME_MS });
  await api.post(
    `/v1/conversations/${cid}/turns`,
    { turnId: "t1", message: `live [words:${config.STALL_LIVE_WORDS}]` },
    auth,
  );
  // Frame delays are taken when a run starts: the burst's run (below) goes unpaced.
  await api.post("/_emulator/faults", { frameDelayMs: 0 });
  const ended = v.waitFor(turnEndOf("t1"), 600_000);
  const healthz = healthzWaits(base, ended);
  const burst = during ? during() : undefined;
  await ended;
  const waits = await healthz;
  const burstStatus = burst ? await burst : undefined;
  await v.done;
  const deltas = v.frames.filter((f) => f.type.startsWith("message.part.") && deltaOf(f.env.data) !== null);
  const lateness = deltas.map((f, i) => f.t - deltas[0].t - i * config.STALL_FRAME_MS);
  return {
    healthz: stats(waits),
    lateness: stats(lateness),
    deltas: deltas.length,
    seqErrors: v.seqErrors,
    ...(burstStatus ? { burst: burstStatus } : {}),
  };
}

/** The burst's turn in a conversation of its own, sent after a while; resolves with its end status and time. */
function burstTurn({ api, auth }) {
  return async () => {
    await sleep(config.STALL_BURST_AFTER_MS);
    const cid = `stall-burst-${tag}`;
    const t = performance.now();
    await api.post(
      `/v1/conversations/${cid}/turns`,
      { turnId: "t1", message: `burst [words:${config.STALL_WORDS}] [paragraphs]` },
      auth,
    );
    for (;;) {
      const turn = await api
        .get(`/v1/conversations/${cid}/turns/t1`, auth)
        .catch((err) => ({ status: `unknown (${err.message})` }));
      if (TERMINAL.has(turn.status))
        return { status: turn.status, seconds: Number(((performance.now() - t) / 1000).toFixed(2)) };
      await sleep(250);
    }
  };
}

export async function stall(ctx) {
  const baseline = await phase(ctx, "alone", undefined);
  const burst = await phase(ctx, "burst", burstTurn(ctx));
  const added = (k) =>
    burst[k].p99 === null || baseline[k].p99 === null ? null : Number((burst[k].p99 - baseline[k].p99).toFixed(1));
  ctx.results.stall = {
    words: config.STALL_WORDS,
    baseline,
    burst,
    addedP99: { healthz: added("healthz"), lateness: added("lateness") },
    target: "added p99 <= 100 ms (each)",
  };
  if (burst.burst?.status !== "completed") ctx.problems.push(`stall: the burst's turn ended ${burst.burst?.status}`);
  if (baseline.seqErrors + burst.seqErrors > 0 || burst.deltas !== baseline.deltas)
    ctx.problems.push(
      `stall: the live viewer got ${burst.deltas} deltas during the burst (${burst.seqErrors} out of order), ${baseline.deltas} alone (${baseline.seqErrors})`,
    );
}

export function report(results) {
  const s = results.stall;
  if (!s) return [];
  const f = (x) => `p50 ${x.p50} / p99 ${x.p99} / max ${x.max} ms (${x.n})`;
  return [
    "",
    `stall: a ${s.words}-word unpaced burst in one conversation (${s.burst.burst?.seconds} s to its end), a live turn in another`,
    `  /healthz wait: alone ${f(s.baseline.healthz)}; during the burst ${f(s.burst.healthz)}; added p99 ${s.addedP99.healthz} ms`,
    `  live delta lateness: alone ${f(s.baseline.lateness)}; during the burst ${f(s.burst.lateness)}; added p99 ${s.addedP99.lateness} ms (target ≤ 100 each)`,
  ];
}
