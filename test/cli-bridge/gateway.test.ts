/**
 * The public API with PROVIDER=cli-bridge, against the CLI Bridge stand-in: the chat frontend's
 * routes work unchanged (streaming, reconnects, retries, Stop, asks, usage), whichever transport
 * the model route takes.
 */
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { EventEnvelope } from "../../src/objects/session-store";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

const bridge = (env as unknown as Record<string, string>).CLI_BRIDGE_URL!;
const headers = { authorization: "Bearer standin-token", "content-type": "application/json" };
const control = async (path: string, body?: unknown) =>
  (await fetch(`${bridge}/_standin/${path}`, { method: body === undefined ? "GET" : "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) })).json() as Promise<any>;
const runsStarted = async () => Object.values((await control("counters")).counters.runsStarted as Record<string, number>).reduce((a, b) => a + b, 0);
const requests = async () => Object.values((await control("counters")).counters.requests as Record<string, number>).reduce((a, b) => a + b, 0);

const CODEX = "codex/default";
const PI = "pi/tangle-router/fake-echo";

afterEach(async () => {
  await control("faults", {});
});

async function conversation() {
  return { token: await tokenFor(uid("user")), cid: uid("conv") };
}

async function turnEvents(token: string, cid: string, after: number | string): Promise<EventEnvelope[]> {
  return (await collect(await api(`/v1/conversations/${cid}/events?after=${after}`, { token }), isTurnEnd)).events;
}

describe("a Codex-style conversation (one-shot runs)", () => {
  it("two turns: each streams and completes, and the second continues the same CLI conversation", async () => {
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const first = await json(await sendTurn(token, cid, t1, "hello bridge peer", { model: CODEX }));
    const events = await turnEvents(token, cid, first.after);
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", data: { result: { text: "echo: hello bridge peer" } } });
    // Each delta once, without the text so far; the text is the deltas in order (docs/sse-protocol.md).
    const parts = events.filter((e) => e.type === "message.part.updated");
    expect(parts.map((e) => e.data.delta).join("")).toBe("echo: hello bridge peer");
    expect(parts.map((e) => (e.data.part as { text?: string }).text)).toEqual(parts.map(() => undefined));
    const t2 = uid("turn");
    const second = await json(await sendTurn(token, cid, t2, "and again", { model: CODEX }));
    expect((await waitForTurn(token, cid, t2)).result.text).toBe("echo: and again");
    const [run1, run2] = [await control(`runs/${first.executionId}`), await control(`runs/${second.executionId}`)];
    expect(run1.request.session_id).toBeDefined();
    expect(run2.request.session_id).toBe(run1.request.session_id);
    expect(run2.request.model).toBe(CODEX);
    // Usage as the bridge reported it (deltas), on the turn and in the total.
    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    expect(usage.total).toMatchObject({ complete: true });
    expect(usage.total.inputTokens).toBeGreaterThan(0);
    expect(usage.turns[0].usage.outputTokens).toBeGreaterThan(0);
  });

  it("a retry of the same turn does not run it twice", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    const before = await runsStarted();
    expect((await sendTurn(token, cid, turnId, "once only", { model: CODEX })).status).toBe(202);
    expect([200, 202]).toContain((await sendTurn(token, cid, turnId, "once only", { model: CODEX })).status);
    await waitForTurn(token, cid, turnId);
    expect((await sendTurn(token, cid, turnId, "once only", { model: CODEX })).status).toBe(200);
    expect((await runsStarted()) - before).toBe(1);
  });

  it("a reader that reconnects mid-turn with Last-Event-ID loses and duplicates nothing", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "[slow:40] one two three four five six seven eight", { model: CODEX }));
    const early = await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), (_e, all) => all.length >= 3);
    const rest = await collect(await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": early.lastId! } }), isTurnEnd);
    const all = [...early.events, ...rest.events];
    expect(new Set(all.map((e) => e.seq)).size).toBe(all.length);
    const deltas = all.filter((e) => e.type === "message.part.updated").map((e) => e.data.delta as string);
    expect(deltas.join("")).toBe("echo: one two three four five six seven eight");
    expect(all.at(-1)!.type).toBe("turn.completed");
  });

  it("a bridge stream severed mid-run is resumed: the answer is whole, each part once", async () => {
    const { token, cid } = await conversation();
    await control("faults", { severStreams: { afterFrames: 3, count: 2 } });
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "[slow:10] alpha beta gamma delta epsilon", { model: CODEX }));
    const events = await turnEvents(token, cid, accepted.after);
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", data: { result: { text: "echo: alpha beta gamma delta epsilon" } } });
    const deltas = events.filter((e) => e.type === "message.part.updated").map((e) => e.data.delta as string);
    expect(deltas.join("")).toBe("echo: alpha beta gamma delta epsilon");
  });

  it("a cursor the bridge no longer holds (410) finishes the turn from the run snapshot, with stream_incomplete, never hangs", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    // The first stream is severed early; by then the run's replay window has expired.
    await control("faults", { severStreams: { afterFrames: 3, count: 1, routes: ["run-events"] } });
    const accepted = await json(await sendTurn(token, cid, turnId, "[slow:60] one two three four five", { model: CODEX }));
    // Once the reader's first stream was cut, the bridge forgets the run's replay.
    await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), (e) => e.type === "message.part.updated");
    await control("faults", { expireReplay: true });
    const events = await turnEvents(token, cid, accepted.after);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(events.some((e) => e.type === "warning" && e.data.code === "stream_incomplete")).toBe(true);
  });

  it("Stop ends the turn cancelled once the bridge confirms the run ended", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "[hang] waiting forever", { model: CODEX }));
    await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), (e) => e.type === "message.part.updated");
    const ack = await json(await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op"), reason: "stop" } }));
    expect(ack.status).toBe("accepted");
    expect(["cancelled", "cancel_requested"]).toContain(ack.effect);
    expect(await waitForTurn(token, cid, turnId)).toMatchObject({ status: "cancelled", cancelReason: "stop" });
    expect((await control(`runs/${accepted.executionId}`)).status).toBe("cancelled");
  });

  it("an error frame ends the turn failed with the bridge's message", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "[error] break it", { model: CODEX });
    const turn = await waitForTurn(token, cid, turnId);
    expect(turn.status).toBe("failed");
    expect(turn.error.message.length).toBeGreaterThan(0);
  });

  it("interaction kinds the route does not offer are refused before any call; so is a turn with no model route", async () => {
    const { token, cid } = await conversation();
    const before = await requests();
    const refused = await sendTurn(token, cid, uid("turn"), "ask me", { model: CODEX, interactions: { permission: true } });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error).toMatchObject({ code: "interaction_kind_unsupported", details: { unsupported: ["permission"] } });
    const noModel = await sendTurn(token, uid("conv"), uid("turn"), "no model anywhere");
    expect(noModel.status).toBe(400);
    expect((await json(noModel)).error.code).toBe("model_invalid");
    // Only the capability read of the first one reached the bridge: no run was started.
    expect((await requests()) - before).toBeLessThanOrEqual(1);
  });

  it("a bridge that refuses the gateway's token is a 502 that says authentication failed, never the token", async () => {
    const { token, cid } = await conversation();
    await control("faults", { rotateToken: true });
    const turnId = uid("turn");
    const res = await sendTurn(token, cid, turnId, "hello", { model: CODEX });
    expect(res.status).toBe(502);
    const body = await res.text();
    expect(JSON.parse(body).error).toMatchObject({ code: "upstream_error", message: expect.stringContaining("authentication") });
    expect(body).not.toContain("standin-token");
    await control("faults", {});
    // Nothing was stored: the same turn id works once the bridge takes the token again.
    expect((await sendTurn(token, cid, turnId, "hello", { model: CODEX })).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });
});

describe("a route's capability document", () => {
  // A route no other test uses, so its changed document reaches no one else.
  const ROUTE = "codex/gpt-5.5";
  const reads = async () => (await control("counters")).counters.requests["GET /v1/capabilities"] ?? 0;

  it("a group of another shape and fields the gateway does not read change nothing: turns run", async () => {
    await control("faults", { capabilities: { [ROUTE]: { set: { interactions: "none", observation: 3, futureGroup: { flag: true } } } } });
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "hello", { model: ROUTE })).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    const asks = await sendTurn(token, cid, uid("turn"), "ask me", { model: ROUTE, interactions: { permission: true } });
    expect((await json(asks)).error).toMatchObject({ code: "interaction_kind_unsupported", details: { unsupported: ["permission"] } });
  });

  it("a group gone, then back: turns 501 while it is gone and run again once it is back, the document read again on a refusal but not on every one", async () => {
    await control("faults", { capabilities: { [ROUTE]: { omit: ["streaming"] } } });
    const { token, cid } = await conversation();
    const refused = async () => {
      const res = await sendTurn(token, cid, uid("turn"), "hello", { model: ROUTE });
      expect(res.status).toBe(501);
      expect((await json(res)).error).toMatchObject({ code: "capability_denied", details: { missing: ["streaming.detach", "streaming.replay"] } });
    };
    await refused();
    const first = await reads();
    // Refusals in a row just after a read: at most one reads again (CAPABILITIES_RECHECK_MS is 2 s here).
    for (let i = 0; i < 3; i++) await refused();
    expect((await reads()) - first).toBeLessThanOrEqual(1);

    await control("faults", {});
    const restored = await reads();
    let attempts = 0;
    let accepted: Response | undefined;
    // Well inside the 10 s a route's document is reused for anyway: only a refusal's read can end this.
    for (const deadline = Date.now() + 6_000; !accepted && Date.now() < deadline; ) {
      attempts++;
      const res = await sendTurn(token, cid, uid("turn"), "hello again", { model: ROUTE });
      if (res.status === 202) accepted = res;
      else {
        expect(res.status).toBe(501);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    expect(accepted, "a turn runs again once the group is back").toBeDefined();
    const rereads = (await reads()) - restored;
    expect(rereads).toBeGreaterThanOrEqual(1);
    expect(rereads).toBeLessThan(attempts);
    expect((await waitForTurn(token, cid, (await json(accepted!)).turnId)).status).toBe("completed");
  });
});

describe("a Pi-style conversation (retained native session)", () => {
  it("a permission asked and answered from two devices at once: accepted once, the run goes on", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "[permission] run the tests", { model: PI, interactions: { permission: true } }));
    const asked = await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), (e) => e.type === "interaction.requested");
    const interaction = asked.events.at(-1)!.data.interaction as { id: string; kind: string };
    expect(interaction.kind).toBe("permission");
    const answer = (operationId: string) =>
      api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(interaction.id)}`, { token, body: { operationId, outcome: "accepted", data: { grant: "allow_once" } } });
    const acks = await Promise.all([answer(uid("op")), answer(uid("op"))].map(async (r) => (await json(await r)).status));
    expect(acks.sort()).toEqual(["accepted", "already_resolved_same"]);
    const events = await turnEvents(token, cid, asked.lastId!);
    expect(events.some((e) => e.type === "interaction.resolved" && e.data.status === "answered")).toBe(true);
    expect(events.some((e) => e.type === "message.part.updated" && (e.data.part as { type: string }).type === "tool")).toBe(true);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect((await control("counters")).counters.responds).toBeGreaterThanOrEqual(1);
  });

  it("Stop, then a next turn in a new bridge session: the conversation is told the agent starts afresh", async () => {
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const first = await json(await sendTurn(token, cid, t1, "[hang] long", { model: PI }));
    await collect(await api(`/v1/conversations/${cid}/events?after=${first.after}`, { token }), (e) => e.type === "message.part.updated");
    await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    expect((await waitForTurn(token, cid, t1)).status).toBe("cancelled");
    const t2 = uid("turn");
    const second = await json(await sendTurn(token, cid, t2, "are you there", { model: PI }));
    const events = await turnEvents(token, cid, second.after);
    expect(events.some((e) => e.type === "warning" && e.data.code === "agent_memory_reset")).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "turn.completed" });
    const [run1, run2] = [await control(`runs/${first.executionId}`), await control(`runs/${second.executionId}`)];
    expect(run2.sessionId).not.toBe(run1.sessionId);
  });
});
