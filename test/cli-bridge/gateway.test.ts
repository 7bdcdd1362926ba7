/**
 * The public API with PROVIDER=cli-bridge, against the CLI Bridge stand-in: the chat frontend's
 * routes work unchanged (streaming, reconnects, retries, Stop, asks, usage), whichever transport
 * the model route takes.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { deriveOwnerKey, deriveSessionId } from "../../src/auth/ids";
import type { EventEnvelope } from "../../src/session/store/records";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

const bridge = (env as unknown as Record<string, string>).CLI_BRIDGE_URL!;
const headers = { authorization: "Bearer standin-token", "content-type": "application/json" };
const control = async (path: string, body?: unknown) =>
  (
    await fetch(`${bridge}/_standin/${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  ).json() as Promise<any>;
const runsStarted = async () =>
  Object.values((await control("counters")).counters.runsStarted as Record<string, number>).reduce((a, b) => a + b, 0);
const requests = async () =>
  Object.values((await control("counters")).counters.requests as Record<string, number>).reduce((a, b) => a + b, 0);

const CODEX = "codex/default";
const PI = "pi/tangle-router/fake-echo";

afterEach(async () => {
  await control("faults", {});
  await control("variants", {});
});

async function conversation() {
  const user = uid("user");
  return { user, token: await tokenFor(user), cid: uid("conv") };
}

/** Waits until the turn shows its first streamed part (the run is under way upstream). */
async function untilStreaming(token: string, cid: string, after: number | string) {
  return collect(
    await api(`/v1/conversations/${cid}/events?after=${after}`, { token }),
    (e) => e.type === "message.part.updated",
  );
}

/**
 * A turn's answer as its events carry it: `turn.completed`'s result as it streamed, or, read after
 * the turn's end compacted the log (docs/sse-protocol.md §12: the end no longer repeats what the
 * text parts hold), its text parts' texts joined as the transcript joins them.
 */
function answerIn(events: EventEnvelope[]): string | undefined {
  const end = events.find((e) => e.type === "turn.completed");
  const result = (end?.data.result as { text?: string } | undefined)?.text;
  return result ?? textOf(events);
}

/** The text parts' texts, rebuilt by the rule of docs/sse-protocol.md §1.6, joined by a blank line. */
function textOf(events: EventEnvelope[]): string {
  const texts = new Map<string, string>();
  for (const e of events) {
    const part = e.data.part as { id: string; type: string; text?: string } | undefined;
    if (e.type !== "message.part.updated" || part?.type !== "text") continue;
    texts.set(
      part.id,
      typeof part.text === "string"
        ? part.text
        : (texts.get(part.id) ?? "") + ((e.data.delta as string | undefined) ?? ""),
    );
  }
  return [...texts.values()].filter(Boolean).join("\n\n");
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
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(answerIn(events)).toBe("echo: hello bridge peer");
    // Each delta once, without the text so far; the text is the deltas in order (docs/sse-protocol.md).
    // (Read after the turn ended, a run of deltas is one update with the part's whole text, §12.)
    const parts = events.filter((e) => e.type === "message.part.updated");
    expect(textOf(events)).toBe("echo: hello bridge peer");
    for (const e of parts)
      if (e.data.delta !== undefined) expect((e.data.part as { text?: string }).text).toBeUndefined();
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
    const accepted = await json(
      await sendTurn(token, cid, turnId, "[slow:40] one two three four five six seven eight", { model: CODEX }),
    );
    const early = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (_e, all) => all.length >= 3,
    );
    const rest = await collect(
      await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": early.lastId! } }),
      isTurnEnd,
    );
    const all = [...early.events, ...rest.events];
    expect(new Set(all.map((e) => e.seq)).size).toBe(all.length);
    expect(textOf(all)).toBe("echo: one two three four five six seven eight");
    expect(all.at(-1)!.type).toBe("turn.completed");
  });

  it("a bridge stream severed mid-run is resumed: the answer is whole, each part once", async () => {
    const { token, cid } = await conversation();
    await control("faults", { severStreams: { afterFrames: 3, count: 2 } });
    const turnId = uid("turn");
    const accepted = await json(
      await sendTurn(token, cid, turnId, "[slow:10] alpha beta gamma delta epsilon", { model: CODEX }),
    );
    const events = await turnEvents(token, cid, accepted.after);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(answerIn(events)).toBe("echo: alpha beta gamma delta epsilon");
    expect(textOf(events)).toBe("echo: alpha beta gamma delta epsilon");
  });

  it("a cursor the bridge no longer holds (410) finishes the turn from the run snapshot, with stream_incomplete, never hangs", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    // The first stream is severed early; by then the run's replay window has expired.
    await control("faults", { severStreams: { afterFrames: 3, count: 1, routes: ["run-events"] } });
    const accepted = await json(
      await sendTurn(token, cid, turnId, "[slow:60] one two three four five", { model: CODEX }),
    );
    // Once the reader's first stream was cut, the bridge forgets the run's replay.
    await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "message.part.updated",
    );
    await control("faults", { expireReplay: true });
    const events = await turnEvents(token, cid, accepted.after);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(events.some((e) => e.type === "warning" && e.data.code === "stream_incomplete")).toBe(true);
  });

  it("Stop ends the turn cancelled once the bridge confirms the run ended", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "[hang] waiting forever", { model: CODEX }));
    await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "message.part.updated",
    );
    const ack = await json(
      await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op"), reason: "stop" } }),
    );
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
    const refused = await sendTurn(token, cid, uid("turn"), "ask me", {
      model: CODEX,
      interactions: { permission: true },
    });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error).toMatchObject({
      code: "interaction_kind_unsupported",
      details: { unsupported: ["permission"] },
    });
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
    expect(JSON.parse(body).error).toMatchObject({
      code: "upstream_error",
      message: expect.stringContaining("authentication"),
    });
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
    await control("faults", {
      capabilities: { [ROUTE]: { set: { interactions: "none", observation: 3, futureGroup: { flag: true } } } },
    });
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "hello", { model: ROUTE })).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    const asks = await sendTurn(token, cid, uid("turn"), "ask me", {
      model: ROUTE,
      interactions: { permission: true },
    });
    expect((await json(asks)).error).toMatchObject({
      code: "interaction_kind_unsupported",
      details: { unsupported: ["permission"] },
    });
  });

  it("a group gone, then back: turns 501 while it is gone and run again once it is back, the document read again on a refusal but not on every one", async () => {
    await control("faults", { capabilities: { [ROUTE]: { omit: ["streaming"] } } });
    const { token, cid } = await conversation();
    const refused = async () => {
      const res = await sendTurn(token, cid, uid("turn"), "hello", { model: ROUTE });
      expect(res.status).toBe(501);
      expect((await json(res)).error).toMatchObject({
        code: "capability_denied",
        details: { missing: ["streaming.detach", "streaming.replay"] },
      });
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
    const accepted = await json(
      await sendTurn(token, cid, turnId, "[permission] run the tests", {
        model: PI,
        interactions: { permission: true },
      }),
    );
    const asked = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );
    const interaction = asked.events.at(-1)!.data.interaction as { id: string; kind: string };
    expect(interaction.kind).toBe("permission");
    const answer = (operationId: string) =>
      api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(interaction.id)}`, {
        token,
        body: { operationId, outcome: "accepted", data: { grant: "allow_once" } },
      });
    const acks = await Promise.all(
      [answer(uid("op")), answer(uid("op"))].map(async (r) => (await json(await r)).status),
    );
    expect(acks.sort()).toEqual(["accepted", "already_resolved_same"]);
    const events = await turnEvents(token, cid, asked.lastId!);
    expect(events.some((e) => e.type === "interaction.resolved" && e.data.status === "answered")).toBe(true);
    expect(
      events.some((e) => e.type === "message.part.updated" && (e.data.part as { type: string }).type === "tool"),
    ).toBe(true);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect((await control("counters")).counters.responds).toBeGreaterThanOrEqual(1);
  });

  it("Stop, then a next turn in a new bridge session: the conversation is told the agent starts afresh", async () => {
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const first = await json(await sendTurn(token, cid, t1, "[hang] long", { model: PI }));
    await collect(
      await api(`/v1/conversations/${cid}/events?after=${first.after}`, { token }),
      (e) => e.type === "message.part.updated",
    );
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

describe("the bridge restarts, crashes and shuts down (issue 18)", () => {
  it("a bridge restart does not end a retained conversation: the next turn opens a new bridge session, says agent_memory_reset, and runs", async () => {
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const first = await json(await sendTurn(token, cid, t1, "before the restart", { model: PI }));
    expect((await waitForTurn(token, cid, t1)).status).toBe("completed");
    await control("restart", {});
    const t2 = uid("turn");
    const sent = await sendTurn(token, cid, t2, "after the restart", { model: PI });
    expect(sent.status).toBe(202);
    const second = await json(sent);
    const events = await turnEvents(token, cid, second.after);
    expect(events.filter((e) => e.type === "warning").map((e) => e.data.code)).toEqual(["agent_memory_reset"]);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(answerIn(events)).toBe("echo: after the restart");
    const [run1, run2] = [await control(`runs/${first.executionId}`), await control(`runs/${second.executionId}`)];
    expect(run2.sessionId).not.toBe(run1.sessionId);
    expect((await control(`sessions/${encodeURIComponent(run1.sessionId)}`)).status).toBe("unknown");
    // The new session goes on: the next turn continues it, with nothing to say.
    const t3 = uid("turn");
    const third = await json(await sendTurn(token, cid, t3, "and on", { model: PI }));
    const more = await turnEvents(token, cid, third.after);
    expect(more.some((e) => e.type === "warning")).toBe(false);
    expect((await control(`runs/${third.executionId}`)).sessionId).toBe(run2.sessionId);
  });

  it("a crash mid-run ends the turn at once, failed upstream_lost, one-shot and retained; the conversation goes on", async () => {
    const codex = await conversation();
    const pi = await conversation();
    const [c1, p1] = [uid("turn"), uid("turn")];
    const codexRun = await json(await sendTurn(codex.token, codex.cid, c1, "[hang] crash under me", { model: CODEX }));
    const piRun = await json(await sendTurn(pi.token, pi.cid, p1, "[hang] crash under me too", { model: PI }));
    await untilStreaming(codex.token, codex.cid, codexRun.after);
    await untilStreaming(pi.token, pi.cid, piRun.after);
    await control("restart", { crash: true });
    for (const [who, turnId] of [
      [codex, c1],
      [pi, p1],
    ] as const) {
      const turn = await waitForTurn(who.token, who.cid, turnId);
      expect(turn).toMatchObject({ status: "failed", error: { code: "upstream_lost" } });
    }
    expect((await control(`runs/${codexRun.executionId}`)).status).toBe("unknown");
    // New turns run: no session_busy, and the retained one in a new bridge session.
    const [c2, p2] = [uid("turn"), uid("turn")];
    expect((await sendTurn(codex.token, codex.cid, c2, "after the crash", { model: CODEX })).status).toBe(202);
    expect((await sendTurn(pi.token, pi.cid, p2, "after the crash", { model: PI })).status).toBe(202);
    expect((await waitForTurn(codex.token, codex.cid, c2)).result.text).toBe("echo: after the crash");
    expect((await waitForTurn(pi.token, pi.cid, p2)).result.text).toBe("echo: after the crash");
  });

  it("a run the restarted bridge no longer knows (404) ends the turn failed upstream_lost", async () => {
    const { token, cid } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "[hang] forget me", { model: CODEX }));
    await untilStreaming(token, cid, accepted.after);
    await control("restart", { crash: true, forgetOneShotRuns: true });
    expect(await waitForTurn(token, cid, turnId)).toMatchObject({ status: "failed", error: { code: "upstream_lost" } });
  });

  it("Stop on a run the bridge lost in a crash ends the turn cancelled (the bridge takes the cancel but can never confirm it), whichever answer it gives", async () => {
    for (const cancelAnswer of ["legacy", "acknowledgement"] as const) {
      await control("variants", { cancelAnswer });
      const { token, cid } = await conversation();
      const turnId = uid("turn");
      const accepted = await json(
        await sendTurn(token, cid, turnId, "[hang] stop me after the crash", { model: CODEX }),
      );
      await untilStreaming(token, cid, accepted.after);
      // Every bridge answer is slow from here: the Stop reaches the turn while its reader still waits.
      await control("faults", { delayHeaders: { ms: 2500 } });
      await control("restart", { crash: true });
      const ack = await json(
        await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op"), reason: "stop" } }),
      );
      await control("faults", {});
      expect(ack, cancelAnswer).toMatchObject({ status: "accepted", effect: "not_live" });
      expect(await waitForTurn(token, cid, turnId), cancelAnswer).toMatchObject({
        status: "cancelled",
        cancelReason: "stop",
      });
    }
  });

  it("a run the bridge cancels as it shuts down is not a Stop: the turn fails upstream_cancelled, one-shot and retained, however soon the bridge is back (issue 36)", async () => {
    // Back at once, or after 2.5 s: either way the bridge recorded no end (its runs read unknown once it is back).
    for (const downMs of [0, 2500]) {
      const codex = await conversation();
      const pi = await conversation();
      const [c1, p1] = [uid("turn"), uid("turn")];
      const codexRun = await json(
        await sendTurn(codex.token, codex.cid, c1, "[hang] shut down under me", { model: CODEX }),
      );
      const piRun = await json(await sendTurn(pi.token, pi.cid, p1, "[hang] shut down under me too", { model: PI }));
      await untilStreaming(codex.token, codex.cid, codexRun.after);
      await untilStreaming(pi.token, pi.cid, piRun.after);
      await control("restart", { downMs });
      for (const [who, turnId, run] of [
        [codex, c1, codexRun],
        [pi, p1, piRun],
      ] as const) {
        const turn = await waitForTurn(who.token, who.cid, turnId);
        expect(turn, `down ${downMs} ms`).toMatchObject({ status: "failed", error: { code: "upstream_cancelled" } });
        expect(turn.cancelReason ?? null).toBeNull();
        expect((await control(`runs/${run.executionId}`)).status).toBe("unknown");
        const end = (await turnEvents(who.token, who.cid, run.after)).at(-1)!;
        expect(end).toMatchObject({ type: "turn.failed", data: { error: { code: "upstream_cancelled" } } });
      }
    }
    // The next test finds the bridge up.
    while (
      !(await fetch(`${bridge}/health`).then(
        (r) => r.ok,
        () => false,
      ))
    )
      await new Promise((resolve) => setTimeout(resolve, 200));
  });
});

describe("changing model inside a conversation (issue 18)", () => {
  it("Pi → Codex → Pi → another Codex route: each route its own bridge session, agent_memory_reset on each switch, never a 502", async () => {
    const { token, cid } = await conversation();
    const turn = async (message: string, model: string) => {
      const turnId = uid("turn");
      const sent = await sendTurn(token, cid, turnId, message, { model });
      expect(sent.status, `${model}: ${message}`).toBe(202);
      const accepted = await json(sent);
      const events = await turnEvents(token, cid, accepted.after);
      expect(events.at(-1)!.type, `${model}: ${message}`).toBe("turn.completed");
      expect(answerIn(events), `${model}: ${message}`).toBe(`echo: ${message}`);
      const run = await control(`runs/${accepted.executionId}`);
      return {
        resets: events.filter((e) => e.type === "warning" && e.data.code === "agent_memory_reset").length,
        sessionId: run.sessionId as string,
        run,
      };
    };
    const pi1 = await turn("first on pi", PI);
    expect(pi1.resets).toBe(0);
    const codex1 = await turn("now on codex", CODEX);
    expect(codex1.resets).toBe(1);
    expect(codex1.run.request.session_id).toBe(codex1.sessionId);
    const pi2 = await turn("back on pi", PI);
    expect(pi2.resets).toBe(1);
    // Pi's own session again: its memory of its own turns carries over.
    expect(pi2.sessionId).toBe(pi1.sessionId);
    const other = await turn("another codex route", "codex/gpt-5.4");
    expect(other.resets).toBe(1);
    const again = await turn("same route again", "codex/gpt-5.4");
    expect(again.resets).toBe(0);
    expect(new Set([pi1.sessionId, codex1.sessionId, other.sessionId]).size).toBe(3);
    expect(again.sessionId).toBe(other.sessionId);
    // The retained session was opened on its own route, and runs it.
    expect((await control(`sessions/${encodeURIComponent(pi1.sessionId)}`)).request.model).toBe(PI);
  });
});

describe("nothing private is relayed (issue 18)", () => {
  const consoleLines: string[] = [];
  const spies: Array<{ mockRestore(): void }> = [];
  beforeEach(() => {
    consoleLines.length = 0;
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      const original = console[level].bind(console);
      spies.push(
        vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
          consoleLines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
          original(...args);
        }),
      );
    }
  });
  afterEach(() => {
    for (const spy of spies.splice(0)) spy.mockRestore();
  });

  /** Every row of every table, and every stored entry, of the conversation's and the user's objects. */
  async function storedText(user: string, cid: string): Promise<string> {
    const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;
    const read = (namespace: typeof env.SESSIONS | typeof env.USERS, name: string) =>
      runInDurableObject(
        namespace.get(namespace.idFromName(name)),
        async (_instance: unknown, state: DurableObjectState) => {
          const tables = state.storage.sql
            .exec<{ name: string }>(
              "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'",
            )
            .toArray();
          const rows = tables.map(({ name: table }) =>
            JSON.stringify(state.storage.sql.exec(`SELECT * FROM "${table}"`).toArray()),
          );
          return [...rows, JSON.stringify([...(await state.storage.list())])].join("\n");
        },
      );
    return (
      (await read(env.SESSIONS, await deriveSessionId(secret, user, cid))) +
      (await read(env.USERS, await deriveOwnerKey(secret, user)))
    );
  }

  it("a Pi permission answered: the bridge's notice (the grant and its per-session nonce) reaches no viewer, stored row or log line; nor does the bridge's token", async () => {
    const { user, token, cid } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(
      await sendTurn(token, cid, turnId, "[permission] run the tests", {
        model: PI,
        interactions: { permission: true },
      }),
    );
    const asked = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );
    const interaction = asked.events.at(-1)!.data.interaction as { id: string };
    const answer = await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(interaction.id)}`, {
      token,
      body: { operationId: uid("op"), outcome: "accepted", data: { grant: "allow_once" } },
    });
    expect((await json(answer)).status).toBe("accepted");
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");

    // The notice, as the bridge wrote it (so the scan looks for what really was upstream).
    const upstream = await (
      await fetch(`${bridge}/v1/runs/${encodeURIComponent(accepted.executionId)}/events`, { headers })
    ).text();
    const notice = /cli-bridge\.permission-applied\.v1:([0-9a-f]{32})-\d+:allow_once/.exec(upstream);
    expect(notice, "the bridge wrote its permission notice").not.toBeNull();

    const seen: Array<[string, string]> = [];
    const record = async (where: string, res: Response) =>
      seen.push([where, `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n")}\n${await res.text()}`]);
    const all = await collect(await api(`/v1/conversations/${cid}/events?after=0`, { token }), isTurnEnd);
    seen.push(["the event stream", JSON.stringify(all.frames)]);
    for (const path of [
      `/v1/conversations/${cid}`,
      `/v1/conversations/${cid}/messages`,
      `/v1/conversations/${cid}/turns/${turnId}`,
      `/v1/conversations/${cid}/usage`,
      "/v1/conversations",
    ]) {
      await record(path, await api(path, { token }));
    }
    await record("the AI SDK messages", await api(`/v1/chat/${cid}/messages`, { token }));
    seen.push(["stored rows", await storedText(user, cid)]);
    seen.push(["console lines", consoleLines.join("\n")]);
    const markers = {
      "the permission notice": "permission-applied",
      "the bridge's nonce": notice![1]!,
      "the bridge token": "standin-token",
    };
    const found = seen.flatMap(([where, text]) =>
      Object.entries(markers)
        .filter(([, marker]) => text.includes(marker))
        .map(([name]) => `${name} in ${where}`),
    );
    expect(found).toEqual([]);
    // The scan read what it was meant to: the turn, its ask and its answer are all there.
    expect(seen[0]![1]).toContain(interaction.id);
    expect(seen[0]![1]).toContain("interaction.resolved");
    expect(
      consoleLines.some((l) => l.includes("environment ready")),
      "the spy sees what the objects log",
    ).toBe(true);
  });
});

describe("retained turns carry their answer (issue 18)", () => {
  it("a completed Pi turn's answer is on the turn and on turn.completed, also when the reader joined mid-run", async () => {
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const first = await json(await sendTurn(token, cid, t1, "[tool] a retained answer", { model: PI }));
    const events = await turnEvents(token, cid, first.after);
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(answerIn(events)).toBe("echo: a retained answer");
    expect((await waitForTurn(token, cid, t1)).result.text).toBe("echo: a retained answer");
    // The reader's stream is cut after a few events and resumed from its cursor.
    await control("faults", { severStreams: { afterFrames: 6, count: 1, routes: ["run-events"] } });
    const t2 = uid("turn");
    await sendTurn(token, cid, t2, "[slow:20] cut me off somewhere in the middle", { model: PI });
    expect((await waitForTurn(token, cid, t2)).result.text).toBe("echo: cut me off somewhere in the middle");
  });
});

describe("agent-provider-cli-bridge's other rules (issue 18)", () => {
  it("a terminal snapshot that names another request digest, or another run, is refused: the turn fails upstream_mismatch", async () => {
    for (const [misattributed, model] of [
      ["request-digest", CODEX],
      ["run-id", PI],
    ] as const) {
      const { token, cid } = await conversation();
      await control("faults", { misattributedSnapshots: misattributed });
      const turnId = uid("turn");
      await sendTurn(token, cid, turnId, "whose end is this", { model });
      expect(await waitForTurn(token, cid, turnId), misattributed).toMatchObject({
        status: "failed",
        error: { code: "upstream_mismatch" },
      });
    }
  });

  it("envelopes that name another run are refused: none of them is shown, each is a warning", async () => {
    const { token, cid } = await conversation();
    await control("faults", { misattributedEnvelopes: true });
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "not my events", { model: PI }));
    await waitForTurn(token, cid, turnId);
    await control("faults", {});
    const events = await turnEvents(token, cid, accepted.after);
    expect(events.some((e) => e.type === "message.part.updated")).toBe(false);
    const refused = events.filter((e) => e.type === "warning" && e.data.code === "invalid_upstream_frame");
    expect(refused.length).toBeGreaterThan(0);
    expect(String(refused[0]!.data.message)).toContain(`belongs to run ${accepted.executionId}-other`);
    expect(events.at(-1)!.data.result ?? {}).not.toMatchObject({ text: "echo: not my events" });
  });

  it("one-shot Pi (a bridge that proves no native continuation): each run's session is closed once its end is confirmed, once; the next turn starts a new one and says so", async () => {
    await control("variants", { piTransport: "one-shot" });
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const first = await json(await sendTurn(token, cid, t1, "one shot on pi", { model: PI }));
    expect((await waitForTurn(token, cid, t1)).result.text).toBe("echo: one shot on pi");
    const run1 = await control(`runs/${first.executionId}`);
    expect(run1).toMatchObject({ kind: "one-shot", provider: "pi" });
    expect(await control(`sessions/${encodeURIComponent(run1.sessionId)}`)).toMatchObject({
      api: "legacy",
      status: "closed",
      closes: 1,
    });
    const t2 = uid("turn");
    const second = await json(await sendTurn(token, cid, t2, "and another", { model: PI }));
    const events = await turnEvents(token, cid, second.after);
    expect(events.filter((e) => e.type === "warning").map((e) => e.data.code)).toEqual(["agent_memory_reset"]);
    expect(events.at(-1)).toMatchObject({ type: "turn.completed" });
    const run2 = await control(`runs/${second.executionId}`);
    expect(run2.sessionId).not.toBe(run1.sessionId);
    // Deleting the conversation cleans up again without a second close of a closed session.
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    expect((await control(`sessions/${encodeURIComponent(run1.sessionId)}`)).closes).toBe(1);
    expect((await control(`sessions/${encodeURIComponent(run2.sessionId)}`)).closes).toBe(1);
  });
});

describe("queued turns on the CLI Bridge", () => {
  const queue = (token: string, cid: string, turnId: string, message: string, model: string) =>
    sendTurn(token, cid, turnId, message, { model, whenBusy: "queue" });

  for (const model of [CODEX, PI]) {
    it(`${model}: turns sent while one runs wait, then run in order, each dispatched once, none starting the agent afresh`, async () => {
      const { token, cid } = await conversation();
      const started = await runsStarted();
      const first = uid("turn");
      await sendTurn(token, cid, first, "first [slow:100]", { model });
      const queued = [uid("q"), uid("q")];
      const views = [];
      for (const [i, turnId] of queued.entries()) {
        const res = await queue(token, cid, turnId, `queued ${i + 1}`, model);
        expect(res.status).toBe(202);
        views.push(await json(res));
      }
      expect(views.map((v) => v.status)).toEqual(["queued", "queued"]);
      // A retry of a queued send is the same turn (queued still, or started by now), never a second one.
      expect(await json(await queue(token, cid, queued[0]!, "queued 1", model))).toMatchObject({
        turnId: queued[0],
        executionId: views[0].executionId,
      });
      const last = queued[1]!;
      const { events } = await collect(
        await api(`/v1/conversations/${cid}/events`, { token }),
        (e) => isTurnEnd(e) && e.turnId === last,
        { timeoutMs: 15_000 },
      );
      expect(events.filter((e) => e.type === "turn.accepted").map((e) => e.turnId)).toEqual([first, ...queued]);
      expect(events.filter(isTurnEnd).map((e) => [e.turnId, e.type])).toEqual(
        [first, ...queued].map((id) => [id, "turn.completed"]),
      );
      expect((await runsStarted()) - started).toBe(3);
      const texts = await Promise.all(queued.map(async (id) => (await waitForTurn(token, cid, id)).result.text));
      expect(texts).toEqual(["echo: queued 1", "echo: queued 2"]);
      expect(events.some((e) => e.type === "warning" && e.data.code === "agent_memory_reset")).toBe(false);
    });
  }
});

describe("branches on a CLI Bridge (no fork on its wire: docs/api.md#branches)", () => {
  it("an edit of an earlier message is refused with a capability error before any bridge call; the first message sent again runs in a fresh session; the old line goes on in its own", async () => {
    const { token, cid } = await conversation();
    const t1 = uid("turn");
    const first = await json(await sendTurn(token, cid, t1, "one", { model: CODEX }));
    await waitForTurn(token, cid, t1);
    const t2 = uid("turn");
    await json(await sendTurn(token, cid, t2, "two", { model: CODEX }));
    await waitForTurn(token, cid, t2);

    const [calls, runs] = [await requests(), await runsStarted()];
    const refused = await sendTurn(token, cid, uid("turn"), "two, edited", { model: CODEX, parentTurnId: t1 });
    expect(refused.status).toBe(501);
    expect(await json(refused)).toMatchObject({
      error: { code: "capability_denied", details: { missing: ["session.fork"] } },
    });
    expect(await requests()).toBe(calls);
    expect(await runsStarted()).toBe(runs);

    // The first message again: nothing to copy, so a fresh agent session of its own.
    const again = uid("turn");
    const fresh = await json(await sendTurn(token, cid, again, "one, again", { model: CODEX, parentTurnId: null }));
    expect(fresh.parentTurnId).toBeNull();
    expect(fresh.branch).toBeGreaterThan(0);
    expect((await waitForTurn(token, cid, again)).result.text).toBe("echo: one, again");
    const [run1, runAgain] = [await control(`runs/${first.executionId}`), await control(`runs/${fresh.executionId}`)];
    expect(runAgain.request.session_id).not.toBe(run1.request.session_id);
    const events = await turnEvents(token, cid, fresh.after);
    expect(events.some((e) => e.type === "warning" && e.data.code === "agent_memory_reset")).toBe(false);
    // Its next turn continues its own session.
    const onFresh = uid("turn");
    const next = await json(await sendTurn(token, cid, onFresh, "one, then more", { model: CODEX }));
    expect(next.branch).toBe(fresh.branch);
    await waitForTurn(token, cid, onFresh);
    expect((await control(`runs/${next.executionId}`)).request.session_id).toBe(runAgain.request.session_id);

    // Branch 0 goes on in its own session.
    const t3 = uid("turn");
    const third = await json(await sendTurn(token, cid, t3, "three", { model: CODEX, parentTurnId: t2 }));
    expect(third.branch).toBe(0);
    await waitForTurn(token, cid, t3);
    expect((await control(`runs/${third.executionId}`)).request.session_id).toBe(run1.request.session_id);
    // A delete ends every branch's session.
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
  });
});

describe("choosing the agent on the CLI Bridge (docs/api.md#choosing-the-agent)", () => {
  it("GET /v1/agents lists its routes by harness; a conversation's agent is its route's harness; the Sandbox-only fields are refused before any call", async () => {
    const { token, cid } = await conversation();
    const catalog = await json(await api("/v1/agents", { token }));
    expect(catalog).toMatchObject({ provider: "cli-bridge", perTurnBackend: false });
    expect(catalog.backends.find((b: { type: string }) => b.type === "pi").models).toContain(PI);

    const before = await requests();
    for (const [extra, field] of [
      [{ providerOptions: { backend: { type: "pi" } } }, "providerOptions.backend"],
      [{ credential: "mine" }, "credential"],
      [{ mcpServers: ["docs"] }, "mcpServers"],
      [{ instructions: "Be brief." }, "instructions"],
      [{ systemPrompt: "You are terse." }, "systemPrompt"],
    ] as const) {
      const res = await sendTurn(token, cid, uid("turn"), "hi", { model: CODEX, ...extra });
      const body = await json(res);
      expect({ status: res.status, code: body.error.code, field: body.error.details?.field }).toEqual({
        status: 400,
        code: "unsupported_field",
        field,
      });
    }
    expect(await requests()).toBe(before);

    await sendTurn(token, cid, "t1", "hello", { model: PI });
    await waitForTurn(token, cid, "t1");
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).agent).toEqual({
      backend: "pi",
      model: PI,
      chosen: "first-turn",
      credential: null,
      mcpServers: [],
    });
  });
});
