// The `terminal` section (issue 41): what the gateway's relay of a terminal costs beside the
// sandbox's own socket, same run, same emulator. The emulator runs on a server of its own and the
// gateway is pointed at it as at a remote Sandbox (emulator-apart.mjs), so both sides reach the same
// PTYs over the same kind of hop:
//   - keystroke echo: `TERMINAL_KEYS` (300) keys typed one at a time, each sent once the echo of the
//     one before came back and at least `TERMINAL_KEY_GAP_MS` (10 ms) after it (100 keys a second,
//     under the gateway's 200 input frames a second); the round trip of each (send → its echo's
//     frame), p50 / p99;
//   - output: `seq TERMINAL_SEQ` (20,000 lines, about 110 KB) from Enter to its last line, and the
//     frames it came in.
// Through the gateway: `POST /v1/environment/terminals` and its socket (the terminal object, the
// output log, the viewer's frames). Raw (the baseline): the emulator's own terminal socket
// (`/v1/sidecar-proxy/{id}/terminals/{cid}/ws`, the account key), read by the same client (Node's
// WebSocket). Ratios are gateway ÷ raw.
import { startApart } from "./emulator-apart.mjs";
import { ms, num, percentile, sleep } from "./harness.mjs";

const KEYS = num("TERMINAL_KEYS", 300);
const SEQ = num("TERMINAL_SEQ", 20_000);
const KEY_GAP_MS = num("TERMINAL_KEY_GAP_MS", 10);
const WAIT_MS = 30_000;

/** A socket whose output (decoded) is read in order; `gateway` frames are JSON, raw output is binary. */
function terminalSocket(url, { headers, gateway }) {
  const ws = new WebSocket(url, headers ? { headers } : undefined);
  ws.binaryType = "arraybuffer";
  const decoder = new TextDecoder();
  const s = { ws, text: "", frames: 0, waiters: new Set(), closed: null };
  const wake = () => {
    for (const w of [...s.waiters]) w();
  };
  ws.addEventListener("message", (e) => {
    let data = null;
    if (typeof e.data !== "string") data = decoder.decode(new Uint8Array(e.data), { stream: true });
    else {
      const frame = JSON.parse(e.data);
      if (frame.type === "output" && (gateway || typeof frame.data === "string")) data = frame.data;
    }
    if (data === null) return;
    s.text += data;
    s.frames++;
    wake();
  });
  ws.addEventListener("close", (e) => {
    s.closed = e.code;
    wake();
  });
  s.opened = new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", () => reject(new Error(`socket ${url.split("?")[0]} failed`)), { once: true });
  });
  /** Resolves once the output holds `length` characters (or more); rejects on a close or after WAIT_MS. */
  s.until = (predicate, what) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`terminal: timed out waiting for ${what}`)), WAIT_MS);
      const w = () => {
        if (predicate()) {
          clearTimeout(timer);
          s.waiters.delete(w);
          resolve();
        } else if (s.closed !== null) {
          clearTimeout(timer);
          s.waiters.delete(w);
          reject(new Error(`terminal: the socket closed (${s.closed}) waiting for ${what}`));
        }
      };
      s.waiters.add(w);
      w();
    });
  s.input = (data) => ws.send(JSON.stringify({ type: "input", data }));
  return s;
}

/** One side's figures: the keystroke round trips and the output run. */
async function measure(s) {
  await s.opened;
  await s.until(() => s.text.includes("$ "), "the prompt");
  const trips = [];
  for (let i = 0; i < KEYS; i++) {
    const before = s.text.length;
    const t = performance.now();
    s.input("x");
    await s.until(() => s.text.length > before, `the echo of key ${i + 1}`);
    const trip = performance.now() - t;
    trips.push(trip);
    if (trip < KEY_GAP_MS) await sleep(KEY_GAP_MS - trip);
  }
  s.input("\x03");
  await s.until(() => s.text.endsWith("$ "), "the prompt after ^C");
  const framesBefore = s.frames;
  const from = s.text.length;
  const t = performance.now();
  s.input(`seq ${SEQ}\r`);
  await s.until(() => s.text.indexOf(`\r\n${SEQ}\r\n`, from) !== -1, `seq ${SEQ}'s last line`);
  const outputMs = performance.now() - t;
  s.ws.close();
  return {
    keys: KEYS,
    echo_p50_ms: ms(percentile(trips, 0.5)),
    echo_p99_ms: ms(percentile(trips, 0.99)),
    output_ms: ms(outputMs),
    output_frames: s.frames - framesBefore,
  };
}

export async function terminal({ results, problems }) {
  const ctx = await startApart({ results, problems });
  try {
    const { environment } = await ctx.api.get("/v1/environment", ctx.auth);
    const sandboxId = environment.environmentId;
    const opened = await ctx.api.post("/v1/environment/terminals", {}, ctx.auth);
    const gateway = await measure(terminalSocket(`${ctx.base.replace(/^http/, "ws")}${opened.url}`, { gateway: true }));
    const rawUrl = `${ctx.emulator.base.replace(/^http/, "ws")}/v1/sidecar-proxy/${sandboxId}/terminals/bench-raw/ws?cols=80&rows=24`;
    const raw = await measure(
      terminalSocket(rawUrl, { headers: { authorization: "Bearer bench-raw-reader" }, gateway: false }),
    );
    const ratio = (a, b) => (a === null || b === null || b === 0 ? null : Number((a / b).toFixed(2)));
    results.terminal = {
      gateway,
      raw,
      echo_p50_ratio: ratio(gateway.echo_p50_ms, raw.echo_p50_ms),
      echo_p99_ratio: ratio(gateway.echo_p99_ms, raw.echo_p99_ms),
      output_ratio: ratio(gateway.output_ms, raw.output_ms),
      emulator_via: ctx.emulator.via,
    };
    console.error(
      `terminal: echo p50 ${gateway.echo_p50_ms} ms (raw ${raw.echo_p50_ms}: ×${results.terminal.echo_p50_ratio}), ` +
        `p99 ${gateway.echo_p99_ms} ms (raw ${raw.echo_p99_ms}: ×${results.terminal.echo_p99_ratio}); ` +
        `seq ${SEQ} in ${gateway.output_ms} ms, ${gateway.output_frames} frames (raw ${raw.output_ms} ms, ${raw.output_frames} frames: ×${results.terminal.output_ratio})`,
    );
  } finally {
    ctx.stop();
  }
}
