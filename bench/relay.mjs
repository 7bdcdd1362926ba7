// Benchmark `relay`: frames per second a live turn reaches 1 and 10 readers attached before it
// starts, from the first agent frame to the last (the slowest reader). Baseline: the same run's
// raw stream (the emulator's, through the same Worker) read by as many readers.
import { num, sleep, sseTurnEnd, streamEnd, tag, throughput, timedRead } from "./harness.mjs";

export const config = { RELAY_WORDS: num("RELAY_WORDS", 3000) };

export async function relay({ base, api, auth, results }) {
  // [paragraphs]: the answer in 25-word text parts, so frames keep the size real ones have
  // (one part whose text grows with the whole answer would make the raw frames quadratic).
  for (const readers of [1, 10]) {
    const cid = `relay-${readers}-${tag}`;
    const pending = Array.from({ length: readers }, () =>
      timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, sseTurnEnd),
    );
    await sleep(300); // readers attached before the run starts
    const accepted = await api.post(
      `/v1/conversations/${cid}/turns`,
      { turnId: "t1", message: `relay [words:${config.RELAY_WORDS}] [paragraphs]` },
      auth,
    );
    const reads = await Promise.all(pending);
    const rate = Math.min(...reads.map((r) => r.frames / r.seconds));
    // Baseline: the same frames passed through raw (the emulator's stream, through the same Worker) to as many readers.
    const raws = await Promise.all(
      Array.from({ length: readers }, () =>
        timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd),
      ),
    );
    const baseline = Math.min(...raws.map((r) => r.frames / r.seconds));
    results[`relay_${readers}_reader${readers > 1 ? "s" : ""}`] = throughput({
      frames: reads[0].frames,
      rate,
      baseline,
      target: "ratio >= 0.5",
    });
  }
}
