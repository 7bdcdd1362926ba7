/**
 * Turns that wait their turn (docs/api.md#queued-turns), through the public API against the
 * emulator: order, one dispatch per queued turn (the emulator's counters), edit and remove before
 * the start, failures and cancels that leave the queue alone unless told, the bound, and an
 * eviction with turns queued (mid-run and mid-dispatch).
 */
import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/session/session";
import type { EventEnvelope } from "../src/session/store/records";
import { api, collect, counters, isTurnEnd, json, sendTurn, setFaults, tokenFor, uid } from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

const queue = (token: string, cid: string, turnId: string, message: string) =>
  sendTurn(token, cid, turnId, message, { whenBusy: "queue" });
const turnOf = async (token: string, cid: string, turnId: string) =>
  json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
const edit = (token: string, cid: string, turnId: string, body: unknown) =>
  api(`/v1/conversations/${cid}/turns/${turnId}`, { token, method: "PATCH", body });
const remove = (token: string, cid: string, turnId: string) =>
  api(`/v1/conversations/${cid}/turns/${turnId}`, { token, method: "DELETE" });

/** Waits until a turn has ended (through its queue wait too), polling the public route. */
async function ended(token: string, cid: string, turnId: string, timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const turn = await turnOf(token, cid, turnId);
    if (TERMINAL.has(turn.status)) return turn;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`turn ${turnId} has not ended after ${timeoutMs} ms`);
}

/** The conversation's log from the start until `turnId` ends. */
async function logUntilEnd(token: string, cid: string, turnId: string): Promise<EventEnvelope[]> {
  const isEnd = (e: EventEnvelope) =>
    e.turnId === turnId && ["turn.completed", "turn.failed", "turn.cancelled"].includes(e.type);
  return (await collect(await api(`/v1/conversations/${cid}/events`, { token }), isEnd, { timeoutMs: 20_000 })).events;
}

const count = async (name: string) => (await counters())[name] ?? 0;
/** Stops the running turn (the queue runs on): tests hold a turn running ([hold]: the emulator keeps it after its first step) while they queue behind it. */
const stop = async (token: string, cid: string) =>
  expect(
    (await json(await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } }))).status,
  ).toBe("accepted");
const LONG = "first [long] [slow] [hold]";

describe("a turn sent while another runs can wait its turn", () => {
  it("queued turns start in order, one at a time, each dispatched once; a retry is the same queued turn", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const started = await count("runs.started");
    const attached = await count("runs.attached");
    const first = uid("turn");
    expect((await sendTurn(token, cid, first, LONG)).status).toBe(202);
    const queued = [uid("q"), uid("q"), uid("q")];
    for (const [i, turnId] of queued.entries()) {
      const res = await queue(token, cid, turnId, `queued ${i + 1}`);
      expect(res.status).toBe(202);
      expect(await json(res)).toMatchObject({
        turnId,
        status: "queued",
        queuePosition: i + 1,
        message: `queued ${i + 1}`,
        waitingFor: null,
        servedModels: null,
      });
    }
    // The same send again: the same queued turn, never a second one.
    const again = await queue(token, cid, queued[1]!, "queued 2");
    expect(again.status).toBe(202);
    expect(await json(again)).toMatchObject({ turnId: queued[1], status: "queued", queuePosition: 2 });
    // The same id with other content, and a send that does not ask to queue, are refused.
    expect((await json(await queue(token, cid, queued[1]!, "other"))).error.code).toBe("turn_conflict");
    const busy = await sendTurn(token, cid, uid("turn"), "not queued");
    expect(busy.status).toBe(409);
    expect((await json(busy)).error.code).toBe("session_busy");
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.queue.map((t: { turnId: string; queuePosition: number }) => [t.turnId, t.queuePosition])).toEqual(
      queued.map((id, i) => [id, i + 1]),
    );
    await stop(token, cid);

    const events = await logUntilEnd(token, cid, queued[2]!);
    const accepted = events.filter((e) => e.type === "turn.accepted").map((e) => e.turnId);
    expect(accepted).toEqual([first, ...queued]);
    // One at a time: each starts after the one before it ended.
    const order = [first, ...queued];
    for (let i = 1; i < order.length; i++) {
      const previousEnd = events.findIndex((e) => e.turnId === order[i - 1] && isTurnEnd(e));
      const start = events.findIndex((e) => e.turnId === order[i] && e.type === "turn.accepted");
      expect(previousEnd).toBeGreaterThanOrEqual(0);
      expect(start).toBeGreaterThan(previousEnd);
    }
    expect(events.filter((e) => e.type === "turn.queued").map((e) => [e.turnId, e.data.queuePosition])).toEqual(
      queued.map((id, i) => [id, i + 1]),
    );
    // Four turns, four runs: each queued turn was dispatched once (no dispatch attached to a run
    // already started), and the retry dispatched nothing. A dispatch upstream refused busy (the
    // agent session not yet released after the previous receipt) starts nothing and is retried.
    expect((await count("runs.started")) - started).toBe(4);
    expect((await count("runs.attached")) - attached).toBe(0);

    for (const turnId of queued) expect((await ended(token, cid, turnId)).status).toBe("completed");
    const cached = await queue(token, cid, queued[0]!, "queued 1");
    expect(cached.status).toBe(200);
    expect(await json(cached)).toMatchObject({ status: "completed", cached: true });
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    expect(
      messages.messages.filter((m: { role: string }) => m.role === "user").map((m: { text: string }) => m.text),
    ).toEqual([LONG, "queued 1", "queued 2", "queued 3"]);
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).queue).toEqual([]);
  });

  it("a queued turn keeps when it was sent (createdAt, and its message's time in the transcript) and says when it started (startedAt)", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = uid("turn");
    const running = await json(await sendTurn(token, cid, first, LONG));
    // A turn that did not wait started when it was sent.
    expect(running.startedAt).toBe(running.createdAt);
    const q1 = uid("q");
    const queued = await json(await queue(token, cid, q1, "after the first"));
    expect(queued).toMatchObject({ status: "queued" });
    expect(queued.startedAt).toBeUndefined();
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).queue[0].startedAt).toBeUndefined();
    await stop(token, cid);

    const done = await ended(token, cid, q1);
    expect(done.createdAt).toBe(queued.createdAt);
    const accepted = (await logUntilEnd(token, cid, q1)).find((e) => e.type === "turn.accepted" && e.turnId === q1)!;
    expect(Date.parse(done.startedAt)).toBeGreaterThanOrEqual(Date.parse(queued.createdAt));
    expect(Date.parse(done.startedAt)).toBeLessThanOrEqual(Date.parse(accepted.at));
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    expect(messages.messages.find((m: any) => m.role === "user" && m.turnId === q1).at).toBe(queued.createdAt);
  });

  it("a queued turn can be edited or removed until it starts, and is refused 409 once it has", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const started = await count("runs.started");
    const first = uid("turn");
    await sendTurn(token, cid, first, LONG);
    const [q1, q2, q3] = [uid("q"), uid("q"), uid("q")];
    for (const [turnId, message] of [
      [q1, "one"],
      [q2, "two"],
      [q3, "three"],
    ] as const) {
      expect((await queue(token, cid, turnId, message)).status).toBe(202);
    }

    const edited = await edit(token, cid, q2, { message: "two, edited" });
    expect(edited.status).toBe(200);
    expect(await json(edited)).toMatchObject({
      turnId: q2,
      status: "queued",
      message: "two, edited",
      queuePosition: 2,
    });
    const removed = await remove(token, cid, q1);
    expect(removed.status).toBe(200);
    const removedView = await json(removed);
    expect(removedView).toMatchObject({
      turnId: q1,
      status: "cancelled",
      cancelReason: "removed from the queue before it started",
    });
    // Removing again answers the same; the queue closed up behind it.
    expect(await json(await remove(token, cid, q1))).toEqual(removedView);
    expect((await turnOf(token, cid, q2)).queuePosition).toBe(1);
    // A removed turn cannot be edited; a retry of its send is its final answer, not a new turn.
    const late = await edit(token, cid, q1, { message: "too late" });
    expect(late.status).toBe(409);
    expect((await json(late)).error.code).toBe("turn_not_queued");
    const retried = await queue(token, cid, q1, "one");
    expect(retried.status).toBe(200);
    expect(await json(retried)).toMatchObject({ status: "cancelled", cached: true });
    // The running turn is not the queue's: 409 naming why; unknown turns are 404; bad bodies 400.
    const running = await edit(token, cid, first, { message: "x" });
    expect(running.status).toBe(409);
    expect((await json(running)).error).toMatchObject({ code: "turn_not_queued", details: { turnId: first } });
    expect((await remove(token, cid, first)).status).toBe(409);
    expect((await json(await remove(token, cid, uid("none")))).error.code).toBe("turn_not_found");
    expect((await json(await edit(token, cid, q3, { message: "" }))).error.code).toBe("invalid_request");
    expect((await json(await edit(token, cid, q3, { message: "x", model: "m" }))).error.code).toBe("invalid_request");
    // The edited text keeps the send's identity: a retry of the original send is the same turn.
    expect(await json(await queue(token, cid, q2, "two"))).toMatchObject({
      turnId: q2,
      message: "two, edited",
      status: "queued",
    });
    await stop(token, cid);

    const events = await logUntilEnd(token, cid, q3);
    expect(events.filter((e) => e.type === "turn.accepted").map((e) => e.turnId)).toEqual([first, q2, q3]);
    expect(events.find((e) => e.type === "turn.accepted" && e.turnId === q2)?.data.message).toBe("two, edited");
    expect(events.find((e) => e.type === "turn.queue_edited")).toMatchObject({
      turnId: q2,
      data: { turnId: q2, message: "two, edited" },
    });
    expect(events.find((e) => e.type === "turn.dequeued")).toMatchObject({
      turnId: q1,
      data: { turnId: q1, reason: "removed" },
    });
    expect((await count("runs.started")) - started).toBe(3);
    expect(await ended(token, cid, q2)).toMatchObject({ status: "completed", message: "two, edited" });
    expect((await edit(token, cid, q2, { message: "after" })).status).toBe(409);
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    expect(
      messages.messages.filter((m: { role: string }) => m.role === "user").map((m: { text: string }) => m.text),
    ).toEqual([LONG, "two, edited", "three"]);
  });

  it("a failed or cancelled turn leaves the queue to run; cancel with queue clear, or DELETE …/queue, removes it", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const failing = uid("turn");
    await sendTurn(token, cid, failing, "this fails [fail] [slow]");
    const afterFailure = uid("q");
    await queue(token, cid, afterFailure, "after a failure");
    expect((await ended(token, cid, failing)).status).toBe("failed");
    expect((await ended(token, cid, afterFailure)).status).toBe("completed");

    const cancelled = uid("turn");
    await sendTurn(token, cid, cancelled, "cancel me [long] [slow] [hold]");
    const afterCancel = uid("q");
    await queue(token, cid, afterCancel, "after a cancel");
    expect(
      (await json(await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } }))).status,
    ).toBe("accepted");
    expect((await ended(token, cid, cancelled)).status).toBe("cancelled");
    expect((await ended(token, cid, afterCancel)).status).toBe("completed");

    const started = await count("runs.started");
    const stopAll = uid("turn");
    await sendTurn(token, cid, stopAll, "cancel me and the queue [long] [slow] [hold]");
    const cleared = [uid("q"), uid("q")];
    for (const turnId of cleared) await queue(token, cid, turnId, "never runs");
    const ack = await json(
      await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op"), queue: "clear" } }),
    );
    expect(ack.status).toBe("accepted");
    expect((await ended(token, cid, stopAll)).status).toBe("cancelled");
    for (const turnId of cleared)
      expect(await turnOf(token, cid, turnId)).toMatchObject({
        status: "cancelled",
        cancelReason: "the queue was cleared before it started",
      });

    const lastRunning = uid("turn");
    await sendTurn(token, cid, lastRunning, LONG);
    const dropped = [uid("q"), uid("q")];
    for (const turnId of dropped) await queue(token, cid, turnId, "dropped");
    const res = await api(`/v1/conversations/${cid}/queue`, { token, method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ removed: dropped });
    // The running turn was not touched: it runs until stopped.
    expect((await turnOf(token, cid, lastRunning)).status).toBe("running");
    await stop(token, cid);
    expect((await ended(token, cid, lastRunning)).status).toBe("cancelled");
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).queue).toEqual([]);
    // Two runs (stopAll, lastRunning): nothing cleared was dispatched.
    expect((await count("runs.started")) - started).toBe(2);
  });

  it("the queue is bounded (QUEUE_MAX_TURNS, 10 by default): past it, 409 queue_full", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const running = uid("turn");
    await sendTurn(token, cid, running, "long [long] [slow] [hold]");
    for (let i = 0; i < 10; i++) expect((await queue(token, cid, uid("q"), `q${i}`)).status).toBe(202);
    const full = await queue(token, cid, uid("q"), "one too many");
    expect(full.status).toBe(409);
    expect((await json(full)).error).toMatchObject({ code: "queue_full", details: { limit: 10 } });
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).queue).toHaveLength(10);
    expect((await json(await api(`/v1/conversations/${cid}/queue`, { token, method: "DELETE" }))).removed).toHaveLength(
      10,
    );
    await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    expect((await ended(token, cid, running)).status).toBe("cancelled");
  });
});

describe("deleting a conversation with turns queued", () => {
  it("stops the running turn and starts none of the queued ones; the id used again has no queue", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const started = await count("runs.started");
    await sendTurn(token, cid, uid("turn"), "deleted mid-run [long] [slow] [hold]");
    for (let i = 0; i < 2; i++) expect((await queue(token, cid, uid("q"), "never runs")).status).toBe(202);
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    expect((await api(`/v1/conversations/${cid}`, { token })).status).toBe(404);
    const again = uid("turn");
    expect((await sendTurn(token, cid, again, "afresh")).status).toBe(202);
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).queue).toEqual([]);
    expect((await ended(token, cid, again)).status).toBe("completed");
    // Two runs: the deleted turn and this one; no queued turn started, before or after the delete.
    expect((await count("runs.started")) - started).toBe(2);
  });
});

describe("queued turns survive the session object losing its memory", () => {
  async function stubOf(user: string, cid: string) {
    const sessionId = await deriveSessionId(secret, user, cid);
    return env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
  }

  /** Polls storage (no route wakes the object) until every turn has ended. */
  async function storedEnd(stub: DurableObjectStub<SessionObject>, turnIds: string[]): Promise<Record<string, string>> {
    const deadline = Date.now() + 25_000;
    for (;;) {
      const rows = await runInDurableObject(stub, (_i: SessionObject, state) =>
        state.storage.sql.exec<{ turn_id: string; status: string }>("SELECT turn_id, status FROM turns").toArray(),
      );
      const status = Object.fromEntries(rows.map((r) => [r.turn_id, r.status]));
      if (turnIds.every((id) => TERMINAL.has(status[id] ?? ""))) return status;
      if (Date.now() > deadline) throw new Error(`turns not ended: ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it("evicted mid-run with turns queued: the alarm brings it back, and each queued turn is dispatched once, in order", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const started = await count("runs.started");
    const attached = await count("runs.attached");
    const first = uid("turn");
    await sendTurn(token, cid, first, "evicted mid-run [long] [slow]");
    const queued = [uid("q"), uid("q")];
    for (const turnId of queued) expect((await queue(token, cid, turnId, `after eviction ${turnId}`)).status).toBe(202);

    await abortAllDurableObjects();
    const stub = await stubOf(user, cid);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const status = await storedEnd(stub, [first, ...queued]);
    expect([first, ...queued].map((id) => status[id])).toEqual(["completed", "completed", "completed"]);

    const events = await logUntilEnd(token, cid, queued[1]!);
    expect(events.filter((e) => e.type === "turn.accepted").map((e) => e.turnId)).toEqual([first, ...queued]);
    expect((await count("runs.started")) - started).toBe(3);
    expect((await count("runs.attached")) - attached).toBe(0);
  });

  it("evicted while a queued turn's dispatch waits for its admission: the new instance dispatches it again under the same execution, one run", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const first = uid("turn");
    await sendTurn(token, cid, first, LONG);
    const [q1, q2] = [uid("q"), uid("q")];
    const queuedView = await json(await queue(token, cid, q1, "admitted in silence"));
    await queue(token, cid, q2, "and then this");
    // The next dispatch (q1's, when the first turn ends) starts its run but admits nothing.
    await setFaults({ withholdAdmission: true });
    const started = await count("runs.started");
    const attached = await count("runs.attached");
    const stub = await stubOf(user, cid);
    await stop(token, cid);
    // Wait until q1 is recorded pending and its run started upstream, its dispatch still waiting.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const state = await runInDurableObject(
        stub,
        (_i: SessionObject, s) =>
          s.storage.sql.exec<{ state: string }>("SELECT state FROM queued_turns WHERE turn_id = ?", q1).one().state,
      );
      if (state === "starting" && (await count("runs.started")) - started === 1) break;
      if (Date.now() > deadline) throw new Error(`q1 is ${state}`);
      await new Promise((r) => setTimeout(r, 20));
    }

    await abortAllDurableObjects();
    const fresh = await stubOf(user, cid);
    expect(await runDurableObjectAlarm(fresh)).toBe(true);
    const status = await storedEnd(fresh, [first, q1, q2]);
    expect([status[first], status[q1], status[q2]]).toEqual(["cancelled", "completed", "completed"]);
    // q1's run was started once and attached again; q2 started once.
    expect((await count("runs.started")) - started).toBe(2);
    expect((await count("runs.attached")) - attached).toBeGreaterThanOrEqual(1);
    expect((await ended(token, cid, q1)).executionId).toBe(queuedView.executionId);
    const events = await logUntilEnd(token, cid, q2);
    expect(events.filter((e) => e.type === "turn.accepted").map((e) => e.turnId)).toEqual([first, q1, q2]);
  });
});

describe("queued turns in a conversation that branches (docs/api.md#queued-turns, docs/api.md#branches)", () => {
  it("a queued turn takes its place when it starts: after the turn it names, else the active branch's latest turn; one fork per branch", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const [t1, t2, edit] = [uid("t"), uid("t"), uid("t")];
    await sendTurn(token, cid, t1, "first");
    await ended(token, cid, t1);
    await sendTurn(token, cid, t2, "second");
    await ended(token, cid, t2);
    const forks = await count("sessions.forked");
    // An edit of the second message (a branch after the first) runs; two turns queue behind it.
    expect((await sendTurn(token, cid, edit, "second, edited [long] [slow] [hold]", { parentTurnId: t1 })).status).toBe(
      202,
    );
    const onActive = uid("q");
    const onOld = uid("q");
    expect(await json(await queue(token, cid, onActive, "after the edit [recall]"))).toMatchObject({
      status: "queued",
      queuePosition: 1,
    });
    const old = await json(
      await sendTurn(token, cid, onOld, "after the second [recall]", { whenBusy: "queue", parentTurnId: t2 }),
    );
    // Queued, it has no place in the tree yet.
    expect(old).toMatchObject({ status: "queued", queuePosition: 2 });
    expect(old.branch).toBeUndefined();
    await stop(token, cid);

    const [a, b, e] = [
      await ended(token, cid, onActive),
      await ended(token, cid, onOld),
      await turnOf(token, cid, edit),
    ];
    expect(e.branch).toBe(1);
    // The first queued turn went on the branch the edit made active, after the edit.
    expect(a).toMatchObject({ status: "completed", parentTurnId: edit, branch: 1 });
    expect(a.result.text).toContain(`Earlier in this session: "first" | "second, edited".`);
    // The one that named the second turn continued the first line, in its own agent session.
    expect(b).toMatchObject({ status: "completed", parentTurnId: t2, branch: 0 });
    expect(b.result.text).toContain(`Earlier in this session: "first" | "second".`);
    // One fork: the edit's branch; neither queued turn forked again.
    expect((await count("sessions.forked")) - forks).toBe(1);
  });
});
