/**
 * No turn is ever stuck (issue "Tangle Sandbox for real", part 3): whatever upstream does, a running
 * turn ends, with a clear code, and the conversation goes on.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/objects/session";
import { executionIdFor, turnRequestDigest } from "../src/objects/turn-cache";
import { api, collect, emulator, isTurnEnd, json, sendTurn, setFaults, tokenFor, uid, waitForTurn } from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

afterEach(async () => {
  await setFaults({});
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
  return { token, cid, sessionId, stub, sandboxId: run.sandboxId as string, firstExecution: accepted.executionId as string };
}

/** Plants a running turn, as a crash or an eviction could leave one. */
async function plantRunning(stub: DurableObjectStub<SessionObject>, fields: { turnId: string; executionId: string; sandboxId: string; sessionId: string; createdAt?: number; lostAt?: number }) {
  await runInDurableObject(stub, async (_i: SessionObject, state) => {
    const at = fields.createdAt ?? Date.now();
    const ref = { runId: fields.executionId, provider: "tangle-sandbox", environmentId: fields.sandboxId, sessionId: fields.sessionId, executionId: fields.executionId, requestDigest: `sha256:${"0".repeat(64)}` };
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
      state.storage.sql.exec("UPDATE turns SET created_at = ? WHERE turn_id = ?", Date.now() - 2 * 60 * 60_000, turnId);
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
    await plantRunning(stub, { turnId, executionId: uid("exe-lost"), sandboxId, sessionId, lostAt: Date.now() - 60 * 60_000 });
    const reading = collect(await api(`/v1/conversations/${cid}/events`, { token }), (e) => isTurnEnd(e) && e.turnId === turnId);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const ended = (await reading).events.at(-1)!;
    expect(ended).toMatchObject({ type: "turn.failed", data: { error: { code: "upstream_lost" } } });
  });

  it("a turn left pending by a crash mid-dispatch is dispatched by the retry, not answered pending forever", async () => {
    const { token, cid, stub, sessionId } = await conversation();
    const turnId = uid("turn");
    const request = { message: "dispatched after a crash" };
    const executionId = await executionIdFor(sessionId, turnId);
    const digest = await turnRequestDigest(request);
    await runInDurableObject(stub, async (_i: SessionObject, state) => {
      const now = Date.now();
      state.storage.sql.exec(
        "INSERT INTO turns (turn_id, ordinal, request_digest, request, execution_id, status, created_at, updated_at) VALUES (?, 60, ?, ?, ?, 'pending', ?, ?)",
        turnId,
        digest,
        JSON.stringify(request),
        executionId,
        now,
        now,
      );
    });
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
