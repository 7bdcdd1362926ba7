import { afterEach, describe, expect, it } from "vitest";
import { expectedUpstream, seenUpstream } from "./expected";
import { api, collect, counters, isTurnEnd, json, release, sendTurn, setFaults, tokenFor, uid } from "./helpers";

afterEach(async () => {
  await setFaults({});
});

async function runWithFaults(faults: Record<string, unknown>, message: string) {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  // Provision the user's sandbox first so the faults hit the run, not the setup.
  const warm = uid("turn");
  await sendTurn(token, cid, warm, "warm up");
  const warmed = await collect(
    await api(`/v1/conversations/${cid}/events`, { token }),
    (e) => isTurnEnd(e) && e.turnId === warm,
  );
  await setFaults(faults);
  const before = await counters();
  // Read live, opened before the turn: every frame as it streamed, not as the turn's end compacted
  // its deltas (docs/sse-protocol.md §13).
  const live = await api(`/v1/conversations/${cid}/events?after=${warmed.lastId}`, { token });
  const accepted = await json(await sendTurn(token, cid, turnId, message));
  expect(accepted.status).toBe("running");
  // A short turn is held after its first step ([hold]) so that it cannot end before it is accepted.
  if (message.includes("[hold]")) await release(accepted.executionId);
  const { events } = await collect(live, (e) => isTurnEnd(e) && e.turnId === turnId);
  const after = await counters();
  return { events, accepted, turnId, before, after };
}

describe("upstream faults: every frame reaches the browser once, and the turn completes", () => {
  it("a stream dropped after N frames is resumed from the last upstream id", async () => {
    const message = "drop test [long]";
    const { events, accepted, turnId, before, after } = await runWithFaults(
      { dropStreamAfterFrames: 7, dropStreams: 3 },
      message,
    );
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(seenUpstream(events, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
    // The reader really had to reconnect: the dispatch stream and two replays were severed, the
    // third replay ran to the end. Exactly three replays, no more.
    expect((after["runs.replays"] ?? 0) - (before["runs.replays"] ?? 0)).toBe(3);
  });

  it("repeated frames are de-duplicated by upstream id", async () => {
    const message = "repeat test";
    const { events, accepted, turnId } = await runWithFaults({ repeatFrames: true }, message);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(seenUpstream(events, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
  });

  it("an inclusive replay (an old deployment) after a drop adds nothing twice", async () => {
    const message = "inclusive test [long]";
    const { events, accepted, turnId, before, after } = await runWithFaults(
      { inclusiveReplay: true, dropStreamAfterFrames: 5, dropStreams: 4 },
      message,
    );
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect((after["runs.replays"] ?? 0) - (before["runs.replays"] ?? 0)).toBe(4);
    expect(seenUpstream(events, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
  });

  it("all three at once", async () => {
    const message = "everything [long]";
    const { events, accepted, turnId, before, after } = await runWithFaults(
      { inclusiveReplay: true, repeatFrames: true, dropStreamAfterFrames: 9, dropStreams: 5 },
      message,
    );
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect((after["runs.replays"] ?? 0) - (before["runs.replays"] ?? 0)).toBe(5);
    expect(seenUpstream(events, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
  });

  it("a 503 on the replay stream is retried; the run still completes", async () => {
    const message = "flaky replay";
    const { events, accepted, turnId } = await runWithFaults(
      { dropStreamAfterFrames: 4, dropStreams: 1, failNext: { status: 503, count: 2, route: "runtime.run" } },
      message,
    );
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(seenUpstream(events, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
  });

  it("invalid and oversized frames are reported as warnings naming the problem; the turn still completes", async () => {
    const { events } = await runWithFaults(
      {
        corruptFrames: [
          { id: 4, kind: "not_json" },
          { id: 6, kind: "invalid" },
          { id: 8, kind: "oversize" },
        ],
      },
      "broken frames [hold]",
    );
    const warnings = events.filter((e) => e.type === "warning").map((e) => e.data);
    expect(warnings).toEqual([
      expect.objectContaining({
        code: "invalid_upstream_frame",
        upstreamEventId: "4",
        message: expect.stringContaining("is not JSON"),
      }),
      expect.objectContaining({ code: "invalid_upstream_frame", upstreamEventId: "6" }),
      expect.objectContaining({ code: "frame_too_large", upstreamEventId: "8" }),
    ]);
    expect(events.at(-1)!.type).toBe("turn.completed");
    // Nothing of an oversized frame reaches a browser.
    expect(JSON.stringify(events).length).toBeLessThan(200_000);
  });
});
