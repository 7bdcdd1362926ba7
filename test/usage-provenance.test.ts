/**
 * Usage provenance and the served model through the public API, against the emulator
 * (agent-provider-tangle, "Usage before the terminal receipt": the usage an execution measured;
 * agent-interface: "a requested model name does not prove which model served the run"), and fold
 * rows stored before provenance was kept still read after the upgrade.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../src/session/session";
import { SessionStore } from "../src/session/store/store";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid } from "./helpers";

async function turn(message: string, extra: Record<string, unknown> = {}) {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message, extra));
  const { events } = await collect(
    await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
    isTurnEnd,
  );
  const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
  const record = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
  return { token, cid, turnId, events, usage, record };
}

const MEASURED_TOKENS = {
  inputTokens: "measured",
  outputTokens: "measured",
  reasoningTokens: "measured",
  cacheReadInputTokens: "measured",
  cacheCreationInputTokens: "measured",
};

describe("usage provenance from the Sandbox (emulator)", () => {
  it("an OpenCode run's step totals and receipt are measured tokens; its cost's provenance the wire does not give", async () => {
    const { events, usage, record } = await turn("count tokens");
    const updates = events.filter((e) => e.type === "usage.updated").map((e) => e.data.usage as any);
    expect(
      updates.map((u) => [u.source, u.provenance.inputTokens, u.provenance.outputTokens, u.provenance.cost]),
    ).toEqual([
      ["running", "measured", "measured", "unknown"],
      ["running", "measured", "measured", "unknown"],
      ["receipt", "measured", "measured", "unknown"],
    ]);
    expect(record.usage).toMatchObject({ inputTokens: 1980, provenance: { ...MEASURED_TOKENS, cost: "unknown" } });
    expect(usage.turns[0].usage.provenance).toEqual(record.usage.provenance);
    expect(usage.total).toMatchObject({ inputTokens: 1980, provenance: { ...MEASURED_TOKENS, cost: "unknown" } });
    // The conversation total each usage.updated carries has the same provenance.
    expect(
      (events.filter((e) => e.type === "usage.updated").at(-1)!.data.conversation as any).provenance.inputTokens,
    ).toBe("measured");
  });

  it("a counter the receipt lacks has no provenance (it is unknown), and the total's provenance is what it counts", async () => {
    const { record, usage } = await turn("partial [receipt-partial] [no-usage]");
    expect(record.usage).toMatchObject({
      outputTokens: null,
      provenance: { inputTokens: "measured", outputTokens: null },
    });
    expect(usage.total).toMatchObject({ complete: false, provenance: { inputTokens: "measured", outputTokens: null } });
  });

  it("the served model is unknown (null) when the Sandbox does not report one, even with a requested model; request counts too", async () => {
    const { record, usage, events } = await turn("which model", { model: "anthropic/claude-sonnet-4" });
    expect(record).toMatchObject({
      model: "anthropic/claude-sonnet-4",
      servedModels: null,
      usage: { servedModels: null, modelRequests: null },
    });
    expect(usage.turns[0]).toMatchObject({
      model: "anthropic/claude-sonnet-4",
      usage: { servedModels: null, modelRequests: null },
    });
    expect(
      events.filter((e) => e.type === "usage.updated").every((e) => (e.data.usage as any).servedModels === null),
    ).toBe(true);
    // Without a requested model the turn names none: the provider's default is not a served model either.
    const plain = await turn("no model asked");
    expect(plain.record).not.toHaveProperty("model");
    expect(plain.record.servedModels).toBeNull();
  });
});

describe("usage stored before provenance was kept (schema 8)", () => {
  it("reads back after the upgrade: its figures of unknown provenance, its request count and served model unknown", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(uid("schema8")));
    const read = await runInDurableObject(stub, (_instance: SessionObject, state) => {
      const sql = state.storage.sql;
      const store = new SessionStore(sql);
      store.insertPendingTurn({
        turnId: "t1",
        requestDigest: "d",
        request: { message: "hi" },
        executionId: "exe_1",
        now: 1,
      });
      // The rows as schema 8 wrote them.
      const v8State = {
        executionId: "exe_1",
        cumulative: { inputTokens: 100, outputTokens: 10 },
        receipt: { inputTokens: 100, outputTokens: 10, cost: 0.5 },
        steps: { inputTokens: 90, outputTokens: 9 },
        stepIds: ["s1"],
        stepsBroken: false,
        conflicts: [],
        receiptDisagreements: [],
      };
      const v8View = {
        inputTokens: 100,
        outputTokens: 10,
        reasoningTokens: null,
        cacheReadInputTokens: null,
        cacheCreationInputTokens: null,
        cost: 0.5,
        source: "receipt",
        conflict: false,
      };
      sql.exec(
        "INSERT INTO usage (execution_id, turn_id, state) VALUES (?, ?, ?)",
        "exe_1",
        "t1",
        JSON.stringify(v8State),
      );
      sql.exec("UPDATE turns SET usage = ? WHERE turn_id = ?", JSON.stringify(v8View), "t1");
      sql.exec("UPDATE schema_version SET version = 8");
      const upgraded = new SessionStore(sql);
      return { state: upgraded.executionUsage("exe_1"), view: upgraded.turn("t1")!.usage };
    });
    expect(read.state).toMatchObject({
      receipt: { inputTokens: 100 },
      receiptProvenance: { inputTokens: "unknown", outputTokens: "unknown", cost: "unknown" },
      modelRequests: null,
      servedModels: [],
    });
    expect(read.view).toEqual({
      inputTokens: 100,
      outputTokens: 10,
      reasoningTokens: null,
      cacheReadInputTokens: null,
      cacheCreationInputTokens: null,
      cost: 0.5,
      source: "receipt",
      conflict: false,
      provenance: {
        inputTokens: "unknown",
        outputTokens: "unknown",
        reasoningTokens: null,
        cacheReadInputTokens: null,
        cacheCreationInputTokens: null,
        cost: "unknown",
      },
      modelRequests: null,
      servedModels: null,
    });
  });
});
