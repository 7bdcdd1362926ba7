// The `agents` benchmark (../agents.mjs): the agents peer's server and client (its WebSocket chat protocol), and the peer's rows and bytes.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startWranglerDev } from "../emulator-apart.mjs";
import { sleep, utf8 } from "../harness.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

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

/** One turn of `words` deltas at `frameMs` on a fresh agent: rows written, bytes kept (mid-turn and after), bytes per delta on its WebSocket. */
export async function peerRowsTurn(peer, name, words, frameMs) {
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
