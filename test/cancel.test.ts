import { afterEach, describe, expect, it } from "vitest";
import { api, collect, counters, isTurnEnd, json, sendTurn, setFaults, tokenFor, uid, waitForTurn } from "./helpers";

const cancel = (token: string, cid: string, body: unknown) => api(`/v1/conversations/${cid}/cancel`, { token, body });

afterEach(async () => {
  await setFaults({});
});

describe("cancelling a run", () => {
  it("cancels mid-stream: accepted, the turn ends turn.cancelled (not failed), observed usage kept; the same operation replays", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "long job [long] [slow] [hold]"));
    const stream = await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token });
    const reading = collect(stream, isTurnEnd, { timeoutMs: 20_000 });
    // Wait until the first step has been reported (the run is held there: [hold]), then stop the run.
    while (true) {
      const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
      if (usage.turns[0]?.usage.inputTokens) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const operationId = uid("op");
    const res = await cancel(token, cid, { operationId, reason: "changed my mind" });
    expect(res.status).toBe(200);
    const ack = await json(res);
    expect(ack).toMatchObject({
      operationId,
      status: "accepted",
      effect: "cancelled",
      run: { executionId: accepted.executionId },
    });
    expect(ack.requestDigest).toMatch(/^sha256:/);

    const { events } = await reading;
    const end = events.at(-1)!;
    expect(end.type).toBe("turn.cancelled");
    expect(end.data.reason).toBe("changed my mind");
    const turn = await waitForTurn(token, cid, turnId);
    expect(turn).toMatchObject({ status: "cancelled", cancelReason: "changed my mind" });
    expect(turn.usage.inputTokens).toBe(960);

    const again = await cancel(token, cid, { operationId, reason: "changed my mind" });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual({ ...ack, status: "replayed" });

    const conflict = await cancel(token, cid, { operationId, reason: "another reason" });
    expect(conflict.status).toBe(409);
    expect(await json(conflict)).toMatchObject({
      status: "conflict",
      effect: "unknown",
      existingRequestDigest: ack.requestDigest,
    });
  });

  it("an outcome that could not be confirmed is unknown (502), retryable where a repeat can succeed: the same operation then cancels", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    // The run waits on its ask: it is running, and stays so, until it is stopped.
    const accepted = await json(await sendTurn(token, cid, turnId, "set up [ask]"));
    await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );

    // The agent service is down for every attempt of the call: a repeat can succeed.
    await setFaults({ failNext: { status: 503, count: 3, route: "runtime.session.abort" } });
    const operationId = uid("op");
    const down = await cancel(token, cid, { operationId });
    expect(down.status).toBe(502);
    expect(await json(down)).toMatchObject({
      operationId,
      status: "unknown",
      effect: "unknown",
      retryable: true,
      message: expect.stringContaining("could not be confirmed"),
    });

    // It refuses the request as malformed: the same request again cannot succeed.
    await setFaults({ failNext: { status: 400, count: 1, route: "runtime.session.abort" } });
    const refused = await cancel(token, cid, { operationId: uid("op") });
    expect(refused.status).toBe(502);
    expect(await json(refused)).toMatchObject({ status: "unknown", retryable: false });

    const again = await cancel(token, cid, { operationId });
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ operationId, status: "accepted", effect: "cancelled" });
    expect((await waitForTurn(token, cid, turnId)).status).toBe("cancelled");
  });

  it("with nothing running: accepted, not_live, and nothing is sent upstream", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "short");
    await waitForTurn(token, cid, turnId);
    const aborts = (await counters())["requests.runtime.session.abort"] ?? 0;
    const res = await cancel(token, cid, { operationId: uid("op") });
    expect(await json(res)).toMatchObject({ status: "accepted", effect: "not_live" });
    expect((await counters())["requests.runtime.session.abort"] ?? 0).toBe(aborts);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });

  it("refuses bad input and unknown conversations", async () => {
    const token = await tokenFor(uid("user"));
    expect((await cancel(token, uid("none"), { operationId: "op-1" })).status).toBe(404);
    const cid = uid("conv");
    await sendTurn(token, cid, uid("turn"), "x");
    expect((await json(await cancel(token, cid, {}))).error.code).toBe("invalid_request");
    expect((await json(await cancel(token, cid, { operationId: "op", extra: 1 }))).error.code).toBe("invalid_request");
    expect((await json(await cancel(token, cid, { operationId: "op", reason: "" }))).error.code).toBe(
      "invalid_request",
    );
  });
});
