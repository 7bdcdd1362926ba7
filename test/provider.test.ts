import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { deriveOwnerKey } from "../src/auth/ids";
import { readConfig } from "../src/config";
import { createProvider } from "../src/providers";
import type { TangleProvider } from "../src/providers/tangle/provider";
import {
  api,
  counters,
  emulator,
  json,
  sendTurn,
  setFaults,
  tokenFor,
  uid,
  upstream,
  upstreamRejection,
  waitForTurn,
} from "./helpers";

const provider = () => createProvider(readConfig(env), env) as TangleProvider;

afterEach(async () => {
  await setFaults({});
  await emulator("/_emulator/variants", {});
});

describe("the Tangle provider's environment (one sandbox per user)", () => {
  it("creates under an idempotency key and hands the sandbox over only when running and ready", async () => {
    // Its filesystem stays transitioning until the test moves the sandbox's clock past the lag.
    await setFaults({ readinessLagMs: 600_000 });
    const owner = uid("owner");
    const listed = async () =>
      new Set<string>(
        (await json(await upstream("GET", "/v1/sandboxes?limit=1000"))).sandboxes.map((s: { id: string }) => s.id),
      );
    const earlier = await listed();
    const before = await counters();
    let handedOver = false;
    const ensuring = provider()
      .ensureEnvironment({ ownerKey: owner, known: null })
      .finally(() => (handedOver = true));
    const gets = async () =>
      ((await counters())["requests.sandboxes.get"] ?? 0) - (before["requests.sandboxes.get"] ?? 0);
    for (let i = 0; (await gets()) < 3; i++) {
      if (i > 500) throw new Error("the provider did not poll the sandbox");
      await new Promise((r) => setTimeout(r, 10));
    }
    // Polled while it was not ready, and not handed over.
    expect(handedOver).toBe(false);
    const created = [...(await listed())].filter((id) => !earlier.has(id));
    expect(created).toHaveLength(1);
    expect((await emulator(`/_emulator/sandboxes/${created[0]}/clock`, { advanceSeconds: 600 })).ok).toBe(true);
    const { record, outcome } = await ensuring;
    expect(outcome).toBe("created");
    expect(record.environmentId).toBe(created[0]);
    const sandbox = await json(
      await env
        .SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"))
        .fetch(`http://e/_emulator/sandboxes/${record.environmentId}`),
    );
    expect(sandbox.idempotencyKey).toBe(`${owner}:g1`);
    expect(sandbox.body.backend).toEqual({ type: "opencode" });
    // Ready means running AND a ready filesystem: it polled through the transitioning phase.
    const after = await counters();
    expect((after["requests.sandboxes.get"] ?? 0) - (before["requests.sandboxes.get"] ?? 0)).toBeGreaterThan(3);
    expect((after["sandboxes.created"] ?? 0) - (before["sandboxes.created"] ?? 0)).toBe(1);
    expect(record.capabilities).toMatchObject({ schema: 1, dispatch: { runControlRef: true } });

    // The same owner with no record (a lost response, a second object) gets the same sandbox.
    const again = await provider().ensureEnvironment({ ownerKey: owner, known: null });
    expect(again.record.environmentId).toBe(record.environmentId);
    expect((await counters())["sandboxes.created"]).toBe(after["sandboxes.created"]);
  });

  it("resumes a stopped sandbox", async () => {
    const { record } = await provider().ensureEnvironment({ ownerKey: uid("owner"), known: null });
    await emulator(`/_emulator/sandboxes/${record.environmentId}/status`, { status: "stopped" });
    const before = (await counters())["sandboxes.resumed"] ?? 0;
    const resumed = await provider().ensureEnvironment({ ownerKey: "x", known: record });
    expect(resumed.outcome).toBe("resumed");
    expect(resumed.record.environmentId).toBe(record.environmentId);
    expect((await counters())["sandboxes.resumed"]).toBe(before + 1);
  });

  it("replaces a sandbox that is gone (404) or failed, under the next generation's key", async () => {
    const owner = uid("owner");
    const { record } = await provider().ensureEnvironment({ ownerKey: owner, known: null });
    await emulator(`/_emulator/sandboxes/${record.environmentId}/status`, { status: "deleted" });
    const replaced = await provider().ensureEnvironment({ ownerKey: owner, known: record });
    expect(replaced.outcome).toBe("created");
    expect(replaced.record.environmentId).not.toBe(record.environmentId);
    expect(replaced.record.generation).toBe(2);
    await emulator(`/_emulator/sandboxes/${replaced.record.environmentId}/status`, { status: "expired" });
    const third = await provider().ensureEnvironment({ ownerKey: owner, known: replaced.record });
    expect(third.record.generation).toBe(3);
  });

  for (const outcome of ["failed", "stopped", "expired"] as const) {
    it(`a sandbox it created that ends provisioning ${outcome} is deleted before the error surfaces`, async () => {
      await setFaults({ provisionOutcome: outcome });
      const before = (await counters())["sandboxes.deleted"] ?? 0;
      const err = await upstreamRejection(provider().ensureEnvironment({ ownerKey: uid("owner"), known: null }));
      expect(err.code).toBe("environment_unavailable");
      expect(err.message).toContain(outcome);
      expect((await counters())["sandboxes.deleted"]).toBe(before + 1);
    });
  }

  it("a failed capability read claims nothing, fails nothing, and is reported as a warning", async () => {
    await setFaults({ capabilitiesFail: true });
    const { record } = await provider().ensureEnvironment({ ownerKey: uid("owner"), known: null });
    expect(record.capabilities).toBeNull();
    expect(record.warnings[0]).toContain("capability document unavailable");
  });
});

describe("the Tangle provider's dispatch", () => {
  it("fails closed when the admission names another execution", async () => {
    const p = provider();
    const { record } = await p.ensureEnvironment({ ownerKey: uid("owner"), known: null });
    await setFaults({ admitWrongExecutionId: true });
    const err = await upstreamRejection(
      p.dispatch({
        environmentId: record.environmentId,
        sessionId: uid("s"),
        turnId: "t1",
        executionId: uid("exe"),
        message: "hi",
      }),
    );
    expect(err.code).toBe("admission_mismatch");
  });

  it("runs one turn per session at a time: another execution on a busy session is SESSION_BUSY", async () => {
    const p = provider();
    const { record } = await p.ensureEnvironment({ ownerKey: uid("owner"), known: null });
    const sessionId = uid("s");
    await p.dispatch({
      environmentId: record.environmentId,
      sessionId,
      turnId: "t1",
      executionId: uid("exe"),
      message: "long [slow]",
    });
    const err = await upstreamRejection(
      p.dispatch({
        environmentId: record.environmentId,
        sessionId,
        turnId: "t2",
        executionId: uid("exe"),
        message: "second",
      }),
    );
    expect(err).toMatchObject({ status: 409, code: "session_busy" });
    // Another session in the same sandbox runs side by side.
    const other = await p.dispatch({
      environmentId: record.environmentId,
      sessionId: uid("s"),
      turnId: "t1",
      executionId: uid("exe"),
      message: "parallel",
    });
    expect(other.alreadyExisted).toBe(false);
  });

  it("is idempotent under the execution id and answers an exact control ref", async () => {
    const p = provider();
    const { record } = await p.ensureEnvironment({ ownerKey: uid("owner"), known: null });
    const input = {
      environmentId: record.environmentId,
      sessionId: uid("s"),
      turnId: "t1",
      executionId: uid("exe"),
      message: "hi",
    };
    const first = await p.dispatch(input);
    const second = await p.dispatch(input);
    expect(first.alreadyExisted).toBe(false);
    expect(second.alreadyExisted).toBe(true);
    expect(second.controlRef).toEqual(first.controlRef);
    expect(first.controlRef).toMatchObject({
      runId: input.executionId,
      executionId: input.executionId,
      sessionId: input.sessionId,
      provider: "tangle-sandbox",
    });
    expect(first.controlRef.requestDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("an operator's named model credential: the sandbox created with the secret's name, every turn naming it, never a value", async () => {
    const config = readConfig({
      ...env,
      AGENT_MODEL: "zai/glm-5.2",
      AGENT_MODEL_CREDENTIAL: "RESEARCH_ROUTER_KEY",
      AGENT_MODEL_CREDENTIAL_BASE_URL: "https://router.example.test/v1",
    } as unknown as Env);
    const p = createProvider(config, env) as TangleProvider;
    const { record } = await p.ensureEnvironment({ ownerKey: uid("owner"), known: null });
    const sandbox = await json(
      await env
        .SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"))
        .fetch(`http://e/_emulator/sandboxes/${record.environmentId}`),
    );
    const reference = { apiKeyEnv: "RESEARCH_ROUTER_KEY", baseUrl: "https://router.example.test/v1" };
    expect(sandbox.body.secrets).toEqual(["RESEARCH_ROUTER_KEY"]);
    expect(sandbox.body.backend.model).toEqual({ provider: "zai", model: "glm-5.2", ...reference });
    const executionId = uid("exe");
    await p.dispatch({
      environmentId: record.environmentId,
      sessionId: uid("s"),
      turnId: "t1",
      executionId,
      message: "hi",
    });
    expect((await emulator(`/_emulator/executions/${executionId}`)).request.backend.model).toEqual({
      provider: "zai",
      model: "glm-5.2",
      ...reference,
    });
    // The two go together.
    expect(() => readConfig({ ...env, AGENT_MODEL_CREDENTIAL: "RESEARCH_ROUTER_KEY" } as unknown as Env)).toThrow(
      /AGENT_MODEL_CREDENTIAL_BASE_URL/,
    );
  });
});

describe("the Tangle provider's run control", () => {
  it("cancels exactly the run the ref names, and a repeat finds nothing running", async () => {
    const p = provider();
    const { record } = await p.ensureEnvironment({ ownerKey: uid("owner"), known: null });
    const input = {
      environmentId: record.environmentId,
      sessionId: uid("s"),
      turnId: "t1",
      executionId: uid("exe"),
      message: "long job [slow]",
    };
    const { controlRef } = await p.dispatch(input);
    expect(await p.result(controlRef)).toBeNull();
    const other = { ...controlRef, executionId: uid("exe-other"), runId: "x" };
    expect(await p.cancel(other)).toEqual({ effect: "not_live", reason: "not_running" });
    expect(await p.cancel(controlRef)).toEqual({ effect: "cancelled" });
    expect(await p.result(controlRef)).toMatchObject({ status: "cancelled" });
    expect((await p.cancel(controlRef)).effect).toBe("not_live");
  });
});

describe("the gateway over a sandbox that changes under it", () => {
  it("a stopped sandbox is resumed before the turn, and the turn carries its backend again", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("turn");
    await sendTurn(token, cid, t1, "first");
    await waitForTurn(token, cid, t1);
    const firstRun = await emulator(
      `/_emulator/executions/${(await json(await api(`/v1/conversations/${cid}/turns/${t1}`, { token }))).executionId}`,
    );
    await emulator(`/_emulator/sandboxes/${firstRun.sandboxId}/status`, { status: "stopped" });
    const resumedBefore = (await counters())["sandboxes.resumed"] ?? 0;

    const t2 = uid("turn");
    const accepted = await sendTurn(token, cid, t2, "second");
    expect(accepted.status).toBe(202);
    expect((await waitForTurn(token, cid, t2)).status).toBe("completed");
    expect((await counters())["sandboxes.resumed"]).toBe(resumedBefore + 1);
    const secondRun = await emulator(`/_emulator/executions/${(await json(accepted)).executionId}`);
    expect(secondRun.sandboxId).toBe(firstRun.sandboxId);
    expect(secondRun.request.backend).toEqual({ type: "opencode" });
  });

  it("a sandbox that is gone is replaced and the turn runs there", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("turn");
    await sendTurn(token, cid, t1, "first");
    const firstTurn = await waitForTurn(token, cid, t1);
    const firstRun = await emulator(`/_emulator/executions/${firstTurn.executionId}`);
    await emulator(`/_emulator/sandboxes/${firstRun.sandboxId}/status`, { status: "deleted" });
    const t2 = uid("turn");
    const accepted = await json(await sendTurn(token, cid, t2, "second"));
    expect((await waitForTurn(token, cid, t2)).status).toBe("completed");
    const secondRun = await emulator(`/_emulator/executions/${accepted.executionId}`);
    expect(secondRun.sandboxId).not.toBe(firstRun.sandboxId);
  });

  it("an upstream outage on dispatch is a 5xx with a code, stores nothing, and the same turn id works later", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    await setFaults({ failNext: { status: 503, count: 10, route: "runtime.run" } });
    const turnId = uid("turn");
    const failed = await sendTurn(token, cid, turnId, "during an outage");
    expect(failed.status).toBe(502);
    expect((await json(failed)).error).toMatchObject({
      code: "upstream_error",
      details: { upstreamStatus: 503, retryable: true },
    });
    expect((await api(`/v1/conversations/${cid}/turns/${turnId}`, { token })).status).toBe(404);
    await setFaults({});
    expect((await sendTurn(token, cid, turnId, "during an outage")).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  });

  it("a rate limit upstream is a 503 with Retry-After", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm");
    await waitForTurn(token, cid, warm);
    await setFaults({ failNext: { status: 429, count: 5, route: "runtime.run", retryAfterSeconds: 30 } });
    const limited = await sendTurn(token, cid, uid("turn"), "hello");
    expect(limited.status).toBe(503);
    expect(limited.headers.get("retry-after")).toBe("30");
    expect((await json(limited)).error.code).toBe("upstream_rate_limited");
  });
});

describe("sandbox creation: made by this call, or found", () => {
  const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

  /** A new user, and the idempotency key of their first sandbox. */
  async function newUser() {
    const user = uid("user");
    const ownerKey = await deriveOwnerKey(secret, user);
    return { token: await tokenFor(user), cid: uid("conv"), ownerKey };
  }

  /** A sandbox made under the user's first key by another call, that stays `transitioning` until failed. */
  async function heldKey(ownerKey: string): Promise<string> {
    await setFaults({ readinessLagMs: 60_000 });
    const res = await upstream("POST", "/v1/sandboxes", { name: "made elsewhere", idempotencyKey: `${ownerKey}:g1` });
    expect(res.status).toBe(201);
    return (await json(res)).id as string;
  }

  /** Sends a turn while the gateway's create finds the held sandbox, and fails that sandbox during the wait. */
  async function turnFailingOn(token: string, cid: string, held: string) {
    const replayed = (await counters())["sandboxes.replayed"] ?? 0;
    const sending = sendTurn(token, cid, uid("turn"), "hello");
    for (let i = 0; i < 500 && ((await counters())["sandboxes.replayed"] ?? 0) === replayed; i++)
      await new Promise((r) => setTimeout(r, 10));
    const deleted = (await counters())["sandboxes.deleted"] ?? 0;
    await emulator(`/_emulator/sandboxes/${held}/status`, { status: "failed" });
    const refused = await sending;
    return { refused, deletedBefore: deleted };
  }

  async function nextTurnGetsItsOwn(token: string, cid: string, held: string) {
    await setFaults({});
    const turnId = uid("turn");
    const accepted = await sendTurn(token, cid, turnId, "again");
    expect(accepted.status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    const run = await emulator(`/_emulator/executions/${(await json(accepted)).executionId}`);
    expect(run.sandboxId).not.toBe(held);
    expect((await emulator(`/_emulator/sandboxes/${run.sandboxId}`)).idempotencyKey).toMatch(/:g2$/);
  }

  it("a sandbox a create found (a replay of a key another call used: 200) that fails to come up is left in place, not deleted", async () => {
    const { token, cid, ownerKey } = await newUser();
    const held = await heldKey(ownerKey);
    const { refused, deletedBefore } = await turnFailingOn(token, cid, held);
    expect(refused.status).toBe(503);
    expect((await json(refused)).error).toMatchObject({
      code: "environment_unavailable",
      message: expect.stringContaining("left in place"),
    });
    expect((await emulator(`/_emulator/sandboxes/${held}`)).status).toBe("failed");
    expect((await counters())["sandboxes.deleted"] ?? 0).toBe(deletedBefore);
    // Its key is not used again: the next turn gets a sandbox of its own.
    await nextTurnGetsItsOwn(token, cid, held);
  });

  it("where a replay answers 201 too, a key an earlier call sent (a crash mid-create) proves nothing: that sandbox is not deleted either", async () => {
    await emulator("/_emulator/variants", { createReplay: "201" });
    const { token, cid, ownerKey } = await newUser();
    const held = await heldKey(ownerKey);
    // The user's object sent the first key's create and crashed before it heard back.
    await runInDurableObject(env.USERS.get(env.USERS.idFromName(ownerKey)), async (_i, state) => {
      state.storage.sql.exec("INSERT INTO create_ledger (id, sent, failed) VALUES (1, 1, 0)");
    });
    const { refused, deletedBefore } = await turnFailingOn(token, cid, held);
    expect((await json(refused)).error).toMatchObject({
      code: "environment_unavailable",
      message: expect.stringContaining("left in place"),
    });
    expect((await emulator(`/_emulator/sandboxes/${held}`)).status).toBe("failed");
    expect((await counters())["sandboxes.deleted"] ?? 0).toBe(deletedBefore);
    await nextTurnGetsItsOwn(token, cid, held);
  });

  it("a key that answers a dead sandbox another call made is stepped past in the same call; that sandbox is left alone", async () => {
    const { token, cid, ownerKey } = await newUser();
    await setFaults({ provisionOutcome: "failed" });
    const res = await upstream("POST", "/v1/sandboxes", { name: "made elsewhere", idempotencyKey: `${ownerKey}:g1` });
    const held = (await json(res)).id as string;
    // Reading it through the Sandbox API moves it on by the clock, to its end.
    for (let i = 0; i < 200 && (await json(await upstream("GET", `/v1/sandboxes/${held}`))).status !== "failed"; i++)
      await new Promise((r) => setTimeout(r, 10));
    await nextTurnGetsItsOwn(token, cid, held);
    expect((await emulator(`/_emulator/sandboxes/${held}`)).status).toBe("failed");
  });

  for (const createReplay of ["200", "201"] as const) {
    it(`a sandbox this call created (a fresh key, answered 201) that fails to come up is deleted before the error surfaces (createReplay ${createReplay})`, async () => {
      await emulator("/_emulator/variants", { createReplay });
      const { token, cid } = await newUser();
      await setFaults({ provisionOutcome: "failed" });
      // Twice: a key whose bring-up failed is not used again, so the next create proves itself too.
      for (let attempt = 1; attempt <= 2; attempt++) {
        const deleted = (await counters())["sandboxes.deleted"] ?? 0;
        const refused = await sendTurn(token, cid, uid("turn"), "hello");
        expect((await json(refused)).error).toMatchObject({
          code: "environment_unavailable",
          message: expect.not.stringContaining("left in place"),
        });
        expect((await counters())["sandboxes.deleted"]).toBe(deleted + 1);
      }
    });
  }
});
