/** Deployment limits reached (this project runs with EVENT_LOG_MAX_EVENTS=30, ADMISSION_TIMEOUT_MS=300, UPSTREAM_IDLE_TIMEOUT_MS=250). */
import { afterEach, describe, expect, it } from "vitest";
import { expectedUpstream, seenUpstream } from "./expected";
import { api, collect, counters, isTurnEnd, json, sendTurn, setFaults, tokenFor, uid, waitForTurn } from "./helpers";

afterEach(async () => {
  await setFaults({});
});

describe("a log trimmed into a turn", () => {
  it("keeps the turn's whole message: intro, reasoning and tool parts survive in /messages", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = uid("turn");
    await sendTurn(token, cid, first, "first answer [long]");
    await waitForTurn(token, cid, first);
    const before = (await json(await api(`/v1/conversations/${cid}/messages`, { token }))).messages[1];
    const second = uid("turn");
    await sendTurn(token, cid, second, "second answer");
    await waitForTurn(token, cid, second);
    const { messages } = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const after = messages[1];
    // The first turn's events are (partly) gone from the log, its message is not.
    expect(after.parts.map((p: { type: string; id: string }) => `${p.type}:${p.id}`)).toEqual(before.parts.map((p: { type: string; id: string }) => `${p.type}:${p.id}`));
    expect(after.parts.some((p: { type: string }) => p.type === "reasoning")).toBe(true);
    expect(after.parts.some((p: { type: string }) => p.type === "tool")).toBe(true);
    expect(after.parts.filter((p: { type: string }) => p.type === "text").map((p: { text: string }) => p.text).join("\n\n")).toBe(after.text);
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.lastEventId).toBeGreaterThan(30);
  });
});

describe("a dispatch stream that admits nothing (ADMISSION_TIMEOUT_MS=300)", () => {
  it("looks the run up by its execution id and takes it when the session names it: the turn runs", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    await setFaults({ withholdAdmission: true });
    const turnId = uid("turn");
    const res = await sendTurn(token, cid, turnId, "admitted in silence");
    expect(res.status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });
});

describe("an upstream body that goes silent (UPSTREAM_IDLE_TIMEOUT_MS=250)", () => {
  it("is dropped, and the reader reconnects from its cursor: nothing lost, nothing twice", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    // The dispatch stream and the reader's stream each go silent for longer than the idle timeout.
    await setFaults({ stallStreamMs: 1200, stallStreams: 2 });
    const opened = (await counters())["streams.opened"] ?? 0;
    const turnId = uid("turn");
    const message = "stalled once";
    const accepted = await json(await sendTurn(token, cid, turnId, message));
    const events = (await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd, { timeoutMs: 8000 })).events;
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
    expect(seenUpstream(events, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
    expect((await counters())["streams.opened"]! - opened).toBeGreaterThanOrEqual(3);
  });
});
