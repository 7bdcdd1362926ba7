// Benchmark `relay`: frames per second a live turn reaches 1 and 10 readers attached before it
// starts, from the first agent frame to the last (the slowest reader). Baseline: the same run's
// raw stream (the emulator's, through the same Worker) read live by as many readers.
//
// Like for like: the turn is held after its first step (`[hold]`, src/emulator/holds.ts) until
// every reader of both sides is attached and has what came before the hold, then released; each
// reader's clock starts at its first frame after the release. Both sides then read the answer as
// the emulator sends it (about 64 frames a task), not one side live and the other a replay.
import { num, sleep, sseTurnEnd, streamEnd, tag, throughput, timedRead } from "./harness.mjs";

export const config = { RELAY_WORDS: num("RELAY_WORDS", 3000) };

/** Until the emulator holds `executionId` at its hold (at most 60 s). */
async function untilHeld(api, executionId) {
  for (let i = 0; i < 600; i++) {
    if ((await api.get(`/_emulator/executions/${executionId}/hold`)).held) return;
    await sleep(100);
  }
  throw new Error(`relay: execution ${executionId} never reached its hold`);
}

export async function relay({ base, api, auth, results }) {
  // [paragraphs]: the answer in 25-word text parts, so frames keep the size real ones have
  // (one part whose text grows with the whole answer would make the raw frames quadratic).
  for (const readers of [1, 10]) {
    const cid = `relay-${readers}-${tag}`;
    let releasedAt = Number.POSITIVE_INFINITY;
    const from = () => releasedAt;
    const seen = [];
    const attached = () => {
      let had;
      const got = new Promise((resolve) => {
        had = resolve;
      });
      seen.push(got);
      return { from, onFrame: had };
    };
    const pending = Array.from({ length: readers }, () =>
      timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, sseTurnEnd, undefined, attached()),
    );
    await sleep(300); // readers attached before the run starts
    const accepted = await api.post(
      `/v1/conversations/${cid}/turns`,
      { turnId: "t1", message: `relay [words:${config.RELAY_WORDS}] [paragraphs] [hold]` },
      auth,
    );
    await untilHeld(api, accepted.executionId);
    // Baseline: the same frames passed through raw (the emulator's stream, through the same Worker)
    // to as many readers, attached while the run is held, as the gateway's readers are.
    const raws = Array.from({ length: readers }, () =>
      timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd, undefined, attached()),
    );
    await Promise.all(seen); // every reader has a frame: attached, the frames before the hold read
    await sleep(300);
    releasedAt = performance.now();
    await api.post(`/_emulator/executions/${accepted.executionId}/release`, {});
    const reads = await Promise.all(pending);
    const rate = Math.min(...reads.map((r) => r.frames / r.seconds));
    const baseline = Math.min(...(await Promise.all(raws)).map((r) => r.frames / r.seconds));
    results[`relay_${readers}_reader${readers > 1 ? "s" : ""}`] = throughput({
      frames: reads[0].frames,
      rate,
      baseline,
      target: "ratio >= 0.5",
    });
  }
}
