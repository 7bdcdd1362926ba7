import { afterEach, describe, expect, it } from "vitest";
import { MessagesSchema } from "../src/schemas/api";
import type { EventEnvelope } from "../src/session/store/records";
import { api, collect, emulator, isTurnEnd, json, release, sendTurn, setFaults, tokenFor, uid } from "./helpers";

/**
 * See the subagents (issue 39): the agent's child tasks (`[subagents]`: two, one nested under the
 * other, the nested one failing) relayed as `child-task` events, applied once per
 * `sourceEventId` (`[subagents:dup]` sends every update again, each copy a new frame), and kept in
 * `/messages` as `subagent` parts.
 */

afterEach(async () => {
  await setFaults({});
  await emulator("/_emulator/variants", {});
});

async function startTurn(message: string) {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message));
  return { token, cid, turnId, accepted };
}

const childTasks = (events: EventEnvelope[]) => events.filter((e) => e.type === "child-task");

/** What the emulator's `[subagents]` script reports (src/emulator/subagents.ts), as the canonical event says it. */
function expectedUpdates(exe: string) {
  const explore = `${exe}:child-explore`;
  const tests = `${exe}:child-tests`;
  return [
    {
      childId: explore,
      sourceEventId: `${explore}#1`,
      status: "running",
      title: "Explore the repository's layout",
      runner: "explore",
      model: "zai/glm-5.2",
      time: { started: "2026-01-01T00:00:01.000Z", updated: "2026-01-01T00:00:01.000Z" },
    },
    {
      childId: tests,
      parentChildId: explore,
      sourceEventId: `${tests}#1`,
      status: "running",
      title: "Run the test suite",
      runner: "general",
      time: { started: "2026-01-01T00:00:02.000Z", updated: "2026-01-01T00:00:02.000Z" },
    },
    {
      childId: tests,
      parentChildId: explore,
      sourceEventId: `${tests}#2`,
      status: "failed",
      title: "Run the test suite",
      runner: "general",
      terminalReason: "tool_error",
      time: {
        started: "2026-01-01T00:00:02.000Z",
        updated: "2026-01-01T00:00:05.000Z",
        ended: "2026-01-01T00:00:05.000Z",
      },
    },
    {
      childId: explore,
      sourceEventId: `${explore}#2`,
      status: "completed",
      title: "Explore the repository's layout",
      runner: "explore",
      model: "zai/glm-5.2",
      usage: { inputTokens: 2400, outputTokens: 310, cost: 0.0017 },
      terminalReason: "stop",
      time: {
        started: "2026-01-01T00:00:01.000Z",
        updated: "2026-01-01T00:00:08.000Z",
        ended: "2026-01-01T00:00:08.000Z",
      },
    },
  ];
}

/** The turn's subagents as `/messages` keeps them: each child task once, as its latest update says. */
async function subagentsInMessages(token: string, cid: string) {
  const body = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
  const transcript = MessagesSchema.parse(body);
  const answer = transcript.messages.find((m) => m.role === "assistant");
  if (answer?.role !== "assistant") throw new Error("an assistant message expected");
  return answer.parts.filter((p) => p.type === "subagent");
}

function expectKeptSubagents(parts: unknown[], exe: string) {
  const [, , failed, completed] = expectedUpdates(exe);
  const { sourceEventId: _c, ...explore } = completed!;
  const { sourceEventId: _f, ...tests } = failed!;
  // In the order each first came: the first child, then the one nested under it. The failed one
  // reported no model and no usage: unknown, never zero.
  expect(parts).toEqual([
    { id: explore.childId, type: "subagent", ...explore },
    { id: tests.childId, type: "subagent", ...tests },
  ]);
}

describe("subagents: the agent's child tasks", () => {
  it("are relayed as child-task events and kept in /messages, nested by parentChildId, each as its latest update says", async () => {
    const { token, cid, accepted } = await startTurn("Look around [subagents]");
    const stream = await collect(await api(`/v1/conversations/${cid}/events?after=0`, { token }), isTurnEnd);
    expect(childTasks(stream.events).map((e) => e.data)).toEqual(expectedUpdates(accepted.executionId));
    expectKeptSubagents(await subagentsInMessages(token, cid), accepted.executionId);
  });

  it("served as subtask parts that carry a childId (variant childTask), are the same child-task events", async () => {
    await emulator("/_emulator/variants", { childTask: "subtask-part" });
    const { token, cid, accepted } = await startTurn("Look around [subagents]");
    const stream = await collect(await api(`/v1/conversations/${cid}/events?after=0`, { token }), isTurnEnd);
    expect(childTasks(stream.events).map((e) => e.data)).toEqual(expectedUpdates(accepted.executionId));
    // Never a content part as well.
    expect(
      stream.events.some((e) => e.type === "message.part.updated" && (e.data.part as any)?.type === "subtask"),
    ).toBe(false);
    expectKeptSubagents(await subagentsInMessages(token, cid), accepted.executionId);
  });

  it("[subagents:dup]: each update is applied once, its copies (new frames, the same sourceEventId) dropped", async () => {
    const { token, cid, accepted } = await startTurn("Look around [subagents:dup]");
    const stream = await collect(await api(`/v1/conversations/${cid}/events?after=0`, { token }), isTurnEnd);
    expect(childTasks(stream.events).map((e) => e.data)).toEqual(expectedUpdates(accepted.executionId));
    // The log read again afterwards holds each once too.
    const again = await collect(await api(`/v1/conversations/${cid}/events?after=0`, { token }), isTurnEnd);
    expect(childTasks(again.events).map((e) => e.data.sourceEventId)).toEqual(
      expectedUpdates(accepted.executionId).map((u) => u.sourceEventId),
    );
    expectKeptSubagents(await subagentsInMessages(token, cid), accepted.executionId);
  });

  it("across reconnects (upstream's stream dropped and replayed inclusively, a viewer back with Last-Event-ID) each update is relayed once", async () => {
    await setFaults({ dropStreamAfterFrames: 12, dropStreams: 3, inclusiveReplay: true });
    // Held after its first step (both children running, their ends and the copies not yet sent) until the viewer is back.
    const { token, cid, accepted } = await startTurn("Look around [subagents:dup] [hold]");
    const first = await collect(
      await api(`/v1/conversations/${cid}/events?after=0`, { token }),
      (e) =>
        e.type === "raw" && String((e.data.event as { part?: { id?: string } }).part?.id).endsWith(":step-finish-1"),
    );
    expect(childTasks(first.events).map((e) => e.data.status)).toEqual(["running", "running"]);
    const back = api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": first.lastId! } });
    await release(accepted.executionId);
    const second = await collect(await back, isTurnEnd);
    const all = [...first.events, ...second.events];
    expect(new Set(all.map((e) => e.seq)).size).toBe(all.length);
    expect(childTasks(all).map((e) => e.data)).toEqual(expectedUpdates(accepted.executionId));
    expectKeptSubagents(await subagentsInMessages(token, cid), accepted.executionId);
  });
});
