import { describe, expect, it } from "vitest";
import { MessagesSchema } from "../src/schemas/api";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

/** Starts a turn and reads its stream until the agent asks. */
async function untilAsk(token: string, cid: string, message: string) {
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message));
  const first = await collect(
    await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
    (e) => e.type === "interaction.requested",
  );
  return { turnId, interaction: first.events.at(-1)!.data.interaction as { id: string }, lastId: first.lastId! };
}

describe("/messages after asks", () => {
  it("carries each answered ask with its outcome, never its values, and the cancel reason", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const q = await untilAsk(token, cid, "set up [ask]");
    const answer = { project: "demo", framework: "vitest", token: "hunter2-secret" };
    await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(q.interaction.id)}`, {
      token,
      body: { operationId: uid("op"), outcome: "accepted", data: answer },
    });
    await waitForTurn(token, cid, q.turnId);

    const p = await untilAsk(token, cid, "run the tests [permission]");
    await api(`/v1/conversations/${cid}/cancel`, {
      token,
      body: { operationId: uid("op"), reason: "changed my mind" },
    });
    await collect(
      await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": p.lastId } }),
      isTurnEnd,
    );

    const body = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const transcript = MessagesSchema.parse(body);
    expect(JSON.stringify(body)).not.toContain("hunter2");
    const [first, second] = transcript.messages.filter((m) => m.role === "assistant");
    if (first?.role !== "assistant" || second?.role !== "assistant") throw new Error("two assistant messages expected");
    expect(first.parts.find((part) => part.type === "interaction")).toMatchObject({
      id: q.interaction.id,
      status: "answered",
      outcome: "accepted",
      request: { kind: "question", title: "A few details before I start" },
    });
    expect(second).toMatchObject({ status: "cancelled", cancelReason: "changed my mind" });
    expect(second.parts.find((part) => part.type === "interaction")).toMatchObject({
      id: p.interaction.id,
      status: "cancelled",
      reason: "the run ended",
    });
  });
});

describe("/messages after the agent's memory was reset", () => {
  it("carries the agent_memory_reset warning on the turn that started afresh, so a reload still shows it", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = uid("turn");
    await sendTurn(token, cid, first, "hello");
    expect((await waitForTurn(token, cid, first)).status).toBe("completed");
    expect((await api("/v1/environment", { token, method: "DELETE" })).status).toBe(200);
    const next = uid("turn");
    await sendTurn(token, cid, next, "are you there?");
    expect((await waitForTurn(token, cid, next)).status).toBe("completed");

    const transcript = MessagesSchema.parse(await json(await api(`/v1/conversations/${cid}/messages`, { token })));
    const answers = transcript.messages.filter((m) => m.role === "assistant");
    const warnings = answers.map((m) => (m.role === "assistant" ? m.parts.filter((p) => p.type === "warning") : []));
    expect(warnings[0]).toEqual([]);
    expect(warnings[1]).toEqual([
      {
        id: expect.stringMatching(/^warning:\d+$/),
        type: "warning",
        code: "agent_memory_reset",
        message: expect.stringContaining("without the earlier conversation"),
      },
    ]);
  });
});
