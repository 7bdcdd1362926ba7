// Benchmark `idle`: how long a session object with IDLE_VIEWERS open viewers stays in memory after
// a turn, one conversation per IDLE_PROBES_S entry, each probed once after that idle time; then a
// second turn every viewer must get exactly once. Its baseline, `before` (only with
// BENCH_BEFORE_REF): the same on that older commit, in a worktree of its own with its own server.
import {
  atCommit,
  env,
  list,
  num,
  settledObject,
  signIn,
  sleep,
  startBenchServer,
  tag,
  turnEndOf,
  untilInterrupted,
  viewer,
} from "./harness.mjs";

export const config = {
  IDLE_VIEWERS: num("IDLE_VIEWERS", 3),
  IDLE_PROBES_S: list("IDLE_PROBES_S", "4,6,8,9,10,11,12,14,16,20"),
  BEFORE_REF: env.BENCH_BEFORE_REF ?? "",
  BEFORE_PROBES_S: list("BEFORE_PROBES_S", "12,20,30"),
};
const { IDLE_VIEWERS, IDLE_PROBES_S, BEFORE_REF, BEFORE_PROBES_S } = config;

/** IDLE_VIEWERS viewers of a new conversation, and its first turn, run to its end with them attached. */
async function viewedTurn({ base, api, auth }, cid) {
  const viewers = Array.from({ length: IDLE_VIEWERS }, () => viewer(base, cid, auth));
  await Promise.all(viewers.map((v) => v.opened));
  await sleep(300);
  await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: "idle [words:20]" }, auth);
  await Promise.all(viewers.map((v) => v.waitFor(turnEndOf("t1"))));
  return viewers;
}

/**
 * Idle conversations with viewers open: one per probe time. Each runs a turn with IDLE_VIEWERS
 * viewers, lets the object settle, then waits its probe time untouched and asks dev/object once:
 * the same instance (still in memory) or a new one (evicted meanwhile). Then a second turn: every
 * viewer must get it exactly once, through an object that hibernated with their subscriptions.
 */
export async function idle(ctx) {
  const { api, auth, results, problems } = ctx;
  await api.post("/_emulator/faults", { frameDelayMs: 0 });
  const probes = await Promise.all(
    IDLE_PROBES_S.map(async (seconds, i) => {
      const cid = `idle-${i}-${tag}`;
      const viewers = await viewedTurn(ctx, cid);
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
    if (!p.sameInstance && p.instanceAgeSeconds > 1)
      problems.push(`idle ${p.probeSeconds} s: something woke the object ${p.instanceAgeSeconds} s before the probe`);
    if (p.seqErrors || new Set(p.secondTurnFrames).size !== 1)
      problems.push(
        `idle ${p.probeSeconds} s: viewers' second turn frames ${p.secondTurnFrames}, ${p.seqErrors} seq gaps or repeats`,
      );
    if (p.subscriptions !== IDLE_VIEWERS || p.viewersOpen !== IDLE_VIEWERS)
      problems.push(
        `idle ${p.probeSeconds} s: ${p.subscriptions} subscriptions, ${p.viewersOpen} viewers open at the probe`,
      );
  }
  const same = probes.filter((p) => p.sameInstance).map((p) => p.idleSeconds);
  const evicted = probes.filter((p) => !p.sameInstance).map((p) => p.idleSeconds);
  const lastSame = same.length ? Math.max(...same) : null;
  const firstNew = evicted.length ? Math.min(...evicted) : null;
  if (firstNew === null)
    problems.push(
      `idle: the session object was still in memory after ${lastSame} s idle (never evicted): it did not hibernate`,
    );
  if (lastSame !== null && firstNew !== null && lastSame > firstNew)
    problems.push(`idle: not monotonic (still in memory after ${lastSame} s, evicted after ${firstNew} s)`);
  results.idle = { viewers: IDLE_VIEWERS, probes, evictedBetweenSeconds: [lastSame, firstNew] };
}

/**
 * The old design (BENCH_BEFORE_REF): the session object held the browsers' SSE responses. It has
 * no dev/object route; dev/drop-streams answers how many streams the in-memory instance holds, so
 * IDLE_VIEWERS after an idle time (with the viewers still open) means it was never evicted.
 */
export async function before({ results, problems }) {
  await atCommit(BEFORE_REF, problems, async (dir, sameDeps) => {
    const server = await startBenchServer({ checkout: dir, timeoutMs: 90_000 });
    const undo = untilInterrupted(() => server.stop());
    try {
      const old = await signIn(server.base);
      const { api, auth } = old;
      await api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, auth);
      await api.post("/_emulator/faults", { frameDelayMs: 0 });
      const probes = await Promise.all(
        BEFORE_PROBES_S.map(async (seconds, i) => {
          const cid = `before-${i}-${tag}`;
          const viewers = await viewedTurn(old, cid);
          await sleep(500);
          const idleFrom = performance.now();
          await sleep(seconds * 1000);
          const openBefore = viewers.filter((v) => !v.ended).length;
          const sent = performance.now();
          const { dropped } = await api.post(`/v1/conversations/${cid}/dev/drop-streams`, {}, auth);
          await Promise.race([Promise.all(viewers.map((v) => v.done)), sleep(2000)]);
          viewers.forEach((v) => v.close());
          return {
            probeSeconds: seconds,
            idleSeconds: Number(((sent - idleFrom) / 1000).toFixed(2)),
            viewersOpen: openBefore,
            streamsHeld: dropped,
            inMemory: dropped === IDLE_VIEWERS,
          };
        }),
      );
      results.before = { ref: BEFORE_REF, sameDeps, viewers: IDLE_VIEWERS, probes };
    } finally {
      await server.stopped();
      undo();
    }
  });
}

export function report(results) {
  const out = [];
  if (results.idle) {
    out.push(
      "",
      `idle with ${IDLE_VIEWERS} viewers: ${results.idle.probes.map((p) => `${p.idleSeconds}s:${p.sameInstance ? "same" : "new"}`).join(" ")} → evicted between ${results.idle.evictedBetweenSeconds.join(" and ")} s`,
    );
  }
  if (results.before) {
    out.push(
      `before (${results.before.ref}): ${results.before.probes.map((p) => `${p.idleSeconds}s:${p.streamsHeld} streams held`).join(" ")}`,
    );
  }
  return out;
}
