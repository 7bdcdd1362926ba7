/**
 * The Tangle client against every plausible shape of the real wire: where docs/sandbox-wire.md
 * marks a fact as this project's reading, the emulator serves each variant and the gateway works
 * with all of them, through the public API.
 */
import { afterEach, describe, expect, it } from "vitest";
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

const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);

afterEach(async () => {
  await variants({});
  await setFaults({});
});

async function turnWith(message: string, extra: Record<string, unknown> = {}) {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const res = await sendTurn(token, cid, turnId, message, extra);
  return { token, cid, turnId, res };
}

async function askOf(token: string, cid: string, after: number | string) {
  const asked = await collect(
    await api(`/v1/conversations/${cid}/events?after=${after}`, { token }),
    (e) => e.type === "interaction.requested",
  );
  return {
    interaction: asked.events.at(-1)!.data.interaction as { id: string; kind: string; responseScopes?: string[] },
    lastId: asked.lastId!,
  };
}

const answer = (token: string, cid: string, iid: string, body: unknown) =>
  api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(iid)}`, { token, body });

describe("dispatch on every shape of the wire", () => {
  it("the execution id is sent in the X-Execution-ID header and the body, with the run-control ref", async () => {
    for (const v of [{ dispatchExecutionId: "header" }, { runControlRef: "required" }, {}]) {
      await variants(v);
      const { token, cid, turnId, res } = await turnWith("hello");
      expect(res.status).toBe(202);
      const accepted = await json(res);
      expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
      const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
      expect(run.request.runControlRef).toMatchObject({
        executionId: accepted.executionId,
        runId: accepted.executionId,
      });
    }
  });

  it("admission from execution.started without sessionId, or from a status frame naming the execution", async () => {
    for (const v of [{ executionStartedSessionId: false }, { admission: "status" }]) {
      await variants(v);
      const { token, cid, turnId, res } = await turnWith("hello");
      expect(res.status).toBe(202);
      expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    }
  });

  it("the posture travels in backend.interactions too: a deployment that reads it there asks, or not, as told", async () => {
    await variants({ interactionsAt: "backend" });
    const silent = await turnWith("set up tests [ask]", { interactions: {} });
    expect((await waitForTurn(silent.token, silent.cid, silent.turnId)).status).toBe("completed");
    const asking = await turnWith("set up tests [ask]", { interactions: { question: true } });
    const { interaction } = await askOf(asking.token, asking.cid, (await json(asking.res)).after);
    expect(interaction.kind).toBe("question");
    await api(`/v1/conversations/${asking.cid}/cancel`, { token: asking.token, body: { operationId: uid("op") } });
  });

  it("backend.model goes out as the seed's object, split from a provider/model route, whichever shape the deployment takes", async () => {
    const cases = [
      ["anthropic/claude-sonnet-4", { provider: "anthropic", model: "claude-sonnet-4" }],
      ["gpt-5", { model: "gpt-5" }],
    ] as const;
    for (const v of [{ backendModel: "string" }, { backendModel: "object" }]) {
      await variants(v);
      for (const [model, sent] of cases) {
        const before = await counters();
        const { token, cid, turnId, res } = await turnWith("hello", { model });
        expect(res.status).toBe(202);
        expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
        const after = await counters();
        // The dispatch as the emulator received it.
        const run = await emulator(`/_emulator/executions/${(await json(res)).executionId}`);
        expect(run.request.backend.model).toEqual(sent);
        // Right the first time: no dispatch was refused (400) and sent again in another shape.
        const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
        expect(delta("requests.runtime.run") - delta("runs.dispatches") - delta("runs.replays")).toBe(0);
      }
    }
  });

  it("readiness values outside the known enum are waited out as not ready, never a failure", async () => {
    await variants({ readiness: "unknown-value", readinessUnknownPolls: 3 });
    const { token, cid, turnId, res } = await turnWith("hello");
    expect(res.status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });
});

describe("reading runs on every shape of the wire", () => {
  it("connection.established without an id and data: before id: change nothing", async () => {
    await variants({ connectionEstablished: true, fieldOrder: "data-first" });
    const { token, cid, turnId, res } = await turnWith("hello there");
    const events = (
      await collect(await api(`/v1/conversations/${cid}/events?after=${(await json(res)).after}`, { token }), isTurnEnd)
    ).events;
    expect(events.at(-1)!.type).toBe("turn.completed");
    expect(events.filter((e) => e.type === "warning")).toEqual([]);
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("hello there");
  });

  it("session.run.failed is a terminal frame: the turn fails with its message", async () => {
    await variants({ terminal: "run-failed" });
    const { token, cid, turnId } = await turnWith("break [fail]");
    expect(await waitForTurn(token, cid, turnId)).toMatchObject({
      status: "failed",
      error: { message: expect.stringContaining("exited unexpectedly") },
    });
  });

  it("a run whose stream closes cleanly with no terminal frame settles from its result", async () => {
    await variants({ terminal: "none" });
    const { token, cid, turnId } = await turnWith("hello");
    const turn = await waitForTurn(token, cid, turnId);
    expect(turn.status).toBe("completed");
    expect(turn.result.text).toContain("hello");
  });

  it("a run settled from its result has the result's receipt folded: /usage, usage.updated and the turn show it", async () => {
    await variants({ terminal: "none" });
    // No step usage on the stream: only the receipt knows what the run used.
    const { token, cid, turnId, res } = await turnWith("quiet [no-usage]");
    const accepted = await json(res);
    const events = (
      await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd)
    ).events;
    const receipt = {
      inputTokens: 1980,
      outputTokens: 80,
      reasoningTokens: 5,
      cacheReadInputTokens: 1760,
      cacheCreationInputTokens: 40,
      cost: 0.0021,
    };
    const updates = events.filter((e) => e.type === "usage.updated").map((e) => e.data.usage);
    expect(updates).toHaveLength(1);
    // The Sandbox's receipt counts are measured; its cost says nothing of how it was reckoned.
    expect(updates[0]).toMatchObject({
      ...receipt,
      source: "receipt",
      conflict: false,
      provenance: { inputTokens: "measured", outputTokens: "measured", cost: "unknown" },
    });
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", data: { usage: { ...receipt, source: "receipt" } } });
    const usage = await json(await api(`/v1/conversations/${cid}/usage`, { token }));
    expect(usage.turns[0].usage).toMatchObject({ ...receipt, source: "receipt" });
    expect(usage.total).toMatchObject({ inputTokens: 1980, outputTokens: 80, complete: true });
    expect((await waitForTurn(token, cid, turnId)).usage).toMatchObject({
      inputTokens: 1980,
      outputTokens: 80,
      source: "receipt",
    });
  });

  it("without a result route, a run the session state no longer names ends with an unknown outcome, never a success", async () => {
    await variants({ terminal: "none", resultRoute: "missing" });
    for (const [message, upstream] of [
      ["hello", "completed"],
      ["break [fail]", "failed"],
    ] as const) {
      const { token, cid, turnId, res } = await turnWith(message);
      const accepted = await json(res);
      const events = (
        await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd)
      ).events;
      expect(events.some((e) => e.type === "turn.completed")).toBe(false);
      expect(events.at(-1)).toMatchObject({
        type: "turn.failed",
        data: { status: "failed", error: { code: "outcome_unknown" } },
      });
      expect(events.some((e) => e.type === "warning" && e.data.code === "stream_incomplete")).toBe(true);
      const turn = await waitForTurn(token, cid, turnId);
      expect(turn).toMatchObject({
        status: "failed",
        error: { code: "outcome_unknown", message: expect.stringContaining("how it ended is unknown") },
      });
      expect(turn.result).toBeUndefined();
      // Upstream knows how it ended; the gateway could not read it, so it does not claim it.
      expect((await emulator(`/_emulator/executions/${accepted.executionId}`)).status).toBe(upstream);
    }
  });
});

describe("control on every shape of the wire", () => {
  it("abort answered flat: the cancel is confirmed and the turn ends cancelled", async () => {
    await variants({ abort: "flat" });
    const { token, cid, turnId } = await turnWith("a long job [slow] [long]");
    const ack = await json(await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } }));
    expect(ack).toMatchObject({ status: "accepted", effect: "cancelled" });
    expect((await waitForTurn(token, cid, turnId)).status).toBe("cancelled");
  });

  it("a done (without a cancelled result) after a stop still ends the turn cancelled", async () => {
    await variants({ terminal: "done-only" });
    const { token, cid, turnId } = await turnWith("a long job [slow] [long]");
    await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op"), reason: "stop" } });
    expect(await waitForTurn(token, cid, turnId)).toMatchObject({ status: "cancelled", cancelReason: "stop" });
    // Without a stop, done-only is a completed run.
    const plain = await turnWith("hello");
    expect((await waitForTurn(plain.token, plain.cid, plain.turnId)).status).toBe("completed");
  });

  it("a plan waiting as awaiting_plan_decision becomes an ask, decided through the plan route", async () => {
    await variants({ planDecision: "route" });
    const { token, cid, turnId, res } = await turnWith("make a plan [plan]");
    const { interaction } = await askOf(token, cid, (await json(res)).after);
    expect(interaction.kind).toBe("plan");
    const before = (await counters())["plans.decisions"] ?? 0;
    const ack = await json(
      await answer(token, cid, interaction.id, {
        operationId: uid("op"),
        outcome: "accepted",
        data: { decision: "approve" },
      }),
    );
    expect(ack.status).toBe("accepted");
    expect((await counters())["plans.decisions"]).toBe(before + 1);
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("Plan revision 1 approved");
  });

  it("a run that says it waits only by its status (awaiting_question, blocked_on_approval, awaiting_plan_decision) has its asks read from the session: the turn waits for each, and goes on once answered", async () => {
    await variants({ waitSignal: "status" });
    const { token, cid, turnId, res } = await turnWith("set up, plan and test [ask] [plan] [permission]");
    let after: number | string = (await json(res)).after;
    const answers: Record<string, Record<string, unknown>> = {
      question: { project: "demo", framework: "vitest" },
      permission: { grant: "allow_once" },
      plan: { decision: "approve" },
    };
    const waited: string[] = [];
    for (const kind of ["question", "plan", "permission"]) {
      const { interaction, lastId } = await askOf(token, cid, after);
      expect(interaction.kind).toBe(kind);
      const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
      waited.push(turn.waitingFor);
      const ack = await json(
        await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "accepted", data: answers[kind] }),
      );
      expect(ack.status).toBe("accepted");
      after = lastId;
    }
    expect(waited).toEqual(["awaiting_question", "awaiting_plan_decision", "awaiting_permission"]);
    const done = await waitForTurn(token, cid, turnId);
    expect(done.status).toBe("completed");
    expect(done.result.text).toContain("Setting up demo with vitest");
    expect(done.result.text).toContain("Plan revision 1 approved");
  });

  it("a wait said only by status whose interactions cannot be read is a warning that says so, never a silent wait", async () => {
    await variants({ waitSignal: "status" });
    await setFaults({ failNext: { status: 503, count: 3, route: "runtime.session.interactions" } });
    const { token, cid, turnId, res } = await turnWith("set up [ask]");
    const seen = await collect(
      await api(`/v1/conversations/${cid}/events?after=${(await json(res)).after}`, { token }),
      (e) => e.type === "warning",
    );
    expect(seen.events.at(-1)!.data).toMatchObject({
      code: "interactions_unavailable",
      message: expect.stringMatching(/waits \(awaiting_question\).*could not be read/),
    });
    expect((await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }))).status).toBe("running");
    await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    expect((await waitForTurn(token, cid, turnId)).status).toBe("cancelled");
  });

  it("permission scopes in the contract's vocabulary offer allow-once", async () => {
    await variants({ permissionScopes: "contract" });
    const { token, cid, turnId, res } = await turnWith("run the tests [permission]");
    const { interaction } = await askOf(token, cid, (await json(res)).after);
    expect(interaction.responseScopes).toEqual(["interaction", "session", "persistent"]);
    const ack = await json(
      await answer(token, cid, interaction.id, {
        operationId: uid("op"),
        outcome: "accepted",
        data: { grant: "allow_once" },
      }),
    );
    expect(ack.status).toBe("accepted");
    expect((await waitForTurn(token, cid, turnId)).result.text).toContain("allowed once");
  });

  it("a 501 on the answer route is capability_denied, not a retryable transport failure", async () => {
    await variants({ answerRoute: "not-implemented" });
    const { token, cid, res } = await turnWith("set up tests [ask]");
    const { interaction } = await askOf(token, cid, (await json(res)).after);
    const refused = await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "declined" });
    expect(refused.status).toBe(501);
    expect((await json(refused)).error.code).toBe("capability_denied");
    await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
  });

  it("a repeated answer after success is already resolved, even where the deployment forgets answered asks", async () => {
    await variants({ answeredAsk: "gone" });
    const { token, cid, turnId, res } = await turnWith("set up tests [ask]");
    const { interaction } = await askOf(token, cid, (await json(res)).after);
    const data = { project: "demo", framework: "vitest" };
    expect(
      (await json(await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "accepted", data })))
        .status,
    ).toBe("accepted");
    expect(
      (await json(await answer(token, cid, interaction.id, { operationId: uid("op"), outcome: "accepted", data })))
        .status,
    ).toBe("already_resolved_same");
    await waitForTurn(token, cid, turnId);
  });
});

describe("an environment that goes away mid-turn", () => {
  for (const fate of ["deleted", "failed", "expired"] as const) {
    it(`a sandbox ${fate} mid-turn ends the turn environment_lost at once; the next turn gets a new sandbox and says the agent starts afresh`, async () => {
      const { token, cid, turnId, res } = await turnWith("a long job [slow] [long]");
      const accepted = await json(res);
      const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
      const watching = collect(
        await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
        isTurnEnd,
      );
      await emulator(`/_emulator/sandboxes/${run.sandboxId}/status`, { status: fate });
      const ended = (await watching).events.at(-1)!;
      expect(ended).toMatchObject({ type: "turn.failed", data: { error: { code: "environment_lost" } } });
      const next = uid("turn");
      const again = await json(await sendTurn(token, cid, next, "are you there?"));
      expect((await waitForTurn(token, cid, next)).status).toBe("completed");
      expect((await emulator(`/_emulator/executions/${again.executionId}`)).sandboxId).not.toBe(run.sandboxId);
      const events = (
        await collect(await api(`/v1/conversations/${cid}/events?after=${again.after}`, { token }), isTurnEnd)
      ).events;
      expect(events.some((e) => e.type === "warning" && e.data.code === "agent_memory_reset")).toBe(true);
      void turnId;
    });
  }
});
