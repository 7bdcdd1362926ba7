import { describe, expect, it } from "vitest";
import type { EventEnvelope } from "../src/session/store/records";
import { expectedUpstream, seenUpstream } from "./expected";
import { api, collect, isTurnEnd, json, partTexts, release, sendTurn, tokenFor, uid } from "./helpers";

/** The event a `[hold]` run is held after: its first step's end. */
const atHold = (e: EventEnvelope) =>
  e.type === "raw" && String((e.data.event as { part?: { id?: string } }).part?.id).endsWith(":step-finish-1");

/**
 * Releases a run held by `[hold]` once `readers` streams have each read up to its hold, so every
 * one of them joined the turn before its end (which compacts the log); `until` stays the reader's
 * own stop. Failures to release surface in `released`.
 */
function releaseOnceRead(readers: number, executionId: string) {
  let reached = 0;
  let released: Promise<void> = Promise.resolve();
  const watch =
    (until: (e: EventEnvelope, all: EventEnvelope[]) => boolean) => (e: EventEnvelope, all: EventEnvelope[]) => {
      if (atHold(e) && ++reached === readers) released = release(executionId);
      return until(e, all);
    };
  return { watch, released: () => released };
}

async function startTurn(message: string) {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message));
  return { token, cid, turnId, accepted };
}

describe("browser reconnects lose nothing and duplicate nothing", () => {
  it("a reader that drops mid-turn and reconnects with Last-Event-ID gets every later frame exactly once", async () => {
    // Held after its first step until the second reader has read that far: it joins before the end.
    const message = "Explain the layout [long] [hold]";
    const { token, cid, turnId, accepted } = await startTurn(message);
    const hold = releaseOnceRead(1, accepted.executionId);
    const first = await collect(
      await api(`/v1/conversations/${cid}/events?after=0`, { token }),
      (_e, all) => all.length >= 6,
    );
    expect(first.events).toHaveLength(6);
    // The ?after= of the original URL is stale now: Last-Event-ID, as EventSource sends it, wins.
    const second = await collect(
      await api(`/v1/conversations/${cid}/events?after=0`, { token, headers: { "last-event-id": first.lastId! } }),
      hold.watch(isTurnEnd),
    );
    await hold.released();
    const all = [...first.events, ...second.events];
    const seqs = all.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(second.events[0]!.seq).toBe(Number(first.lastId) + 1);
    expect(seenUpstream(all, turnId)).toEqual(expectedUpstream(message, accepted.executionId));

    // The complete log read afterwards is what the two halves saw, its text deltas compacted once the
    // turn ended (docs/sse-protocol.md §13): the same ids less those of each compacted run, in order,
    // every other event the same, and the same text.
    const whole = await collect(await api(`/v1/conversations/${cid}/events?after=0`, { token }), isTurnEnd);
    const kept = whole.events.map((e) => e.seq);
    expect(kept.length).toBeLessThan(seqs.length);
    expect(seqs.filter((s) => kept.includes(s))).toEqual(kept);
    const seen = new Map(all.map((e) => [e.seq, e]));
    // (The end and the agent's result frame no longer repeat the answer.)
    for (const e of whole.events)
      if (e.type !== "message.part.updated" && !e.type.startsWith("turn.") && e.type !== "result")
        expect(e).toEqual(seen.get(e.seq));
    expect(partTexts(whole.events)).toEqual(partTexts(all));
  });

  it("?after= (a reloaded page) resumes the same way", async () => {
    const message = "Reload me [long] [hold]";
    const { token, cid, turnId, accepted } = await startTurn(message);
    const hold = releaseOnceRead(1, accepted.executionId);
    const first = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (_e, all) => all.length >= 10,
    );
    const second = await collect(
      await api(`/v1/conversations/${cid}/events?after=${first.lastId}`, { token }),
      hold.watch(isTurnEnd),
    );
    await hold.released();
    const all = [...first.events, ...second.events];
    expect(new Set(all.map((e) => e.seq)).size).toBe(all.length);
    expect(seenUpstream(all, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
  });

  it("three readers on one conversation see identical sequences", async () => {
    // Held after its first step until all three have read that far: none joins after the end.
    const message = "Three readers [long] [hold]";
    const { token, cid, accepted } = await startTurn(message);
    const hold = releaseOnceRead(3, accepted.executionId);
    const readers = await Promise.all(
      [0, 1, 2].map(async () =>
        collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), hold.watch(isTurnEnd)),
      ),
    );
    await hold.released();
    const [a, b, c] = readers.map((r) => r.events.map((e) => `${e.seq}:${e.type}:${JSON.stringify(e.data)}`));
    expect(a!.length).toBeGreaterThan(20);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });

  it("a reader that joins after the turn ended replays it whole, and a stream with nothing new waits with pings", async () => {
    const { token, cid, turnId } = await startTurn("Hello");
    const done = await collect(await api(`/v1/conversations/${cid}/events`, { token }), isTurnEnd);
    const last = done.events.at(-1)!;
    expect(last.type).toBe("turn.completed");
    expect(last.turnId).toBe(turnId);
    // Caught up: the stream stays open and sends `: ping` comments (interval shortened in tests).
    const idle = await api(`/v1/conversations/${cid}/events`, {
      token,
      headers: { "last-event-id": String(last.seq) },
    });
    const reader = idle.body!.getReader();
    let text = "";
    while (!text.includes(": ping")) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(text.startsWith("retry: 2000")).toBe(true);
    expect(text).not.toContain("id: ");
  });

  it("a cursor the log never had gets a stream.reset, then the log from its start", async () => {
    const { token, cid } = await startTurn("Hello");
    await collect(await api(`/v1/conversations/${cid}/events`, { token }), isTurnEnd);
    const reset = await collect(await api(`/v1/conversations/${cid}/events?after=999999`, { token }), isTurnEnd);
    expect(reset.frames.some((f) => f.event === "stream.reset")).toBe(true);
    expect(reset.events[0]!.type).toBe("turn.accepted");
  });
});
