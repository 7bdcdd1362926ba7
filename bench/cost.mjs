// The cost model (bench/README.md#cost): what a month of the workload below costs on Durable
// Objects, before and after the object stopped holding browsers' streams, computed from this run's
// measured figures (the idle benchmark's eviction delay, the rows benchmark's rows per turn).
// Per month, COST_USERS users each keep a tab open COST_TAB_HOURS a day and send COST_TURNS turns
// of COST_WORDS words a day, each turn streaming COST_TURN_SECONDS.
import { num } from "./harness.mjs";

const COST = {
  users: num("COST_USERS", 1000),
  days: num("COST_DAYS", 30),
  tabHoursPerDay: num("COST_TAB_HOURS", 8),
  turnsPerDay: num("COST_TURNS", 20),
  wordsPerTurn: num("COST_WORDS", 500),
  turnSeconds: num("COST_TURN_SECONDS", 25),
  streamsPerDay: num("COST_STREAMS", 1),
};

/** Cloudflare Workers Paid, Durable Objects (developers.cloudflare.com/durable-objects/platform/pricing/). */
const PRICE = {
  requests: { included: 1e6, perMillion: 0.15 },
  gbSeconds: { included: 400_000, perMillion: 12.5 },
  rowsWritten: { included: 50e6, perMillion: 1.0 },
  gbPerObject: 128 / 1000, // 128 MB, as Cloudflare's own examples compute it
};
const billed = (quantity, { included, perMillion }) =>
  Number(((Math.max(0, quantity - included) * perMillion) / 1e6).toFixed(2));

/**
 * Sets `results.cost` from the idle and rows figures; nothing when either was not measured.
 * @param {number} rowsSmallWords  the words of the rows benchmark's small answer (its per-turn figures)
 */
export function cost(results, rowsSmallWords) {
  const idleS = results.idle?.evictedBetweenSeconds?.[1] ?? results.idle?.evictedBetweenSeconds?.[0];
  const rowsTurn500 = results.rows?.turns?.find((t) => t.words === rowsSmallWords);
  if (idleS == null || !rowsTurn500?.rowsWritten || !results.rows.fit) return;
  const c = COST;
  const perMonth = c.users * c.days;
  // Rows per turn: the session object's rows for a turn of this many words at the pace a turn really
  // streams (the emulator's default, 40 ms a frame: a gateway that commits the frames arriving
  // during a commit together writes fewer rows the faster they come, so the 2 ms turns would
  // undercount), two setAlarm() (each billed as a row) and the user object's three index upserts.
  // Measured when the rows section ran a paced turn of the workload's words; else estimated from the
  // two-size fit's per-turn rows and the paced 200-word turn's rows per frame.
  const frames = (c.wordsPerTurn / rowsSmallWords) * rowsTurn500.relayedFrames;
  const measuredTurn =
    results.rows.paced?.words === c.wordsPerTurn && results.rows.paced.rowsWritten !== null ? results.rows.paced : null;
  const paced = results.rows.rates?.find((r) => r.frameMs === 40 && r.rowsWritten !== null);
  const perFrame = paced
    ? Math.max(0, (paced.rowsWritten - results.rows.fit.perTurn) / paced.relayedFrames)
    : results.rows.fit.perFrame;
  const sessionRows = measuredTurn ? measuredTurn.rowsWritten : results.rows.fit.perTurn + perFrame * frames;
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
    measured: {
      evictionDelaySeconds: idleS,
      sessionRowsFrom: measuredTurn
        ? `a ${measuredTurn.words}-word turn at ${measuredTurn.frameMs} ms a frame (measured)`
        : "fit per turn + paced rows per frame × frames (estimated)",
      framesPerTurn: Number((measuredTurn?.relayedFrames ?? frames).toFixed(1)),
      rowsPerFrame: measuredTurn ? null : Number(perFrame.toFixed(4)),
      rowsPerFrameAt: measuredTurn
        ? null
        : paced
          ? "40 ms a frame"
          : `${results.config?.ROWS_FRAME_MS ?? 2} ms a frame (fit)`,
      sessionRowsPerTurn: Number(sessionRows.toFixed(1)),
      rowsPerTurn: Number(rowsPerTurn.toFixed(1)),
    },
    before: line(activeBefore, streamRequests.before),
    after: line(activeAfter, streamRequests.after),
    afterIfIdleWindowUnbilled: line(activeAfterDocs, streamRequests.after),
  };
}

export function report(results) {
  const out = [];
  if (results.cost) {
    const m = results.cost.measured;
    out.push(
      "",
      `cost: ${m.rowsPerTurn} rows a turn (the session object's ${m.sessionRowsPerTurn}, from ${m.sessionRowsFrom}; + 2 setAlarm + 3 index upserts), eviction after ${m.evictionDelaySeconds} s`,
    );
    out.push("cost per month        GB-s          $   requests      $   rows written      $    total $");
    for (const k of ["before", "after", "afterIfIdleWindowUnbilled"]) {
      const r = results.cost[k];
      out.push(
        `${k.padEnd(18)} ${String(r.gbSeconds).padStart(12)} ${String(r.durationUsd).padStart(9)} ${String(r.requests).padStart(10)} ${String(r.requestsUsd).padStart(6)} ${String(r.rowsWritten).padStart(14)} ${String(r.rowsUsd).padStart(6)} ${String(r.totalUsd).padStart(10)}`,
      );
    }
  }
  return out;
}
