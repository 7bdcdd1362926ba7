/**
 * The CLI Bridge's sessions through the public API, against the stand-in taught the real bridge's
 * process slots, jail and configuration errors (issue 36): a bridge at capacity is a clear,
 * retryable refusal; an idle retained session gives its slot back; a delete closes every bridge
 * session the conversation opened; the bridge's refusals say what to set, without its host's
 * paths. The stand-in's root instance (the gateway's CLI_BRIDGE_URL): each test puts back the
 * settings, faults and variants it changed.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { deriveSessionId } from "../../src/auth/ids";
import type { EventEnvelope } from "../../src/session/store/records";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

const testEnv = env as unknown as Record<string, string>;
const bridge = testEnv.CLI_BRIDGE_URL!;
const headers = { authorization: "Bearer standin-token", "content-type": "application/json" };
// Control answers are read field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const control = async (path: string, body?: unknown): Promise<any> =>
  (
    await fetch(`${bridge}/_standin/${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  ).json();
const slotsInUse = async () =>
  ((await (await fetch(`${bridge}/health`)).json()) as { executor: { in_flight: number } }).executor.in_flight;
const session = async (id: string) => control(`sessions/${encodeURIComponent(id)}`);

const CODEX = "codex/default";
const PI = "pi/tangle-router/fake-echo";
/** The stand-in's Pi models.json, on its host. */
const HOST_FILE = "/home/bridge-operator/.pi/agent/models.json";

let settings: Record<string, unknown>;
beforeEach(async () => {
  settings = (await control("settings")).settings;
});
afterEach(async () => {
  await control("settings", settings);
  await control("faults", {});
  await control("variants", {});
});

async function conversation() {
  const user = uid("user");
  return { user, token: await tokenFor(user), cid: uid("conv") };
}

async function turnEvents(token: string, cid: string, after: number | string): Promise<EventEnvelope[]> {
  return (await collect(await api(`/v1/conversations/${cid}/events?after=${after}`, { token }), isTurnEnd)).events;
}

/** The conversation's session object. */
async function sessionObject(user: string, cid: string) {
  return env.SESSIONS.get(env.SESSIONS.idFromName(await deriveSessionId(testEnv.SESSION_ID_SECRET!, user, cid)));
}

describe("a CLI Bridge at capacity (issue 36)", () => {
  it("a turn is refused 503 upstream_at_capacity naming the limit, retryable; an idle retained session is closed by its conversation's alarm, which gives the slot back: the refused turn runs, and the idle conversation's next turn opens a new session and says the agent starts afresh", async () => {
    // One slot more than the sessions earlier files left open: the Pi conversation takes it.
    const limit = (await slotsInUse()) + 1;
    await control("settings", { maxConcurrency: limit, healthProbeTimeoutMs: 200, acquireDeadlineMs: 200 });
    const pi = await conversation();
    const p1 = uid("turn");
    const first = await json(await sendTurn(pi.token, pi.cid, p1, "hold a slot", { model: PI }));
    expect((await waitForTurn(pi.token, pi.cid, p1)).status).toBe("completed");
    expect(await slotsInUse()).toBe(limit);

    const codex = await conversation();
    const c1 = uid("turn");
    const refused = await sendTurn(codex.token, codex.cid, c1, "is there room", { model: CODEX });
    expect(refused.status).toBe(503);
    const error = (await json(refused)).error;
    expect(error).toMatchObject({
      code: "upstream_at_capacity",
      details: { retryable: true, limit, inUse: limit, setting: "BRIDGE_HOST_MAX_CONCURRENCY" },
    });
    expect(error.message).toContain(`all ${limit} of its agent process slots (BRIDGE_HOST_MAX_CONCURRENCY) are taken`);

    // The Pi conversation has been idle for longer than CLI_BRIDGE_SESSION_IDLE_MS (10 min): its alarm closes the session.
    const stub = await sessionObject(pi.user, pi.cid);
    await runInDurableObject(stub, (_instance: unknown, state: DurableObjectState) => {
      state.storage.sql.exec(
        "UPDATE turns SET completed_at = ?, updated_at = ?",
        Date.now() - 11 * 60_000,
        Date.now() - 11 * 60_000,
      );
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const held = (await control(`runs/${first.executionId}`)).sessionId as string;
    expect((await session(held)).status).toBe("closed");
    expect(await slotsInUse()).toBe(limit - 1);

    // The refused turn, sent again under its id, runs.
    expect((await sendTurn(codex.token, codex.cid, c1, "is there room", { model: CODEX })).status).toBe(202);
    expect((await waitForTurn(codex.token, codex.cid, c1)).result.text).toBe("echo: is there room");

    const p2 = uid("turn");
    const second = await json(await sendTurn(pi.token, pi.cid, p2, "back after a while", { model: PI }));
    const events = await turnEvents(pi.token, pi.cid, second.after);
    const warnings = events.filter((e) => e.type === "warning");
    expect(warnings.map((e) => e.data.code)).toEqual(["agent_memory_reset"]);
    expect(String(warnings[0]!.data.message)).toContain("idle");
    expect(events.at(-1)).toMatchObject({
      type: "turn.completed",
      data: { result: { text: "echo: back after a while" } },
    });
    expect((await control(`runs/${second.executionId}`)).sessionId).not.toBe(held);
  });
});

describe("a conversation's bridge sessions (issue 36)", () => {
  it("Pi → Codex → DELETE: the Pi session is closed too, and its slot given back", async () => {
    const before = await slotsInUse();
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const pi = await json(await sendTurn(token, cid, t1, "on pi", { model: PI }));
    await waitForTurn(token, cid, t1);
    const t2 = uid("turn");
    await sendTurn(token, cid, t2, "on codex", { model: CODEX });
    await waitForTurn(token, cid, t2);
    const piSession = (await control(`runs/${pi.executionId}`)).sessionId as string;
    expect((await session(piSession)).status).toBe("idle");
    expect(await slotsInUse()).toBe(before + 1);

    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    expect((await session(piSession)).status).toBe("closed");
    expect(await slotsInUse()).toBe(before);
  });

  it("a bridge without its fs-jail: a Pi turn is refused 501 provider_unavailable saying to set BRIDGE_JAIL_MODE=fs-jail on the bridge (the request's jail does not reach it)", async () => {
    await control("settings", { jailMode: "off" });
    const { token, cid } = await conversation();
    const refused = await sendTurn(token, cid, uid("turn"), "run the tests", { model: PI });
    expect(refused.status).toBe(501);
    const error = (await json(refused)).error;
    expect(error.code).toBe("provider_unavailable");
    expect(error.message).toContain("set BRIDGE_JAIL_MODE=fs-jail where the bridge runs");
    expect(error.message).toContain("not from CLI_BRIDGE_EXECUTION");
  });
});

describe("the bridge host's paths are not shown (issue 36)", () => {
  const warned: string[] = [];
  beforeEach(() => {
    warned.length = 0;
    const original = console.warn.bind(console);
    vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => {
      warned.push(args.map(String).join(" "));
      original(...args);
    });
  });
  afterEach(() => vi.restoreAllMocks());

  it("a one-shot run failed on the bridge's configuration: turn.failed, the turn and /messages name the file without its path; the server log keeps it", async () => {
    await control("variants", { piTransport: "one-shot" });
    await control("faults", { piModelUnlisted: true });
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "hello", { model: PI }));
    const turn = await waitForTurn(token, cid, turnId);
    expect(turn).toMatchObject({ status: "failed", error: { code: "not_configured" } });
    expect(turn.error.message).toContain("no explicit entry in <path on the bridge>/models.json");
    const seen = [
      JSON.stringify(turn),
      JSON.stringify(await turnEvents(token, cid, accepted.after)),
      await (await api(`/v1/conversations/${cid}/messages`, { token })).text(),
      await (await api(`/v1/conversations/${cid}`, { token })).text(),
    ];
    for (const text of seen) expect(text).not.toContain("/home/bridge-operator");
    expect(seen[1]).toContain("<path on the bridge>/models.json");
    expect(warned.some((line) => line.includes(HOST_FILE))).toBe(true);
  });

  it("a retained session refused on the bridge's configuration: 501 provider_unavailable, the reason without the path", async () => {
    await control("faults", { piModelUnlisted: true });
    const { token, cid } = await conversation();
    const refused = await sendTurn(token, cid, uid("turn"), "hello", { model: PI });
    expect(refused.status).toBe(501);
    const text = await refused.text();
    expect(JSON.parse(text).error).toMatchObject({
      code: "provider_unavailable",
      message: expect.stringContaining("<path on the bridge>/models.json"),
    });
    expect(text).not.toContain("/home/bridge-operator");
  });
});
