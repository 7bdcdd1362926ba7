// Benchmark `replay`: a finished log of REPLAY_WORDS one-word deltas read from the start by one
// reader, in frames per second. Baseline: the raw stream of the same run.
import { num, sseTurnEnd, streamEnd, tag, throughput, timedRead } from "./harness.mjs";

export const config = { REPLAY_WORDS: num("REPLAY_WORDS", 10000) };

export async function replay({ base, api, auth, results }) {
  const cid = `replay-${tag}`;
  const accepted = await api.post(`/v1/conversations/${cid}/turns`, { turnId: "t1", message: `replay [words:${config.REPLAY_WORDS}] [paragraphs]` }, auth);
  await timedRead(`${base}/v1/conversations/${cid}/events`, auth, sseTurnEnd);
  const read = await timedRead(`${base}/v1/conversations/${cid}/events?after=0`, auth, sseTurnEnd);
  const raw = await timedRead(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, streamEnd);
  results.replay_log = throughput({ frames: read.frames, rate: read.frames / read.seconds, baseline: raw.frames / raw.seconds, target: "framesPerSecond >= 30000" });
}
