import { describe, expect, it } from "vitest";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid } from "./helpers";
import { expectedUpstream, seenUpstream } from "./expected";
import { applyPartUpdate } from "../src/objects/part-text";
import type { EventEnvelope } from "../src/objects/session-store";

/** Each part's text, the events applied in order (docs/sse-protocol.md §1.6). */
function partTexts(events: EventEnvelope[]): Map<string, string | undefined> {
  const texts = new Map<string, string | undefined>();
  for (const e of events) {
    if (e.type !== "message.part.updated") continue;
    const part = e.data.part as Record<string, unknown>;
    texts.set(part.id as string, applyPartUpdate(texts.get(part.id as string), { part, ...(typeof e.data.delta === "string" ? { delta: e.data.delta } : {}) }));
  }
  return texts;
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
    const message = "Explain the layout [long]";
    const { token, cid, turnId, accepted } = await startTurn(message);
    const first = await collect(await api(`/v1/conversations/${cid}/events?after=0`, { token }), (_e, all) => all.length >= 6);
    expect(first.events).toHaveLength(6);
    // The ?after= of the original URL is stale now: Last-Event-ID, as EventSource sends it, wins.
    const second = await collect(
      await api(`/v1/conversations/${cid}/events?after=0`, { token, headers: { "last-event-id": first.lastId! } }),
      isTurnEnd,
    );
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
    for (const e of whole.events) if (e.type !== "message.part.updated" && !e.type.startsWith("turn.") && e.type !== "result") expect(e).toEqual(seen.get(e.seq));
    expect(partTexts(whole.events)).toEqual(partTexts(all));
  });

  it("?after= (a reloaded page) resumes the same way", async () => {
    const message = "Reload me [long]";
    const { token, cid, turnId, accepted } = await startTurn(message);
    const first = await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), (_e, all) => all.length >= 10);
    const second = await collect(await api(`/v1/conversations/${cid}/events?after=${first.lastId}`, { token }), isTurnEnd);
    const all = [...first.events, ...second.events];
    expect(new Set(all.map((e) => e.seq)).size).toBe(all.length);
    expect(seenUpstream(all, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
  });

  it("three readers on one conversation see identical sequences", async () => {
    const message = "Three readers [long]";
    const { token, cid, accepted } = await startTurn(message);
    const readers = await Promise.all(
      [0, 1, 2].map(async () => collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd)),
    );
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
    const idle = await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": String(last.seq) } });
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
