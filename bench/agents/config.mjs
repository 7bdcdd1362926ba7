// The `agents` benchmark (../agents.mjs): the section's settings (the variables above each, their defaults) and its progress lines.
import { num } from "../harness.mjs";

export const config = {
  AGENTS_SMALL_WORDS: num("AGENTS_SMALL_WORDS", 500),
  AGENTS_WORDS: num("AGENTS_WORDS", 5000),
  // The same pacing as the rows benchmark's turns (ms per frame), and the two rates of the rows-per-frame figure.
  AGENTS_FRAME_MS: num("AGENTS_FRAME_MS", num("ROWS_FRAME_MS", 2)),
  // The rows benchmark's paced turns (ROWS_RATE_WORDS). At 40 ms a frame 200 words take 8 s: a peer
  // turn much longer than 10 s arms the package's alarms, which wrangler dev 4.86 wakes without the
  // object's name, and the agent then fails ("could not determine its Durable Object name").
  RATE_WORDS: num("ROWS_RATE_WORDS", 200),
  CPU_WORDS: num("CPU_WORDS", 1000),
  CPU_FRAME_MS: num("CPU_FRAME_MS", 5),
  // 50, not 10: the CPU of the 1-viewer turn moves by ±0.1 s from run to run, ±11 µs over 9 extra
  // viewers × 1,000 deltas, ±2 µs over 49.
  CPU_VIEWERS: num("CPU_VIEWERS", 50),
  // The same at 300 viewers (issue 24, item 5's scale), both sides; 0 skips it.
  CPU_VIEWERS_MAX: num("CPU_VIEWERS_MAX", 300),
  RECONNECT_WORDS: num("RECONNECT_WORDS", 300),
  RECONNECT_FRAME_MS: num("RECONNECT_FRAME_MS", 20),
  CONCURRENT: num("CONCURRENT", 50),
  CONCURRENT_WORDS: num("CONCURRENT_WORDS", 200),
  // The emulator's default pace (EMULATOR_FRAME_DELAY_MS): 25 frames/s.
  CONCURRENT_FRAME_MS: num("CONCURRENT_FRAME_MS", 40),
  // Rounds of the 50 at once, each the raw runs then ours (new conversations each round): the CPU
  // figure is the sum over them, each round's ratio beside it (one round's CPU moves by about ±10%).
  CONCURRENT_ROUNDS: num("CONCURRENT_ROUNDS", 1),
  // AGENTS_PARTS=cpu,reconnect,…: a subset of the section's parts (rows, cpu, reconnect, concurrent,
  // long: the peer's AGENTS_WORDS turn); all of them by default.
  AGENTS_PARTS: String(process.env.AGENTS_PARTS ?? "rows,cpu,reconnect,concurrent,long").split(","),
  // Where the cpu and concurrent parts' emulator runs: `apart` (a server of its own, the gateway
  // pointed at it over HTTP as at a remote Sandbox: emulator-apart.mjs) or `same` (in the shared
  // dev server's runtime, beside the gateway).
  AGENTS_EMULATOR: emulatorSetting(process.env.AGENTS_EMULATOR),
};
/** AGENTS_EMULATOR: `apart` (the default) or `same`; anything else stops the run before it starts. */
function emulatorSetting(value = "apart") {
  if (value === "apart" || value === "same") return value;
  throw new Error(`AGENTS_EMULATOR=${value}: apart or same`);
}
/** A progress line on stderr (the section runs for minutes; the results print at the end). */
export const step = (what) => console.error(`bench: agents: ${what} (${new Date().toISOString().slice(11, 19)})`);
