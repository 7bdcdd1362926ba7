// The `agents` benchmark (../agents.mjs): CPU per delta per extra viewer: the gateway, its raw baseline and the peer.
import { readSse } from "../../scripts/devserver.mjs";
import { deltaOf, follow, isTurnEnd, ms, percentile, sleep, tag, viewer } from "../harness.mjs";
import { cpuSeconds, runtimeBase } from "../workerd.mjs";
import { config as C } from "./config.mjs";
import { agentSocket, isDone, sendTurn } from "./peer.mjs";

export const s2 = (x) => Number(x.toFixed(2));

/**
 * workerd CPU of one turn with `viewers` viewers, for the gateway (`gatewayTurn`) or the peer
 * (`peerTurn`): the server of process group `pgid`, and the emulator's own server when it runs
 * apart (`emulatorPgid`, AGENTS_EMULATOR=apart).
 */
async function cpuOf(pgid, run, emulatorPgid = null) {
  const before = cpuSeconds(pgid);
  const emulatorBefore = emulatorPgid && cpuSeconds(emulatorPgid);
  const frames = await run();
  const after = cpuSeconds(pgid);
  const emulatorAfter = emulatorPgid && cpuSeconds(emulatorPgid);
  // runtime: the Worker, its objects (and the emulator when it runs in the same runtime, the same
  // work at 1 and K viewers); total: with wrangler's proxy. emulator: the emulator's own server's.
  return {
    runtimeSeconds: s2(after.runtime - before.runtime),
    totalSeconds: s2(after.total - before.total),
    ...(emulatorPgid
      ? {
          emulator: {
            runtimeSeconds: s2(emulatorAfter.runtime - emulatorBefore.runtime),
            totalSeconds: s2(emulatorAfter.total - emulatorBefore.total),
          },
        }
      : {}),
    frames,
  };
}

/** The gateway: `K` viewers of a new conversation, a turn of CPU_WORDS deltas, until every viewer has its end. */
export async function gatewayCpuTurn({ base, api, auth, server, emulator }, K) {
  const cid = `cpu-${K}-${tag}`;
  const viewers = Array.from({ length: K }, () => viewer(base, cid, auth, { stopAt: (f) => isTurnEnd(f.type) }));
  await Promise.all(viewers.map((v) => v.opened));
  await sleep(300 + K * 5);
  // The raw stream of the same execution, read from when the turn is accepted (one reader at 1 and
  // at K viewers: its CPU cancels out of the per-extra-viewer figure): when each delta left the
  // agent, to judge the CPU figure with the delivery it bought. Read at the runtime's own address
  // when found: through wrangler dev's proxy, beside 300 viewers, it came seconds after the viewers'.
  emulator.rawBase ??= (await runtimeBase(emulator.pid, () => fetch(`${emulator.base}/healthz`))) ?? emulator.base;
  const raw = [];
  let rawRead = null;
  const cpu = await cpuOf(
    server.pid,
    async () => {
      const accepted = await api.post(
        `/v1/conversations/${cid}/turns`,
        { turnId: "t1", message: `cpu [words:${C.CPU_WORDS}]` },
        auth,
      );
      const stream = `${emulator.rawBase}/_emulator/executions/${accepted.executionId}/stream`;
      rawRead = follow(stream, {}, (f, t, _bytes, chunk) => {
        const delta = deltaOf(JSON.parse(f.data));
        if (delta !== null) raw.push({ delta, t, chunk });
        return false;
      }).done;
      await Promise.all(viewers.map((v) => v.done));
      return viewers[0].frames.filter((f) => f.type !== "stream.reset" && deltaOf(f.env.data) !== null).length;
    },
    emulator.apart ? emulator.pid : null,
  );
  await rawRead;
  // How many reads (chunks, about one per message) a viewer's events came in: deltas batched, or one each.
  const chunks = viewers.map((v) => new Set(v.frames.map((f) => f.chunk)).size);
  return {
    ...cpu,
    chunksPerViewer: { min: Math.min(...chunks), max: Math.max(...chunks) },
    addedMs: addedDelay(viewers, raw),
  };
}

/**
 * Each delta's arrival at each viewer less its arrival on the raw stream (the deltas of the raw
 * stream's first chunk, replayed when it opened, not compared): p50, p99, max, and the count
 * compared; null (unknown) when a viewer did not get exactly the raw stream's deltas (nothing to
 * pair), or when most deltas reached the viewers before the raw reader (its reading was late).
 */
function addedDelay(viewers, raw) {
  const added = [];
  for (const v of viewers) {
    const got = v.frames
      .filter((f) => f.type !== "stream.reset")
      .map((f) => ({ t: f.t, delta: deltaOf(f.env.data) }))
      .filter((d) => d.delta !== null);
    if (got.length !== raw.length || got.some((d, k) => d.delta !== raw[k].delta)) return null;
    for (let k = 0; k < raw.length; k++) if (raw[k].chunk > 0) added.push(got[k].t - raw[k].t);
  }
  // Viewers that got deltas before the reference did: the reference was late, the figure unknown.
  if (percentile(added, 0.5) < 0) return null;
  return {
    compared: added.length,
    p50: ms(percentile(added, 0.5)),
    p99: ms(percentile(added, 0.99)),
    // 50,000 figures at 50 viewers: too many arguments for Math.max(...added).
    max: ms(added.length ? added.reduce((a, b) => Math.max(a, b)) : null),
  };
}

/**
 * The 1-viewer turn's raw baseline: the same turn run by the emulator alone, on the sandbox that
 * turn ran on (`POST /_emulator/sandboxes/:id/runs`, its raw stream read by one reader: through the
 * Worker when the emulator runs in its runtime, from the emulator's own server when apart; no
 * session object), the CPU over it. The peer has no upstream to run.
 */
export async function rawCpuTurn({ api, auth, server, emulator }) {
  const turn = await api.get(`/v1/conversations/cpu-1-${tag}/turns/t1`, auth);
  const { sandboxId } = await emulator.api.get(`/_emulator/executions/${turn.executionId}`);
  const run = async () => {
    const res = await fetch(`${emulator.base}/_emulator/sandboxes/${sandboxId}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sessionId: `raw-cpu-${tag}`, message: `cpu [words:${C.CPU_WORDS}]` }),
    });
    if (!res.ok) throw new Error(`raw cpu run: ${res.status} ${await res.text()}`);
    let frames = 0;
    await readSse(res, () => (frames++, false));
    return frames;
  };
  return cpuOf(server.pid, run, emulator.apart ? emulator.pid : null);
}

/** The peer: `K` sockets on a new agent (the first sends the turn), until every socket has its end. */
export async function peerCpuTurn(peer, K) {
  const name = `cpu-${K}-${tag}`;
  const sockets = Array.from({ length: K }, () => agentSocket(peer.base, name));
  await Promise.all(sockets.map((s) => s.opened));
  await Promise.all(sockets.map((s) => s.waitFor((m) => m.msg.type === "cf_agent_identity")));
  await sleep(300);
  return cpuOf(peer.pid, async () => {
    sendTurn(sockets[0], "c1", `cpu [words:${C.CPU_WORDS}] [ms:${C.CPU_FRAME_MS}]`);
    await Promise.all(sockets.map((s) => s.waitFor(isDone("c1"))));
    sockets.forEach((s) => s.close());
    return sockets[0].messages.filter((m) => m.delta !== null).length;
  });
}

export const perExtraViewer = (one, many, K) => ({
  one,
  many,
  viewers: K,
  // The runtime's (what a deployment runs) and, with wrangler dev's proxy, the whole dev server's.
  microsecondsPerDeltaPerExtraViewer: Math.round(
    ((many.runtimeSeconds - one.runtimeSeconds) / (many.frames * (K - 1))) * 1e6,
  ),
  withProxyMicroseconds: Math.round(((many.totalSeconds - one.totalSeconds) / (many.frames * (K - 1))) * 1e6),
});
