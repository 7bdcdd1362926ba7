import { describe, expect, it } from "vitest";
import { api, collect, counters, isTurnEnd, json, sendTurn, tokenFor, uid } from "./helpers";

describe("a turn end to end", () => {
  it("streams deltas, a tool part, usage steps and a completed result; GET turn returns the same result", async () => {
    const token = await tokenFor(uid("alice"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const before = await counters();
    // Opened before the turn (a stream of a conversation with no events yet waits for them): the
    // turn's deltas live, as they streamed, not as its end compacted them (docs/sse-protocol.md §13).
    // The relay looks for the conversation every 250 ms or more: a turn paced ten times slower
    // ([slow]) is still running when it finds it, however loaded the machine.
    const stream = await api(`/v1/conversations/${cid}/events?after=0`, { token });
    const accepted = await sendTurn(token, cid, turnId, "What does the README say? [slow]");
    expect(accepted.status).toBe(202);
    const body = await json(accepted);
    expect(body).toMatchObject({ turnId, status: "running", after: 0 });
    expect(body.executionId).toMatch(/^exe_[0-9a-f]{32}$/);

    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(stream.headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(stream.headers.get("x-accel-buffering")).toBe("no");
    const { events, frames } = await collect(stream, isTurnEnd);
    expect(frames[0]!.retry).toBe(2000);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("turn.accepted");
    expect(types.at(-1)).toBe("turn.completed");

    const deltas = events.filter((e) => e.type === "message.part.updated" && (e.data.part as any).type === "text");
    expect(deltas.length).toBeGreaterThan(3);
    const toolStates = events
      .filter((e) => e.type === "message.part.updated" && (e.data.part as any).type === "tool")
      .map((e) => (e.data.part as any).state.status);
    expect(toolStates).toEqual(["pending", "running", "completed"]);
    const steps = events.filter((e) => e.type === "raw" && (e.data.event as any).type === "step_finish");
    expect(steps).toHaveLength(2);
    const result = events.find((e) => e.type === "result")!;
    expect(result.usage).toMatchObject({ inputTokens: 1980, outputTokens: 80 });
    // seq is strictly increasing
    for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
    // private frames never reach a browser
    expect(types).not.toContain("native.session.observed");

    const completed = events.at(-1)!;
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    expect(turn.status).toBe("completed");
    expect(turn.result.text).toBe((completed.data.result as any).text);
    expect(turn.result.text).toContain("What does the README say?");
    expect(turn.usage).toMatchObject({ inputTokens: 1980, outputTokens: 80 });
    // Exactly one dispatch and one run for this turn (counters are global to the file's emulator).
    const after = await counters();
    expect((after["runs.dispatches"] ?? 0) - (before["runs.dispatches"] ?? 0)).toBe(1);
    expect((after["runs.started"] ?? 0) - (before["runs.started"] ?? 0)).toBe(1);
  });
});
