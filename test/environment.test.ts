/**
 * The sandbox's life through the public API against the emulator (docs/api.md#the-sandboxs-life):
 * `GET /v1/environment` reports what the Sandbox reports (and marks unavailable what it does not),
 * creation sends the configured limits, the emulator enforces them (an idle stop, an expiry), and a
 * user's stop and delete; the next turn resumes (memory kept) or replaces (`agent_memory_reset`).
 */
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { readConfig } from "../src/config";
import type { ApiError } from "../src/errors";
import { api, collect, counters, emulator, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);

afterEach(async () => {
  await variants({});
});

/** A user with one finished turn: their sandbox exists. */
async function userWithSandbox() {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, "hello"));
  expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  const sandboxId = (await emulator(`/_emulator/executions/${accepted.executionId}`)).sandboxId as string;
  return { token, cid, sandboxId };
}

const environment = async (token: string) => {
  const res = await api("/v1/environment", { token });
  expect(res.status).toBe(200);
  return json(res);
};

/** A turn, to its end: its status, the sandbox it ran in, and whether it said the agent's memory was reset. */
async function nextTurn(token: string, cid: string) {
  const turnId = uid("turn");
  const res = await sendTurn(token, cid, turnId, "are you there?");
  expect(res.status).toBe(202);
  const accepted = await json(res);
  const events = (
    await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd)
  ).events;
  const sandboxId = (await emulator(`/_emulator/executions/${accepted.executionId}`)).sandboxId as string;
  return {
    status: events.at(-1)!.type,
    sandboxId,
    memoryReset: events.some((e) => e.type === "warning" && e.data.code === "agent_memory_reset"),
  };
}

const DAY = 24 * 60 * 60;
const IDLE = 30 * 60;

describe("GET /v1/environment", () => {
  it("before any turn: no environment, what a user may do", async () => {
    const view = await environment(await tokenFor(uid("user")));
    expect(view).toEqual({
      provider: "emulator",
      observedAt: expect.any(String),
      environment: null,
      capabilities: { stop: true, delete: true },
      actions: [],
    });
  });

  it("no user is shown the provider account's usage (every user's sandboxes): the operator reads it in the log", async () => {
    const { token } = await userWithSandbox();
    const logged: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void logged.push(String(line)));
    let body: string;
    try {
      body = await (await api("/v1/environment", { token })).text();
    } finally {
      spy.mockRestore();
    }
    expect(body).not.toMatch(/accountUsage|activeSandboxes|concurrentSandboxLimit/);
    const entries = logged.flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return [];
      }
    });
    const usage = entries.find((entry) => entry.msg === "provider account usage");
    expect(usage.accountUsage.state).toBe("reported");
    expect(usage.accountUsage.value.activeSandboxes).toBeGreaterThanOrEqual(1);
    // The emulator states no ceiling: null, never 0.
    expect(usage.accountUsage.value.concurrentSandboxLimit).toBeNull();
  });

  it("after a turn: the sandbox as the Sandbox reports it, the limits sent at creation (the documented defaults), and its creation", async () => {
    const { token, sandboxId } = await userWithSandbox();
    const created = await emulator(`/_emulator/sandboxes/${sandboxId}`);
    expect(created.body).toMatchObject({ idleTimeoutSeconds: IDLE, maxLifetimeSeconds: DAY });

    const view = await environment(token);
    expect(view.environment).toMatchObject({
      environmentId: sandboxId,
      generation: 1,
      requested: { idleTimeoutSeconds: IDLE, maxLifetimeSeconds: DAY },
      reported: {
        status: { state: "reported", value: "running" },
        idlePolicy: { state: "reported", value: { idleTimeoutSeconds: IDLE, maxLifetimeSeconds: DAY } },
        resources: { state: "reported", value: { cpuCores: 2, memoryMB: 4096, diskGB: 10 } },
      },
    });
    const reported = view.environment.reported;
    expect(Date.parse(reported.expiresAt.value) - Date.parse(reported.createdAt.value)).toBe(DAY * 1000);
    expect(reported.startedAt.state).toBe("reported");
    expect(reported.lastActivityAt.state).toBe("reported");
    expect(view.actions).toEqual([{ action: "created", at: expect.any(String), environmentId: sandboxId }]);
  });

  it("what the Sandbox does not report is unavailable with the reason, never a zero or the value asked for", async () => {
    const { token } = await userWithSandbox();
    await variants({ sandboxLifecycle: "wire-only", accountUsage: "missing" });
    const view = await environment(token);
    const reported = view.environment.reported;
    expect(reported.idlePolicy).toEqual({ state: "unavailable", reason: expect.stringContaining("no idle timeout") });
    expect(reported.resources).toEqual({ state: "unavailable", reason: expect.stringContaining("no resources") });
    expect(reported.expiresAt.state).toBe("reported");
    // What the gateway asked for stays beside it, marked as the request.
    expect(view.environment.requested).toEqual({ idleTimeoutSeconds: IDLE, maxLifetimeSeconds: DAY });
  });

  it("a sandbox the Sandbox no longer has reports gone", async () => {
    const { token, sandboxId } = await userWithSandbox();
    await emulator(`/_emulator/sandboxes/${sandboxId}/status`, { status: "deleted" });
    const view = await environment(token);
    expect(view.environment.reported.status).toEqual({ state: "reported", value: "gone" });
    expect(view.environment.reported.createdAt.state).toBe("unavailable");
  });

  it("needs a token", async () => {
    expect((await api("/v1/environment")).status).toBe(401);
  });
});

describe("the limits, kept by the Sandbox", () => {
  it("an idle-stopped sandbox is resumed by the next turn, the agent's memory kept", async () => {
    const { token, cid, sandboxId } = await userWithSandbox();
    await emulator(`/_emulator/sandboxes/${sandboxId}/clock`, { advanceSeconds: IDLE });
    expect((await environment(token)).environment.reported.status.value).toBe("stopped");
    const resumedBefore = (await counters())["sandboxes.resumed"] ?? 0;
    const next = await nextTurn(token, cid);
    expect(next).toEqual({ status: "turn.completed", sandboxId, memoryReset: false });
    expect((await counters())["sandboxes.resumed"]).toBe(resumedBefore + 1);
    expect((await environment(token)).actions.map((a: any) => a.action)).toEqual(["resumed", "created"]);
  });

  it("an expired sandbox is replaced by the next turn, which says agent_memory_reset", async () => {
    const { token, cid, sandboxId } = await userWithSandbox();
    await emulator(`/_emulator/sandboxes/${sandboxId}/clock`, { advanceSeconds: DAY });
    expect((await environment(token)).environment.reported.status.value).toBe("expired");
    const next = await nextTurn(token, cid);
    expect(next.status).toBe("turn.completed");
    expect(next.sandboxId).not.toBe(sandboxId);
    expect(next.memoryReset).toBe(true);
    const view = await environment(token);
    expect(view.environment).toMatchObject({ environmentId: next.sandboxId, generation: 2 });
    expect(view.actions[0]).toMatchObject({
      action: "replaced",
      environmentId: next.sandboxId,
      detail: `in place of ${sandboxId}`,
    });
  });

  it("an expired sandbox holds no session to end: its conversation is deleted all the same, and so is the account", async () => {
    const { token, cid, sandboxId } = await userWithSandbox();
    const other = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, other, turnId, "hello");
    expect((await waitForTurn(token, other, turnId)).status).toBe("completed");
    await emulator(`/_emulator/sandboxes/${sandboxId}/clock`, { advanceSeconds: DAY });
    const removed = await api(`/v1/conversations/${cid}`, { token, method: "DELETE" });
    expect(removed.status).toBe(200);
    expect((await api(`/v1/conversations/${cid}/messages`, { token })).status).toBe(404);
    const deleted = await api("/v1/me", { token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(await json(deleted)).toMatchObject({ state: "deleted", conversationsDeleted: 1 });
  });

  it("stop of a sandbox that is gone already says so", async () => {
    const { token, sandboxId } = await userWithSandbox();
    await emulator(`/_emulator/sandboxes/${sandboxId}/status`, { status: "deleted" });
    const res = await api("/v1/environment/stop", { token, method: "POST" });
    expect(res.status).toBe(404);
    expect((await json(res)).error.code).toBe("environment_not_found");
  });

  it("the limits are configuration: whole seconds above zero, the idle timeout no longer than the lifetime", () => {
    const base = env as unknown as Record<string, string>;
    const read = (overrides: Record<string, string>) => {
      try {
        return readConfig({ ...base, ...overrides } as unknown as Env);
      } catch (err) {
        return err as ApiError;
      }
    };
    expect(read({ SANDBOX_IDLE_TIMEOUT_SECONDS: "600", SANDBOX_MAX_LIFETIME_SECONDS: "7200" })).toMatchObject({
      SANDBOX_IDLE_TIMEOUT_SECONDS: 600,
      SANDBOX_MAX_LIFETIME_SECONDS: 7200,
    });
    expect(read({ SANDBOX_IDLE_TIMEOUT_SECONDS: "0" })).toMatchObject({
      code: "config_invalid",
      details: { variables: ["SANDBOX_IDLE_TIMEOUT_SECONDS"] },
    });
    expect(read({ SANDBOX_MAX_LIFETIME_SECONDS: "a day" })).toMatchObject({
      code: "config_invalid",
      details: { variables: ["SANDBOX_MAX_LIFETIME_SECONDS"] },
    });
    expect(read({ SANDBOX_IDLE_TIMEOUT_SECONDS: "7200", SANDBOX_MAX_LIFETIME_SECONDS: "3600" })).toMatchObject({
      code: "config_invalid",
      details: { variables: ["SANDBOX_IDLE_TIMEOUT_SECONDS"] },
    });
  });
});

describe("a user stops or deletes their sandbox", () => {
  it("stop: the sandbox stops now; the next turn resumes it, the agent's memory kept", async () => {
    const { token, cid, sandboxId } = await userWithSandbox();
    const stop = await api("/v1/environment/stop", { token, method: "POST" });
    expect(stop.status).toBe(200);
    expect(await json(stop)).toEqual({ stopped: true, environmentId: sandboxId });
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("stopped");
    expect((await environment(token)).actions[0]).toMatchObject({ action: "stopped", environmentId: sandboxId });
    expect(await nextTurn(token, cid)).toEqual({ status: "turn.completed", sandboxId, memoryReset: false });
  });

  it("stop with no sandbox yet is refused, naming why", async () => {
    const res = await api("/v1/environment/stop", { token: await tokenFor(uid("user")), method: "POST" });
    expect(res.status).toBe(404);
    expect((await json(res)).error.code).toBe("environment_not_found");
  });

  it("delete: the sandbox is deleted upstream; the next turn runs in a new one, under a key never sent, and says agent_memory_reset", async () => {
    const { token, cid, sandboxId } = await userWithSandbox();
    const before = await emulator(`/_emulator/sandboxes/${sandboxId}`);
    const res = await api("/v1/environment", { token, method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ deleted: true, environmentId: sandboxId });
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("deleted");
    const view = await environment(token);
    expect(view.environment).toBeNull();
    expect(view.actions[0]).toMatchObject({ action: "deleted", environmentId: sandboxId });
    // Again: nothing left to delete.
    expect(await json(await api("/v1/environment", { token, method: "DELETE" }))).toEqual({
      deleted: true,
      environmentId: null,
    });

    const next = await nextTurn(token, cid);
    expect(next.status).toBe("turn.completed");
    expect(next.sandboxId).not.toBe(sandboxId);
    expect(next.memoryReset).toBe(true);
    const after = await emulator(`/_emulator/sandboxes/${next.sandboxId}`);
    expect(after.body.idempotencyKey).not.toBe(before.body.idempotencyKey);
    expect((await environment(token)).actions[0]).toMatchObject({ action: "created", environmentId: next.sandboxId });
  });
});
