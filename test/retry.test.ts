import { describe, expect, it } from "vitest";
import { api, collect, counters, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

describe("retrying a turn never runs it twice", () => {
  it("the same id and content returns the running turn, then the cached result, without a second dispatch", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const before = (await counters())["runs.dispatches"] ?? 0;

    const first = await sendTurn(token, cid, turnId, "Summarise the repo [slow]");
    expect(first.status).toBe(202);
    const accepted = await json(first);
    const dispatchesAfterFirst = (await counters())["runs.dispatches"] ?? 0;
    expect(dispatchesAfterFirst).toBe(before + 1);

    // A retry while it runs: the same turn, 202, same execution.
    const whileRunning = await sendTurn(token, cid, turnId, "Summarise the repo [slow]");
    expect(whileRunning.status).toBe(202);
    expect((await json(whileRunning)).executionId).toBe(accepted.executionId);

    const finished = await waitForTurn(token, cid, turnId);
    expect(finished.status).toBe("completed");

    // A retry after it finished: the cached result, 200.
    const retry = await sendTurn(token, cid, turnId, "Summarise the repo [slow]");
    expect(retry.status).toBe(200);
    const cached = await json(retry);
    expect(cached).toMatchObject({ cached: true, turnId, executionId: accepted.executionId, status: "completed" });
    expect(cached.result.text).toBe(finished.result.text);

    // Neither retry reached the emulator's dispatch.
    expect((await counters())["runs.dispatches"]).toBe(dispatchesAfterFirst);
  });

  it("Idempotency-Key carries the turn id", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const key = uid("turn");
    const first = await api(`/v1/conversations/${cid}/turns`, {
      token,
      body: { message: "hello" },
      headers: { "idempotency-key": key },
    });
    expect(first.status).toBe(202);
    expect((await json(first)).turnId).toBe(key);
    await waitForTurn(token, cid, key);
    const again = await api(`/v1/conversations/${cid}/turns`, {
      token,
      body: { message: "hello" },
      headers: { "idempotency-key": key },
    });
    expect(again.status).toBe(200);
  });

  it("the same id with other content is 409 turn_conflict, and changes nothing", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "original");
    const finished = await waitForTurn(token, cid, turnId);
    const conflict = await sendTurn(token, cid, turnId, "something else");
    expect(conflict.status).toBe(409);
    expect((await json(conflict)).error.code).toBe("turn_conflict");
    const withModel = await sendTurn(token, cid, turnId, "original", { model: "other/model" });
    expect((await json(withModel)).error.code).toBe("turn_conflict");
    expect(await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }))).toEqual(finished);
  });

  it("a new turn while one runs is 409 session_busy; once it ends the next turn runs", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = uid("turn");
    await sendTurn(token, cid, first, "first [slow]");
    const busy = await sendTurn(token, cid, uid("turn"), "second");
    expect(busy.status).toBe(409);
    const error = (await json(busy)).error;
    expect(error.code).toBe("session_busy");
    expect(error.details.activeTurnId).toBe(first);
    await waitForTurn(token, cid, first);
    const second = uid("turn");
    expect((await sendTurn(token, cid, second, "second")).status).toBe(202);
    expect((await waitForTurn(token, cid, second)).status).toBe("completed");
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary).toMatchObject({ state: "idle", turnCount: 2 });
  });

  it("a failed turn is final: the same ids return the same failure, never a second run", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "break please [fail]"));
    const { events } = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      isTurnEnd,
    );
    const end = events.at(-1)!;
    expect(end.type).toBe("turn.failed");
    expect((end.data.error as any).code).toBe("AGENT_CRASHED");
    const dispatches = (await counters())["runs.dispatches"];
    const retry = await sendTurn(token, cid, turnId, "break please [fail]");
    expect(retry.status).toBe(200);
    expect(await json(retry)).toMatchObject({ status: "failed", error: { code: "AGENT_CRASHED" } });
    expect((await counters())["runs.dispatches"]).toBe(dispatches);
  });

  it("two concurrent sends of one new turn dispatch once", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const before = (await counters())["runs.dispatches"] ?? 0;
    const [a, b] = await Promise.all([sendTurn(token, cid, turnId, "race"), sendTurn(token, cid, turnId, "race")]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect((await json(a)).executionId).toBe((await json(b)).executionId);
    await waitForTurn(token, cid, turnId);
    expect((await counters())["runs.dispatches"]).toBe(before + 1);
  });
});
