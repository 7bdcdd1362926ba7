import { afterEach, describe, expect, it } from "vitest";
import { api, counters, emulator, json, sendTurn, setFaults, tokenFor, uid, waitForTurn } from "./helpers";

afterEach(async () => {
  await setFaults({});
});

/** How many times the emulator served a capability document. */
const reads = (c: Record<string, number>) => c["requests.runtime.capabilities"] ?? 0;

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
    expect((await json(res)).error).toMatchObject({
      code: "capability_denied",
      details: { missing: ["streaming.replay"] },
    });
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
    expect((await json(res)).error).toMatchObject({
      code: "capability_denied",
      details: { missing: ["session.cancelRun"] },
    });
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
    expect((await json(refused)).error).toMatchObject({
      code: "interaction_kind_unsupported",
      details: { unsupported: ["question"] },
    });
    // An empty posture enables none, and is always fine.
    expect((await sendTurn(closed, uid("conv"), uid("turn"), "no asks", { interactions: {} })).status).toBe(202);

    const open = await userWith({});
    expect(
      (await sendTurn(open, uid("conv"), uid("turn"), "ask me", { interactions: { question: true, plan: false } }))
        .status,
    ).toBe(202);
    const vendor = await sendTurn(open, uid("conv"), uid("turn"), "ask me", {
      interactions: { "vendor.review": true },
    });
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
    const answer = await api(`/v1/conversations/${cid}/interactions/${uid("ask")}`, {
      token,
      body: { operationId: uid("op"), outcome: "accepted" },
    });
    expect(answer.status).toBe(501);
    expect((await json(answer)).error).toMatchObject({
      code: "capability_denied",
      details: { missing: ["interactions"] },
    });
    expect((await counters())["requests.runtime.session.interactions"] ?? 0).toBe(answers);
    // Asking for a kind is refused as unsupported, not as a broken document.
    const asks = await sendTurn(token, cid, uid("turn"), "ask me", { interactions: { question: true } });
    expect((await json(asks)).error).toMatchObject({
      code: "interaction_kind_unsupported",
      details: { unsupported: ["question"] },
    });
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
    expect((await json(asks)).error).toMatchObject({
      code: "interaction_kind_unsupported",
      details: { unsupported: ["question"] },
    });
  });

  it("a flag missing when the sandbox was made comes back: turns run again on the same sandbox, the document read again on a refusal but not on every one", async () => {
    const token = await userWith({ capabilities: { runs: { eventReplay: false } } });
    const cid = uid("conv");
    const refused = async () => {
      const res = await sendTurn(token, cid, uid("turn"), "hello");
      expect(res.status).toBe(501);
      expect((await json(res)).error).toMatchObject({
        code: "capability_denied",
        details: { missing: ["streaming.replay"] },
      });
    };
    await refused(); // makes the sandbox and reads its document
    const made = await counters();
    // Refusals in a row, each just after the document was read: at most one reads it again
    // (CAPABILITIES_RECHECK_MS is 2 s in the tests).
    for (let i = 0; i < 3; i++) await refused();
    expect(reads(await counters()) - reads(made)).toBeLessThanOrEqual(1);

    await setFaults({});
    const restored = await counters();
    let attempts = 0;
    let accepted: Response | undefined;
    for (const deadline = Date.now() + 10_000; !accepted && Date.now() < deadline; ) {
      attempts++;
      const res = await sendTurn(token, cid, uid("turn"), "hello again");
      if (res.status === 202) accepted = res;
      else {
        expect(res.status).toBe(501);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    expect(accepted, "a turn runs again once the flag is back").toBeDefined();
    const after = await counters();
    const rereads = reads(after) - reads(restored);
    expect(rereads).toBeGreaterThanOrEqual(1);
    expect(rereads).toBeLessThan(attempts);
    // The same sandbox: none was made, resumed or deleted for it.
    for (const name of ["sandboxes.created", "sandboxes.resumed", "sandboxes.deleted"])
      expect(after[name] ?? 0, name).toBe(made[name] ?? 0);
    const turn = await json(accepted!);
    expect((await waitForTurn(token, cid, turn.turnId)).status).toBe("completed");
  });

  it("a resumed sandbox's document is read again: a flag it lost while stopped is no longer claimed", async () => {
    const token = await userWith({});
    const cid = uid("conv");
    const first = await json(await sendTurn(token, cid, uid("turn"), "hello"));
    expect((await waitForTurn(token, cid, first.turnId)).status).toBe("completed");
    const { sandboxId } = await emulator(`/_emulator/executions/${first.executionId}`);
    await setFaults({ capabilities: { runs: { eventReplay: false } } });
    await emulator(`/_emulator/sandboxes/${sandboxId}/status`, { status: "stopped" });
    const before = await counters();

    const res = await sendTurn(token, cid, uid("turn"), "after the resume");
    expect(res.status).toBe(501);
    expect((await json(res)).error).toMatchObject({
      code: "capability_denied",
      details: { missing: ["streaming.replay"] },
    });
    const after = await counters();
    expect((after["sandboxes.resumed"] ?? 0) - (before["sandboxes.resumed"] ?? 0)).toBe(1);
    expect(reads(after) - reads(before)).toBe(1);
    expect(after["runs.started"] ?? 0).toBe(before["runs.started"] ?? 0);
  });

  it("a read again that fails keeps the document read before it: turns go on", async () => {
    const token = await userWith({});
    const cid = uid("conv");
    const first = await json(await sendTurn(token, cid, uid("turn"), "hello"));
    expect((await waitForTurn(token, cid, first.turnId)).status).toBe("completed");
    const { sandboxId } = await emulator(`/_emulator/executions/${first.executionId}`);
    await setFaults({ capabilitiesFail: true });
    await emulator(`/_emulator/sandboxes/${sandboxId}/status`, { status: "stopped" });
    const before = await counters();

    const res = await sendTurn(token, cid, uid("turn"), "after the resume");
    expect(res.status).toBe(202);
    const after = await counters();
    expect((after["sandboxes.resumed"] ?? 0) - (before["sandboxes.resumed"] ?? 0)).toBe(1);
    expect(reads(after)).toBeGreaterThan(reads(before));
    expect((await waitForTurn(token, cid, (await json(res)).turnId)).status).toBe("completed");
  });
});
