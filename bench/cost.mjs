// The cost model (bench/README.md#cost): what a month of the workload below costs on Durable
// Objects, before and after the object stopped holding browsers' streams, computed from this run's
// measured figures (the idle benchmark's eviction delay, the rows benchmark's rows per turn).
// Per month, COST_USERS users each keep a tab open COST_TAB_HOURS a day and send COST_TURNS turns
// of COST_WORDS words a day, each turn streaming COST_TURN_SECONDS.
import { num } from "./harness.mjs";

const list = (name, fallback) => (process.env[name] ?? fallback).split(",").filter(Boolean).map(Number);

const COST = {
  users: num("COST_USERS", 1000),
  days: num("COST_DAYS", 30),
  tabHoursPerDay: num("COST_TAB_HOURS", 8),
  turnsPerDay: num("COST_TURNS", 20),
  wordsPerTurn: num("COST_WORDS", 500),
  turnSeconds: num("COST_TURN_SECONDS", 25),
  streamsPerDay: num("COST_STREAMS", 1),
  // The same workload with turns of these lengths (an agent's turn is mostly its tools' time, not its
  // words: the words stay COST_WORDS), and the storage bill after this many months of history.
  turnSecondsList: list("COST_TURN_SECONDS_LIST", "25,120,600"),
  historyMonths: list("COST_HISTORY_MONTHS", "1,12,24"),
};

/** Cloudflare Workers Paid, Durable Objects (developers.cloudflare.com/durable-objects/platform/pricing/). */
const PRICE = {
  requests: { included: 1e6, perMillion: 0.15 },
  gbSeconds: { included: 400_000, perMillion: 12.5 },
  rowsWritten: { included: 50e6, perMillion: 1.0 },
  // SQLite storage: 5 GB-month included, then $0.20 per GB-month ($200 per million).
  storedGb: { included: 5, perMillion: 0.2e6 },
  gbPerObject: 128 / 1000, // 128 MB, as Cloudflare's own examples compute it
};
const billed = (quantity, { included, perMillion }) =>
  Number(((Math.max(0, quantity - included) * perMillion) / 1e6).toFixed(2));

/** The session object's watchdog alarm's interval (src/session/turn-end.ts WATCHDOG_INTERVAL_MS). */
const WATCHDOG_S = 30;

/**
 * A month's bill of the workload `c` from the measured figures `m`: `idleS` (how long an idle object
 * stays in memory), `rowsPerTurn` (rows a turn writes, its two setAlarm() and three index upserts
 * included), `keptBytesPerTurn` (what a finished turn keeps in storage). `mode`: `before` (the
 * session object holds every open tab's stream: active the whole tab time), `after` (active while a
 * turn runs, then `idleS` until evicted, billed) or `idleUnbilled` (the idle window not billed: the
 * pricing page's words for an object eligible for hibernation). Pure (test/bench/cost.test.ts).
 */
export function bill(c, m, mode, turnSeconds = c.turnSeconds) {
  const perMonth = c.users * c.days;
  const idleBilled = mode === "idleUnbilled" ? 0 : m.idleS;
  // The session object: the whole tab (before), or each turn and the idle window after it and after
  // the tab's stream opens. It holds the run's stream for the whole turn: never idle meanwhile.
  const sessionS =
    mode === "before"
      ? c.tabHoursPerDay * 3600
      : c.turnsPerDay * (turnSeconds + idleBilled) + c.streamsPerDay * idleBilled;
  // The user object (one per user): woken at a turn's start (rate limit, environment, the index's
  // "running") and at its end ("finished", "run ended"), and by the tab's stream (its rate limit);
  // awake each time until evicted. A turn shorter than the idle window keeps it awake from one to the
  // other. Its time answering (milliseconds a request, not measured) is left out.
  const userS =
    c.turnsPerDay * (turnSeconds > idleBilled ? 2 * idleBilled : turnSeconds + idleBilled) +
    c.streamsPerDay * idleBilled;
  // The watchdog fires every 30 s while a turn runs: an alarm invocation (a request) and the next
  // setAlarm() (a row) each time; none in a turn under 30 s.
  const alarms = Math.max(0, Math.ceil(turnSeconds / WATCHDOG_S) - 1);
  // DO requests per turn: Worker → user (rate limit) and → session (submitTurn); session → user
  // (ensureEnvironment, three conversation-index updates). Per browser stream: the rate limit and
  // the stream itself (before: an HTTP request into the object; after: the WebSocket upgrade, plus
  // one incoming pull message, billed 20:1).
  const streamRequests = mode === "before" ? 2 : 2 + 1 / 20;
  const requests = perMonth * (c.turnsPerDay * (6 + alarms) + c.streamsPerDay * streamRequests);
  const rowsW = perMonth * c.turnsPerDay * (m.rowsPerTurn + alarms);
  const gbs = perMonth * (sessionS + userS) * PRICE.gbPerObject;
  // Storage grows with history: every finished turn's kept bytes stay (none is deleted by the
  // gateway), so after k months it holds k months of turns.
  const gbPerMonth = m.keptBytesPerTurn == null ? null : (perMonth * c.turnsPerDay * m.keptBytesPerTurn) / 1e9;
  const storage = c.historyMonths.map((months) => {
    const gb = gbPerMonth === null ? null : gbPerMonth * months;
    return {
      months,
      gb: gb === null ? null : Number(gb.toFixed(2)),
      usd: gb === null ? null : billed(gb, PRICE.storedGb),
    };
  });
  const out = {
    turnSeconds,
    activeSecondsPerUserDay: Number((sessionS + userS).toFixed(1)),
    sessionSecondsPerUserDay: Number(sessionS.toFixed(1)),
    userSecondsPerUserDay: Number(userS.toFixed(1)),
    gbSeconds: Math.round(gbs),
    durationUsd: billed(gbs, PRICE.gbSeconds),
    alarmsPerTurn: alarms,
    requests: Math.round(requests),
    requestsUsd: billed(requests, PRICE.requests),
    rowsWritten: Math.round(rowsW),
    rowsUsd: billed(rowsW, PRICE.rowsWritten),
    storage,
  };
  // The month's total with the first month's storage; the later months' storage is in `storage`.
  out.totalUsd = Number((out.durationUsd + out.requestsUsd + out.rowsUsd + (storage[0]?.usd ?? 0)).toFixed(2));
  return out;
}

/**
 * Sets `results.cost` from the idle and rows figures; nothing when either was not measured.
 * @param {number} rowsSmallWords  the words of the rows benchmark's small answer (its per-turn figures)
 */
export function cost(results, rowsSmallWords) {
  const idleS = results.idle?.evictedBetweenSeconds?.[1] ?? results.idle?.evictedBetweenSeconds?.[0];
  const rowsTurn500 = results.rows?.turns?.find((t) => t.words === rowsSmallWords);
  if (idleS == null || !rowsTurn500?.rowsWritten || !results.rows.fit) return;
  const c = COST;
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
  // What a finished turn of the workload's words keeps: the paced turn's when measured, else the
  // small turn's scaled by words (its log and its record).
  const keptTurn = measuredTurn?.storedBytes != null ? measuredTurn : rowsTurn500;
  const keptBytesPerTurn =
    keptTurn.storedBytes == null ? null : (keptTurn.storedBytes * c.wordsPerTurn) / keptTurn.words;
  const m = { idleS, rowsPerTurn, keptBytesPerTurn };
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
      keptBytesPerTurn: keptBytesPerTurn === null ? null : Math.round(keptBytesPerTurn),
      keptBytesFrom: `a ${keptTurn.words}-word turn${keptTurn === measuredTurn ? "" : `, × ${c.wordsPerTurn / keptTurn.words}`}`,
    },
    before: bill(c, m, "before"),
    after: bill(c, m, "after"),
    afterIfIdleWindowUnbilled: bill(c, m, "idleUnbilled"),
    // The bill by turn length: duration is most of it, and it rests on how long a turn runs.
    byTurnSeconds: c.turnSecondsList.map((t) => ({
      turnSeconds: t,
      after: bill(c, m, "after", t),
      afterIfIdleWindowUnbilled: bill(c, m, "idleUnbilled", t),
    })),
  };
}

export function report(results) {
  const out = [];
  const k = results.cost;
  if (!k) return out;
  const m = k.measured;
  const w = k.workload;
  out.push(
    "",
    `cost: ${m.rowsPerTurn} rows a turn (the session object's ${m.sessionRowsPerTurn}, from ${m.sessionRowsFrom}; + 2 setAlarm + 3 index upserts), eviction after ${m.evictionDelaySeconds} s, ${m.keptBytesPerTurn ?? "unknown"} B kept a turn (${m.keptBytesFrom})`,
  );
  const row = (label, r) =>
    `${label.padEnd(26)} ${String(r.sessionSecondsPerUserDay).padStart(8)} ${String(r.userSecondsPerUserDay).padStart(6)} ${String(r.gbSeconds).padStart(11)} ${String(r.durationUsd).padStart(9)} ${String(r.requests).padStart(9)} ${String(r.requestsUsd).padStart(6)} ${String(r.rowsWritten).padStart(11)} ${String(r.rowsUsd).padStart(7)} ${r.storage.map((s) => `${s.gb ?? "?"} GB $${s.usd ?? "?"}`).join(" / ")}`.trimEnd() +
    `  total $${r.totalUsd}`;
  out.push(
    `cost per month (${w.users} users, ${w.turnsPerDay} turns of ${w.wordsPerTurn} words a day)  session s  user s   GB-s        $ duration  requests     $  rows written      $  storage after ${w.historyMonths.join(" / ")} months`,
  );
  out.push(row(`before, ${w.turnSeconds} s turns`, k.before));
  for (const t of k.byTurnSeconds ?? []) {
    out.push(row(`after, ${t.turnSeconds} s turns`, t.after));
    out.push(row(`  idle window unbilled`, t.afterIfIdleWindowUnbilled));
  }
  return out;
}
