/**
 * Direct streams through the public API (docs/architecture.md "The streaming path"): while a
 * conversation is busy, a viewer's live events move from its hibernatable socket to a direct
 * stream the Worker pipes natively, and back to the socket once the conversation goes quiet
 * (SSE_DIRECT_QUIET_MS, 100 ms in the tests). One browser stream over both switches, twice, reads
 * every event of the log exactly once, in order, the same as a replay of the log read afterwards.
 */
import { describe, expect, it } from "vitest";
import type { EventEnvelope } from "../src/session/store/records";
import { api, collect, isTurnEnd, json, partTexts, sendTurn, tokenFor, uid } from "./helpers";

interface ObjectInfo {
  subscriptions: number;
  directStreams: number;
  directStreamsOpened: number;
}

const objectInfo = async (token: string, cid: string): Promise<ObjectInfo> =>
  json(await api(`/v1/conversations/${cid}/dev/object`, { token }));

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = await read();
    if (ok(value)) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never: ${what}`);
}

describe("direct streams", () => {
  it("a viewer's live events go on a direct stream while the conversation is busy and back on its socket when it is quiet; over both switches, twice, it reads the log exactly once", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await sendTurn(token, cid, uid("turn"), "warm up");
    await until(
      () => objectInfo(token, cid),
      (i) => i.directStreams === 0,
      "the first turn over",
    );
    const first = await objectInfo(token, cid);

    const stream = await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": "0" } });
    expect(stream.status).toBe(200);
    let ends = 0;
    let second: Promise<Response> | undefined;
    const turns: string[] = [uid("turn"), uid("turn")];
    // The stream joins live (the warm-up's replay read), then a turn runs; once it ended and its
    // direct stream was ended by the quiet time, the second turn runs on the same stream.
    const read = collect(
      stream,
      (e: EventEnvelope) => {
        if (e.type === "turn.completed" && e.turnId === turns[0] && ends++ === 0) {
          second = until(
            () => objectInfo(token, cid),
            (i) => i.directStreams === 0,
            "the direct stream ended after the first turn",
          ).then(() => sendTurn(token, cid, turns[1]!, "the second [words:120]"));
        }
        return e.type === "turn.completed" && e.turnId === turns[1];
      },
      { timeoutMs: 14_000 },
    );
    // Live (the replay of the warm-up read: the subscription is counted) before the first turn starts.
    await until(
      () => objectInfo(token, cid),
      (i) => i.subscriptions === 1,
      "the stream subscribed",
    );
    await new Promise((r) => setTimeout(r, 100));
    expect((await sendTurn(token, cid, turns[0]!, "the first [words:120]")).status).toBe(202);
    const live = await read;
    expect((await second!).status).toBe(202);

    // Two direct streams opened for this viewer: one per burst.
    const after = await objectInfo(token, cid);
    expect(after.directStreamsOpened - first.directStreamsOpened).toBeGreaterThanOrEqual(2);

    // Every live event once, in order: from the first turn's first event the ids run without a gap
    // (collect fails on one out of order or twice; the warm-up's replay before them is compacted).
    const seqs = live.events.slice(live.events.findIndex((e) => e.turnId === turns[0])).map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => seqs[0]! + i));
    // And what they say is the log's: each part's text as a replay read afterwards tells it (turn-end
    // compaction rewrites the log's rows, not what they add up to).
    const lastSeq = live.events.at(-1)!.seq;
    const replay = await collect(
      await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": "0" } }),
      (e) => e.seq >= lastSeq,
    );
    const texts = partTexts(replay.events);
    expect(texts.size).toBeGreaterThan(0);
    expect(partTexts(live.events)).toEqual(texts);
    expect(live.events.filter(isTurnEnd).map((e) => e.turnId)).toEqual(expect.arrayContaining(turns));
  });
});
