import { env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { EventEnvelope } from "../src/session/store/records";
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
  waitForTurn,
} from "./helpers";

afterEach(async () => {
  await setFaults({});
});

const GOOD = {
  project: "demo",
  framework: "vitest",
  coverage: true,
  workers: 2,
  labels: ["ci"],
  token: "hunter2-secret",
};

/** Starts a turn and reads its stream until the agent asks; answers the ask and the reader. */
async function untilAsk(message: string, kind = "interaction.requested") {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message));
  const first = await collect(
    await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
    (e) => e.type === kind,
  );
  const asked = first.events.at(-1)!;
  const interaction = asked.data.interaction as any;
  return { token, cid, turnId, accepted, interaction, lastId: first.lastId! };
}

const answer = (token: string, cid: string, iid: string, body: unknown) =>
  api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(iid)}`, { token, body });

async function rest(token: string, cid: string, lastId: string): Promise<EventEnvelope[]> {
  return (
    await collect(
      await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": lastId } }),
      isTurnEnd,
    )
  ).events;
}

describe("a question", () => {
  it("is listed with its form, answered once, resolved for every device, and the run continues with the answer", async () => {
    const { token, cid, turnId, interaction, lastId } = await untilAsk("set up tests [ask]");
    expect(interaction).toMatchObject({ kind: "question", answerSpec: { fields: expect.any(Array) } });
    expect(interaction.answerSpec.fields.map((f: any) => f.type)).toEqual([
      "text",
      "select",
      "boolean",
      "number",
      "select",
      "secret",
    ]);
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.interactions).toMatchObject([{ id: interaction.id, kind: "question", turnId }]);

    const delivered = (await counters())["interactions.delivered"] ?? 0;
    const operationId = uid("op");
    const res = await answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: GOOD });
    expect(res.status).toBe(200);
    const ack = await json(res);
    expect(ack).toMatchObject({ operationId, status: "accepted", binding: { interactionId: interaction.id } });
    expect(ack.commandDigest).toMatch(/^sha256:/);
    // No acknowledgement carries the answer or anything derived from it alone.
    expect(JSON.stringify(ack)).not.toContain("hunter2");

    const events = await rest(token, cid, lastId);
    const resolved = events.find((e) => e.type === "interaction.resolved")!;
    expect(resolved.data).toMatchObject({ interactionId: interaction.id, status: "answered", outcome: "accepted" });
    expect(JSON.stringify(events)).not.toContain("hunter2");
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("Setting up demo with vitest and coverage");
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).interactions).toEqual([]);

    // The same operation again: the stored acknowledgement, and nothing more reaches upstream.
    expect(
      await json(await answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: GOOD })),
    ).toEqual(ack);
    // A new operation with the same answer / another answer.
    expect(
      (
        await json(
          await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "accepted", data: GOOD }),
        )
      ).status,
    ).toBe("already_resolved_same");
    const other = await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "declined" });
    expect(other.status).toBe(409);
    expect((await json(other)).status).toBe("already_resolved_different");
    // The same operation id with another command.
    expect((await json(await answer(token, cid, interaction.id, { operationId, outcome: "declined" }))).status).toBe(
      "already_resolved_different",
    );
    expect((await counters())["interactions.delivered"]).toBe(delivered + 1);
  });

  it("the same outcome with other data is another answer: already_resolved_different, from a new operation or the same one", async () => {
    const { token, cid, interaction } = await untilAsk("other data [ask]");
    const operationId = uid("op");
    expect(
      (await json(await answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: GOOD }))).status,
    ).toBe("accepted");
    const otherData = { ...GOOD, framework: "jest" };
    const fromAnother = await answer(token, cid, interaction.id, {
      operationId: uid("op"),
      outcome: "accepted",
      data: otherData,
    });
    expect(fromAnother.status).toBe(409);
    expect((await json(fromAnother)).status).toBe("already_resolved_different");
    expect(
      (await json(await answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: otherData })))
        .status,
    ).toBe("already_resolved_different");
    // The answer given, again: the same.
    expect(
      (
        await json(
          await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "accepted", data: GOOD }),
        )
      ).status,
    ).toBe("already_resolved_same");
  });

  it("two devices answering at once: delivered upstream exactly once", async () => {
    const { token, cid, interaction } = await untilAsk("race [ask]");
    const delivered = (await counters())["interactions.delivered"] ?? 0;
    const answers = await Promise.all(
      [uid("op"), uid("op"), uid("op")].map((operationId) =>
        answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: GOOD }).then(json),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual(["accepted", "already_resolved_same", "already_resolved_same"]);
    expect((await counters())["interactions.delivered"]).toBe(delivered + 1);
  });

  it("an answer the request's spec rejects is invalid_response, naming each field; nothing is recorded", async () => {
    const { token, cid, interaction } = await untilAsk("invalid [ask]");
    const operationId = uid("op");
    const bad = await answer(token, cid, interaction.id, {
      operationId,
      outcome: "accepted",
      data: { framework: "mocha", coverage: "yes", surprise: 1 },
    });
    expect(bad.status).toBe(422);
    const ack = await json(bad);
    expect(ack.status).toBe("invalid_response");
    for (const field of [
      "project: is required",
      "framework: mocha",
      "coverage: must be true or false",
      "surprise: is not a field",
    ])
      expect(ack.message).toContain(field);
    const declinedWithData = await json(
      await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "declined", data: { project: "x" } }),
    );
    expect(declinedWithData.status).toBe("invalid_response");
    const notAllowed = await json(
      await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "cancelled" }),
    );
    expect(notAllowed.message).toContain("cancelled is not allowed");
    // The corrected answer, even under the same operation id, goes through.
    expect(
      (await json(await answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: GOOD }))).status,
    ).toBe("accepted");
  });

  it("unknown, expired and cancelled asks are said to be so", async () => {
    const { token, cid, lastId, interaction } = await untilAsk("expire [ask-timeout]");
    expect(
      (await json(await answer(token, cid, "no-such-ask", { operationId: uid("op"), outcome: "declined" }))).status,
    ).toBe("unknown_interaction");
    const events = await rest(token, cid, lastId);
    expect(events.find((e) => e.type === "interaction.resolved")!.data).toMatchObject({
      status: "expired",
      reason: "timeout",
    });
    const late = await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "accepted", data: GOOD });
    expect(late.status).toBe(410);
    expect((await json(late)).status).toBe("expired");

    const second = await untilAsk("cancel while asking [ask]");
    await api(`/v1/conversations/${second.cid}/cancel`, { token: second.token, body: { operationId: uid("op") } });
    await waitForTurn(second.token, second.cid, second.turnId);
    expect(
      (
        await json(
          await answer(second.token, second.cid, second.interaction.id, {
            operationId: uid("op"),
            outcome: "declined",
          }),
        )
      ).status,
    ).toBe("cancelled");
  });

  it("an ask whose session the deployment no longer knows is unknown_run", async () => {
    const { token, cid, accepted, interaction } = await untilAsk("gone [ask]");
    const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
    // The session disappears upstream (not through this gateway, which would forget the ask too).
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"));
    const deleted = await stub.fetch(
      `http://e/v1/sandboxes/${run.sandboxId}/runtime/agents/sessions/${run.sessionId}`,
      {
        method: "DELETE",
        headers: { authorization: "Bearer test" },
      },
    );
    expect(deleted.status).toBe(200);
    const res = await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "declined" });
    expect(res.status).toBe(404);
    expect((await json(res)).status).toBe("unknown_run");
  });

  it("an ask bound to another session is binding_mismatch, and nothing is delivered", async () => {
    await setFaults({ foreignBinding: true });
    const { token, cid, interaction } = await untilAsk("foreign [ask]");
    const delivered = (await counters())["interactions.delivered"] ?? 0;
    const res = await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "declined" });
    expect((await json(res)).status).toBe("binding_mismatch");
    expect((await counters())["interactions.delivered"] ?? 0).toBe(delivered);
  });

  it("an upstream failure after which delivery is unknown is transport_failure (retryable), never accepted; the retry settles it once", async () => {
    // Held after its first step ([hold]): the run answered upstream cannot end before the retry.
    const { token, cid, interaction } = await untilAsk("flaky [ask] [hold]");
    await setFaults({ answerDeliveryUnknown: 1 });
    const before = await counters();
    const operationId = uid("op");
    const first = await answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: GOOD });
    expect(first.status).toBe(502);
    expect(await json(first)).toMatchObject({ status: "transport_failure", retryable: true });
    const retry = await json(
      await answer(token, cid, interaction.id, { operationId, outcome: "accepted", data: GOOD }),
    );
    expect(retry.status).toBe("accepted");
    // The first answer reached the Sandbox (recorded, answered 503) and the retry reached it again;
    // it let the run go on exactly once.
    const after = await counters();
    expect((after["interactions.answers"] ?? 0) - (before["interactions.answers"] ?? 0)).toBe(2);
    expect((after["interactions.delivered"] ?? 0) - (before["interactions.delivered"] ?? 0)).toBe(1);
  });

  it("an environment that does not record answers claims no interactions: 501 before any upstream call", async () => {
    await setFaults({ capabilities: { interactions: { responseDedupe: false } } });
    const { token, cid, interaction } = await untilAsk("no dedupe [ask]");
    const calls = (await counters())["interactions.answers"] ?? 0;
    const res = await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "declined" });
    expect(res.status).toBe(501);
    expect((await json(res)).error.code).toBe("capability_denied");
    expect((await counters())["interactions.answers"] ?? 0).toBe(calls);
  });
});

describe("the turn's interaction posture", () => {
  it("{} enables no kind: the agent does not ask and goes on; enabling the kind lets it ask", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const quiet = uid("turn");
    await sendTurn(token, cid, quiet, "set up [ask] [permission]", { interactions: {} });
    const turn = await waitForTurn(token, cid, quiet);
    expect(turn.status).toBe("completed");
    const transcript = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    expect(JSON.stringify(transcript)).not.toContain("question-1");
    const asked = await json(
      await sendTurn(token, cid, uid("turn"), "set up [ask] [permission]", {
        interactions: { question: true, permission: false },
      }),
    );
    const { events } = await collect(
      await api(`/v1/conversations/${cid}/events?after=${asked.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );
    expect((events.at(-1)!.data.interaction as any).kind).toBe("question");
  });
});

describe("a permission", () => {
  it("denied: the agent does not run the tool", async () => {
    const { token, cid, turnId, interaction, lastId } = await untilAsk("run tests [permission]");
    expect(interaction).toMatchObject({
      kind: "permission",
      subject: { tool: "bash" },
      responseScopes: ["once", "session"],
    });
    const notAllowed = await json(
      await answer(token, cid, interaction.id, {
        operationId: uid("op"),
        outcome: "accepted",
        data: { grant: "allow_always" },
      }),
    );
    expect(notAllowed.status).toBe("invalid_response");
    await answer(token, cid, interaction.id, {
      operationId: uid("op"),
      outcome: "accepted",
      data: { grant: "deny", feedback: "not now" },
    });
    const events = await rest(token, cid, lastId);
    expect(events.some((e) => (e.data.part as any)?.tool === "bash")).toBe(false);
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("You denied running the tests (not now)");
  });

  it("granted for the session: the tool runs", async () => {
    const { token, cid, turnId, interaction, lastId } = await untilAsk("run tests [permission]");
    await answer(token, cid, interaction.id, {
      operationId: uid("op"),
      outcome: "accepted",
      data: { grant: "allow_session" },
    });
    const events = await rest(token, cid, lastId);
    const bash = events
      .filter((e) => (e.data.part as any)?.tool === "bash")
      .map((e) => (e.data.part as any).state.status);
    expect(bash).toEqual(["running", "completed"]);
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("allowed for this session");
  });
});

describe("a plan", () => {
  it("rejected with feedback gets a revised plan; approved, the run goes on", async () => {
    const { token, cid, turnId, interaction, lastId } = await untilAsk("plan it [plan]");
    expect(interaction).toMatchObject({ kind: "plan", subject: { revision: 1 } });
    await answer(token, cid, interaction.id, {
      operationId: uid("op"),
      outcome: "accepted",
      data: { decision: "reject", feedback: "test the CLI too" },
    });
    const next = await collect(
      await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": lastId } }),
      (e) => e.type === "interaction.requested",
    );
    const revised = next.events.find((e) => e.type === "plan.submitted")!;
    expect(revised.data.plan).toMatchObject({ revision: 2 });
    expect((revised.data.plan as any).body).toContain("test the CLI too");
    const second = next.events.at(-1)!.data.interaction as any;
    expect(second.subject).toMatchObject({ revision: 2 });
    await answer(token, cid, second.id, { operationId: uid("op"), outcome: "accepted", data: { decision: "approve" } });
    const turn = await waitForTurn(token, cid, turnId);
    expect(turn.status).toBe("completed");
    expect(turn.result.text).toContain("Plan revision 2 approved");
  });
});

describe("a turn that waits for a person", () => {
  /** The conversation's entry in the user's list, once it says `waitingFor` (the list is updated after the event). */
  async function listedAs(token: string, cid: string, waitingFor: string | null) {
    const deadline = Date.now() + 5000;
    let entry: any;
    while (Date.now() < deadline) {
      entry = (await json(await api(`/v1/conversations`, { token }))).conversations.find(
        (c: any) => c.conversationId === cid,
      );
      if (entry?.waitingFor === waitingFor) return entry;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`the list says ${JSON.stringify(entry)}, not waitingFor ${waitingFor}`);
  }

  it("a permission: the turn, the summary, the list and the stream say awaiting_permission; answered, it runs again", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "run tests [permission]"));
    expect(accepted.waitingFor).toBeNull();
    const first = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "turn.waiting",
    );
    const interaction = first.events.find((e) => e.type === "interaction.requested")!.data.interaction as any;
    expect(first.events.at(-1)!.data).toEqual({
      turnId,
      waitingFor: "awaiting_permission",
      interactionId: interaction.id,
    });

    const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    expect(turn).toMatchObject({ status: "running", waitingFor: "awaiting_permission" });
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary).toMatchObject({
      state: "running",
      waitingFor: "awaiting_permission",
      activeTurn: { turnId, waitingFor: "awaiting_permission" },
    });
    expect((await listedAs(token, cid, "awaiting_permission")).state).toBe("running");

    await answer(token, cid, interaction.id, {
      operationId: uid("op"),
      outcome: "accepted",
      data: { grant: "allow_once" },
    });
    const events = await rest(token, cid, first.lastId!);
    const resolved = events.findIndex((e) => e.type === "interaction.resolved");
    const running = events.findIndex((e) => e.type === "turn.waiting");
    expect(resolved).toBeGreaterThanOrEqual(0);
    expect(running).toBeGreaterThan(resolved);
    expect(events[running]!.data).toEqual({ turnId, waitingFor: null, interactionId: null });
    // Running again: the agent's work after the answer follows the waiting state's end.
    expect(events.slice(running).some((e) => (e.data.part as any)?.tool === "bash")).toBe(true);
    const done = await waitForTurn(token, cid, turnId);
    expect(done).toMatchObject({ status: "completed", waitingFor: null });
    expect(await json(await api(`/v1/conversations/${cid}`, { token }))).toMatchObject({
      state: "idle",
      waitingFor: null,
      lastTurn: { waitingFor: null },
    });
    expect((await listedAs(token, cid, null)).state).toBe("idle");
  });

  it("a question that expires, a plan, and an ask the run's end closes: each waits, then not", async () => {
    const states = async (
      message: string,
      settle: (ctx: { token: string; cid: string; interaction: any }) => Promise<unknown>,
    ) => {
      const { token, cid, turnId, interaction, lastId } = await untilAsk(message);
      const seen = (
        await collect(
          await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": lastId } }),
          (e) => e.type === "turn.waiting",
        )
      ).events.at(-1)!;
      const during = (await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }))).waitingFor;
      await settle({ token, cid, interaction });
      const after = (await rest(token, cid, lastId))
        .filter((e) => e.type === "turn.waiting")
        .map((e) => e.data.waitingFor);
      return { announced: seen.data.waitingFor, during, after, turn: await waitForTurn(token, cid, turnId) };
    };
    const expired = await states("expire [ask-timeout]", async () => undefined);
    // (It expires within moments: what the turn said meanwhile is not read here.)
    expect(expired).toMatchObject({
      announced: "awaiting_question",
      after: ["awaiting_question", null],
      turn: { status: "completed", waitingFor: null },
    });

    const plan = await states("plan it [plan]", ({ token, cid, interaction }) =>
      answer(token, cid, interaction.id, {
        operationId: uid("op"),
        outcome: "accepted",
        data: { decision: "approve" },
      }),
    );
    expect(plan).toMatchObject({
      announced: "awaiting_plan_decision",
      during: "awaiting_plan_decision",
      after: ["awaiting_plan_decision", null],
      turn: { status: "completed" },
    });

    const cancelled = await states("stop while asking [ask]", ({ token, cid }) =>
      api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } }),
    );
    expect(cancelled).toMatchObject({
      announced: "awaiting_question",
      after: ["awaiting_question", null],
      turn: { status: "cancelled", waitingFor: null },
    });
  });
});

describe("a permission in the ask's own form", () => {
  afterEach(async () => {
    await emulator("/_emulator/variants", {});
  });

  it('the Sandbox SDK\'s { response: "allow" }: answered in that form, the run goes on; a grant is not an answer to it', async () => {
    await emulator("/_emulator/variants", { permissionAnswer: "response" });
    const { token, cid, turnId, interaction, lastId } = await untilAsk("run tests [permission]");
    expect(interaction.answerSpec.fields.map((f: any) => f.name)).toEqual(["response"]);
    const wrong = await answer(token, cid, interaction.id, {
      operationId: uid("op"),
      outcome: "accepted",
      data: { grant: "allow_once" },
    });
    expect(wrong.status).toBe(422);
    expect((await json(wrong)).message).toBe("grant: is not a field of this request; response: is required");
    const ack = await json(
      await answer(token, cid, interaction.id, {
        operationId: uid("op"),
        outcome: "accepted",
        data: { response: "allow" },
      }),
    );
    expect(ack.status).toBe("accepted");
    const events = await rest(token, cid, lastId);
    expect(events.find((e) => e.type === "interaction.resolved")!.data).toMatchObject({
      status: "answered",
      outcome: "accepted",
      approved: true,
    });
    expect(
      events.filter((e) => (e.data.part as any)?.tool === "bash").map((e) => (e.data.part as any).state.status),
    ).toEqual(["running", "completed"]);
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("The tests pass (allowed once)");
  });

  it("denied in that form: every device learns it was not granted, and the tool does not run", async () => {
    await emulator("/_emulator/variants", { permissionAnswer: "response" });
    const { token, cid, turnId, interaction, lastId } = await untilAsk("run tests [permission]");
    expect(
      (
        await json(
          await answer(token, cid, interaction.id, {
            operationId: uid("op"),
            outcome: "accepted",
            data: { response: "deny" },
          }),
        )
      ).status,
    ).toBe("accepted");
    const events = await rest(token, cid, lastId);
    expect(events.find((e) => e.type === "interaction.resolved")!.data).toMatchObject({
      status: "answered",
      approved: false,
    });
    expect(events.some((e) => (e.data.part as any)?.tool === "bash")).toBe(false);
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("You denied running the tests");
  });

  it("scopes in the contract's vocabulary: allow-once is a grant the interaction scope allows; persistent without the option is no grant", async () => {
    await emulator("/_emulator/variants", { permissionScopes: "contract" });
    const { token, cid, interaction } = await untilAsk("run tests [permission]");
    expect(interaction.responseScopes).toEqual(["interaction", "session", "persistent"]);
    // The scopes allow always, but the ask's own options do not offer it.
    const always = await json(
      await answer(token, cid, interaction.id, {
        operationId: uid("op"),
        outcome: "accepted",
        data: { grant: "allow_always" },
      }),
    );
    expect(always.message).toBe("grant: allow_always is not one of allow_once, allow_session, deny");
    expect(
      (
        await json(
          await answer(token, cid, interaction.id, {
            operationId: uid("op"),
            outcome: "accepted",
            data: { grant: "allow_once" },
          }),
        )
      ).status,
    ).toBe("accepted");
  });
});
