import { afterEach, describe, expect, it } from "vitest";
import { api, counters, json, sendTurn, setFaults, tokenFor, uid, waitForTurn } from "./helpers";

afterEach(async () => {
  await setFaults({});
});

/** A new user, whose sandbox is created (and its document read) under the given faults. */
async function userWith(faults: Record<string, unknown>) {
  await setFaults(faults);
  return tokenFor(uid("user"));
}

describe("capability gating", () => {
  it("without runs.eventReplay a turn is refused 501 capability_denied before any dispatch", async () => {
    const token = await userWith({ capabilities: { runs: { eventReplay: false } } });
    const before = (await counters())["runs.dispatches"] ?? 0;
    const cid = uid("conv");
    const turnId = uid("turn");
    const res = await sendTurn(token, cid, turnId, "hello");
    expect(res.status).toBe(501);
    expect((await json(res)).error).toMatchObject({ code: "capability_denied", details: { missing: ["streaming.replay"] } });
    expect((await counters())["runs.dispatches"] ?? 0).toBe(before);
    expect((await api(`/v1/conversations/${cid}/turns/${turnId}`, { token })).status).toBe(404);
  });

  it("without cancel.digestBound turns run, but cancel answers 501 before any upstream call", async () => {
    const token = await userWith({ capabilities: { cancel: { digestBound: false } } });
    const cid = uid("conv");
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "slow [slow]")).status).toBe(202);
    const aborts = (await counters())["requests.runtime.session.abort"] ?? 0;
    const res = await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    expect(res.status).toBe(501);
    expect((await json(res)).error).toMatchObject({ code: "capability_denied", details: { missing: ["session.cancelRun"] } });
    expect((await counters())["requests.runtime.session.abort"] ?? 0).toBe(aborts);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });

  it("a failed capability read claims nothing (a warning, not an error), and is read again later", async () => {
    const token = await userWith({ capabilitiesFail: true });
    const cid = uid("conv");
    const denied = await sendTurn(token, cid, uid("turn"), "hello");
    expect(denied.status).toBe(501);
    const error = (await json(denied)).error;
    expect(error.code).toBe("capability_denied");
    expect(error.details.warnings[0]).toContain("capability document unavailable");
    await setFaults({});
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "hello again")).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });

  it("interaction kinds: refused without interactions.responseDedupe, and offered kinds only with it", async () => {
    const closed = await userWith({ capabilities: { interactions: { responseDedupe: false } } });
    const refused = await sendTurn(closed, uid("conv"), uid("turn"), "ask me", { interactions: { question: true } });
    expect(refused.status).toBe(400);
    expect((await json(refused)).error).toMatchObject({ code: "interaction_kind_unsupported", details: { unsupported: ["question"] } });
    // An empty posture enables none, and is always fine.
    expect((await sendTurn(closed, uid("conv"), uid("turn"), "no asks", { interactions: {} })).status).toBe(202);

    const open = await userWith({});
    expect((await sendTurn(open, uid("conv"), uid("turn"), "ask me", { interactions: { question: true, plan: false } })).status).toBe(202);
    const vendor = await sendTurn(open, uid("conv"), uid("turn"), "ask me", { interactions: { "vendor.review": true } });
    expect((await json(vendor)).error.details.unsupported).toEqual(["vendor.review"]);
  });

  it("a document without the interactions group still runs turns; answering is refused 501 naming the missing claim", async () => {
    const token = await userWith({ capabilities: { interactions: false } });
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await sendTurn(token, cid, turnId, "hello");
    expect(accepted.status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    const answers = (await counters())["requests.runtime.session.interactions"] ?? 0;
    const answer = await api(`/v1/conversations/${cid}/interactions/${uid("ask")}`, { token, body: { operationId: uid("op"), outcome: "accepted" } });
    expect(answer.status).toBe(501);
    expect((await json(answer)).error).toMatchObject({ code: "capability_denied", details: { missing: ["interactions"] } });
    expect((await counters())["requests.runtime.session.interactions"] ?? 0).toBe(answers);
    // Asking for a kind is refused as unsupported, not as a broken document.
    const asks = await sendTurn(token, cid, uid("turn"), "ask me", { interactions: { question: true } });
    expect((await json(asks)).error).toMatchObject({ code: "interaction_kind_unsupported", details: { unsupported: ["question"] } });
  });

  it("fields and groups the gateway does not read are ignored, and a flag that is not a boolean is not a claim", async () => {
    const token = await userWith({
      capabilitiesExtra: {
        futureGroup: { someFlag: true },
        interactiveAgent: true,
        agentInterface: 2,
        interactions: { responseDedupe: "true", futureFlag: true },
      },
    });
    const cid = uid("conv");
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "hello")).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    const asks = await sendTurn(token, cid, uid("turn"), "ask me", { interactions: { question: true } });
    expect(asks.status).toBe(400);
    expect((await json(asks)).error).toMatchObject({ code: "interaction_kind_unsupported", details: { unsupported: ["question"] } });
  });
});
