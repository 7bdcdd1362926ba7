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
        `${side}: ${s.concurrent.many.conversations} conversations ${s.concurrent.many.seconds} s, one ${s.concurrent.one.seconds} s: ratio ${s.concurrent.ratio}${s.concurrent.cpuSeconds ? `; workerd CPU over the ${s.concurrent.many.conversations}: ${cpuText(s.concurrent.cpuSeconds)}` : ""}${s.concurrent.perRaw ? `; ÷ the raw runs at once ${s.concurrent.perRaw}` : ""}${s.concurrent.cpuPerRaw ? `; CPU ÷ the raw runs' ${s.concurrent.cpuPerRaw.gateway ? `${s.concurrent.cpuPerRaw.gateway} (the gateway's runtime ÷ the emulator's), ` : ""}${s.concurrent.cpuPerRaw.whole} (every runtime)` : ""}${s.concurrent.rounds ? `; over ${s.concurrent.rounds.length} rounds (the CPU summed), each round's: ${s.concurrent.rounds.map((r) => r.gateway ?? r.whole).join(", ")}` : ""}${s.concurrent.existing ? `; on ${s.concurrent.many.conversations} conversations that exist (a second turn each): CPU ÷ the raw runs' ${s.concurrent.existing.cpuPerRaw.gateway ?? s.concurrent.existing.cpuPerRaw.whole}${s.concurrent.rounds ? ` (rounds: ${s.concurrent.rounds.map((r) => r.existing.gateway ?? r.existing.whole).join(", ")})` : ""}` : ""}`,
      );
  }
  const rc = a.raw?.concurrent;
  if (rc)
    out.push(
      `raw (emulator runs, no session object): ${rc.many.conversations} runs at once ${rc.many.seconds} s, one ${rc.one.seconds} s: ratio ${rc.ratio}; workerd CPU over the ${rc.many.conversations}: ${cpuText(rc.cpuSeconds)}`,
    );
  return out;
}
