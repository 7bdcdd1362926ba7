// The `agents` benchmark (../agents.mjs): CONCURRENT conversations at once against one: the gateway, the raw emulator runs and the peer, and their CPU.
import { readSse } from "../../scripts/devserver.mjs";
import { isTurnEnd, percentile, sleep, tag, turnEndOf, viewer } from "../harness.mjs";
import { cpuSeconds } from "../workerd.mjs";
import { config as C } from "./config.mjs";
import { s2 } from "./cpu.mjs";
import { agentSocket, isDone, sendTurn } from "./peer.mjs";

/** Conversation ids for `n` conversations of a round. */
export const conversationIds = (n, label) => Array.from({ length: n }, (_, i) => `conc-${label}-${i}-${tag}`);

/** Makes the conversations exist: a one-word turn each (`t0`), all at once, waited for to its end. */
export async function prepareConversations({ base, api, auth }, cids) {
  const viewers = cids.map((cid) => viewer(base, cid, auth, { stopAt: (f) => isTurnEnd(f.type) }));
  await Promise.all(viewers.map((v) => v.opened));
  await Promise.all(
    cids.map(async (cid, i) => {
      await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t0", message: "warm [words:1]" }, auth);
      await viewers[i].waitFor(turnEndOf("t0"), 600_000);
    }),
  );
  viewers.forEach((v) => v.close());
}

/**
 * The gateway: `n` conversations (new ones, or `cids` that exist: prepareConversations), a turn
 * each at once, one viewer each: seconds until the last turn's end.
 */
export async function gatewayConcurrent({ base, api, auth }, n, label, cids = conversationIds(n, label)) {
  const viewers = cids.map((cid) => viewer(base, cid, auth, { stopAt: turnEndOf("t1") }));
  await Promise.all(viewers.map((v) => v.opened));
  await sleep(300 + n * 10);
  const t0 = performance.now();
  const executions = [];
  const ends = await Promise.all(
    cids.map(async (cid, i) => {
      const accepted = await api.post(
        `/v1/conversations/${cid}/turns`,
        { turnId: "t1", message: `concurrent [words:${C.CONCURRENT_WORDS}]` },
        auth,
      );
      executions.push(accepted.executionId);
      await viewers[i].waitFor(turnEndOf("t1"), 600_000);
      return performance.now() - t0;
    }),
  );
  viewers.forEach((v) => v.close());
  return {
    conversations: n,
    seconds: Number((Math.max(...ends) / 1000).toFixed(2)),
    p50Seconds: Number((percentile(ends, 0.5) / 1000).toFixed(2)),
    executions,
  };
}

/**
 * The raw baseline: `n` runs of the same turn started at once on the emulator directly
 * (`POST /_emulator/sandboxes/:id/runs`, answered with the run's raw stream, admission to end),
 * through the same Worker when the emulator runs in its runtime (the emulator's pacing and the
 * Worker's pass-through), from the emulator's own server when apart; no session object, no user
 * object, no auth. Seconds until the last stream ends.
 */
export async function rawConcurrent({ emulator }, sandboxId, n, label) {
  const t0 = performance.now();
  const ends = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await fetch(`${emulator.base}/_emulator/sandboxes/${sandboxId}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          sessionId: `raw-conc-${label}-${i}-${tag}`,
          message: `concurrent [words:${C.CONCURRENT_WORDS}]`,
        }),
      });
      if (!res.ok) throw new Error(`raw run ${i}: ${res.status} ${await res.text()}`);
      let frames = 0;
      await readSse(res, () => (frames++, false));
      return { ms: performance.now() - t0, frames };
    }),
  );
  const times = ends.map((e) => e.ms);
  return {
    conversations: n,
    seconds: Number((Math.max(...times) / 1000).toFixed(2)),
    p50Seconds: Number((percentile(times, 0.5) / 1000).toFixed(2)),
    frames: ends[0].frames,
  };
}

/** The peer: `n` new agents, a turn each at once from its own socket: seconds until the last one is done. */
export async function peerConcurrent(peer, n, label) {
  const sockets = Array.from({ length: n }, (_, i) => agentSocket(peer.base, `conc-${label}-${i}-${tag}`));
  await Promise.all(sockets.map((s) => s.opened));
  await Promise.all(sockets.map((s) => s.waitFor((m) => m.msg.type === "cf_agent_identity")));
  await sleep(300);
  const t0 = performance.now();
  const ends = await Promise.all(
    sockets.map(async (s) => {
      sendTurn(s, "k1", `concurrent [words:${C.CONCURRENT_WORDS}] [ms:${C.CONCURRENT_FRAME_MS}]`);
      await s.waitFor(isDone("k1"), 600_000);
      return performance.now() - t0;
    }),
  );
  sockets.forEach((s) => s.close());
  return {
    conversations: n,
    seconds: Number((Math.max(...ends) / 1000).toFixed(2)),
    p50Seconds: Number((percentile(ends, 0.5) / 1000).toFixed(2)),
  };
}

/** workerd CPU so far of the gateway's server, and of the emulator's when it runs apart. */
export const serversCpu = ({ server, emulator }) => ({
  gateway: cpuSeconds(server.pid),
  emulator: emulator.apart ? cpuSeconds(emulator.pid) : null,
});
/**
 * CPU between two serversCpu reads: `runtime` and `proxy` the gateway's server's workerd (its
 * runtime: the Worker and its objects, and the emulator when it runs there; its proxy: wrangler
 * dev's, in front), `emulator` the emulator's own server's when apart (its runtime and proxy).
 */
export const cpuSpent = (a, b) => ({
  runtime: s2(b.gateway.runtime - a.gateway.runtime),
  proxy: s2(b.gateway.proxy - a.gateway.proxy),
  ...(a.emulator
    ? {
        emulator: {
          runtime: s2(b.emulator.runtime - a.emulator.runtime),
          proxy: s2(b.emulator.proxy - a.emulator.proxy),
        },
      }
    : {}),
});
/** Two cpuSpent figures added (rounds of the same work). */
export const addSpent = (a, b) => ({
  runtime: s2(a.runtime + b.runtime),
  proxy: s2(a.proxy + b.proxy),
  ...(a.emulator && b.emulator
    ? {
        emulator: {
          runtime: s2(a.emulator.runtime + b.emulator.runtime),
          proxy: s2(a.emulator.proxy + b.emulator.proxy),
        },
      }
    : {}),
});
/**
 * Ours over 50 ÷ the raw runs over 50, each the runtimes' CPU (no proxy). `whole`: every runtime
 * that served the work (the gateway's and, apart, the emulator's: ours with the emulator's run of
 * our turns, the raw runs' the emulator's run of theirs), as measured with the emulator in the
 * gateway's runtime. Apart also `gateway`: the gateway's runtime alone over ours ÷ the emulator's
 * runtime alone over the raw runs (the one runtime that did each side's own work).
 */
export function cpuPerRaw(ours, raw) {
  const runtimes = (c) => c.runtime + (c.emulator?.runtime ?? 0);
  const r = (a, b) => (b > 0 ? Number((a / b).toFixed(2)) : null);
  return {
    whole: r(runtimes(ours), runtimes(raw)),
    ...(ours.emulator ? { gateway: r(ours.runtime, raw.emulator.runtime) } : {}),
  };
}

export const ratioOf = (one, many) => ({ one, many, ratio: Number((many.seconds / one.seconds).toFixed(2)) });
