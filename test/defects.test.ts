/**
 * Defects found by trying the gateway as an attacker and as a careless user would (issue
 * "Reliability and security, proven"). Each test failed before its fix.
 */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/session/session";
import {
  api,
  BASE,
  collect,
  counters,
  emulator,
  isTurnEnd,
  json,
  sendTurn,
  setFaults,
  tokenFor,
  uid,
  waitForTurn,
} from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

afterEach(async () => {
  await setFaults({});
});

describe("usage that is wholly unknown", () => {
  it("makes the conversation total a floor, never zero and complete", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "nothing measured [no-usage] [receipt-none]");
    const events = (await collect(await api(`/v1/conversations/${cid}/events`, { token }), isTurnEnd)).events;
    const turn = await waitForTurn(token, cid, turnId);
    expect(turn.usage ?? { inputTokens: null }).toMatchObject({ inputTokens: null });
    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    expect(usage.total).toMatchObject({ inputTokens: null, outputTokens: null, complete: false });
    expect(usage.total.unknown).toEqual(expect.arrayContaining(["inputTokens", "outputTokens"]));
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).usage).toMatchObject({ complete: false });
    expect(
      events.some((e) => e.type === "usage.updated" && (e.data.conversation as { complete: boolean }).complete),
    ).toBe(false);
  });
});

describe("forbidden names in an answer", () => {
  it("are refused with invalid_response at every depth, before anything is recorded or sent upstream", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const accepted = await json(await sendTurn(token, cid, uid("turn"), "set up tests [ask]"));
    const asked = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );
    const iid = (asked.events.at(-1)!.data.interaction as { id: string }).id;
    const before = (await counters())["interactions.answers"] ?? 0;
    const bodies = [
      '{"operationId":"op-a","outcome":"accepted","data":{"__proto__":{"polluted":true},"project":"p","framework":"vitest"}}',
      '{"operationId":"op-b","outcome":"accepted","data":{"project":"p","framework":"vitest","labels":[{"constructor":{"prototype":1}}]}}',
      '{"operationId":"op-c","outcome":"accepted","data":{"project":"p","framework":"vitest","prototype":"x"}}',
    ];
    for (const body of bodies) {
      const res = await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(iid)}`, {
        token,
        body,
        headers: { "content-type": "application/json" },
      });
      expect(res.status).toBe(422);
      const ack = await json(res);
      expect(ack.status).toBe("invalid_response");
      expect(ack.message).toContain("forbidden field name");
    }
    expect((await counters())["interactions.answers"] ?? 0).toBe(before);
    // Nothing was recorded: a proper answer under one of those operation ids is accepted.
    const good = await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(iid)}`, {
      token,
      body: { operationId: "op-a", outcome: "accepted", data: { project: "p", framework: "vitest" } },
    });
    expect((await json(good)).status).toBe("accepted");
  });
});

describe("delete during dispatch", () => {
  it("waits for the dispatch, removes everything, and leaves no run behind", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    // Slow provisioning keeps the first dispatch under way while the delete arrives.
    await setFaults({ readinessLagMs: 300 });
    const created = (await counters())["sandboxes.created"] ?? 0;
    const sending = sendTurn(token, cid, turnId, "a long job [slow] [long]");
    // The dispatch is under way once it has asked for the user's sandbox.
    for (let i = 0; i < 200 && ((await counters())["sandboxes.created"] ?? 0) === created; i++)
      await new Promise((r) => setTimeout(r, 10));
    const deleted = await api(`/v1/conversations/${cid}`, { token, method: "DELETE" });
    const sent = await sending;
    expect(deleted.status).toBe(200);
    expect(sent.status).not.toBe(500);
    expect((await api(`/v1/conversations/${cid}`, { token })).status).toBe(404);
    expect((await api(`/v1/conversations/${cid}/turns/${turnId}`, { token })).status).toBe(404);
    const stream = await collect(await api(`/v1/conversations/${cid}/events`, { token }), () => true, {
      timeoutMs: 500,
    }).catch(() => ({ events: [] }));
    expect(stream.events).toEqual([]);
    expect((await json(await api("/v1/conversations", { token }))).conversations).toEqual([]);
    if (sent.status === 202) {
      const run = await emulator(`/_emulator/executions/${(await json(sent)).executionId}`);
      expect(run.status ?? "gone").not.toBe("running");
    }
  });
});

describe("a refused turn", () => {
  it("changes nothing: no conversation, no title, no summary", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const refused = await sendTurn(token, cid, uid("turn"), "the refused title", {
      interactions: { "vendor.unknown": true },
    });
    expect(refused.status).toBe(400);
    for (const path of ["", "/messages", "/usage"])
      expect((await api(`/v1/conversations/${cid}${path}`, { token })).status).toBe(404);
    await setFaults({ failNext: { status: 503, count: 10, route: "runtime.run" } });
    expect((await sendTurn(token, cid, uid("turn"), "also refused")).status).toBe(502);
    await setFaults({});
    expect((await api(`/v1/conversations/${cid}`, { token })).status).toBe(404);
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "the real title");
    await waitForTurn(token, cid, turnId);
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).title).toBe("the real title");
  });
});

describe("reads of conversations that do not exist", () => {
  it("create nothing", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    for (const path of ["", "/messages", "/usage", "/turns/t1"])
      expect((await api(`/v1/conversations/${cid}${path}`, { token })).status).toBe(404);
    await collect(await api(`/v1/conversations/${cid}/events`, { token }), () => true, { timeoutMs: 300 }).catch(
      () => undefined,
    );
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(await deriveSessionId(secret, user, cid)));
    const tables = await runInDurableObject(stub, (_i: SessionObject, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master").toArray(),
    );
    expect(tables).toEqual([]);
  });
});

describe("malformed paths", () => {
  it("a bad percent-encoding is a 400 with a stream token as with a bearer", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const { token: streamToken } = await json(await api(`/v1/conversations/${cid}/stream-token`, { token, body: {} }));
    const bad = await SELF.fetch(`${BASE}/v1/conversations/%E0%A4%A/events?access_token=${streamToken}`);
    expect(bad.status).toBe(400);
    expect(
      (await SELF.fetch(`${BASE}/v1/conversations/%E0%A4%A/events`, { headers: { authorization: `Bearer ${token}` } }))
        .status,
    ).toBe(400);
  });
});

describe("minor", () => {
  it("only application/json is JSON: json-patch+json and other look-alikes are 415", async () => {
    const token = await tokenFor(uid("user"));
    for (const type of ["application/json-patch+json", "application/jsonx", "text/json"]) {
      const res = await api(`/v1/conversations/${uid("conv")}/turns`, {
        token,
        body: JSON.stringify({ turnId: "t", message: "hi" }),
        headers: { "content-type": type },
      });
      expect(res.status).toBe(415);
    }
    const ok = await api(`/v1/conversations/${uid("conv")}/turns`, {
      token,
      body: JSON.stringify({ turnId: uid("t"), message: "hi" }),
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(ok.status).toBe(202);
  });

  it("authenticated JSON answers are never cached", async () => {
    const token = await tokenFor(uid("user"));
    const res = await api("/v1/conversations", { token });
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect((await api(`/v1/conversations/${uid("conv")}`, { token })).headers.get("cache-control")).toBe("no-store");
  });

  it("upstream error text is not passed on verbatim", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    await setFaults({ failNext: { status: 503, count: 10, route: "runtime.run" } });
    const failed = await sendTurn(token, cid, uid("turn"), "during an outage");
    expect(failed.status).toBe(502);
    const error = (await json(failed)).error;
    expect(error.message).not.toContain("injected");
    expect(error.message).toBe("the agent service answered 503");
  });
});

describe("a dispatch admitted under another execution", () => {
  it("stops the run admitted in its place, and the same turn id can be sent again: it runs once, under a key of its own", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    const turnId = uid("turn");
    await setFaults({ admitWrongExecutionId: true });
    const refused = await sendTurn(token, cid, turnId, "admitted wrongly [slow]");
    expect(refused.status).toBe(502);
    const error = (await json(refused)).error;
    expect(error.code).toBe("admission_mismatch");
    expect(error.message).toContain("stopped");
    // The run admitted in place of the turn was stopped: it holds nothing upstream any more.
    const wrong = /admitted execution (\S+) instead/.exec(error.message)![1]!;
    expect((await emulator(`/_emulator/executions/${wrong}`)).status).toBe("cancelled");
    await setFaults({});
    const before = await counters();
    const again = await sendTurn(token, cid, turnId, "admitted wrongly [slow]");
    expect(again.status).toBe(202);
    const accepted = await json(again);
    const done = await waitForTurn(token, cid, turnId);
    expect(done.status).toBe("completed");
    const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
    expect(run.turnId).not.toBe(turnId);
    expect(String(run.turnId)).toMatch(new RegExp(`^${turnId.replace(/[.]/g, "\\.")}\\.r-`));
    expect((await counters())["runs.started"]! - (before["runs.started"] ?? 0)).toBe(1);
    // Sent once more: the same turn, never a second run.
    const cached = await sendTurn(token, cid, turnId, "admitted wrongly [slow]");
    expect(cached.status).toBe(200);
    expect((await counters())["runs.started"]! - (before["runs.started"] ?? 0)).toBe(1);
  });
});
