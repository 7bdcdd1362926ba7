// Benchmark `agents`: the gateway beside a minimal AIChatAgent (bench/agents-peer/, the
// @cloudflare/ai-chat package on `agents`, its own wrangler dev on a port of its own) on the same
// workloads, in the same run: N one-word text deltas at a given rate. For the peer: rows written
// per delta and bytes its SQLite keeps (while the turn runs and after it), bytes on its WebSocket
// per delta. For both: workerd CPU per delta per extra viewer (1 against CPU_VIEWERS viewers, and
// against CPU_VIEWERS_MAX),
// a viewer reconnecting mid-stream (lost and duplicated deltas, time to the first new one), and
// CONCURRENT conversations finishing a turn at once against one alone. The gateway's rows and
// bytes are the `rows` benchmark's (the summary puts them side by side). The CPU parts (cpu,
// concurrent) run by default with the emulator on a server of its own, the gateway's dev server
// pointed at it over HTTP (AGENTS_EMULATOR, emulator-apart.mjs): the gateway's runtime runs the
// gateway alone, as a deployment's does, and the emulator's CPU is read beside it.
//
// The peer is spoken to as its own client does (agents' WebSocket chat transport): one WebSocket
// per viewer to /agents/bench-chat/<name>; `cf_agent_use_chat_request` sends a turn, every open
// socket of that agent gets each chunk as a `cf_agent_use_chat_response` message (its `seq` the
// chunk's index), and a socket that reconnects sends `cf_agent_stream_resume_request`, gets
// `cf_agent_stream_resuming`, answers `cf_agent_stream_resume_ack` and is sent the stream's
// buffered chunks (`replay: true`) from its first, then the live ones.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeAfter } from "../public/wire/frames.js";
import { readSse } from "../scripts/devserver.mjs";
import { startApart, startWranglerDev } from "./emulator-apart.mjs";
import {
  deltaOf,
  follow,
  isTurnEnd,
  ms,
  num,
  percentile,
  sleep,
  tag,
  turnEndOf,
  untilInterrupted,
  utf8,
  viewer,
} from "./harness.mjs";
import { cpuSeconds, runtimeBase } from "./workerd.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

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
  // AGENTS_PARTS=cpu,reconnect,…: a subset of the section's parts (rows, cpu, reconnect, concurrent,
  // long: the peer's AGENTS_WORDS turn); all of them by default.
  AGENTS_PARTS: String(process.env.AGENTS_PARTS ?? "rows,cpu,reconnect,concurrent,long").split(","),
  // Where the cpu and concurrent parts' emulator runs: `apart` (a server of its own, the gateway
  // pointed at it over HTTP as at a remote Sandbox: emulator-apart.mjs) or `same` (in the shared
  // dev server's runtime, beside the gateway).
  AGENTS_EMULATOR: emulatorSetting(process.env.AGENTS_EMULATOR),
};
const C = config;
/** AGENTS_EMULATOR: `apart` (the default) or `same`; anything else stops the run before it starts. */
function emulatorSetting(value = "apart") {
  if (value === "apart" || value === "same") return value;
  throw new Error(`AGENTS_EMULATOR=${value}: apart or same`);
}
/** A progress line on stderr (the section runs for minutes; the results print at the end). */
const step = (what) => console.error(`bench: agents: ${what} (${new Date().toISOString().slice(11, 19)})`);

// ------------------------------------------------------------------ the peer's server and client

/**
 * `wrangler dev` of bench/agents-peer on `AGENTS_PEER_PORT` (else a bench port or a free one),
 * throwaway state, its own process group.
 */
export const startPeer = () =>
  startWranglerDev(
    join(root, "bench", "agents-peer", "wrangler.toml"),
    "the agents peer",
    process.env.AGENTS_PEER_PORT ? Number(process.env.AGENTS_PEER_PORT) : undefined,
  );

/** One WebSocket to agent `name`, as the agents chat transport opens it; every message kept with its arrival time and size. */
export function agentSocket(base, name) {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/agents/bench-chat/${name}`);
  const s = { ws, messages: [], waiters: [], closed: false };
  const check = () => {
    s.waiters = s.waiters.filter((w) => {
      for (; w.from < s.messages.length; w.from++) {
        if (w.pred(s.messages[w.from])) return (w.resolve(s.messages[w.from]), false);
      }
      return true;
    });
  };
  ws.onmessage = (e) => {
    const t = performance.now();
    const text = String(e.data);
    const msg = JSON.parse(text);
    let chunk = null;
    if (msg.type === "cf_agent_use_chat_response" && msg.body) chunk = JSON.parse(msg.body);
    s.messages.push({ t, bytes: utf8(text), msg, chunk, delta: chunk?.type === "text-delta" ? chunk.delta : null });
    check();
  };
  s.opened = new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error(`agents peer: the WebSocket to ${name} failed`));
  });
  s.opened.catch(() => {});
  ws.onclose = () => (s.closed = true);
  s.send = (obj) => ws.send(JSON.stringify(obj));
  s.waitFor = (pred, timeoutMs = 120_000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`agents peer ${name}: no awaited message within ${timeoutMs} ms`)),
        timeoutMs,
      );
      s.waiters.push({ pred, from: 0, resolve: (x) => (clearTimeout(timer), resolve(x)) });
      check();
    });
  s.close = () => ws.close();
  return s;
}
/**
 * An agentSocket, open: its handshake tried once more when it failed (a loaded machine's wrangler dev
 * answered one of 50 at once with a 503; nothing reached the agent), else the failure.
 */
export async function openAgentSocket(base, name) {
  const s = agentSocket(base, name);
  try {
    await s.opened;
    return s;
  } catch {
    const again = agentSocket(base, name);
    await again.opened;
    return again;
  }
}
export const isDone = (id) => (m) => m.msg.type === "cf_agent_use_chat_response" && m.msg.id === id && m.msg.done;

/** Sends a turn as the chat transport does: the conversation's messages, the new user message last. */
export function sendTurn(s, requestId, text) {
  const messages = [{ id: `u-${requestId}`, role: "user", parts: [{ type: "text", text }] }];
  s.send({
    type: "cf_agent_use_chat_request",
    id: requestId,
    init: { method: "POST", body: JSON.stringify({ messages, trigger: "submit-message" }) },
  });
}

async function peerStats(base, name) {
  const res = await fetch(`${base}/agents/bench-chat/${name}/bench-stats`);
  if (!res.ok) throw new Error(`agents peer stats ${name}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** Stats once the agent's writes have settled (two reads in a row agree). */
async function settledPeerStats(base, name) {
  let last = await peerStats(base, name);
  for (let i = 0; i < 20; i++) {
    await sleep(250);
    const next = await peerStats(base, name);
    if (next.rowsWritten === last.rowsWritten && next.databaseSize === last.databaseSize) return next;
    last = next;
  }
  return last;
}

// ------------------------------------------------------------------ peer: rows and bytes

/** One turn of `words` deltas at `frameMs` on a fresh agent: rows written, bytes kept (mid-turn and after), bytes per delta on its WebSocket. */
async function peerRowsTurn(peer, name, words, frameMs) {
  const s = agentSocket(peer.base, name);
  await s.opened;
  await s.waitFor((m) => m.msg.type === "cf_agent_identity");
  const start = await settledPeerStats(peer.base, name);
  const t0 = performance.now();
  sendTurn(s, "r1", `rows [words:${words}] [ms:${frameMs}]`);
  await s.waitFor((m) => m.delta === `w${Math.ceil(words / 2)} `);
  const mid = await peerStats(peer.base, name);
  const midDeltas = s.messages.filter((m) => m.delta !== null).length;
  await s.waitFor(isDone("r1"));
  const seconds = (performance.now() - t0) / 1000;
  const stop = await settledPeerStats(peer.base, name);
  s.close();
  const deltas = s.messages.filter((m) => m.delta !== null);
  const responses = s.messages.filter((m) => m.msg.type === "cf_agent_use_chat_response");
  const answerBytes = deltas.reduce((n, m) => n + utf8(m.delta), 0);
  const rows = stop.rowsWritten - start.rowsWritten;
  return {
    words,
    frameMs,
    sameInstance: start.instance === stop.instance,
    seconds: Number(seconds.toFixed(1)),
    deltas: deltas.length,
    chunks: responses.length,
    rowsWritten: rows,
    rowsPerDelta: Number((rows / deltas.length).toFixed(3)),
    answerBytes,
    midTurnBytes: mid.databaseSize - start.databaseSize,
    midTurnBytesPerDelta: Number(((mid.databaseSize - start.databaseSize) / midDeltas).toFixed(1)),
    keptBytes: stop.databaseSize - start.databaseSize,
    keptPerAnswerByte: Number(((stop.databaseSize - start.databaseSize) / answerBytes).toFixed(2)),
    // databaseSize counts free pages too: what the turn left in use, where the free pages could be read.
    keptInUseBytes:
      stop.freeBytes === null || start.freeBytes === null
        ? null
        : stop.databaseSize - stop.freeBytes - (start.databaseSize - start.freeBytes),
    tablesAfter: Object.fromEntries(Object.entries(stop.tables).filter(([, n]) => n)),
    wireBytesPerDelta: Number((deltas.reduce((n, m) => n + m.bytes, 0) / deltas.length).toFixed(1)),
    wireBytes: responses.reduce((n, m) => n + m.bytes, 0),
  };
}

// ------------------------------------------------------------------ CPU per delta per extra viewer

const s2 = (x) => Number(x.toFixed(2));

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
async function gatewayCpuTurn({ base, api, auth, server, emulator }, K) {
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
async function rawCpuTurn({ api, auth, server, emulator }) {
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
async function peerCpuTurn(peer, K) {
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

const perExtraViewer = (one, many, K) => ({
  one,
  many,
  viewers: K,
  // The runtime's (what a deployment runs) and, with wrangler dev's proxy, the whole dev server's.
  microsecondsPerDeltaPerExtraViewer: Math.round(
    ((many.runtimeSeconds - one.runtimeSeconds) / (many.frames * (K - 1))) * 1e6,
  ),
  withProxyMicroseconds: Math.round(((many.totalSeconds - one.totalSeconds) / (many.frames * (K - 1))) * 1e6),
});

// ------------------------------------------------------------------ reconnect mid-stream

/**
 * The gateway: a viewer follows a turn of RECONNECT_WORDS deltas, drops its stream at half of
 * them and reopens it with Last-Event-ID. Lost and duplicated: against the raw stream's deltas.
 */
async function gatewayReconnect({ base, api, auth }) {
  const cid = `reconnect-${tag}`;
  const got = [];
  let lastSeq = 0;
  let dropAt = null;
  const half = Math.ceil(C.RECONNECT_WORDS / 2);
  // Frames decoded as the page decodes them: a lean delta frame (`message.part.delta`, {d, t})
  // continues the frame before it (public/wire/frames.js), so each leg keeps its last envelope.
  let previous = null;
  const envelopeOf = (f) => (previous = decodeAfter(previous, f) ?? previous);
  const first = follow(`${base}/v1/conversations/${cid}/events?after=0`, auth, (f, t) => {
    const seq = Number(f.id);
    got.push({ seq, t, delta: deltaOf(envelopeOf(f)?.data), leg: 1 });
    lastSeq = seq;
    if (got.filter((g) => g.delta !== null).length >= half) return ((dropAt = t), true);
    return false;
  });
  await first.opened;
  await sleep(300);
  const accepted = await api.post(
    `/v1/conversations/${cid}/turns`,
    { turnId: "t1", message: `reconnect [words:${C.RECONNECT_WORDS}]` },
    auth,
  );
  // The raw stream of the same execution, opened at once: the deltas every leg must hold, and when
  // the agent's first new delta came out of it (its first chunk replays what came before it opened).
  const raw = [];
  const rawRead = follow(`${base}/_emulator/executions/${accepted.executionId}/stream`, {}, (f, t, _bytes, chunk) => {
    const delta = deltaOf(JSON.parse(f.data));
    if (delta !== null) raw.push({ delta, t, chunk });
    return false;
  }).done;
  await first.done;
  const reopened = performance.now();
  let firstNew = null;
  let headersAt = null;
  previous = null;
  const second = follow(
    `${base}/v1/conversations/${cid}/events`,
    { ...auth, "last-event-id": String(lastSeq) },
    (f, t) => {
      if (f.id === undefined) return false;
      const delta = deltaOf(envelopeOf(f)?.data);
      got.push({ seq: Number(f.id), t, delta, leg: 2 });
      if (firstNew === null && delta !== null) firstNew = t;
      return isTurnEnd(f.event);
    },
  );
  await second.opened.then(() => (headersAt = performance.now()));
  await second.done;
  await rawRead;
  const rawDeltas = raw.map((r) => r.delta);
  const seqs = got.map((g) => g.seq);
  const duplicated = seqs.length - new Set(seqs).size;
  const deltas = got.filter((g) => g.delta !== null);
  const lost = Math.max(0, rawDeltas.length - new Set(deltas.map((g) => g.seq)).size);
  const inOrder = deltas.length === rawDeltas.length && deltas.every((g, k) => g.delta === rawDeltas[k]);
  // The first new delta is the raw stream's delta number `half` (from 0): when the agent sent it (its
  // arrival on the raw stream), unknown when it came in the raw stream's first chunk.
  const agent = raw[half] && raw[half].chunk > 0 ? raw[half].t : null;
  return {
    deltas: rawDeltas.length,
    droppedAfter: half,
    lost,
    duplicated,
    exact: inOrder,
    reconnectMs: ms(firstNew === null ? null : firstNew - reopened),
    dropToReopenMs: ms(reopened - dropAt),
    // Where the time went: the stream's response headers; how long after the reconnect the agent
    // sent that delta (0: before it), and how long after that it reached the viewer.
    headersMs: ms(headersAt === null ? null : headersAt - reopened),
    agentSentAfterMs: ms(agent === null ? null : Math.max(0, agent - reopened)),
    afterAgentMs: ms(agent === null || firstNew === null ? null : firstNew - Math.max(agent, reopened)),
  };
}

/**
 * The peer: a second socket follows a turn of RECONNECT_WORDS deltas, closes at half of them; a
 * new socket resumes as the transport does (resume request, ack). Lost and duplicated by `seq`.
 */
async function peerReconnect(peer) {
  const name = `reconnect-${tag}`;
  const sender = agentSocket(peer.base, name);
  const watcher = agentSocket(peer.base, name);
  await Promise.all([sender.opened, watcher.opened]);
  await Promise.all([sender, watcher].map((s) => s.waitFor((m) => m.msg.type === "cf_agent_identity")));
  const half = Math.ceil(C.RECONNECT_WORDS / 2);
  sendTurn(sender, "rc1", `reconnect [words:${C.RECONNECT_WORDS}] [ms:${C.RECONNECT_FRAME_MS}]`);
  await watcher.waitFor((m) => m.delta === `w${half} `);
  watcher.close();
  const seenBefore = watcher.messages.filter(
    (m) => m.msg.type === "cf_agent_use_chat_response" && m.msg.seq !== undefined,
  );
  const maxBefore = Math.max(...seenBefore.map((m) => m.msg.seq));
  const reopened = performance.now();
  const again = agentSocket(peer.base, name);
  await again.opened;
  again.send({ type: "cf_agent_stream_resume_request" });
  const resuming = await again.waitFor((m) => m.msg.type === "cf_agent_stream_resuming");
  again.send({ type: "cf_agent_stream_resume_ack", id: resuming.msg.id });
  await again.waitFor(isDone("rc1"));
  await sender.waitFor(isDone("rc1"));
  const after = again.messages.filter((m) => m.msg.type === "cf_agent_use_chat_response" && m.msg.seq !== undefined);
  const firstNew = after.find((m) => m.msg.seq > maxBefore);
  const before = new Set(seenBefore.map((m) => m.msg.seq));
  const all = [...seenBefore, ...after];
  const seqs = new Set(all.map((m) => m.msg.seq));
  const expected = new Set(sender.messages.filter((m) => m.msg.seq !== undefined).map((m) => m.msg.seq));
  const deltaSeqs = new Set(sender.messages.filter((m) => m.delta !== null).map((m) => m.msg.seq));
  sender.close();
  again.close();
  return {
    deltas: deltaSeqs.size,
    droppedAfter: half,
    lost: [...expected].filter((q) => !seqs.has(q)).length,
    duplicated: after.filter((m) => before.has(m.msg.seq) && deltaSeqs.has(m.msg.seq)).length,
    duplicatedChunks: after.filter((m) => before.has(m.msg.seq)).length,
    replayed: after.filter((m) => m.msg.replay).length,
    reconnectMs: ms(firstNew ? firstNew.t - reopened : null),
  };
}

// ------------------------------------------------------------------ CONCURRENT conversations against one

/** The gateway: `n` new conversations, a turn each at once, one viewer each: seconds until the last turn's end. */
async function gatewayConcurrent({ base, api, auth }, n, label) {
  const cids = Array.from({ length: n }, (_, i) => `conc-${label}-${i}-${tag}`);
  const viewers = cids.map((cid) => viewer(base, cid, auth, { stopAt: (f) => isTurnEnd(f.type) }));
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
async function rawConcurrent({ emulator }, sandboxId, n, label) {
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
async function peerConcurrent(peer, n, label) {
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
const serversCpu = ({ server, emulator }) => ({
  gateway: cpuSeconds(server.pid),
  emulator: emulator.apart ? cpuSeconds(emulator.pid) : null,
});
/**
 * CPU between two serversCpu reads: `runtime` and `proxy` the gateway's server's workerd (its
 * runtime: the Worker and its objects, and the emulator when it runs there; its proxy: wrangler
 * dev's, in front), `emulator` the emulator's own server's when apart (its runtime and proxy).
 */
const cpuSpent = (a, b) => ({
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
/**
 * Ours over 50 ÷ the raw runs over 50, each the runtimes' CPU (no proxy). `whole`: every runtime
 * that served the work (the gateway's and, apart, the emulator's: ours with the emulator's run of
 * our turns, the raw runs' the emulator's run of theirs), as measured with the emulator in the
 * gateway's runtime. Apart also `gateway`: the gateway's runtime alone over ours ÷ the emulator's
 * runtime alone over the raw runs (the one runtime that did each side's own work).
 */
function cpuPerRaw(ours, raw) {
  const runtimes = (c) => c.runtime + (c.emulator?.runtime ?? 0);
  const r = (a, b) => (b > 0 ? Number((a / b).toFixed(2)) : null);
  return {
    whole: r(runtimes(ours), runtimes(raw)),
    ...(ours.emulator ? { gateway: r(ours.runtime, raw.emulator.runtime) } : {}),
  };
}

const ratioOf = (one, many) => ({ one, many, ratio: Number((many.seconds / one.seconds).toFixed(2)) });

// ------------------------------------------------------------------ the section

export async function agents(ctx) {
  const { api, results, problems, server } = ctx;
  if (typeof WebSocket === "undefined")
    throw new Error(
      "agents: no WebSocket in this Node (Node 20 needs --experimental-websocket; npm run bench passes it)",
    );
  const peer = await startPeer();
  const done = untilInterrupted(() => peer.stop());
  if (!peer.inspectorQuiet)
    problems.push("agents: the peer's network reports to its inspector proxy could not be turned off");
  const out = { config: C, peer: {}, gateway: {} };
  results.agents = out;
  // The cpu and concurrent parts' gateway: the shared dev server with the emulator in its runtime
  // (`same`), or, apart, a gateway of the section's own against the emulator's own server, started
  // once for both parts (emulator-apart.mjs).
  let apart = null;
  const cpuContext = async () => {
    if (C.AGENTS_EMULATOR === "same")
      return { ...ctx, emulator: { base: ctx.base, api, pid: server.pid, apart: false } };
    if (!apart) {
      step("the emulator's own server and a gateway pointed at it");
      apart = await startApart(ctx);
      out.emulatorVia = apart.emulator.via;
    }
    return { ...apart, emulator: { ...apart.emulator, apart: true } };
  };
  // Each part runs whatever happened to the one before it; a part that threw fails the section at
  // its end, with every part's figures that were measured kept.
  const failed = [];
  const part = async (name, fn) => {
    if (!C.AGENTS_PARTS.includes(name)) return;
    try {
      await fn();
    } catch (err) {
      failed.push(`${name}: ${err?.message ?? err}`);
      console.error(`bench: agents: ${name} failed: ${err?.stack ?? err}`);
      // A part that failed may have left the emulator slowed down.
      await api.faults({ frameDelayMs: 0 }).catch(() => {});
      await apart?.emulator.api.faults({ frameDelayMs: 0 }).catch(() => {});
    }
  };
  try {
    out.peer.rows = [];
    await part("rows", async () => {
      // Rows and bytes: the rows benchmark's sizes and pace, and the two rates of rows per frame.
      // (The long AGENTS_WORDS turn comes last: see RATE_WORDS.)
      for (const [words, frameMs] of [
        [C.AGENTS_SMALL_WORDS, C.AGENTS_FRAME_MS],
        [C.RATE_WORDS, C.CONCURRENT_FRAME_MS],
        [C.RATE_WORDS, 20],
      ]) {
        out.peer.rows.push(await peerRowsTurn(peer, `rows-${words}-${frameMs}-${tag}`, words, frameMs));
      }
    });

    await part("cpu", async () => {
      const cx = await cpuContext();
      out.emulator = C.AGENTS_EMULATOR;
      step("CPU per extra viewer");
      // CPU per delta per extra viewer, each on its own workerd, 1 then CPU_VIEWERS viewers.
      await cx.emulator.api.faults({ frameDelayMs: C.CPU_FRAME_MS });
      const most = C.CPU_VIEWERS_MAX > C.CPU_VIEWERS ? C.CPU_VIEWERS_MAX : 0;
      try {
        const one = await gatewayCpuTurn(cx, 1);
        out.gateway.cpuRaw = await rawCpuTurn(cx);
        out.gateway.cpu = perExtraViewer(one, await gatewayCpuTurn(cx, C.CPU_VIEWERS), C.CPU_VIEWERS);
        if (most) out.gateway.cpuMost = perExtraViewer(one, await gatewayCpuTurn(cx, most), most);
      } finally {
        await cx.emulator.api.faults({ frameDelayMs: 0 });
      }
      const peerOne = await peerCpuTurn(peer, 1);
      out.peer.cpu = perExtraViewer(peerOne, await peerCpuTurn(peer, C.CPU_VIEWERS), C.CPU_VIEWERS);
      if (most) out.peer.cpuMost = perExtraViewer(peerOne, await peerCpuTurn(peer, most), most);
    });

    await part("reconnect", async () => {
      step("reconnect");
      // A viewer reconnecting mid-stream.
      await api.faults({ frameDelayMs: C.RECONNECT_FRAME_MS });
      try {
        out.gateway.reconnect = await gatewayReconnect(ctx);
      } finally {
        await api.faults({ frameDelayMs: 0 });
      }
      out.peer.reconnect = await peerReconnect(peer);
      if (out.gateway.reconnect.lost || out.gateway.reconnect.duplicated || !out.gateway.reconnect.exact)
        problems.push(
          `agents: the gateway's reconnecting viewer lost ${out.gateway.reconnect.lost} and got ${out.gateway.reconnect.duplicated} twice (exact: ${out.gateway.reconnect.exact})`,
        );
    });

    await part("concurrent", async () => {
      const cx = await cpuContext();
      out.emulator = C.AGENTS_EMULATOR;
      step(`${C.CONCURRENT} at once`);
      // CONCURRENT conversations at once against one, at the emulator's default pace.
      await cx.emulator.api.faults({ frameDelayMs: C.CONCURRENT_FRAME_MS });
      try {
        const one = await gatewayConcurrent(cx, 1, "one");
        const sandboxId = (await cx.emulator.api.get(`/_emulator/executions/${one.executions[0]}`)).sandboxId;
        // The raw baseline first: the servers' CPU over each side's 50 (workerd, /proc) beside its time.
        const rawOne = await rawConcurrent(cx, sandboxId, 1, "one");
        const cpu0 = serversCpu(cx);
        const rawMany = await rawConcurrent(cx, sandboxId, C.CONCURRENT, "many");
        const cpu1 = serversCpu(cx);
        const many = await gatewayConcurrent(cx, C.CONCURRENT, "many");
        const cpu2 = serversCpu(cx);
        delete one.executions;
        delete many.executions;
        out.gateway.concurrent = ratioOf(one, many);
        out.gateway.concurrent.cpuSeconds = cpuSpent(cpu1, cpu2);
        out.raw = { concurrent: { ...ratioOf(rawOne, rawMany), cpuSeconds: cpuSpent(cpu0, cpu1) } };
        // Ours at once ÷ the raw streams at once: what the session object, the user object and the relay add.
        out.gateway.concurrent.perRaw = Number((many.seconds / rawMany.seconds).toFixed(2));
        out.gateway.concurrent.cpuPerRaw = cpuPerRaw(out.gateway.concurrent.cpuSeconds, out.raw.concurrent.cpuSeconds);
      } finally {
        await cx.emulator.api.faults({ frameDelayMs: 0 });
      }
      step(`the peer's ${C.CONCURRENT} at once`);
      out.peer.concurrent = ratioOf(
        await peerConcurrent(peer, 1, "one"),
        await peerConcurrent(peer, C.CONCURRENT, "many"),
      );
    });

    await part("long", async () => {
      step(`the peer's ${C.AGENTS_WORDS}-word turn`);
      try {
        out.peer.rows.push(
          await peerRowsTurn(
            peer,
            `rows-${C.AGENTS_WORDS}-${C.AGENTS_FRAME_MS}-${tag}`,
            C.AGENTS_WORDS,
            C.AGENTS_FRAME_MS,
          ),
        );
      } catch (err) {
        problems.push(`agents peer ${C.AGENTS_WORDS}-word turn: ${err.message}`);
      }
    });
    for (const t of out.peer.rows)
      if (!t.sameInstance)
        problems.push(
          `agents peer rows ${t.words} words: the agent changed instance during the turn; its rows are not this turn's`,
        );
    if (failed.length) throw new Error(`agents: ${failed.length} part(s) failed: ${failed.join("; ")}`);
  } catch (err) {
    out.peerOutput = peer.output().slice(-4000);
    if (apart) out.apartOutput = apart.output().slice(-4000);
    throw err;
  } finally {
    apart?.stop();
    peer.stop();
    done();
  }
}

/** A cpuSpent figure: the gateway's server's runtime (+ proxy), and the emulator's own server's when apart. */
const cpuText = (c) =>
  `${c.runtime} s (+ proxy ${c.proxy} s)${c.emulator ? `, the emulator's server ${c.emulator.runtime} s (+ proxy ${c.emulator.proxy} s)` : ""}`;

export function report(results) {
  const a = results.agents;
  if (!a) return [];
  const out = [
    "",
    "agents peer    words  ms/frame  deltas  rows  rows/delta  mid-turn B/delta  kept B  kept/answer  wire B/delta",
  ];
  for (const t of a.peer.rows ?? []) {
    out.push(
      `${"".padEnd(13)} ${String(t.words).padStart(6)} ${String(t.frameMs).padStart(9)} ${String(t.deltas).padStart(7)} ${String(t.rowsWritten).padStart(5)} ${String(t.rowsPerDelta).padStart(11)} ${String(t.midTurnBytesPerDelta).padStart(17)} ${String(t.keptBytes).padStart(7)} ${String(t.keptPerAnswerByte).padStart(12)} ${String(t.wireBytesPerDelta).padStart(13)}`,
    );
  }
  const apart = a.emulator === "apart";
  if (a.emulator)
    out.push(
      `the cpu and concurrent parts' emulator: ${apart ? `apart (a server of its own, reached at its ${a.emulatorVia === "runtime" ? "runtime's own address" : "wrangler dev's proxy"})` : "in the gateway's runtime"}`,
    );
  for (const side of ["gateway", "peer"]) {
    const s = a[side];
    if (s.cpuRaw && s.cpu && !apart)
      out.push(
        `${side}: the 1-viewer turn's raw baseline (the emulator alone, one reader): runtime CPU ${s.cpuRaw.runtimeSeconds} s (${s.cpuRaw.frames} frames); the turn less it ${Number((s.cpu.one.runtimeSeconds - s.cpuRaw.runtimeSeconds).toFixed(2))} s`,
      );
    if (s.cpuRaw?.emulator && s.cpu?.one.emulator)
      out.push(
        `${side}: the 1-viewer turn: the gateway's runtime ${s.cpu.one.runtimeSeconds} s (÷ the peer's ${a.peer.cpu ? Number((s.cpu.one.runtimeSeconds / a.peer.cpu.one.runtimeSeconds).toFixed(2)) : "?"}); the emulator's own server for it ${s.cpu.one.emulator.runtimeSeconds} s (runtime; ${s.cpu.one.emulator.totalSeconds} s with its proxy); the same turn as a raw run (the emulator alone, one reader): the emulator's runtime ${s.cpuRaw.emulator.runtimeSeconds} s, the gateway's ${s.cpuRaw.runtimeSeconds} s`,
      );
    for (const cpu of [s.cpu, s.cpuMost]) {
      const reads = cpu?.many.chunksPerViewer
        ? `; a viewer's events came in ${cpu.many.chunksPerViewer.min}–${cpu.many.chunksPerViewer.max} reads (${cpu.one.chunksPerViewer.min} at 1 viewer)`
        : "";
      const late = cpu?.many.addedMs
        ? `; added p50 / p99 ${cpu.many.addedMs.p50} / ${cpu.many.addedMs.p99} ms (${cpu.one.addedMs?.p50 ?? "?"} / ${cpu.one.addedMs?.p99 ?? "?"} at 1)`
        : "";
      if (cpu)
        out.push(
          `${side}: runtime CPU ${cpu.one.runtimeSeconds} s at 1 viewer, ${cpu.many.runtimeSeconds} s at ${cpu.viewers} (${cpu.many.frames} deltas): ${cpu.microsecondsPerDeltaPerExtraViewer} µs per delta per extra viewer (${cpu.withProxyMicroseconds} µs with wrangler's proxy)${reads}${late}`,
        );
    }
    if (s.reconnect)
      out.push(
        `${side}: reconnect at delta ${s.reconnect.droppedAfter} of ${s.reconnect.deltas}: first new delta after ${s.reconnect.reconnectMs} ms, ${s.reconnect.lost} lost, ${s.reconnect.duplicated} deltas twice${s.reconnect.headersMs === undefined ? "" : ` (headers after ${s.reconnect.headersMs} ms; the agent sent that delta ${s.reconnect.agentSentAfterMs ?? "?"} ms after the reconnect, it reached the viewer ${s.reconnect.afterAgentMs ?? "?"} ms after that)`}`,
      );
    if (s.concurrent)
      out.push(
        `${side}: ${s.concurrent.many.conversations} conversations ${s.concurrent.many.seconds} s, one ${s.concurrent.one.seconds} s: ratio ${s.concurrent.ratio}${s.concurrent.cpuSeconds ? `; workerd CPU over the ${s.concurrent.many.conversations}: ${cpuText(s.concurrent.cpuSeconds)}` : ""}${s.concurrent.perRaw ? `; ÷ the raw runs at once ${s.concurrent.perRaw}` : ""}${s.concurrent.cpuPerRaw ? `; CPU ÷ the raw runs' ${s.concurrent.cpuPerRaw.gateway ? `${s.concurrent.cpuPerRaw.gateway} (the gateway's runtime ÷ the emulator's), ` : ""}${s.concurrent.cpuPerRaw.whole} (every runtime)` : ""}`,
      );
  }
  const rc = a.raw?.concurrent;
  if (rc)
    out.push(
      `raw (emulator runs, no session object): ${rc.many.conversations} runs at once ${rc.many.seconds} s, one ${rc.one.seconds} s: ratio ${rc.ratio}; workerd CPU over the ${rc.many.conversations}: ${cpuText(rc.cpuSeconds)}`,
    );
  return out;
}
