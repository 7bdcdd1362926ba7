// The `agents` benchmark (../agents.mjs): a viewer reconnecting mid-stream: the gateway and the peer.
import { decodeAfter } from "../../public/wire/frames.js";
import { deltaOf, follow, isTurnEnd, ms, sleep, tag } from "../harness.mjs";
import { config as C } from "./config.mjs";
import { agentSocket, isDone, sendTurn } from "./peer.mjs";

/**
 * The gateway: a viewer follows a turn of RECONNECT_WORDS deltas, drops its stream at half of
 * them and reopens it with Last-Event-ID. Lost and duplicated: against the raw stream's deltas.
 */
export async function gatewayReconnect({ base, api, auth }) {
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
export async function peerReconnect(peer) {
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
