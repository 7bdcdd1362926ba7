/**
 * Deleting an account through the public API against the emulator (docs/api.md#deleting-an-account):
 * cut short half-way by upstream failures and an eviction of every object, then resumed (by the
 * user object's alarm, or by calling again), with nothing of the account readable from the moment
 * the deletion began, and the agent sessions and the sandbox gone upstream at the end. A token of
 * the deleted user is refused (410); one issued after the deletion opens a new, empty account.
 */
import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deriveOwnerKey } from "../src/auth/ids";
import { UserObject } from "../src/user/user";
import {
  api,
  BASE,
  collect,
  counters,
  emulator,
  json,
  runTurn,
  sendTurn,
  setFaults,
  tokenFor,
  uid,
  upstream,
  waitForTurn,
} from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

afterEach(async () => {
  await setFaults({});
});

/** A user with two conversations, each with a finished turn, and the sandbox they ran in. */
async function userWithConversations() {
  const user = uid("user");
  const token = await tokenFor(user);
  const cids = [uid("conv"), uid("conv")];
  let sandboxId = "";
  for (const cid of cids) {
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "hello"));
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    sandboxId = (await emulator(`/_emulator/executions/${accepted.executionId}`)).sandboxId;
  }
  return { user, token, cids, sandboxId };
}

/** The agent sessions the sandbox holds upstream (null once the sandbox is gone). */
async function upstreamSessions(sandboxId: string): Promise<string[] | null> {
  const res = await upstream("GET", `/v1/sandboxes/${sandboxId}/runtime/agents/sessions`);
  if (res.status === 404) return null;
  return (await json(res)).data.sessions.map((s: { id: string }) => s.id);
}

/** Every read and write of the account, with the status and code each answers. */
async function everything(token: string, cid: string) {
  const calls: [string, Parameters<typeof api>[1]][] = [
    ["/v1/conversations", {}],
    [`/v1/conversations/${cid}`, {}],
    [`/v1/conversations/${cid}/messages`, {}],
    [`/v1/conversations/${cid}/usage`, {}],
    [`/v1/conversations/${cid}/events`, {}],
    [`/v1/conversations/${cid}/turns`, { body: { turnId: uid("turn"), message: "still there?" } }],
    [
      `/v1/chat/${cid}`,
      { body: { id: cid, messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] } },
    ],
    ["/v1/environment", {}],
    ["/v1/environment/stop", { method: "POST" }],
    ["/v1/credentials", {}],
    ["/v1/mcp-servers/docs", { method: "PUT", body: { url: "https://mcp.example.test/sse" } }],
    ["/v1/instructions", {}],
    ["/v1/agents", {}],
  ];
  const out: string[] = [];
  for (const [path, options] of calls) {
    const res = await api(path, { token, ...options });
    const body = await res.text();
    out.push(`${res.status} ${res.status >= 400 ? JSON.parse(body).error.code : "served"}`);
  }
  return out;
}

describe("DELETE /v1/me", () => {
  it("cut short before the sandbox, and every object evicted: nothing is readable meanwhile; the alarm resumes it to the end", async () => {
    const { user, token, cids, sandboxId } = await userWithConversations();
    expect((await upstreamSessions(sandboxId))?.length).toBe(2);
    // The user's agent settings, which the deletion forgets with the rest.
    const setting = (path: string, body: unknown) => api(path, { token, method: "PUT", body });
    expect((await setting("/v1/credentials/mine", { provider: "zai", key: "sk-gone" })).status).toBe(200);
    expect((await setting("/v1/mcp-servers/docs", { url: "https://mcp.example.test/sse" })).status).toBe(200);
    expect((await setting("/v1/instructions", { text: "Be brief." })).status).toBe(200);
    // A browser stream open when the deletion begins.
    const stream = api(`/v1/conversations/${cids[0]}/events`, { token }).then((res) => collect(res, () => false));

    // The sandbox's delete fails (every attempt of the call): the deletion stops after the conversations.
    await setFaults({ failNext: { status: 503, count: 3, route: "sandboxes.delete" } });
    const cut = await api("/v1/me", { token, method: "DELETE" });
    expect(cut.status).toBe(202);
    const partial = await json(cut);
    expect(partial).toMatchObject({ state: "deleting", step: "sandbox", conversationsDeleted: 2, finishedAt: null });
    expect(partial.lastError).toContain("503");
    // The open stream was closed, and its conversations' agent sessions are gone upstream; the sandbox is not.
    await stream;
    expect(await upstreamSessions(sandboxId)).toEqual([]);
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("running");

    // Nothing of the account is read or run while the deletion is under way.
    expect(new Set(await everything(token, cids[1]!))).toEqual(new Set(["409 account_deleting"]));
    expect(await json(await api("/v1/me", { token }))).toEqual({ deletion: partial });

    // A crash: every object loses its memory; the user object's alarm picks the deletion up.
    await abortAllDurableObjects();
    await setFaults({});
    const userObject = env.USERS.get(env.USERS.idFromName(await deriveOwnerKey(secret, user)));
    expect(await runDurableObjectAlarm(userObject)).toBe(true);

    const done = await json(await api("/v1/me", { token }));
    expect(done.deletion).toMatchObject({
      state: "deleted",
      step: "done",
      conversationsDeleted: 2,
      lastError: null,
      beganAt: partial.beganAt,
    });
    expect(done.deletion.finishedAt).toBeTypeOf("string");
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("deleted");
    expect(await upstreamSessions(sandboxId)).toBeNull();
    // No alarm is left to run.
    expect(await runDurableObjectAlarm(userObject)).toBe(false);

    // The deleted user's token is refused everywhere but its account; deleting again answers the deletion.
    expect(new Set(await everything(token, cids[0]!))).toEqual(new Set(["410 account_deleted"]));
    const again = await api("/v1/me", { token, method: "DELETE" });
    expect(again.status).toBe(200);
    expect((await json(again)).finishedAt).toBe(done.deletion.finishedAt);

    // A token issued after the deletion began (past the allowed clock skew) opens a new, empty account.
    while (Date.now() <= Date.parse(partial.beganAt) + 1000) await new Promise((r) => setTimeout(r, 50));
    const fresh = await tokenFor(user, { issuedAt: Math.floor(Date.now() / 1000) + 60 });
    expect(await json(await api("/v1/me", { token: fresh }))).toEqual({ deletion: null });
    expect(await json(await api("/v1/conversations", { token: fresh }))).toEqual({ conversations: [] });
    for (const cid of cids) expect((await api(`/v1/conversations/${cid}/messages`, { token: fresh })).status).toBe(404);
    expect((await json(await api("/v1/environment", { token: fresh }))).environment).toBeNull();
    expect(await json(await api("/v1/credentials", { token: fresh }))).toEqual({ credentials: [] });
    expect(await json(await api("/v1/mcp-servers", { token: fresh }))).toEqual({ mcpServers: [] });
    expect(await json(await api("/v1/instructions", { token: fresh }))).toEqual({ text: "", updatedAt: null });
  });

  it("cut short in the conversations: the next call resumes where it stopped, and ends with nothing left", async () => {
    const { token, cids, sandboxId } = await userWithConversations();
    await setFaults({ failNext: { status: 503, count: 3, route: "runtime.session.delete" } });
    const cut = await api("/v1/me", { token, method: "DELETE" });
    expect(cut.status).toBe(202);
    expect(await json(cut)).toMatchObject({ state: "deleting", step: "conversations", conversationsDeleted: 0 });
    expect(new Set(await everything(token, cids[0]!))).toEqual(new Set(["409 account_deleting"]));
    // Upstream still holds both sessions: nothing was claimed deleted that was not.
    expect((await upstreamSessions(sandboxId))?.length).toBe(2);

    const resumed = await api("/v1/me", { token, method: "DELETE" });
    expect(resumed.status).toBe(200);
    expect(await json(resumed)).toMatchObject({
      state: "deleted",
      step: "done",
      conversationsDeleted: 2,
      lastError: null,
    });
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("deleted");
    expect(new Set(await everything(token, cids[1]!))).toEqual(new Set(["410 account_deleted"]));
  });

  it("everything the workspace holds goes with it: a branch's own sandbox, every checkpoint, the user's sandbox", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const run = (message: string, extra: Record<string, unknown> = {}) => runTurn(token, cid, message, extra);
    const first = await run("[write:a.txt:1]");
    await run("[write:a.txt:2]");
    const branch = await run("edited", { parentTurnId: first.turnId });
    expect(branch.sandboxId).not.toBe(first.sandboxId);
    const snapshots = async (sandboxId: string) =>
      (await json(await upstream("GET", `/v1/sandboxes/${sandboxId}/snapshots`))).snapshots;
    expect((await snapshots(first.sandboxId)).length).toBeGreaterThanOrEqual(2);

    const deleted = await api("/v1/me", { token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect((await emulator(`/_emulator/sandboxes/${branch.sandboxId}`)).status).toBe("deleted");
    expect((await emulator(`/_emulator/sandboxes/${first.sandboxId}`)).status).toBe("deleted");
    expect(await snapshots(first.sandboxId)).toEqual([]);
    expect(await snapshots(branch.sandboxId)).toEqual([]);
  });

  it("a turn running when the deletion begins is stopped upstream, and its conversation deleted with the rest", async () => {
    const { token, cids } = await userWithConversations();
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cids[0]!, turnId, "a long job [slow] [long]"));
    expect((await emulator(`/_emulator/executions/${accepted.executionId}`)).status).toBe("running");
    const abortsBefore = (await counters())["requests.runtime.session.abort"] ?? 0;
    const res = await api("/v1/me", { token, method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ state: "deleted", conversationsDeleted: 2 });
    // The run was interrupted, then its session (the run with it) deleted upstream.
    expect((await counters())["requests.runtime.session.abort"]).toBe(abortsBefore + 1);
    expect((await emulator(`/_emulator/executions/${accepted.executionId}`)).error.code).toBe("EXECUTION_NOT_FOUND");
  });

  it("its webhook endpoints go with it: a later account of the same user holds none", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const created = await api("/v1/webhooks", {
      token,
      body: { url: "http://127.0.0.1:9/hook", events: ["turn.completed"] },
    });
    expect(created.status).toBe(201);
    expect((await json(await api("/v1/webhooks", { token }))).webhooks).toHaveLength(1);
    const res = await api("/v1/me", { token, method: "DELETE" });
    expect(res.status).toBe(200);
    const began = Date.parse((await json(res)).beganAt);
    while (Date.now() <= began + 1000) await new Promise((r) => setTimeout(r, 50));
    const fresh = await tokenFor(user, { issuedAt: Math.floor(Date.now() / 1000) + 60 });
    expect(await json(await api("/v1/webhooks", { token: fresh }))).toEqual({ webhooks: [] });
  });

  it("an account with nothing in it is deleted at once; GET /v1/me says no deletion began before", async () => {
    const token = await tokenFor(uid("user"));
    expect(await json(await api("/v1/me", { token }))).toEqual({ deletion: null });
    const res = await api("/v1/me", { token, method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ state: "deleted", conversationsDeleted: 0 });
    expect((await api("/v1/me", { method: "DELETE" })).status).toBe(401);
  });
});

/**
 * A request whose body is held: it passes the door (the account gate) now and writes only once
 * `release` lets its body through.
 */
function heldRequest(token: string, path: string, body: unknown) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent) return controller.close();
      await held;
      sent = true;
      controller.enqueue(new TextEncoder().encode(JSON.stringify(body)));
    },
  });
  const init = {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: stream,
    duplex: "half",
  };
  const answer = SELF.fetch(`${BASE}${path}`, init as RequestInit).then(async (res) => {
    if (!res.headers.get("content-type")?.includes("application/json")) {
      await res.body?.cancel();
      return { status: res.status, code: undefined };
    }
    return { status: res.status, code: (await json(res)).error?.code };
  });
  return { release, answer };
}

/** A token of `user` issued after its deletion began (past the 60 s of skew): a new sign-in. */
async function signInAfter(user: string, deletion: { beganAt: string }) {
  const began = Date.parse(deletion.beganAt);
  while (Date.now() <= began + 1000) await new Promise((r) => setTimeout(r, 50));
  return tokenFor(user, { issuedAt: Math.floor(Date.now() / 1000) + 60 });
}

describe("requests in flight when the account is deleted", () => {
  it("a turn, a chat turn or a webhook creation that passed the door before the deletion and writes after it is refused 410, and the next sign-in inherits nothing", async () => {
    const { user, token, cids } = await userWithConversations();
    // Each request below has passed the door once the account gate has answered it.
    let doors = 0;
    const gate = UserObject.prototype.accountGate;
    const spy = vi.spyOn(UserObject.prototype, "accountGate").mockImplementation(async function (
      this: UserObject,
      ...args
    ) {
      const verdict = await gate.apply(this, args);
      doors++;
      return verdict;
    });
    const fresh = uid("conv");
    // A conversation id the next account will use before this request's body arrives.
    const reused = uid("conv");
    const intoNext = heldRequest(token, `/v1/conversations/${reused}/turns`, {
      turnId: uid("turn"),
      message: "late, into the next account",
    });
    const inFlight = {
      "a first turn": heldRequest(token, `/v1/conversations/${fresh}/turns`, { turnId: uid("turn"), message: "late" }),
      "the next turn of a conversation": heldRequest(token, `/v1/conversations/${cids[0]}/turns`, {
        turnId: uid("turn"),
        message: "late",
      }),
      "a chat turn": heldRequest(token, "/v1/chat", {
        id: uid("conv"),
        trigger: "submit-message",
        messages: [{ id: uid("m"), role: "user", parts: [{ type: "text", text: "late" }] }],
      }),
      "a webhook": heldRequest(token, "/v1/webhooks", { url: "http://127.0.0.1:9/hook", events: ["turn.completed"] }),
    };
    try {
      while (doors < 5) await new Promise((r) => setTimeout(r, 5));
    } finally {
      spy.mockRestore();
    }
    const deleted = await api("/v1/me", { token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    const deletion = await json(deleted);
    expect(deletion).toMatchObject({ state: "deleted", conversationsDeleted: 2 });

    // Their bodies arrive now, after the deletion ended.
    for (const request of Object.values(inFlight)) request.release();
    const answers = Object.fromEntries(
      await Promise.all(Object.entries(inFlight).map(async ([what, request]) => [what, await request.answer])),
    );
    const refused = { status: 410, code: "account_deleted" };
    expect(answers).toEqual({
      "a first turn": refused,
      "the next turn of a conversation": refused,
      "a chat turn": refused,
      "a webhook": refused,
    });

    // The next sign-in with the same user name: an empty account, no sandbox made for it.
    const next = await signInAfter(user, deletion);
    expect(await json(await api("/v1/conversations", { token: next }))).toEqual({ conversations: [] });
    expect(await json(await api("/v1/webhooks", { token: next }))).toEqual({ webhooks: [] });
    expect(await json(await api("/v1/environment", { token: next }))).toMatchObject({ environment: null, actions: [] });
    expect((await api(`/v1/conversations/${fresh}`, { token: next })).status).toBe(404);
    expect((await api(`/v1/conversations/${cids[0]}`, { token: next })).status).toBe(404);
    // The user's object admits nothing of the old account.
    const stub = env.USERS.get(env.USERS.idFromName(await deriveOwnerKey(secret, user)));
    expect(
      await runInDurableObject(stub, (_instance, state) =>
        state.storage.sql.exec("SELECT conversation_id FROM admissions").toArray(),
      ),
    ).toEqual([]);
    // And it works: the new account's first turn runs in a sandbox of its own.
    const turnId = uid("turn");
    expect((await sendTurn(next, fresh, turnId, "a new start")).status).toBe(202);
    expect((await waitForTurn(next, fresh, turnId)).status).toBe("completed");

    // A request of the old account still in flight writes nothing into the new account's conversation of the same id.
    const mine = uid("turn");
    expect((await sendTurn(next, reused, mine, "the next account's own")).status).toBe(202);
    expect((await waitForTurn(next, reused, mine)).status).toBe("completed");
    intoNext.release();
    expect(await intoNext.answer).toEqual(refused);
    const messages = await json(await api(`/v1/conversations/${reused}/messages`, { token: next }));
    expect(
      messages.messages.filter((m: { role: string }) => m.role === "user").map((m: { text: string }) => m.text),
    ).toEqual(["the next account's own"]);
  });

  it("a conversation admitted but not listed yet (its first turn still being sent) is deleted with the rest", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const stub = env.USERS.get(env.USERS.idFromName(await deriveOwnerKey(secret, user)));
    const cid = uid("conv");
    expect(await stub.admitConversation(cid, Math.floor(Date.now() / 1000))).toEqual({ ok: true, value: 0 });
    const res = await api("/v1/me", { token, method: "DELETE" });
    expect(await json(res)).toMatchObject({ state: "deleted", conversationsDeleted: 1 });
    expect(
      await runInDurableObject(stub, (_instance, state) =>
        state.storage.sql.exec("SELECT conversation_id FROM admissions").toArray(),
      ),
    ).toEqual([]);
    // The old token is refused its admission, as at the door.
    expect(await stub.admitConversation(uid("conv"), Math.floor(Date.now() / 1000) - 5)).toMatchObject({
      ok: false,
      refusal: { code: "account_deleted" },
    });
  });
});
