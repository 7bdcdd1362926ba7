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
//
// The parts live in agents/: config.mjs (the settings), peer.mjs (the peer's server and client),
// cpu.mjs, reconnect.mjs, concurrent.mjs (each part's measures) and report.mjs (the printed lines).

import {
  addSpent,
  conversationIds,
  cpuPerRaw,
  cpuSpent,
  gatewayConcurrent,
  peerConcurrent,
  prepareConversations,
  ratioOf,
  rawConcurrent,
  serversCpu,
} from "./agents/concurrent.mjs";
import { config as C, step } from "./agents/config.mjs";
import { gatewayCpuTurn, peerCpuTurn, perExtraViewer, rawCpuTurn } from "./agents/cpu.mjs";
import { peerRowsTurn, startPeer } from "./agents/peer.mjs";
import { gatewayReconnect, peerReconnect } from "./agents/reconnect.mjs";
import { startApart } from "./emulator-apart.mjs";
import { tag, untilInterrupted } from "./harness.mjs";

export { config } from "./agents/config.mjs";
export { report } from "./agents/report.mjs";

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
        // CONCURRENT_ROUNDS rounds, each the raw runs then ours: the times are the first round's, the
        // CPU of each side the sum over the rounds.
        let rawMany, many, rawCpu, ourCpu, existingCpu;
        const rounds = [];
        for (let r = 0; r < C.CONCURRENT_ROUNDS; r++) {
          const label = r === 0 ? "many" : `many${r + 1}`;
          const cpu0 = serversCpu(cx);
          const rawRound = await rawConcurrent(cx, sandboxId, C.CONCURRENT, label);
          const cpu1 = serversCpu(cx);
          const round = await gatewayConcurrent(cx, C.CONCURRENT, label);
          const cpu2 = serversCpu(cx);
          // The same, on conversations that exist (a first turn each, outside the measure): the
          // turns' own cost, without the 50 objects' and databases' creation.
          const cids = conversationIds(C.CONCURRENT, `${label}-existing`);
          await prepareConversations(cx, cids);
          const cpu3 = serversCpu(cx);
          await gatewayConcurrent(cx, C.CONCURRENT, label, cids);
          const cpu4 = serversCpu(cx);
          const raw = cpuSpent(cpu0, cpu1);
          const ours = cpuSpent(cpu1, cpu2);
          const oursExisting = cpuSpent(cpu3, cpu4);
          rounds.push({ ...cpuPerRaw(ours, raw), existing: cpuPerRaw(oursExisting, raw) });
          existingCpu = existingCpu ? addSpent(existingCpu, oursExisting) : oursExisting;
          rawMany ??= rawRound;
          many ??= round;
          rawCpu = rawCpu ? addSpent(rawCpu, raw) : raw;
          ourCpu = ourCpu ? addSpent(ourCpu, ours) : ours;
        }
        delete one.executions;
        delete many.executions;
        out.gateway.concurrent = ratioOf(one, many);
        out.gateway.concurrent.cpuSeconds = ourCpu;
        out.raw = { concurrent: { ...ratioOf(rawOne, rawMany), cpuSeconds: rawCpu } };
        // Ours at once ÷ the raw streams at once: what the session object, the user object and the relay add.
        out.gateway.concurrent.perRaw = Number((many.seconds / rawMany.seconds).toFixed(2));
        out.gateway.concurrent.cpuPerRaw = cpuPerRaw(out.gateway.concurrent.cpuSeconds, out.raw.concurrent.cpuSeconds);
        out.gateway.concurrent.existing = {
          cpuSeconds: existingCpu,
          cpuPerRaw: cpuPerRaw(existingCpu, out.raw.concurrent.cpuSeconds),
        };
        if (rounds.length > 1) out.gateway.concurrent.rounds = rounds;
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
