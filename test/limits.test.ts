/**
 * Deployment limits reached. This project runs with EVENT_LOG_MAX_EVENTS=30, ADMISSION_TIMEOUT_MS=300,
 * UPSTREAM_IDLE_TIMEOUT_MS=250, RATE_LIMIT_TURNS_PER_MINUTE=4, RATE_LIMIT_STREAMS_PER_MINUTE=6 and
 * WORKSPACE_CHECKPOINTS_MAX=2, WORKSPACE_FORKS_MAX=1.
 */

import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { expectedUpstream, seenUpstream } from "./expected";
import {
  api,
  collect,
  counters,
  emulator,
  isTurnEnd,
  json,
  runTurn,
  sendTurn,
  setFaults,
  tokenFor,
  uid,
  waitForTurn,
} from "./helpers";
import { openSocket } from "./terminal-socket";

afterEach(async () => {
  await setFaults({});
});

describe("a log trimmed into a turn", () => {
  it("keeps the turn's whole message: intro, reasoning and tool parts survive in /messages", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = uid("turn");
    await sendTurn(token, cid, first, "first answer [long]");
    await waitForTurn(token, cid, first);
    const before = (await json(await api(`/v1/conversations/${cid}/messages`, { token }))).messages[1];
    const second = uid("turn");
    await sendTurn(token, cid, second, "second answer");
    await waitForTurn(token, cid, second);
    const { messages } = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const after = messages[1];
    // The first turn's events are (partly) gone from the log, its message is not.
    expect(after.parts.map((p: { type: string; id: string }) => `${p.type}:${p.id}`)).toEqual(
      before.parts.map((p: { type: string; id: string }) => `${p.type}:${p.id}`),
    );
    expect(after.parts.some((p: { type: string }) => p.type === "reasoning")).toBe(true);
    expect(after.parts.some((p: { type: string }) => p.type === "tool")).toBe(true);
    expect(
      after.parts
        .filter((p: { type: string }) => p.type === "text")
        .map((p: { text: string }) => p.text)
        .join("\n\n"),
    ).toBe(after.text);
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.lastEventId).toBeGreaterThan(30);
  });
});

describe("a dispatch stream that admits nothing (ADMISSION_TIMEOUT_MS=300)", () => {
  it("looks the run up by its execution id and takes it when the session names it: the turn runs", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    await setFaults({ withholdAdmission: true });
    const turnId = uid("turn");
    const res = await sendTurn(token, cid, turnId, "admitted in silence");
    expect(res.status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });
});

describe("an upstream body that goes silent (UPSTREAM_IDLE_TIMEOUT_MS=250)", () => {
  it("is dropped, and the reader reconnects from its cursor: nothing lost, nothing twice", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    // The dispatch stream and the reader's stream each go silent for longer than the idle timeout.
    await setFaults({ stallStreamMs: 1200, stallStreams: 2 });
    const opened = (await counters())["streams.opened"] ?? 0;
    const turnId = uid("turn");
    const message = "stalled once";
    const accepted = await json(await sendTurn(token, cid, turnId, message));
    const events = (
      await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd, {
        timeoutMs: 8000,
      })
    ).events;
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
    expect(seenUpstream(events, turnId)).toEqual(expectedUpstream(message, accepted.executionId));
    expect((await counters())["streams.opened"]! - opened).toBeGreaterThanOrEqual(3);
  });
});

describe("per-user rate limits", () => {
  it("turn submissions past the limit get 429 with Retry-After; another user is not affected", async () => {
    const token = await tokenFor(uid("user"));
    for (let i = 0; i < 4; i++) expect((await sendTurn(token, uid("conv"), uid("turn"), "hi")).status).toBe(202);
    const limited = await sendTurn(token, uid("conv"), uid("turn"), "one too many");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await json(limited)).error).toMatchObject({
      code: "rate_limited",
      details: { kind: "turn", perMinute: 4 },
    });
    expect((await sendTurn(await tokenFor(uid("user")), uid("conv"), uid("turn"), "someone else")).status).toBe(202);
  });

  it("refused requests use up nothing: malformed sends and bad cursors leave the whole quota", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const malformed = [
      api(`/v1/conversations/${cid}/turns`, { token, body: { turnId: uid("turn") } }),
      api(`/v1/conversations/${cid}/turns`, { token, body: { turnId: uid("turn"), message: "x", surprise: true } }),
      api(`/v1/conversations/${cid}/turns`, { token, body: { message: "no turn id" } }),
      api(`/v1/conversations/${cid}/turns`, { token, body: { turnId: uid("turn"), message: "x".repeat(70_000) } }),
      api(`/v1/conversations/bad%20id/turns`, { token, body: { turnId: uid("turn"), message: "x" } }),
    ];
    for (const res of await Promise.all(malformed)) expect(res.status).toBeGreaterThanOrEqual(400);
    for (let i = 0; i < 4; i++) expect((await sendTurn(token, uid("conv"), uid("turn"), "hi")).status).toBe(202);
    expect((await sendTurn(token, uid("conv"), uid("turn"), "one too many")).status).toBe(429);
    for (let i = 0; i < 8; i++)
      expect((await api(`/v1/conversations/${cid}/events?after=nope`, { token })).status).toBe(400);
    for (let i = 0; i < 6; i++) {
      const res = await api(`/v1/conversations/${cid}/events`, { token });
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
    expect((await api(`/v1/conversations/${cid}/events`, { token })).status).toBe(429);
  });

  it("only a send that does work spends the turn limit: refusals and replays of what is known give their place back", async () => {
    const token = await tokenFor(uid("user"));
    const send = async (cid: string, turnId: string, message: string, extra: Record<string, unknown> = {}) => {
      const res = await sendTurn(token, cid, turnId, message, extra);
      return { status: res.status, code: (await json(res)).error?.code };
    };
    // 1: a turn held running on its ask (it waits for an answer nobody gives).
    const busy = uid("conv");
    const held = uid("turn");
    expect(await send(busy, held, "hold on [ask]")).toEqual({ status: 202, code: undefined });
    // 2: a turn run to its end.
    const done = uid("conv");
    const finished = uid("turn");
    expect(await send(done, finished, "hi")).toEqual({ status: 202, code: undefined });
    expect((await waitForTurn(token, done, finished)).status).toBe("completed");
    // 3: a turn queued behind the held one.
    const queued = uid("turn");
    expect(await send(busy, queued, "after it", { whenBusy: "queue" })).toEqual({ status: 202, code: undefined });

    // Refused, or answered from what is known: none of these spends a place, each more than the limit's worth.
    for (let i = 0; i < 5; i++) {
      expect(await send(busy, uid("turn"), "while it runs")).toEqual({ status: 409, code: "session_busy" });
      expect(await send(busy, held, "other content, same id")).toEqual({ status: 409, code: "turn_conflict" });
      expect(await send(uid("conv"), uid("turn"), "after nothing", { parentTurnId: "no-such-turn" })).toEqual({
        status: 404,
        code: "turn_not_found",
      });
      expect(await send(uid("conv"), uid("turn"), "ask me", { interactions: { "vendor.telepathy": true } })).toEqual({
        status: 400,
        code: "interaction_kind_unsupported",
      });
      expect(await send(done, finished, "hi")).toEqual({ status: 200, code: undefined });
      expect(await send(busy, held, "hold on [ask]")).toEqual({ status: 202, code: undefined });
      expect(await send(busy, queued, "after it", { whenBusy: "queue" })).toEqual({ status: 202, code: undefined });
      const chat = await api("/v1/chat", {
        token,
        body: {
          id: busy,
          trigger: "submit-message",
          messages: [{ id: uid("m"), role: "user", parts: [{ type: "text", text: "via the AI SDK, while it runs" }] }],
        },
      });
      expect({ status: chat.status, code: (await json(chat)).error?.code }).toEqual({
        status: 409,
        code: "session_busy",
      });
    }
    // The fourth place is still there, and the fifth is not.
    expect(await send(uid("conv"), uid("turn"), "the fourth")).toEqual({ status: 202, code: undefined });
    expect(await send(uid("conv"), uid("turn"), "one too many")).toEqual({ status: 429, code: "rate_limited" });
  });

  it("event streams past the limit get 429 with Retry-After", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    for (let i = 0; i < 6; i++) {
      const res = await api(`/v1/conversations/${cid}/events`, { token });
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
    const limited = await api(`/v1/conversations/${cid}/events`, { token });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await json(limited)).error.details.kind).toBe("stream");
  });
});

describe("the workspace's checkpoints (WORKSPACE_CHECKPOINTS_MAX=2)", () => {
  it("are released oldest first past the bound; a turn whose checkpoint was released can no longer be undone", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turns: string[] = [];
    let sandboxId = "";
    for (const n of [1, 2, 3]) {
      const turnId = uid("turn");
      const accepted = await json(await sendTurn(token, cid, turnId, `[write:r.txt:v${n}]`));
      await waitForTurn(token, cid, turnId);
      sandboxId = (await emulator(`/_emulator/executions/${accepted.executionId}`)).sandboxId;
      turns.push(turnId);
    }
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"));
    const deadline = Date.now() + 5_000;
    let held: unknown[] = [];
    for (;;) {
      const res = await stub.fetch(`http://sandbox-emulator.local/v1/sandboxes/${sandboxId}/snapshots`, {
        headers: { authorization: "Bearer another-process" },
      });
      held = (await res.json<{ snapshots: unknown[] }>()).snapshots;
      if (held.length <= 2 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(held).toHaveLength(2);
    const first = await json(await api(`/v1/conversations/${cid}/turns/${turns[0]}`, { token }));
    expect(first.checkpoint.status).toBe("released");
    const refused = await api(`/v1/conversations/${cid}/turns/${turns[0]}/undo`, {
      token,
      body: { operationId: uid("op") },
    });
    expect(refused.status).toBe(409);
    expect((await json(refused)).error).toMatchObject({ code: "checkpoint_unavailable" });
    const last = await api(`/v1/conversations/${cid}/turns/${turns[2]}/undo`, {
      token,
      body: { operationId: uid("op") },
    });
    expect(last.status).toBe(200);
  });
});

describe("branches with a sandbox of their own (WORKSPACE_FORKS_MAX=1)", () => {
  it("past the bound, a branch shares the conversation's workspace and says so", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const run = (message: string, extra: Record<string, unknown> = {}) => runTurn(token, cid, message, extra);
    const first = await run("[write:f.txt:1]");
    await run("[write:f.txt:2]");
    const own = await run("edited once", { parentTurnId: first.turnId });
    expect(own.sandboxId).not.toBe(first.sandboxId);
    const shared = await run("edited twice", { parentTurnId: first.turnId });
    expect(shared.sandboxId).toBe(first.sandboxId);
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const parts = messages.messages.at(-1).parts as Array<{ type: string; code?: string; message?: string }>;
    expect(parts.find((p) => p.type === "warning" && p.code === "workspace_shared")?.message).toContain(
      "WORKSPACE_FORKS_MAX",
    );
  });
});

describe("an idle terminal (TERMINAL_IDLE_SECONDS=1)", () => {
  it("lets go of the sandbox's socket after no input and no output (viewers closed 4408); a reattach replays the kept screen", async () => {
    const token = await tokenFor(uid("user"));
    const opened = await json(await api("/v1/environment/terminals", { token, body: {} }));
    const viewer = await openSocket(opened.url);
    await viewer.until((v) => v.closed !== null, "the idle close");
    expect(viewer.closed!.code).toBe(4408);
    expect(viewer.frames.find((f) => f.type === "error")).toMatchObject({ code: "terminal_idle" });
    const sandboxId = (await json(await api("/v1/environment", { token }))).environment.environmentId;
    const ptys = (await emulator(`/_emulator/sandboxes/${sandboxId}/terminals`)).terminals as any[];
    // The PTY lives on in the sandbox (its detach window); the gateway holds no socket to it.
    expect(ptys).toMatchObject([{ alive: true, sockets: 0 }]);

    const again = await api("/v1/environment/terminals", { token, body: { terminalId: opened.terminal.terminalId } });
    expect(again.status).toBe(200);
    const back = await openSocket((await json(again)).url);
    await back.until((v) => v.output().includes("$ "), "the kept screen");
    expect(back.frames.some((f) => f.type === "ready" && f.restored === true)).toBe(true);
    back.ws.close();
  });
});
