/**
 * The largest frame the gateway accepts reaches a browser whole: upstream frames up to 1 MiB
 * (src/providers/tangle/frames.ts MAX_FRAME_BYTES) are stored as one event, and the subscription
 * socket between the session object and the Worker carries an event and a replay page holding it
 * (a page stops after the row that passes 256 KiB, so it can be that row and more), live and in
 * replay. A frame past the bound is refused as a warning (test/tangle-wire.test.ts).
 */
import { describe, expect, it } from "vitest";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

/** Just under the frame bound once the tool part and its frame are wrapped around it. */
const OUTPUT_BYTES = 1_046_000;

const toolOutput = (events: Array<{ type: string; data: Record<string, unknown> }>) =>
  events
    .map((e) => e.data.part as { type?: string; state?: { status?: string; output?: string } } | undefined)
    .find((p) => p?.type === "tool" && p.state?.status === "completed")?.state?.output;

describe("a frame at the size bound", () => {
  it("reaches a viewer live and in a replay from the start, whole", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    // A turn before it: its events go in the replay's first page too, before the big one. (The
    // turns' deltas are compacted once each ended, docs/sse-protocol.md §13: the page holds less of
    // what streamed before the big event than a reader saw live.)
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm up");
    await waitForTurn(token, cid, warm);
    const { lastEventId } = await json(await api(`/v1/conversations/${cid}`, { token }));
    const live = await api(`/v1/conversations/${cid}/events?after=${lastEventId}`, { token });
    const accepted = await sendTurn(token, cid, turnId, `read it all [big-output:${OUTPUT_BYTES}]`);
    expect(accepted.status).toBe(202);
    const seenLive = await collect(live, isTurnEnd, { timeoutMs: 10_000 });
    expect(seenLive.events.at(-1)!.type).toBe("turn.completed");
    expect(toolOutput(seenLive.events)?.length).toBe(OUTPUT_BYTES);
    expect(seenLive.events.some((e) => e.type === "warning")).toBe(false);
    // A replay from the start: its first page holds the big event and the ones before it (> 1 MiB).
    const replay = await collect(
      await api(`/v1/conversations/${cid}/events?after=0`, { token }),
      (e) => isTurnEnd(e) && e.turnId === turnId,
      { timeoutMs: 10_000 },
    );
    // The same events less the deltas the turn's end compacted.
    const kept = replay.events.filter((e) => e.turnId === turnId).map((e) => e.seq);
    expect(kept.length).toBeGreaterThan(5);
    expect(seenLive.events.map((e) => e.seq).filter((seq) => kept.includes(seq))).toEqual(kept);
    const big = replay.events.filter((e) => e.turnId === turnId);
    expect(toolOutput(big)?.length).toBe(OUTPUT_BYTES);
    const frameBytes = replay.events
      .filter((e) => e.seq <= big.find((x) => toolOutput([x]))!.seq)
      .reduce((n, e) => n + JSON.stringify(e).length, 0);
    expect(frameBytes).toBeGreaterThan(1024 * 1024);
  });
});
