// Benchmark `replay`: a finished log of REPLAY_WORDS one-word deltas read from the start by one
// reader, in frames per second. Baseline: the raw stream of the same run.
//
// The turn runs unpaced (the whole script at once), and the benchmark waits for its end by asking
// for the turn (GET …/turns/t1) rather than by reading its event stream live: under wrangler dev
// the Worker, every object and the emulator share one isolate, and while the session object takes
// in a burst of 10,000 frames nothing else in that isolate is answered (a stream opened meanwhile
// gets its headers only when the burst is in; on a loaded machine that took longer than Node's
// 300 s header timeout, and the section failed with "fetch failed"). The stall itself is measured
// (`stall`): the longest wait for /healthz (no object) while the turn is taken in, beside the same
// while the emulator alone runs the same turn (a direct run, no session object).
import { readSse } from "../scripts/devserver.mjs";
import { num, sleep, sseTurnEnd, streamEnd, tag, throughput, timedRead } from "./harness.mjs";

export const config = { REPLAY_WORDS: num("REPLAY_WORDS", 10000), REPLAY_DEADLINE_S: num("REPLAY_DEADLINE_S", 600) };

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** /healthz asked again and again (one at a time) until `done` settles: the longest wait for an answer, ms. */
async function longestHealthzWait(base, done) {
  let finished = false;
  done.then(
    () => (finished = true),
    () => (finished = true),
  );
  let longest = 0;
  let probes = 0;
  while (!finished) {
    const t = performance.now();
    await (await fetch(`${base}/healthz`)).text();
    longest = Math.max(longest, performance.now() - t);
    probes++;
    await sleep(20);
  }
  return { longestMs: Math.round(longest), probes };
}

export async function replay({ base, api, auth, results }) {
  const cid = `replay-${tag}`;
  const message = `replay [words:${config.REPLAY_WORDS}] [paragraphs]`;
  const accepted = await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message }, auth);
  const deadline = Date.now() + config.REPLAY_DEADLINE_S * 1000;
  const ended = (async () => {
    while (true) {
      // A read that times out while the isolate is busy is asked again (until the deadline).
      const turn = await api
        .get(`/v1/conversations/${cid}/turns/t1`, auth)
        .catch((err) => ({ status: `unknown (${err.message})` }));
      if (TERMINAL.has(turn.status)) return turn.status;
      if (Date.now() > deadline)
        throw new Error(
          `replay: the ${config.REPLAY_WORDS}-word turn did not end within ${config.REPLAY_DEADLINE_S} s (status ${turn.status})`,
        );
      await sleep(250);
    }
  })();
  const gatewayStall = await longestHealthzWait(base, ended);
  const status = await ended;
  if (status !== "completed") throw new Error(`replay: the turn ended ${status}`);
  const read = await timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, sseTurnEnd);
  const raw = await timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd);
  results.replay_log = throughput({
    frames: read.frames,
    rate: read.frames / read.seconds,
    baseline: raw.frames / raw.seconds,
    target: "framesPerSecond >= 30000",
  });
  // The same turn on the emulator alone (its raw stream read to the end), /healthz probed the same way.
  const { sandboxId } = await api.get(`/_emulator/executions/${accepted.executionId}`);
  const direct = fetch(`${base}/_emulator/sandboxes/${sandboxId}/runs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sessionId: `replay-raw-${tag}`, message }),
  }).then((res) => {
    if (!res.ok) throw new Error(`replay: the direct run answered ${res.status}`);
    return readSse(res, () => false);
  });
  const rawStall = await longestHealthzWait(base, direct);
  await direct;
  results.replay_stall = { gateway: gatewayStall, emulatorAlone: rawStall, words: config.REPLAY_WORDS };
}

export function report(results) {
  const s = results.replay_stall;
  if (!s) return [];
  return [
    "",
    `replay: while the ${s.words}-word turn was taken in (unpaced), /healthz waited at most ${s.gateway.longestMs} ms (${s.gateway.probes} probes); while the emulator alone ran the same turn, ${s.emulatorAlone.longestMs} ms (${s.emulatorAlone.probes} probes)`,
  ];
}
