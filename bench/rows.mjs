// Benchmark `rows`: SQLite rows written and bytes stored per answer, for ROWS_SMALL_WORDS (500) and
// ROWS_WORDS (5,000) word answers at ROWS_FRAME_MS per frame, with one viewer attached (its frames
// and their bytes on the wire): the log's bytes half-way through the turn and what it keeps after
// the turn's end compacted its deltas (docs/sse-protocol.md §13), and the rows that compaction
// wrote (each row it deletes counts). Baseline: the raw stream's bytes for the same run, every
// frame of which carries the part's whole text so far.
import { deltaOf, follow, num, settledObject, tag, turnEndOf, utf8, viewer } from "./harness.mjs";

export const config = {
  ROWS_SMALL_WORDS: num("ROWS_SMALL_WORDS", 500),
  ROWS_WORDS: num("ROWS_WORDS", 5000),
  // The rows turns are paced (ms per frame): unpaced, a one-part answer is a burst of quadratic size
  // upstream (5,000 words: 72 MB of cumulative part.text at once), which on a loaded 2-core machine
  // starves the dev server for minutes.
  ROWS_FRAME_MS: num("ROWS_FRAME_MS", 2),
  // Rows per relayed frame at the emulator's default pace (40 ms a frame) and at 50 frames/s.
  ROWS_RATE_WORDS: num("ROWS_RATE_WORDS", 200),
  ROWS_RATES_MS: String(process.env.ROWS_RATES_MS ?? "40,20")
    .split(",")
    .filter(Boolean)
    .map(Number),
  // The cost model's turn, measured rather than fitted: ROWS_SMALL_WORDS at the emulator's default
  // pace (0 skips it; the cost model then falls back to the fit).
  ROWS_COST_MS: num("ROWS_COST_MS", 40),
};
const { ROWS_SMALL_WORDS, ROWS_WORDS, ROWS_FRAME_MS, ROWS_RATE_WORDS, ROWS_RATES_MS, ROWS_COST_MS } = config;

/** The gateway's own events (not relayed from upstream). */
const GATEWAY_OWN = /^(turn\.|usage\.updated$|budget\.|interaction\.|warning$)/;

/**
 * Rows written and bytes stored for one answer, with one viewer attached (it also keeps the
 * measurement honest: the frames it gets are what was relayed). Baseline: the raw stream's bytes
 * for the same run (every frame carries the part's whole text so far).
 */
async function rowsTurn({ base, api, auth, problems }, v, cid, turnId, words) {
  const start = await settledObject(api, cid, auth);
  const accepted = await api.post(`/v1/conversations/${cid}/turns`, { turnId, message: `rows [words:${words}]` }, auth);
  // Half-way: what the log holds while the turn runs (a turn's end may compact it).
  let seen = 0;
  await v.waitFor(
    (f) => f.env.turnId === turnId && deltaOf(f.env.data) !== null && ++seen >= Math.ceil(words / 2),
    300_000,
  );
  const mid = await api.get(`/v1/conversations/${cid}/dev/object`, auth);
  const end = await v.waitFor(turnEndOf(turnId), 300_000);
  const stop = await settledObject(api, cid, auth);
  const frames = v.frames.filter((f) => f.env.turnId === turnId);
  const relayed = frames.filter((f) => !GATEWAY_OWN.test(f.type));
  const answer = end.env.data?.result?.text ?? "";
  const deltaBytes = relayed.reduce((n, f) => n + utf8(deltaOf(f.env.data) ?? ""), 0);
  const textParts = new Set(relayed.filter((f) => deltaOf(f.env.data) !== null).map((f) => f.env.data.part?.id));
  let rawFrames = 0;
  const raw = await follow(
    `${base}/_emulator/executions/${accepted.executionId}/stream`,
    {},
    () => (rawFrames++, false),
  ).done;
  const sameInstance = start.instance === stop.instance;
  const out = {
    words,
    sameInstance,
    instances: sameInstance ? [start.instance] : [start.instance, stop.instance],
    seconds: Number(((stop.at - start.at) / 1000).toFixed(1)),
    relayedFrames: relayed.length,
    gatewayFrames: frames.length - relayed.length,
    // Events the log keeps of the turn once it ended (its deltas compacted: fewer than the frames).
    eventsStored: stop.log.events - start.log.events,
    rowsWritten: sameInstance ? stop.rowsWritten - start.rowsWritten : null,
    // Of those, the rows the turn-end compaction wrote (its deletes, a row each, and its inserts).
    compactionRows:
      sameInstance && stop.compactionRowsWritten !== undefined
        ? stop.compactionRowsWritten - start.compactionRowsWritten
        : null,
    rowsPerRelayedFrame: sameInstance
      ? Number(((stop.rowsWritten - start.rowsWritten) / relayed.length).toFixed(3))
      : null,
    // Commits (transactions) the turn took: upstream frames arriving while one is made durable share the next.
    commits: sameInstance ? stop.commits - start.commits : null,
    relayedFramesPerCommit:
      sameInstance && stop.commits > start.commits
        ? Number((relayed.length / (stop.commits - start.commits)).toFixed(2))
        : null,
    answerBytes: utf8(answer),
    deltaBytes,
    answerTextParts: textParts.size,
    // What the log keeps of the turn after its end (compacted), and what it held half-way (same instance only).
    logBytes: stop.log.bytes - start.log.bytes,
    // What the turn's record keeps beside the log (its request, ids, status, usage, and any result
    // the log does not hold); null from a server that does not report its records' size.
    recordBytes: start.turns && stop.turns ? stop.turns.bytes - start.turns.bytes : null,
    midTurnStoredBytes: mid.instance === start.instance ? mid.log.bytes - start.log.bytes : null,
    // What the log held of the turn at its end, before compaction: the envelopes the viewer got live
    // (a lean frame rebuilds the stored envelope byte for byte, docs/sse-protocol.md §11).
    uncompactedBytes: frames.reduce((n, f) => n + utf8(JSON.stringify(f.env)), 0),
    midTurnEvents: mid.instance === start.instance ? mid.log.events - start.log.events : null,
    wireBytes: frames.reduce((n, f) => n + f.bytes, 0),
    // One text delta's frame on the wire, its SSE framing included (the mean over the turn's deltas).
    wireBytesPerDeltaFrame: Number(
      (
        relayed.filter((f) => deltaOf(f.env.data) !== null).reduce((n, f) => n + f.bytes, 0) /
        Math.max(1, relayed.filter((f) => deltaOf(f.env.data) !== null).length)
      ).toFixed(1),
    ),
    // Stored per event while the turn runs (half-way), same instance only.
    midTurnBytesPerEvent:
      mid.instance === start.instance && mid.log.events > start.log.events
        ? Number(((mid.log.bytes - start.log.bytes) / (mid.log.events - start.log.events)).toFixed(1))
        : null,
    rawFrames,
    rawBytes: raw.total,
  };
  // What the finished turn keeps: the log's events and its record.
  out.storedBytes = out.logBytes + (out.recordBytes ?? 0);
  if (out.recordBytes === null)
    problems.push(
      `rows ${words} words: the turn's record's size not reported (an older server): kept bytes are the log's only`,
    );
  out.storedPerWord = Number((out.storedBytes / words).toFixed(1));
  out.storedPerAnswerByte = Number((out.storedBytes / out.answerBytes).toFixed(2));
  out.uncompactedPerAnswerByte = Number((out.uncompactedBytes / out.answerBytes).toFixed(2));
  // What the finished turn keeps beyond 1.5 times its answer, per event kept (item 2: ≤ 1.5× the answer plus a small fixed cost per part and event).
  out.keptOver1_5xPerEvent = Math.round((out.storedBytes - 1.5 * out.answerBytes) / Math.max(1, out.eventsStored));
  out.wirePerAnswerByte = Number((out.wireBytes / out.answerBytes).toFixed(2));
  out.rawPerAnswerByte = Number((out.rawBytes / out.answerBytes).toFixed(2));
  // What each stored frame costs beyond three times its share of the answer.
  out.storedOver3xPerFrame = Math.round((out.storedBytes - 3 * out.answerBytes) / frames.length);
  out.wireOver3xPerFrame = Math.round((out.wireBytes - 3 * out.answerBytes) / frames.length);
  // A finished turn keeps at most one event per frame the viewer got (compaction folds runs of
  // deltas into one), and at least its gateway events and one per text part.
  if (out.eventsStored > frames.length || out.eventsStored < out.gatewayFrames + textParts.size) {
    problems.push(
      `rows ${words} words: ${out.eventsStored} events kept after the turn, the viewer got ${frames.length} (${out.gatewayFrames} the gateway's own, ${textParts.size} text parts)`,
    );
  }
  return out;
}

export async function rows(ctx) {
  const { api } = ctx;
  await api.post("/_emulator/faults", { frameDelayMs: ROWS_FRAME_MS });
  try {
    await rowsMeasured(ctx);
  } finally {
    await api.post("/_emulator/faults", { frameDelayMs: 0 });
  }
}

async function rowsMeasured(ctx) {
  const { base, api, auth, results, problems } = ctx;
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
    if (!out.sameInstance)
      problems.push(
        `rows ${words} words: the session object changed instance during the turn twice; rows not measured`,
      );
    turns.push(out);
  }
  // Rows per relayed frame at a real pace: the emulator's default and 50 frames/s.
  const rates = [];
  for (const frameMs of ROWS_RATES_MS) {
    await api.post("/_emulator/faults", { frameDelayMs: frameMs });
    const out = await rowsTurn(ctx, v, cid, `rate${frameMs}`, ROWS_RATE_WORDS);
    if (!out.sameInstance)
      problems.push(
        `rows at ${frameMs} ms a frame: the session object changed instance during the turn; rows not measured`,
      );
    rates.push({ frameMs, ...out });
  }
  let paced = null;
  if (ROWS_COST_MS > 0) {
    await api.post("/_emulator/faults", { frameDelayMs: ROWS_COST_MS });
    const out = await rowsTurn(ctx, v, cid, `paced${ROWS_SMALL_WORDS}`, ROWS_SMALL_WORDS);
    if (!out.sameInstance)
      problems.push(
        `rows ${ROWS_SMALL_WORDS} words at ${ROWS_COST_MS} ms a frame: the session object changed instance during the turn; rows not measured`,
      );
    paced = { frameMs: ROWS_COST_MS, ...out };
  }
  await api.post("/_emulator/faults", { frameDelayMs: ROWS_FRAME_MS });
  v.close();
  if (v.seqErrors) problems.push(`rows: the viewer saw ${v.seqErrors} seq gaps or repeats`);
  const [small, large] = turns;
  // rows = perTurn + perFrame × relayed frames, from the two sizes.
  let fit = null;
  if (small.rowsWritten !== null && large.rowsWritten !== null) {
    const perFrame = (large.rowsWritten - small.rowsWritten) / (large.relayedFrames - small.relayedFrames);
    fit = {
      perFrame: Number(perFrame.toFixed(4)),
      perTurn: Number((small.rowsWritten - perFrame * small.relayedFrames).toFixed(1)),
    };
  }
  // Kept after the turn ≤ 1.5 × answer bytes + a constant per kept event: the constant the small
  // answer needs must do for the large one. On the wire ≤ 3 × answer + a constant per frame.
  const constant = Math.max(0, small.keptOver1_5xPerEvent);
  const wireConstant = Math.max(0, small.wireOver3xPerFrame);
  const largeFrames = large.relayedFrames + large.gatewayFrames;
  results.rows = {
    turns,
    rates,
    paced,
    fit,
    target: {
      keptConstantPerEvent: constant,
      storedMet: large.storedBytes <= 1.5 * large.answerBytes + constant * large.eventsStored * 1.05,
      wireConstantPerFrame: wireConstant,
      wireMet: large.wireBytes <= 3 * large.answerBytes + wireConstant * largeFrames * 1.05,
    },
  };
}

export function report(results) {
  const out = [];
  if (results.rows) {
    out.push(
      "",
      "rows & bytes   relayed  rows  compaction rows  rows/frame  commits  frames/commit  answer B  mid-turn B  at end B  kept B (log+record)  events kept  at end/answer  kept/answer  wire/answer  raw/answer  text parts",
    );
    for (const t of results.rows.turns) {
      out.push(
        `${String(t.words).padStart(5)} words  ${String(t.relayedFrames).padStart(8)} ${String(t.rowsWritten).padStart(5)} ${String(t.compactionRows).padStart(16)} ${String(t.rowsPerRelayedFrame).padStart(11)} ${String(t.commits).padStart(8)} ${String(t.relayedFramesPerCommit).padStart(14)} ${String(t.answerBytes).padStart(9)} ${String(t.midTurnStoredBytes).padStart(11)} ${String(t.uncompactedBytes).padStart(9)} ${`${t.storedBytes} (${t.logBytes}+${t.recordBytes ?? "?"})`.padStart(20)} ${String(t.eventsStored).padStart(12)} ${String(t.uncompactedPerAnswerByte).padStart(14)} ${String(t.storedPerAnswerByte).padStart(12)} ${String(t.wirePerAnswerByte).padStart(12)} ${String(t.rawPerAnswerByte).padStart(11)} ${String(t.answerTextParts).padStart(11)}`,
      );
    }
    for (const r of [...(results.rows.rates ?? []), ...(results.rows.paced ? [results.rows.paced] : [])])
      out.push(
        `at ${r.frameMs} ms a frame, ${r.words} words: ${r.rowsWritten} rows (${r.compactionRows} of them compaction's) for ${r.relayedFrames} relayed frames = ${r.rowsPerRelayedFrame} per frame; ${r.midTurnBytesPerEvent} B stored per event while running, ${r.storedBytes} B kept after the turn; ${r.wireBytesPerDeltaFrame} B per delta frame on the wire`,
      );
    out.push(
      `fit: rows = ${results.rows.fit?.perTurn} per turn + ${results.rows.fit?.perFrame} per relayed frame; kept ≤ 1.5× answer + constant/event: ${results.rows.target.storedMet ? "met" : "NOT met"}; wire ≤ 3× answer + constant/frame: ${results.rows.target.wireMet ? "met" : "NOT met"}`,
    );
  }
  return out;
}
