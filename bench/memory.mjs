// Benchmark `memory`: does workerd give memory back once conversations finish and go idle? On a
// dev server of its own (fresh, so earlier benchmarks' bursts are not in its start), after a warm-up
// and MEMORY_IDLE_S idle: its workerd's RSS (/proc). Then, each with MEMORY_IDLE_S idle before its
// RSS is read (the session objects are evicted after about 10 s idle, the `idle` benchmark):
//   baseline  MEMORY_BASELINE_ROUNDS rounds of as many requests to a trivial route (/healthz) as a
//             round of conversations makes requests (no object, no emulator);
//   rounds    MEMORY_ROUNDS rounds of MEMORY_CONVERSATIONS new conversations at once, one viewer
//             each, a turn of MEMORY_WORDS words run to its end; RSS also right at the round's end
//             (the objects still in memory) to see what eviction gives back;
//   emulator  MEMORY_EMULATOR_ROUNDS rounds reading the last round's executions' raw streams from
//             the emulator through the Worker: the emulator's and the Worker's share, no session object;
//   peer      MEMORY_PEER_ROUNDS rounds of as many conversations of as many words on the agents peer
//             (bench/agents-peer, a wrangler dev of its own): another Durable Object app on the same
//             runtime, to tell the runtime's ways from ours.
// RSS is read per workerd: the runtime (the Worker, the objects, the emulator) and wrangler dev's own
// proxy in front of it (bench/workerd.mjs). Target (issue 24): after every round, idle RSS within 10%
// of the start.

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isDone, openAgentSocket, sendTurn, startPeer } from "./agents/peer.mjs";
import {
  fetchGet,
  follow,
  isTurnEnd,
  num,
  signIn,
  sleep,
  startBenchServer,
  tag,
  turnEndOf,
  untilInterrupted,
  viewer,
} from "./harness.mjs";
import { allocatorMiB, collectedHeapMiB, rssMiB } from "./workerd.mjs";

export const config = {
  MEMORY_ROUNDS: num("MEMORY_ROUNDS", 5),
  MEMORY_CONVERSATIONS: num("MEMORY_CONVERSATIONS", 50),
  MEMORY_WORDS: num("MEMORY_WORDS", 200),
  MEMORY_IDLE_S: num("MEMORY_IDLE_S", 15),
  MEMORY_BASELINE_ROUNDS: num("MEMORY_BASELINE_ROUNDS", 2),
  MEMORY_EMULATOR_ROUNDS: num("MEMORY_EMULATOR_ROUNDS", 2),
  MEMORY_PEER_ROUNDS: num("MEMORY_PEER_ROUNDS", 2),
  MEMORY_AFTER_RELEASE_ROUNDS: num("MEMORY_AFTER_RELEASE_ROUNDS", 1),
};
const M = config;
const here = dirname(fileURLToPath(import.meta.url));
/** Requests one conversation of a round makes: the viewer's stream, the turn, and the stream's WebSocket into the object. */
const REQUESTS_PER_CONVERSATION = 3;

/** RSS after MEMORY_IDLE_S idle: the lowest of three reads a second apart (a GC may run between them), per process. */
async function idleRss(pgid) {
  await sleep(M.MEMORY_IDLE_S * 1000);
  const reads = [];
  for (let i = 0; i < 3; i++) {
    reads.push(rssMiB(pgid));
    await sleep(1000);
  }
  const low = (k) => Math.min(...reads.map((r) => r[k]));
  return {
    runtime: low("runtime"),
    proxy: low("proxy"),
    total: low("total"),
    runtimeV8: low("runtimeV8"),
    runtimeNative: low("runtimeNative"),
  };
}

/**
 * After the idle read: a full collection of the worker's isolate, asked for over the runtime's
 * inspector (bench/workerd.mjs), its JavaScript heap after it (`usedMiB` what is still reachable:
 * what our code and the runtime's own JavaScript hold), and RSS read again after it. Null parts
 * when the inspector could not be reached (reported as a problem, never as zero).
 */
async function collected(pgid, base, problems, label) {
  try {
    const poke = () => fetchGet(`${base}/healthz`).then((r) => r.text());
    // The first session on a fresh runtime has gone unanswered once (30 s): asked again once.
    const heap = await collectedHeapMiB(pgid, poke).catch(() => collectedHeapMiB(pgid, poke));
    if (!heap) problems.push(`memory ${label}: no inspector found for the runtime: the collected heap not measured`);
    return { heap, afterCollectionMiB: heap ? rssMiB(pgid) : null, allocator: allocator(pgid, problems, label) };
  } catch (err) {
    problems.push(`memory ${label}: the collected heap not measured: ${err.message}`);
    return { heap: null, afterCollectionMiB: null, allocator: allocator(pgid, problems, label) };
  }
}

/** The runtime allocator's account of its native memory (bench/workerd.mjs), null and a problem when gdb could not read it. */
function allocator(pgid, problems, label, options) {
  const out = allocatorMiB(pgid, options);
  if (!out) problems.push(`memory ${label}: the allocator's figures not read (gdb missing or refused)`);
  return out;
}

/**
 * Asks the runtime's allocator to give back every page it keeps free (what workerd never does), then
 * RSS a few seconds later: how much of the idle RSS was freed memory kept resident. Not a figure of
 * the target (a deployment's runtime decides that, not our code); the analysis of it.
 */
async function released(pgid, problems, label) {
  const before = rssMiB(pgid);
  const allocatorBefore = allocator(pgid, problems, `${label} (release)`, { release: true });
  await sleep(3000);
  return {
    beforeMiB: before,
    allocator: allocatorBefore,
    afterMiB: rssMiB(pgid),
    allocatorAfter: allocator(pgid, problems, `${label} (after release)`),
  };
}

async function conversationsRound({ base, api, auth, problems }, round) {
  const cids = Array.from({ length: M.MEMORY_CONVERSATIONS }, (_, i) => `mem-${round}-${i}-${tag}`);
  const executions = await Promise.all(
    cids.map(async (cid) => {
      const v = viewer(base, cid, auth, { stopAt: (f) => isTurnEnd(f.type) });
      await v.opened;
      const body = { turnId: "t1", message: `memory [words:${M.MEMORY_WORDS}]` };
      const accepted = await api.post(`/v1/conversations/${cid}/turns`, body, auth).catch(async (err) => {
        // wrangler dev's own 503 when the local runtime restarted the Worker under load: the same
        // turn again is safe (idempotent by turnId), but the restart is reported.
        if (!/ 503 /.test(err.message)) throw err;
        problems.push(`memory round ${round}: ${err.message.slice(0, 160)} (sent again)`);
        return api.post(`/v1/conversations/${cid}/turns`, body, auth);
      });
      await v.waitFor(turnEndOf("t1"), 300_000);
      v.close();
      if (v.seqErrors)
        problems.push(`memory round ${round}: a viewer of ${cid} saw ${v.seqErrors} seq gaps or repeats`);
      return accepted.executionId;
    }),
  );
  return executions;
}

/** The agents peer's rounds: its runtime's RSS at its start and after each round gone idle. */
async function peerRounds(out, problems) {
  if (M.MEMORY_PEER_ROUNDS <= 0) return;
  if (typeof WebSocket === "undefined")
    return void problems.push(
      "memory: no WebSocket in this Node (run with --experimental-websocket): the peer's rounds not run",
    );
  const peer = await startPeer();
  const done = untilInterrupted(() => peer.stop());
  try {
    const warm = await openAgentSocket(peer.base, `mem-warm-${tag}`);
    sendTurn(warm, "w", "warm [words:10]");
    await warm.waitFor(isDone("w"));
    warm.close();
    out.peer = { startMiB: await idleRss(peer.pid), rounds: [] };
    out.peer.start = await collected(peer.pid, peer.base, problems, "peer start");
    for (let r = 1; r <= M.MEMORY_PEER_ROUNDS; r++) {
      const sockets = await Promise.all(
        Array.from({ length: M.MEMORY_CONVERSATIONS }, (_, i) => openAgentSocket(peer.base, `mem-${r}-${i}-${tag}`)),
      );
      await Promise.all(
        sockets.map((s) => (sendTurn(s, "m", `memory [words:${M.MEMORY_WORDS}]`), s.waitFor(isDone("m")))),
      );
      sockets.forEach((s) => s.close());
      const endMiB = rssMiB(peer.pid);
      out.peer.rounds.push({
        round: r,
        endMiB,
        idleMiB: await idleRss(peer.pid),
        ...(await collected(peer.pid, peer.base, problems, `peer round ${r}`)),
      });
    }
    out.peer.release = await released(peer.pid, problems, "peer");
    const worst = Math.max(...out.peer.rounds.map((x) => x.idleMiB.runtime));
    out.peer.runtimeRatio = Number((worst / out.peer.startMiB.runtime).toFixed(2));
  } finally {
    peer.stop();
    done();
  }
}

/** The verdict: every idle RSS after a round within `limit` (0.1) of the start. */
function memoryVerdict(startMiB, idleMiBs, limit = 0.1) {
  const worst = Math.max(...idleMiBs);
  return { worstMiB: worst, worstRatio: Number((worst / startMiB).toFixed(2)), met: worst <= startMiB * (1 + limit) };
}

export async function memory({ problems, results }) {
  const server = await startBenchServer();
  const done = untilInterrupted(() => server.stop());
  if (!server.inspectorQuiet)
    problems.push("memory: the runtime's network reports to wrangler dev's inspector proxy could not be turned off");
  try {
    const ctx = { ...(await signIn(server.base)), problems };
    const { base, api, auth } = ctx;
    const pgid = server.pid;
    await api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, auth);
    const warm = viewer(base, "warm", auth, { stopAt: (f) => isTurnEnd(f.type) });
    await warm.done;
    await api.post("/_emulator/faults", { frameDelayMs: 0 });
    const out = { config: M, startMiB: await idleRss(pgid), baseline: [], rounds: [], emulator: [] };
    out.start = await collected(pgid, base, problems, "start");
    results.memory = out;
    for (let r = 1; r <= M.MEMORY_BASELINE_ROUNDS; r++) {
      const n = M.MEMORY_CONVERSATIONS * REQUESTS_PER_CONVERSATION;
      // As a round of conversations does: MEMORY_CONVERSATIONS at once, each its requests in turn.
      await Promise.all(
        Array.from({ length: M.MEMORY_CONVERSATIONS }, async () => {
          for (let i = 0; i < REQUESTS_PER_CONVERSATION; i++) await (await fetchGet(`${base}/healthz`)).text();
        }),
      );
      out.baseline.push({
        round: r,
        requests: n,
        idleMiB: await idleRss(pgid),
        ...(await collected(pgid, base, problems, `baseline ${r}`)),
      });
    }
    let executions = [];
    for (let r = 1; r <= M.MEMORY_ROUNDS; r++) {
      const t = performance.now();
      executions = await conversationsRound(ctx, r);
      const seconds = Number(((performance.now() - t) / 1000).toFixed(1));
      const endMiB = rssMiB(pgid);
      out.rounds.push({
        round: r,
        conversations: executions.length,
        seconds,
        endMiB,
        idleMiB: await idleRss(pgid),
        ...(await collected(pgid, base, problems, `round ${r}`)),
      });
    }
    // Were the objects evicted while idle? A probe of one of the last round's conversations, after the
    // RSS was read: an instance started by the probe itself (age ~0 s) had been evicted.
    const probe = await api.get(`/v1/conversations/mem-${M.MEMORY_ROUNDS}-0-${tag}/dev/object`, auth);
    out.lastRoundInstanceAgeSeconds = Number(((Date.now() - probe.startedAt) / 1000).toFixed(1));
    for (let r = 1; r <= M.MEMORY_EMULATOR_ROUNDS; r++) {
      await Promise.all(
        executions.map((id) => follow(`${base}/_emulator/executions/${id}/stream`, {}, () => false).done),
      );
      out.emulator.push({
        round: r,
        streams: executions.length,
        idleMiB: await idleRss(pgid),
        ...(await collected(pgid, base, problems, `emulator ${r}`)),
      });
    }
    // How much of the idle RSS is freed memory the allocator keeps: it is asked to give it back, then
    // more rounds show whether it climbs again (a high-water mark) or stays down.
    out.release = await released(pgid, problems, "after the rounds");
    out.afterRelease = [];
    for (let r = 1; r <= M.MEMORY_AFTER_RELEASE_ROUNDS; r++) {
      executions = await conversationsRound(ctx, M.MEMORY_ROUNDS + r);
      out.afterRelease.push({
        round: M.MEMORY_ROUNDS + r,
        idleMiB: await idleRss(pgid),
        ...(await collected(pgid, base, problems, `round ${M.MEMORY_ROUNDS + r} (after the release)`)),
      });
    }
    await peerRounds(out, problems);
    const last = (list) => list.at(-1)?.idleMiB ?? out.startMiB;
    const conversations = M.MEMORY_ROUNDS * M.MEMORY_CONVERSATIONS;
    for (const k of ["runtime", "runtimeV8", "runtimeNative", "proxy", "total"]) {
      const before = last(out.baseline)[k];
      out[k] = {
        verdict: memoryVerdict(
          out.startMiB[k],
          out.rounds.map((x) => x.idleMiB[k]),
        ),
        // What a conversation left behind once idle (over the rounds), what idling gave back per round.
        keptPerConversationMiB: Number(((last(out.rounds)[k] - before) / conversations).toFixed(3)),
        givenBackOnIdleMiB: out.rounds.map((x) => Number((x.endMiB[k] - x.idleMiB[k]).toFixed(1))),
        perRoundGrowthMiB: out.rounds.map((x, i) =>
          Number((x.idleMiB[k] - (i ? out.rounds[i - 1].idleMiB[k] : before)).toFixed(1)),
        ),
        baselineGrowthMiB: Number((before - out.startMiB[k]).toFixed(1)),
        emulatorGrowthMiB: Number((last(out.emulator)[k] - last(out.rounds)[k]).toFixed(1)),
      };
    }
  } finally {
    // Its own server's output, beside the run's (bench/results/server.log): what the runtime said.
    mkdirSync(join(here, "results"), { recursive: true });
    writeFileSync(join(here, "results", "memory-server.log"), server.output());
    await server.stopped();
    done();
  }
}

export function report(results) {
  const m = results.memory;
  if (!m) return [];
  const f = (x) => `${x.runtime}+${x.proxy}`;
  const out = [
    "",
    `memory: workerd RSS in MiB (runtime + wrangler's proxy), after ${M.MEMORY_IDLE_S} s idle; start ${f(m.startMiB)}`,
  ];
  out.push(`  baseline (/healthz): ${m.baseline.map((b) => `${b.requests} requests → ${f(b.idleMiB)}`).join(", ")}`);
  out.push(
    `  rounds of ${M.MEMORY_CONVERSATIONS} conversations × ${M.MEMORY_WORDS} words (at the end → idle): ${m.rounds.map((x) => `${f(x.endMiB)} → ${f(x.idleMiB)}`).join(", ")}`,
  );
  out.push(
    `  the runtime's JavaScript heap (V8's cage) + native: start ${m.startMiB.runtimeV8}+${m.startMiB.runtimeNative}, rounds idle ${m.rounds.map((x) => `${x.idleMiB.runtimeV8}+${x.idleMiB.runtimeNative}`).join(", ")}`,
  );
  if (m.peer)
    out.push(
      `  agents peer (its own runtime + proxy), ${M.MEMORY_CONVERSATIONS} conversations a round: start ${f(m.peer.startMiB)}, rounds (end → idle) ${m.peer.rounds.map((x) => `${f(x.endMiB)} → ${f(x.idleMiB)}`).join(", ")}; runtime ${m.peer.runtimeRatio}× its start`,
    );
  if (m.peer)
    out.push(
      `  agents peer: its JavaScript heap (V8's cage) + native, start ${m.peer.startMiB.runtimeV8}+${m.peer.startMiB.runtimeNative}, rounds idle ${m.peer.rounds.map((x) => `${x.idleMiB.runtimeV8}+${x.idleMiB.runtimeNative}`).join(", ")}; its isolate's heap after a full collection ${[m.peer.start, ...m.peer.rounds].map((x) => (x?.heap ? `${x.heap.usedMiB}/${x.heap.totalMiB}` : "?")).join(", ")}`,
    );
  const h = (x) => (x.heap ? `${x.heap.usedMiB}/${x.heap.totalMiB}` : "?");
  const a = (x) => (x.afterCollectionMiB ? f(x.afterCollectionMiB) : "?");
  if (m.start)
    out.push(
      `  the worker isolate's JavaScript heap after a full collection, used/kept MiB: start ${h(m.start)}, baseline ${m.baseline.map(h).join(", ")}, rounds ${m.rounds.map(h).join(", ")}, emulator ${m.emulator.map(h).join(", ")}`,
    );
  if (m.start)
    out.push(
      `  RSS right after that collection: start ${a(m.start)}, baseline ${m.baseline.map(a).join(", ")}, rounds ${m.rounds.map(a).join(", ")}, emulator ${m.emulator.map(a).join(", ")}`,
    );
  const al = (x) =>
    x?.allocator ? `${x.allocator.inUse}/${x.allocator.physical} (${x.allocator.pageHeapFree} free)` : "?";
  if (m.start)
    out.push(
      `  the runtime's allocator (tcmalloc), native MiB in use/resident (free pages kept): start ${al(m.start)}, baseline ${m.baseline.map(al).join(", ")}, rounds ${m.rounds.map(al).join(", ")}, emulator ${m.emulator.map(al).join(", ")}`,
    );
  const rel = (r) =>
    r
      ? `${f(r.beforeMiB)} → ${f(r.afterMiB)} (the allocator gave back ${r.allocator?.releasedNowMiB ?? "?"} MiB; in use/resident after ${al({ allocator: r.allocatorAfter })})`
      : "?";
  if (m.release)
    out.push(
      `  asked to give its free pages back (workerd never does): RSS ${rel(m.release)}; then ${m.afterRelease.map((x) => `round ${x.round} idle ${f(x.idleMiB)}, allocator ${al(x)}`).join(", ")}`,
    );
  if (m.peer?.release)
    out.push(
      `  agents peer, the same: RSS ${rel(m.peer.release)}; its allocator over its rounds ${[m.peer.start, ...m.peer.rounds].map(al).join(", ")}`,
    );
  out.push(
    `  one of the last round's objects, probed after the idle read: instance ${m.lastRoundInstanceAgeSeconds} s old (about 0: it had been evicted)`,
  );
  out.push(
    `  emulator raw streams (${m.emulator[0]?.streams ?? 0} a round): ${m.emulator.map((e) => f(e.idleMiB)).join(", ")}`,
  );
  for (const k of ["runtime", "total"]) {
    const v = m[k];
    if (v)
      out.push(
        `  ${k}: worst idle ${v.verdict.worstMiB} = ${v.verdict.worstRatio}× the start: ${v.verdict.met ? "met" : "NOT met"} (≤ 1.1×); growth per round ${v.perRoundGrowthMiB.join(", ")}; kept ${v.keptPerConversationMiB} MiB per conversation`,
      );
  }
  return out;
}
