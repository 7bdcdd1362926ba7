/**
 * Usage provenance, request counts and the served model through the public API, against the CLI
 * Bridge stand-in (agent-provider-cli-bridge: "Measured usage requires explicit estimated: false …; estimated: true
 * is an estimate, and absent provenance remains unknown"; "a requested model name does not prove
 * which model served the run", agent-interface). What the user reads — the turn answer, `/usage`, the
 * `usage.updated` events — says where each figure comes from, and names the served model only
 * when the bridge reported one.
 */
import { describe, expect, it } from "vitest";
import type { EventEnvelope } from "../../src/session/store/records";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

const CODEX = "codex/default";
const PI = "pi/tangle-router/fake-echo";

async function oneTurn(message: string, model: string) {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message, { model }));
  const events: EventEnvelope[] = (
    await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd)
  ).events;
  const turn = await waitForTurn(token, cid, turnId);
  const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
  return { token, cid, turnId, events, turn, usage };
}

const updates = (events: EventEnvelope[]) =>
  events.filter((e) => e.type === "usage.updated").map((e) => e.data as { usage: any; conversation: any });

describe("usage provenance from a CLI Bridge", () => {
  it("as recorded (no `estimated` field): the counts are of unknown provenance, never shown as measured (transcript 05)", async () => {
    const { events, turn, usage } = await oneTurn("hello bridge peer", CODEX);
    expect(turn.usage).toMatchObject({
      inputTokens: 17,
      outputTokens: 23,
      provenance: { inputTokens: "unknown", outputTokens: "unknown", cost: null },
    });
    expect(usage.turns[0].usage.provenance).toEqual(turn.usage.provenance);
    expect(usage.total).toMatchObject({
      inputTokens: 17,
      complete: true,
      provenance: { inputTokens: "unknown", outputTokens: "unknown" },
    });
    const last = updates(events).at(-1)!;
    expect(last.usage.provenance.inputTokens).toBe("unknown");
    expect(last.conversation.provenance.inputTokens).toBe("unknown");
    expect(events.at(-1)).toMatchObject({
      type: "turn.completed",
      data: { usage: { provenance: { inputTokens: "unknown" } } },
    });
  });

  it("`estimated: true` is an estimate everywhere the user reads it, the conversation total included", async () => {
    const { token, cid, turn, usage, events } = await oneTurn("[estimated] guess the count", CODEX);
    expect(turn.usage.provenance).toMatchObject({ inputTokens: "estimated", outputTokens: "estimated" });
    expect(usage.total.provenance).toMatchObject({ inputTokens: "estimated", outputTokens: "estimated" });
    expect(updates(events).at(-1)!.usage.provenance.inputTokens).toBe("estimated");
    // A measured turn after it does not make the total a measurement: a total over an estimate is one.
    const t2 = uid("turn");
    await sendTurn(token, cid, t2, "[measured] count it", { model: CODEX });
    expect((await waitForTurn(token, cid, t2)).usage.provenance).toMatchObject({
      inputTokens: "measured",
      outputTokens: "measured",
    });
    const after = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    expect(after.turns.map((t: any) => t.usage.provenance.inputTokens)).toEqual(["estimated", "measured"]);
    expect(after.total.provenance).toMatchObject({ inputTokens: "estimated", outputTokens: "estimated" });
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).usage.provenance.inputTokens).toBe(
      "estimated",
    );
  });

  it("a retained Pi run's native usage record cannot certify itself as measured (transcript 23)", async () => {
    const { turn } = await oneTurn("[measured] retained count", PI);
    expect(turn.usage).toMatchObject({
      inputTokens: 4,
      provenance: { inputTokens: "unknown", outputTokens: "unknown" },
    });
    const estimated = await oneTurn("[estimated] retained guess", PI);
    expect(estimated.turn.usage.provenance.inputTokens).toBe("estimated");
  });
});

describe("the served model and request counts from a CLI Bridge", () => {
  it("unreported, the served model is unknown (null), not the requested route the chunks echo as `model`", async () => {
    const { turn, usage, events } = await oneTurn("which model", CODEX);
    expect(turn).toMatchObject({
      model: CODEX,
      servedModels: null,
      usage: { servedModels: null, modelRequests: null },
    });
    expect(usage.turns[0]).toMatchObject({ model: CODEX, usage: { servedModels: null } });
    expect(updates(events).every((u) => u.usage.servedModels === null)).toBe(true);
  });

  it("the models the bridge observed (provider_models) are shown next to the requested one", async () => {
    const { turn, usage, events } = await oneTurn("[served:gpt-5.4-2026-03-05] which model", CODEX);
    expect(turn).toMatchObject({
      model: CODEX,
      servedModels: ["gpt-5.4-2026-03-05"],
      usage: { servedModels: ["gpt-5.4-2026-03-05"] },
    });
    expect(usage.turns[0]).toMatchObject({ model: CODEX, usage: { servedModels: ["gpt-5.4-2026-03-05"] } });
    expect(updates(events).at(-1)!.usage.servedModels).toEqual(["gpt-5.4-2026-03-05"]);
    const two = await oneTurn("[served:gpt-5.4,gpt-5.4-mini] two models", CODEX);
    expect(two.turn.servedModels).toEqual(["gpt-5.4", "gpt-5.4-mini"]);
  });

  it("a retained run's served models come from the bridge's own event fields", async () => {
    const { turn } = await oneTurn("[served:fake-echo-2026] retained", PI);
    expect(turn).toMatchObject({ model: PI, servedModels: ["fake-echo-2026"] });
  });

  it("request counts where the bridge reports them exactly; an estimated count is unknown", async () => {
    const counted = await oneTurn("[requests:3] count requests", CODEX);
    expect(counted.turn.usage).toMatchObject({ modelRequests: 3 });
    expect(counted.usage.turns[0].usage.modelRequests).toBe(3);
    expect(updates(counted.events).at(-1)!.usage.modelRequests).toBe(3);
    const estimated = await oneTurn("[requests:3] [estimated] guess requests", CODEX);
    expect(estimated.turn.usage).toMatchObject({ modelRequests: null, provenance: { inputTokens: "estimated" } });
  });
});
