/**
 * No turn is ever stuck (issue "Tangle Sandbox for real", part 3): whatever upstream does, a running
 * turn ends, with a clear code, and the conversation goes on.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/session/session";
import { executionIdFor, turnRequestDigest } from "../src/session/turn-cache";
import {
  api,
  collect,
  counters,
  emulator,
  isTurnEnd,
  json,
  sendTurn,
  setFaults,
  tokenFor,
  uid,
  upstream,
  waitForTurn,
} from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

afterEach(async () => {
  await setFaults({});
  await emulator("/_emulator/variants", {});
});

/** A user with one finished turn (so the sandbox and the session exist), and the session object's stub. */
async function conversation() {
  const user = uid("user");
  const token = await tokenFor(user);
  const cid = uid("conv");
  const first = uid("turn");
  const accepted = await json(await sendTurn(token, cid, first, "first"));
  await waitForTurn(token, cid, first);
  const sessionId = await deriveSessionId(secret, user, cid);
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
  const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
  return {
    token,
    cid,
    sessionId,
    stub,
    sandboxId: run.sandboxId as string,
    firstExecution: accepted.executionId as string,
  };
}

/** Plants a running turn, as a crash or an eviction could leave one. */
async function plantRunning(
  stub: DurableObjectStub<SessionObject>,
  fields: {
    turnId: string;
    executionId: string;
    sandboxId: string;
    sessionId: string;
    createdAt?: number;
    lostAt?: number;
  },
) {
  await runInDurableObject(stub, async (_i: SessionObject, state) => {
    const at = fields.createdAt ?? Date.now();
    const ref = {
      runId: fields.executionId,
      provider: "tangle-sandbox",
      environmentId: fields.sandboxId,
      sessionId: fields.sessionId,
      executionId: fields.executionId,
      requestDigest: `sha256:${"0".repeat(64)}`,
    };
    state.storage.sql.exec(
      "INSERT INTO turns (turn_id, ordinal, request_digest, request, execution_id, status, control_ref, created_at, updated_at, lost_at) VALUES (?, 50, 'd', ?, ?, 'running', ?, ?, ?, ?)",
      fields.turnId,
      JSON.stringify({ message: "planted" }),
      fields.executionId,
      JSON.stringify(ref),
      at,
      at,
      fields.lostAt ?? null,
    );
    await state.storage.setAlarm(Date.now() + 60_000);
  });
}

/** Plants a pending turn, as a crash after its dispatch reached upstream (before it was recorded) leaves one. */
async function plantPending(
  stub: DurableObjectStub<SessionObject>,
  turnId: string,
  request: { message: string },
  executionId: string,
) {
  const digest = await turnRequestDigest(request);
  await runInDurableObject(stub, async (_i: SessionObject, state) => {
    const now = Date.now();
    state.storage.sql.exec(
      "INSERT INTO turns (turn_id, ordinal, request_digest, request, execution_id, status, created_at, updated_at) VALUES (?, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM turns), ?, ?, ?, 'pending', ?, ?)",
      turnId,
      digest,
      JSON.stringify(request),
      executionId,
      now,
      now,
    );
  });
}

/** Starts a run in the conversation's agent session from outside the gateway (Sandbox sessions: any process may). */
async function runUpstream(
  sandboxId: string,
  body: { message: string; sessionId: string; turnId: string; executionId: string },
) {
  const res = await upstream("POST", `/v1/sandboxes/${sandboxId}/runtime/agents/run/stream`, body);
  expect(res.status).toBe(200);
  await res.body?.cancel();
}

async function untilEnded(executionId: string) {
  for (let i = 0; i < 500 && (await emulator(`/_emulator/executions/${executionId}`)).status === "running"; i++)
    await new Promise((r) => setTimeout(r, 10));
}

describe("dispatch receipts are read (dispatched)", () => {
  it("a receipt naming another run in flight on the session (dispatched: false) is session_busy: nothing starts, and the conversation goes on after it", async () => {
    const { token, cid, sessionId, sandboxId } = await conversation();
    await emulator("/_emulator/variants", { dispatched: "receipt" });
    // Another process runs a turn in the same agent session; it waits for its question.
    const other = uid("exe-other");
    await runUpstream(sandboxId, {
      message: "set up tests [ask]",
      sessionId,
      turnId: uid("other-turn"),
      executionId: other,
    });
    const started = (await counters())["runs.started"];
    const turnId = uid("turn");
    const refused = await sendTurn(token, cid, turnId, "hello");
    expect(refused.status).toBe(409);
    expect((await json(refused)).error).toMatchObject({
      code: "session_busy",
      details: { upstreamCode: "session_busy", retryable: true },
    });
    expect((await counters())["runs.started"]).toBe(started);
    expect((await api(`/v1/conversations/${cid}/turns/${turnId}`, { token })).status).toBe(404);
    // Once that run ends, the same turn id runs.
    await upstream("POST", `/v1/sandboxes/${sandboxId}/runtime/agents/sessions/${sessionId}/abort`, {
      executionId: other,
    });
    expect((await sendTurn(token, cid, turnId, "hello")).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });

  it("a receipt naming the turn's own run (dispatched: false), in flight or already ended, attaches to it: one run, its answer", async () => {
    const { token, cid, stub, sessionId, sandboxId } = await conversation();
    await emulator("/_emulator/variants", { dispatched: "receipt" });
    for (const [message, ended] of [
      ["it already ran", true],
      ["it still runs [slow]", false],
    ] as const) {
      const turnId = uid("turn");
      const executionId = await executionIdFor(sessionId, turnId);
      await runUpstream(sandboxId, { message, sessionId, turnId, executionId });
      if (ended) await untilEnded(executionId);
      await plantPending(stub, turnId, { message }, executionId);
      const before = await counters();
      const retry = await sendTurn(token, cid, turnId, message);
      expect(retry.status).toBe(202);
      expect(await json(retry)).toMatchObject({ turnId, executionId });
      const turn = await waitForTurn(token, cid, turnId);
      expect(turn.status).toBe("completed");
      expect(turn.result.text).toContain(message.replace(" [slow]", ""));
      const after = await counters();
      expect(after["runs.started"]).toBe(before["runs.started"]);
      expect(after["runs.attached"]).toBe((before["runs.attached"] ?? 0) + 1);
    }
  });
  it("a receipt saying the turn already ended under another run (dispatched: false): that run is never adopted; the turn runs under a key of its own", async () => {
    const { token, cid, sessionId, sandboxId } = await conversation();
    await emulator("/_emulator/variants", { dispatched: "receipt" });
    const turnId = uid("turn");
    const other = uid("exe-other");
    await runUpstream(sandboxId, { message: "hello", sessionId, turnId, executionId: other });
    await untilEnded(other);
    const sent = await sendTurn(token, cid, turnId, "hello");
    expect(sent.status).toBe(202);
    const accepted = await json(sent);
    expect(accepted.executionId).not.toBe(other);
    const done = await waitForTurn(token, cid, turnId);
    expect(done).toMatchObject({ status: "completed", executionId: accepted.executionId });
    expect((await emulator(`/_emulator/executions/${accepted.executionId}`)).turnId).toMatch(/\.r-[0-9a-f]{16}$/);
  });
});

describe("no turn is ever stuck", () => {
  it("cancel when upstream says the run is not live ends the local turn cancelled", async () => {
    const { token, cid, stub, sandboxId, sessionId } = await conversation();
    const turnId = uid("turn");
    await plantRunning(stub, { turnId, executionId: uid("exe-gone"), sandboxId, sessionId });
    const res = await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    expect(await json(res)).toMatchObject({ status: "accepted", effect: "not_live" });
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    expect(turn.status).toBe("cancelled");
    // The conversation goes on.
    const next = uid("turn");
    expect((await sendTurn(token, cid, next, "after")).status).toBe(202);
    expect((await waitForTurn(token, cid, next)).status).toBe("completed");
  });

  it("a turn past TURN_MAX_DURATION_MS is cancelled upstream and fails turn_timeout", async () => {
    const { token, cid, stub } = await conversation();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "a long job [slow] [long]"));
    const aborts = (await emulator("/_emulator/counters")).counters["requests.runtime.session.abort"] ?? 0;
    // As if it had started long ago.
    await runInDurableObject(stub, async (_i: SessionObject, state) => {
      const long = Date.now() - 2 * 60 * 60_000;
      state.storage.sql.exec("UPDATE turns SET created_at = ?, started_at = ? WHERE turn_id = ?", long, long, turnId);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const turn = await waitForTurn(token, cid, turnId);
    expect(turn).toMatchObject({ status: "failed", error: { code: "turn_timeout" } });
    expect((await emulator("/_emulator/counters")).counters["requests.runtime.session.abort"]).toBe(aborts + 1);
    expect((await emulator(`/_emulator/executions/${accepted.executionId}`)).status).toBe("cancelled");
  });

  it("a run that cannot be reached for UPSTREAM_LOST_AFTER_MS fails upstream_lost, and viewers see it", async () => {
    const { token, cid, stub, sandboxId, sessionId } = await conversation();
    const turnId = uid("turn");
    await plantRunning(stub, {
      turnId,
      executionId: uid("exe-lost"),
      sandboxId,
      sessionId,
      lostAt: Date.now() - 60 * 60_000,
    });
    const reading = collect(
      await api(`/v1/conversations/${cid}/events`, { token }),
      (e) => isTurnEnd(e) && e.turnId === turnId,
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const ended = (await reading).events.at(-1)!;
    expect(ended).toMatchObject({ type: "turn.failed", data: { error: { code: "upstream_lost" } } });
  });

  it("a turn left pending by a crash mid-dispatch is dispatched by the retry, not answered pending forever", async () => {
    const { token, cid, stub, sessionId } = await conversation();
    const turnId = uid("turn");
    const request = { message: "dispatched after a crash" };
    const executionId = await executionIdFor(sessionId, turnId);
    await plantPending(stub, turnId, request, executionId);
    const retry = await sendTurn(token, cid, turnId, request.message);
    expect(retry.status).toBe(202);
    expect(await json(retry)).toMatchObject({ turnId, executionId, status: "running" });
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });

  it("deleting a conversation while its sandbox is stopped works; the id used again starts a new agent session", async () => {
    const { token, cid, sandboxId, firstExecution } = await conversation();
    await emulator(`/_emulator/sandboxes/${sandboxId}/status`, { status: "stopped" });
    const deleted = await api(`/v1/conversations/${cid}`, { token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    const first = await emulator(`/_emulator/executions/${firstExecution}`);
    expect(first.error?.code).toBe("EXECUTION_NOT_FOUND");
    const again = uid("turn");
    const accepted = await json(await sendTurn(token, cid, again, "new start"));
    await waitForTurn(token, cid, again);
    const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
    expect(run.sessionId).not.toBe(first.sessionId);
    expect(run.sessionId).toMatch(/\.1$/);
  });
});
