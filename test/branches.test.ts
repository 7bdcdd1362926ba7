/**
 * Branches through the public API (docs/api.md#branches), against the emulator: an edit of an earlier
 * message and a regenerate of an earlier answer fork the agent session at the branch point, once
 * per branch whatever the retries; each branch keeps its own agent session and conversation; the
 * active branch is switched, shown and heard on the event stream; a deployment without the fork
 * route refuses the edit with a capability error, having dispatched nothing.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionObject } from "../src/session/session";
import { SessionStore } from "../src/session/store/store";
import {
  api,
  collect,
  counters,
  emulator,
  isTurnEnd,
  json,
  sendTurn,
  tokenFor,
  uid,
  upstream,
  waitForTurn,
} from "./helpers";

const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);
const count = async (name: string) => (await counters())[name] ?? 0;

async function sent(
  token: string,
  cid: string,
  turnId: string,
  message: string,
  extra: Record<string, unknown> = {},
): Promise<any> {
  const response = await sendTurn(token, cid, turnId, message, extra);
  expect(response.status, JSON.stringify(await response.clone().json())).toBe(202);
  const turn = await waitForTurn(token, cid, turnId);
  expect(turn.status).toBe("completed");
  return turn;
}

const userTexts = (messages: any[]) => messages.filter((m) => m.role === "user").map((m) => m.text);

afterEach(async () => {
  await variants({});
});

describe("branches", () => {
  it("an edit of an earlier message forks the agent session there, once, and the new branch remembers only what came before", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    const t2 = uid("t");
    const t3 = uid("t");
    await sent(token, cid, t1, "first");
    await sent(token, cid, t2, "second");
    await sent(token, cid, t3, "third [recall]");
    const third = await json(await api(`/v1/conversations/${cid}/turns/${t3}`, { token }));
    expect(third.result.text).toContain(`Earlier in this session: "first" | "second"`);

    // Edit the second message: a turn after the first, which already has a follower.
    const forksBefore = await count("sessions.forked");
    const calls = await count("requests.runtime.session.fork");
    const edit = uid("t");
    const body = { parentTurnId: t1 };
    const edited = await sent(token, cid, edit, "second, edited [recall]", body);
    expect(edited).toMatchObject({ parentTurnId: t1, branch: 1 });
    // The agent's context in the branch is the conversation up to the first message, and nothing after it.
    expect(edited.result.text).toContain(`Earlier in this session: "first".`);
    expect(await count("sessions.forked")).toBe(forksBefore + 1);

    // Retried while it runs, and after (the same id, the same branch point): the same turn; nothing forks again.
    const retry = await sendTurn(token, cid, edit, "second, edited [recall]", body);
    expect(retry.status).toBe(200);
    expect(await count("requests.runtime.session.fork")).toBe(calls + 1);
    // The same turn id after another turn is another request: a conflict, nothing forks.
    const moved = await sendTurn(token, cid, edit, "second, edited [recall]", { parentTurnId: t2 });
    expect(moved.status).toBe(409);
    expect((await json(moved)).error.code).toBe("turn_conflict");
    expect(await count("requests.runtime.session.fork")).toBe(calls + 1);

    // The new branch is active: the summary and the transcript show it.
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary).toMatchObject({ branch: 1, branchCount: 2, turnCount: 2 });
    expect(
      (await json(await api("/v1/conversations", { token }))).conversations.find((e: any) => e.conversationId === cid)
        .branch,
    ).toBe(1);
    expect(summary.lastTurn.turnId).toBe(edit);
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    expect(messages.branch).toBe(1);
    expect(userTexts(messages.messages)).toEqual(["first", "second, edited [recall]"]);
    // Where the branches split, the message names its siblings (the page's < n/m >).
    expect(messages.messages[2].siblings).toEqual({ index: 1, turnIds: [t2, edit] });
    const old = await json(await api(`/v1/conversations/${cid}/messages?branch=0`, { token }));
    expect(userTexts(old.messages)).toEqual(["first", "second", "third [recall]"]);

    const list = await json(await api(`/v1/conversations/${cid}/branches`, { token }));
    expect(list.active).toBe(1);
    expect(list.branches).toEqual([
      expect.objectContaining({ branch: 0, active: false, forkedFrom: null, tipTurnId: t3, turnIds: [t1, t2, t3] }),
      expect.objectContaining({
        branch: 1,
        active: true,
        forkedFrom: { branch: 0, turnId: t1 },
        parentTurnId: t1,
        tipTurnId: edit,
        turnIds: [t1, edit],
      }),
    ]);

    // Continuing the branch continues its own agent session; continuing the old one, its own.
    const t5 = uid("t");
    const onBranch = await sent(token, cid, t5, "more [recall]");
    expect(onBranch.branch).toBe(1);
    expect(onBranch.result.text).toContain(`Earlier in this session: "first" | "second, edited".`);
    const t6 = uid("t");
    const onOld = await sent(token, cid, t6, "back on the first line [recall]", { parentTurnId: t3 });
    expect(onOld.branch).toBe(0);
    expect(onOld.result.text).toContain(`Earlier in this session: "first" | "second" | "third".`);
    expect(await count("sessions.forked")).toBe(forksBefore + 1);

    // A delete deletes both agent sessions upstream.
    const deletes = await count("requests.runtime.session.delete");
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    expect(await count("requests.runtime.session.delete")).toBe(deletes + 2);
  });

  it("a branch request retried while its turn runs is the same turn: one fork, one dispatch", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    await sent(token, cid, t1, "one");
    await sent(token, cid, uid("t"), "two");
    const [forks, dispatches] = [await count("sessions.forked"), await count("runs.dispatches")];
    const edit = uid("t");
    const body = { parentTurnId: t1 };
    const [a, b] = await Promise.all([
      sendTurn(token, cid, edit, "two, edited [slow]", body),
      sendTurn(token, cid, edit, "two, edited [slow]", body),
    ]);
    expect([a.status, b.status]).toEqual([202, 202]);
    const again = await sendTurn(token, cid, edit, "two, edited [slow]", body);
    expect(again.status).toBe(202);
    expect((await waitForTurn(token, cid, edit)).status).toBe("completed");
    expect(await count("sessions.forked")).toBe(forks + 1);
    expect(await count("runs.dispatches")).toBe(dispatches + 1);
  });

  it("an ask in a branch is answered there, and the run goes on in the branch's own session", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    await sent(token, cid, t1, "one");
    await sent(token, cid, uid("t"), "two");
    const edit = uid("t");
    const accepted = await json(await sendTurn(token, cid, edit, "two, edited [permission]", { parentTurnId: t1 }));
    const asked = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );
    const interaction = asked.events.at(-1)!.data.interaction as { id: string };
    const ack = await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(interaction.id)}`, {
      token,
      body: { operationId: uid("op"), outcome: "accepted", data: { grant: "allow_once" } },
    });
    expect(ack.status).toBe(200);
    expect((await json(ack)).status).toBe("accepted");
    const done = await waitForTurn(token, cid, edit);
    expect(done).toMatchObject({ status: "completed", branch: 1 });
    expect(done.result.text).toContain("The tests pass");
  });

  it("a regenerate of an earlier answer is a branch with the same message; the first message sent again starts afresh, without a fork", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    const t2 = uid("t");
    await sent(token, cid, t1, "one");
    await sent(token, cid, t2, "two");
    const forks = await count("requests.runtime.session.fork");
    const regen = uid("t");
    const again = await sent(token, cid, regen, "one [recall]", { parentTurnId: null });
    expect(again).toMatchObject({ parentTurnId: null, branch: 1 });
    expect(again.result.text).toContain("Nothing earlier in this session.");
    expect(await count("requests.runtime.session.fork")).toBe(forks);
    const list = await json(await api(`/v1/conversations/${cid}/branches`, { token }));
    expect(list.branches.map((b: any) => b.forkedFrom)).toEqual([null, null]);
  });

  it("a switch is stored, shown, and heard by every stream of the conversation", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    const t2 = uid("t");
    await sent(token, cid, t1, "a");
    await sent(token, cid, t2, "b");
    const b = uid("t");
    await sent(token, cid, b, "b again", { parentTurnId: t1 });
    const before = (await json(await api(`/v1/conversations/${cid}`, { token }))).lastEventId;

    const switched = await api(`/v1/conversations/${cid}/branches/active`, { token, body: { turnId: t2 } });
    expect(switched.status).toBe(200);
    expect(await json(switched)).toEqual({ branch: 0, previous: 1, tipTurnId: t2 });
    // Again: the same answer, no second event.
    expect(await json(await api(`/v1/conversations/${cid}/branches/active`, { token, body: { branch: 0 } }))).toEqual({
      branch: 0,
      previous: 0,
      tipTurnId: t2,
    });
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary).toMatchObject({ branch: 0, turnCount: 2 });
    expect(summary.lastTurn.turnId).toBe(t2);

    // The conversation list shows the branch too (its entry follows the switch).
    const listed = async () =>
      (await json(await api("/v1/conversations", { token }))).conversations.find((e: any) => e.conversationId === cid)
        ?.branch;
    for (let i = 0; i < 100 && (await listed()) !== 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await listed()).toBe(0);

    const stream = await collect(
      await api(`/v1/conversations/${cid}/events?after=${before}`, { token }),
      (e) => e.type === "branch.switched",
    );
    const heard = stream.events.filter((e) => e.type === "branch.switched");
    expect(heard.map((e) => e.data)).toEqual([{ branch: 0, previous: 1, tipTurnId: t2, by: "switch" }]);

    // The event stream's history of one branch: its turns' events and the conversation's own.
    const last = (await json(await api(`/v1/conversations/${cid}`, { token }))).lastEventId;
    const ofBranch = async (branch: number) =>
      (await collect(await api(`/v1/conversations/${cid}/events?branch=${branch}`, { token }), (e) => e.seq >= last))
        .events;
    const all = (await collect(await api(`/v1/conversations/${cid}/events`, { token }), (e) => e.seq >= last)).events;
    const onZero = await ofBranch(0);
    const onOne = await ofBranch(1);
    expect(new Set(onZero.map((e) => e.turnId))).toEqual(new Set([t1, t2, null]));
    expect(new Set(onOne.map((e) => e.turnId))).toEqual(new Set([t1, b, null]));
    expect(onZero.filter((e) => e.turnId === t1)).toEqual(all.filter((e) => e.turnId === t1));
    expect((await api(`/v1/conversations/${cid}/events?branch=x`, { token })).status).toBe(400);

    expect((await api(`/v1/conversations/${cid}/branches/active`, { token, body: { branch: 7 } })).status).toBe(404);
    expect(
      (await api(`/v1/conversations/${cid}/branches/active`, { token, body: { branch: 0, turnId: t1 } })).status,
    ).toBe(400);
    expect((await api(`/v1/conversations/${cid}/messages?branch=7`, { token })).status).toBe(404);
    expect((await api(`/v1/conversations/${cid}/messages?branch=x`, { token })).status).toBe(400);
    const unknown = await sendTurn(token, cid, uid("t"), "after nothing", { parentTurnId: "no-such-turn" });
    expect(unknown.status).toBe(404);
  });

  for (const forkRoute of ["missing", "not-implemented"] as const) {
    it(`a deployment without the fork route (${forkRoute}) refuses an edit with a capability error, dispatching nothing; later edits are refused before any call`, async () => {
      const token = await tokenFor(uid("user"));
      const cid = uid("conv");
      const t1 = uid("t");
      const t2 = uid("t");
      await sent(token, cid, t1, "a");
      await sent(token, cid, t2, "b");
      await variants({ forkRoute });
      const dispatches = await count("runs.dispatches");
      const calls = await count("requests.runtime.session.fork");
      const refused = await sendTurn(token, cid, uid("t"), "b, edited", { parentTurnId: t1 });
      expect(refused.status).toBe(501);
      expect(await json(refused)).toMatchObject({
        error: { code: "capability_denied", details: { missing: ["session.fork"] } },
      });
      expect(await count("runs.dispatches")).toBe(dispatches);
      expect(await count("requests.runtime.session.fork")).toBe(calls + 1);
      const again = await sendTurn(token, cid, uid("t"), "b, edited again", { parentTurnId: t1 });
      expect(again.status).toBe(501);
      expect(await count("requests.runtime.session.fork")).toBe(calls + 1);
      // Nothing changed: the conversation goes on where it was.
      expect((await json(await api(`/v1/conversations/${cid}/branches`, { token }))).branches).toHaveLength(1);
      await sent(token, cid, uid("t"), "c");
    });
  }
});

/** The sandbox a turn ran in, and whether its events said the agent's memory was reset. */
async function ranIn(token: string, cid: string, turn: any) {
  const events = (
    await collect(
      await api(`/v1/conversations/${cid}/events?after=${turn.after}`, { token }),
      (e) => isTurnEnd(e) && e.turnId === turn.turnId,
    )
  ).events;
  const reset = events.find(
    (e) => e.turnId === turn.turnId && e.type === "warning" && e.data.code === "agent_memory_reset",
  );
  return {
    sandboxId: (await emulator(`/_emulator/executions/${turn.executionId}`)).sandboxId as string,
    reset: (reset?.data.message as string | undefined) ?? null,
  };
}

const IDLE = 30 * 60;
const DAY = 24 * 60 * 60;

// A Sandbox deployment without snapshots: every branch shares the conversation's sandbox, so
// these are the rules of its agent sessions alone (a deployment with snapshots gives a branch from
// an earlier turn a sandbox of its own: test/workspace.test.ts).
describe("branches on the sandbox's ordinary days (issue 36), without workspace checkpoints", () => {
  beforeEach(async () => {
    await emulator("/_emulator/variants", { workspace: "missing" });
  });

  it("an edit and a regenerate after the sandbox idled out resume it first and fork there, the agent's memory kept", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    const first = await sent(token, cid, t1, "first");
    await sent(token, cid, uid("t"), "second");
    const { sandboxId } = await ranIn(token, cid, first);
    await emulator(`/_emulator/sandboxes/${sandboxId}/clock`, { advanceSeconds: IDLE });
    const resumed = await count("sandboxes.resumed");

    const edit = await sent(token, cid, uid("t"), "second, edited [recall]", { parentTurnId: t1 });
    expect(edit).toMatchObject({ parentTurnId: t1, branch: 1 });
    expect(edit.result.text).toContain(`Earlier in this session: "first".`);
    expect(await count("sandboxes.resumed")).toBe(resumed + 1);
    expect(await ranIn(token, cid, edit)).toEqual({ sandboxId, reset: null });

    // Idle again: a regenerate of the same answer (the same message after the same turn) resumes it too.
    await emulator(`/_emulator/sandboxes/${sandboxId}/clock`, { advanceSeconds: IDLE });
    const regen = await sent(token, cid, uid("t"), "second, edited [recall]", { parentTurnId: t1 });
    expect(regen).toMatchObject({ parentTurnId: t1, branch: 2 });
    expect(regen.result.text).toContain(`Earlier in this session: "first".`);
    expect(await count("sandboxes.resumed")).toBe(resumed + 2);
    const list = await json(await api(`/v1/conversations/${cid}/branches`, { token }));
    expect(list.branches.map((b: any) => b.forkedFrom)).toEqual([
      null,
      { branch: 0, turnId: t1 },
      { branch: 0, turnId: t1 },
    ]);
  });

  it("an edit first after the sandbox expired replaces it, and runs afresh in the branch's own session, saying agent_memory_reset", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    const first = await sent(token, cid, t1, "first");
    await sent(token, cid, uid("t"), "second");
    const { sandboxId } = await ranIn(token, cid, first);
    await emulator(`/_emulator/sandboxes/${sandboxId}/clock`, { advanceSeconds: DAY });

    const editId = uid("t");
    const edit = await sent(token, cid, editId, "second, edited [recall]", { parentTurnId: t1 });
    expect(edit).toMatchObject({ parentTurnId: t1, branch: 1 });
    expect(edit.result.text).toContain("Nothing earlier in this session.");
    const where = await ranIn(token, cid, edit);
    expect(where.sandboxId).not.toBe(sandboxId);
    expect(where.reset).toMatch(/gone/);
    // Nothing was copied: the branch says it was forked from nothing, and its own session goes on.
    const list = await json(await api(`/v1/conversations/${cid}/branches`, { token }));
    expect(list.branches[1]).toMatchObject({ branch: 1, forkedFrom: null, parentTurnId: t1 });
    const more = await sent(token, cid, uid("t"), "more [recall]");
    expect(more.result.text).toContain(`Earlier in this session: "second, edited".`);
    // A retry is the same turn.
    expect((await sendTurn(token, cid, editId, "second, edited [recall]", { parentTurnId: t1 })).status).toBe(200);
  });

  it("after the sandbox was replaced (deleted, or a turn after its expiry), an edit of a message from before runs afresh, saying agent_memory_reset", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    const t2 = uid("t");
    const first = await sent(token, cid, t1, "first");
    await sent(token, cid, t2, "second");
    const { sandboxId } = await ranIn(token, cid, first);
    expect((await api("/v1/environment", { token, method: "DELETE" })).status).toBe(200);
    const forks = await count("requests.runtime.session.fork");
    const edit = await sent(token, cid, uid("t"), "second, edited [recall]", { parentTurnId: t1 });
    expect(edit.result.text).toContain("Nothing earlier in this session.");
    const where = await ranIn(token, cid, edit);
    expect(where.sandboxId).not.toBe(sandboxId);
    expect(where.reset).toMatch(/gone/);
    // The session to fork was known to be gone with its sandbox: no fork was asked for.
    expect(await count("requests.runtime.session.fork")).toBe(forks);

    // The new sandbox expires; a plain turn replaces it; then an edit of a message from before it.
    await emulator(`/_emulator/sandboxes/${where.sandboxId}/clock`, { advanceSeconds: DAY });
    const plain = await sent(token, cid, uid("t"), "third");
    expect((await ranIn(token, cid, plain)).reset).not.toBeNull();
    const again = await sent(token, cid, uid("t"), "second, edited again [recall]", { parentTurnId: t1 });
    expect(again.result.text).toContain("Nothing earlier in this session.");
    expect((await ranIn(token, cid, again)).reset).toMatch(/gone/);
    expect(await count("requests.runtime.session.fork")).toBe(forks);
  });

  it("a sandbox that no longer holds the session to fork (404 SESSION_NOT_FOUND) runs the edit afresh, saying agent_memory_reset", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const t1 = uid("t");
    const first = await sent(token, cid, t1, "first");
    await sent(token, cid, uid("t"), "second");
    const run = await emulator(`/_emulator/executions/${first.executionId}`);
    expect(
      (
        await upstream(
          "DELETE",
          `/v1/sandboxes/${run.sandboxId}/runtime/agents/sessions/${encodeURIComponent(run.sessionId)}`,
        )
      ).status,
    ).toBe(200);
    const forks = await count("requests.runtime.session.fork");
    const edit = await sent(token, cid, uid("t"), "second, edited [recall]", { parentTurnId: t1 });
    expect(edit.result.text).toContain("Nothing earlier in this session.");
    expect(await ranIn(token, cid, edit)).toEqual({ sandboxId: run.sandboxId, reset: expect.stringMatching(/gone/) });
    expect(await count("requests.runtime.session.fork")).toBe(forks + 1);
  });
});

describe("turns stored before conversations branched (schema 9)", () => {
  it("read back as one line: each follows the one before it, in branch 0, the active one", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(uid("schema9")));
    const tree = await runInDurableObject(stub, (_instance: SessionObject, state) => {
      const sql = state.storage.sql;
      const store = new SessionStore(sql);
      for (const [i, id] of ["a", "b", "c"].entries())
        store.insertPendingTurn({
          turnId: id,
          requestDigest: "d",
          request: { message: id },
          executionId: `exe_${id}`,
          now: i,
        });
      // The tables as schema 9 had them.
      sql.exec("ALTER TABLE turns DROP COLUMN parent_turn_id");
      sql.exec("ALTER TABLE turns DROP COLUMN branch");
      sql.exec("DROP TABLE branches");
      sql.exec("UPDATE schema_version SET version = 9");
      const upgraded = new SessionStore(sql);
      return { turns: upgraded.treeTurns(), branches: upgraded.branches() };
    });
    expect(tree.turns).toEqual([
      { turnId: "a", parentTurnId: null, branch: 0, ordinal: 1 },
      { turnId: "b", parentTurnId: "a", branch: 0, ordinal: 2 },
      { turnId: "c", parentTurnId: "b", branch: 0, ordinal: 3 },
    ]);
    expect(tree.branches).toEqual([]);
  });
});
