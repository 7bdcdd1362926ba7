import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { MessagesSchema } from "../src/schemas/api";
import {
  api,
  BASE,
  emulator,
  json,
  release,
  runTurn,
  sendTurn,
  setFaults,
  tokenFor,
  uid,
  waitForTurn,
} from "./helpers";

/**
 * The workspace's checkpoints (issue 40): one before each turn, the turn's real changes read from
 * the workspace once it ended (the emulator keeps a file tree its agent's tool calls change), undo
 * and redo restoring it in place, each rule through the public API. The files are read back from
 * the emulator itself, as another process would see them.
 */

afterEach(async () => {
  await setFaults({});
  await emulator("/_emulator/variants", {});
});

/** A file of a sandbox as the emulator holds it; null when there is none. */
async function fileOf(sandboxId: string, path: string): Promise<string | null> {
  const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"));
  const res = await stub.fetch(
    `http://sandbox-emulator.local/_emulator/sandboxes/${sandboxId}/files?path=${encodeURIComponent(path)}`,
  );
  if (res.status === 404) return null;
  expect(res.status).toBe(200);
  return res.text();
}

async function snapshotsOf(sandboxId: string): Promise<Array<{ snapshotId: string; tags: string[] }>> {
  const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName("default"));
  const res = await stub.fetch(`http://sandbox-emulator.local/v1/sandboxes/${sandboxId}/snapshots`, {
    headers: { authorization: "Bearer another-process" },
  });
  return (await res.json<{ snapshots: Array<{ snapshotId: string; tags: string[] }> }>()).snapshots;
}

/** The conversation's messages, once the turn's changes are recorded. */
async function changesOf(token: string, cid: string, turnId: string, branch = "") {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const messages = MessagesSchema.parse(
      await json(await api(`/v1/conversations/${cid}/messages${branch && `?branch=${branch}`}`, { token })),
    );
    const answer = messages.messages.find((m) => m.role === "assistant" && m.turnId === turnId);
    const part = answer?.role === "assistant" ? answer.parts.find((p) => p.type === "changes") : undefined;
    if (part) return part as Extract<typeof part, { type: "changes" }>;
    if (Date.now() > deadline) throw new Error(`no changes recorded for ${turnId}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const restore = (token: string, cid: string, turnId: string, direction: "undo" | "redo", operationId: string) =>
  api(`/v1/conversations/${cid}/turns/${turnId}/${direction}`, { token, body: { operationId } });

describe("a turn's real changes", () => {
  it("are read from the workspace: added, modified, deleted, renamed and binary, with text diffs", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await runTurn(token, cid, "[write:notes.txt:one\\ntwo] [write:old.txt:same bytes]");
    expect(first.turn.checkpoint.status).toBe("created");
    await changesOf(token, cid, first.turnId);
    const second = await runTurn(
      token,
      cid,
      "[write:notes.txt:one\\nthree] [delete:README.md] [rename:old.txt:new.txt] [binary:blob.bin:64]",
    );
    const changes = await changesOf(token, cid, second.turnId);
    expect(changes.source).toBe("workspace");
    if (changes.source !== "workspace") return;
    const byPath = new Map(changes.files.map((f) => [f.path, f]));
    expect(byPath.get("notes.txt")).toMatchObject({ status: "modified", binary: false });
    expect(byPath.get("notes.txt")?.diff).toContain("-two");
    expect(byPath.get("notes.txt")?.diff).toContain("+three");
    expect(byPath.get("README.md")).toMatchObject({ status: "deleted" });
    expect(byPath.get("new.txt")).toMatchObject({ status: "renamed", from: "old.txt" });
    expect(byPath.get("blob.bin")).toMatchObject({ status: "added", binary: true, sizeAfter: 64 });
    expect(byPath.get("blob.bin")?.diff).toBeUndefined();
    // Only what this turn changed: the first turn's files are not this turn's.
    expect(changes.files).toHaveLength(4);
  });

  it("come from the tool calls, and say so, when no checkpoint could be taken; undo is then refused", async () => {
    await setFaults({ snapshotFails: 5 });
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const { turnId, turn } = await runTurn(token, cid, "[write:a.txt:x]");
    expect(turn.checkpoint).toMatchObject({ status: "failed", message: expect.any(String) });
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const parts = messages.messages.at(-1).parts as Array<{ type: string; code?: string }>;
    expect(parts.some((p) => p.type === "warning" && p.code === "checkpoint_failed")).toBe(true);
    const refused = await restore(token, cid, turnId, "undo", uid("op"));
    expect(refused.status).toBe(409);
    expect((await json(refused)).error.code).toBe("checkpoint_unavailable");
  });

  it("a deployment without snapshots: no warning, the tool-call view, and no undo", async () => {
    await emulator("/_emulator/variants", { workspace: "missing" });
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const { turnId, turn } = await runTurn(token, cid, "[write:a.txt:x]");
    expect(turn.checkpoint.status).toBe("unavailable");
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const parts = messages.messages.at(-1).parts as Array<{ type: string }>;
    expect(parts.some((p) => p.type === "warning")).toBe(false);
    const refused = await restore(token, cid, turnId, "undo", uid("op"));
    expect((await json(refused)).error.code).toBe("checkpoint_unavailable");
  });
});

describe("undo and redo", () => {
  it("restore the workspace in place, idempotent under the operation id, shown in the conversation", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await runTurn(token, cid, "[write:notes.txt:v1]");
    const second = await runTurn(token, cid, "[write:notes.txt:v2] [write:extra.txt:e]");
    await changesOf(token, cid, second.turnId);
    expect(await fileOf(second.sandboxId, "notes.txt")).toBe("v2");

    const op = uid("op");
    const undone = await restore(token, cid, second.turnId, "undo", op);
    expect(undone.status, await undone.clone().text()).toBe(200);
    expect(await json(undone)).toMatchObject({
      operationId: op,
      turnId: second.turnId,
      direction: "undo",
      status: "restored",
    });
    expect(await fileOf(second.sandboxId, "notes.txt")).toBe("v1");
    expect(await fileOf(second.sandboxId, "extra.txt")).toBeNull();

    // The same request again replays; the same id for another request conflicts.
    const again = await json(await restore(token, cid, second.turnId, "undo", op));
    expect(again).toMatchObject({ operationId: op, status: "replayed" });
    const conflict = await restore(token, cid, first.turnId, "undo", op);
    expect(conflict.status).toBe(409);
    expect((await json(conflict)).error.code).toBe("operation_conflict");

    const redone = await restore(token, cid, second.turnId, "redo", uid("op"));
    expect(redone.status).toBe(200);
    expect(await fileOf(second.sandboxId, "notes.txt")).toBe("v2");
    expect(await fileOf(second.sandboxId, "extra.txt")).toBe("e");

    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const answer = messages.messages.find(
      (m: { role: string; turnId: string }) => m.role === "assistant" && m.turnId === second.turnId,
    );
    const restores = answer.parts.filter((p: { type: string }) => p.type === "restore");
    expect(restores.map((p: { direction: string }) => p.direction)).toEqual(["undo", "redo"]);
  });

  it("is refused while a turn runs, and for a turn whose changes were never undone (redo)", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await runTurn(token, cid, "[write:a.txt:1]");
    const redo = await restore(token, cid, first.turnId, "redo", uid("op"));
    expect(redo.status).toBe(409);
    expect((await json(redo)).error.code).toBe("checkpoint_unavailable");

    const heldTurn = uid("turn");
    const held = await json(await sendTurn(token, cid, heldTurn, "[hold] [write:a.txt:2]"));
    const busy = await restore(token, cid, first.turnId, "undo", uid("op"));
    expect(busy.status).toBe(409);
    expect((await json(busy)).error.code).toBe("session_busy");
    await release(held.executionId);
    await waitForTurn(token, cid, heldTurn);
  });

  it("an answer without an outcome is not a success: refused retryable, and the same operation id then restores", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await runTurn(token, cid, "[write:n.txt:v1]");
    const second = await runTurn(token, cid, "[write:n.txt:v2]");
    await changesOf(token, cid, second.turnId);
    await emulator("/_emulator/variants", { restore: "no-outcome" });
    const op = uid("op");
    const unknown = await restore(token, cid, second.turnId, "undo", op);
    expect(unknown.status).toBe(502);
    expect((await json(unknown)).error.code).toBe("outcome_unknown");
    await emulator("/_emulator/variants", {});
    const done = await restore(token, cid, second.turnId, "undo", op);
    expect(done.status).toBe(200);
    expect(await fileOf(second.sandboxId, "n.txt")).toBe("v1");
  });
});

describe("a checkpoint whose outcome was unknown", () => {
  it("is asked for again under its key before its turn's changes are read: a replay is kept", async () => {
    await emulator("/_emulator/variants", { snapshotIdempotency: "absent" });
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await runTurn(token, cid, "[write:k.txt:v1]");
    expect(first.turn.checkpoint.status).toBe("unknown");
    await emulator("/_emulator/variants", {});
    // The next turn's checkpoint waits for the first turn's changes, read once its checkpoint is confirmed.
    await runTurn(token, cid, "plain");
    const changes = await changesOf(token, cid, first.turnId);
    expect(changes.source).toBe("workspace");
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${first.turnId}`, { token }));
    expect(turn.checkpoint.status).toBe("created");
  });
});

describe("deleting the conversation", () => {
  it("releases its checkpoints", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const { sandboxId } = await runTurn(token, cid, "[write:d.txt:1]");
    await runTurn(token, cid, "[write:d.txt:2]");
    expect((await snapshotsOf(sandboxId)).length).toBeGreaterThanOrEqual(2);
    const deleted = await api(`/v1/conversations/${cid}`, { token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(await snapshotsOf(sandboxId)).toEqual([]);
  });
});

describe("a branch from an earlier turn", () => {
  it("runs on the files as they were there, in a sandbox of its own, with the agent's memory up to there", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await runTurn(token, cid, "[write:notes.txt:v1]");
    const second = await runTurn(token, cid, "[write:notes.txt:v2]");
    await changesOf(token, cid, second.turnId);
    // The message after the first turn, edited: a branch from it.
    const edit = await runTurn(token, cid, "[recall] [write:side.txt:b]", { parentTurnId: first.turnId });
    expect(edit.turn.branch).toBe(1);
    expect(edit.sandboxId).not.toBe(first.sandboxId);
    // A file read on each branch: the branch has the files as they were after the first turn.
    expect(await fileOf(edit.sandboxId, "notes.txt")).toBe("v1");
    expect(await fileOf(edit.sandboxId, "side.txt")).toBe("b");
    expect(await fileOf(first.sandboxId, "notes.txt")).toBe("v2");
    expect(await fileOf(first.sandboxId, "side.txt")).toBeNull();
    // The agent's session was forked in the branch's sandbox: it remembers the first message only.
    expect(edit.turn.result.text).toContain("[write:notes.txt:v1]");
    expect(edit.turn.result.text).not.toContain("v2]");

    // Through the public API: the conversation's active branch, then another branch by number.
    const content = async (query: string) =>
      (await json(await api(`/v1/environment/files/content?path=notes.txt&conversation=${cid}${query}`, { token })))
        .content;
    expect(await content("")).toBe("v1");
    expect(await content("&branch=0")).toBe("v2");
    // Switching branches switches the workspace the conversation shows.
    await api(`/v1/conversations/${cid}/branches/active`, { token, body: { branch: 0 } });
    expect(await content("")).toBe("v2");
    const unknownBranch = await api(`/v1/environment/files?conversation=${cid}&branch=7`, { token });
    expect(unknownBranch.status).toBe(404);

    // The checkpoint the branch was made from is in use while the branch lives.
    const seeded = await json(await api(`/v1/conversations/${cid}/turns/${second.turnId}`, { token }));
    expect(seeded.checkpoint).toMatchObject({ status: "created", inUse: [1] });

    // A turn on the branch is undone in the branch's sandbox; the other branch keeps its files.
    await changesOf(token, cid, edit.turnId, "1");
    const undone = await restore(token, cid, edit.turnId, "undo", uid("op"));
    expect(undone.status, await undone.clone().text()).toBe(200);
    expect(await fileOf(edit.sandboxId, "side.txt")).toBeNull();
    expect(await fileOf(first.sandboxId, "notes.txt")).toBe("v2");

    // Deleting the conversation: the branch's sandbox first, then every checkpoint.
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    const branchSandbox = await emulator(`/_emulator/sandboxes/${edit.sandboxId}`);
    expect(branchSandbox.status ?? branchSandbox.error?.code).toMatch(/deleted|SANDBOX_NOT_FOUND/);
    expect(await snapshotsOf(first.sandboxId)).toEqual([]);
    expect(await snapshotsOf(edit.sandboxId)).toEqual([]);
  });

  it("a branch whose fork point has no checkpoint shares the workspace, and says so", async () => {
    await emulator("/_emulator/variants", { workspace: "missing" });
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await runTurn(token, cid, "one");
    await runTurn(token, cid, "two");
    const edit = await runTurn(token, cid, "again", { parentTurnId: first.turnId });
    expect(edit.sandboxId).toBe(first.sandboxId);
    const messages = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const parts = messages.messages.at(-1).parts as Array<{ type: string; code?: string }>;
    expect(parts.some((p) => p.type === "warning" && p.code === "workspace_shared")).toBe(true);
  });
});

describe("attachments and a branch's own sandbox", () => {
  async function attach(token: string, cid: string, name: string, text: string) {
    const form = new FormData();
    form.append("file", new Blob([text]), name);
    const res = await SELF.fetch(`${BASE}/v1/conversations/${cid}/attachments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    expect(res.status, await res.clone().text()).toBe(201);
    return json(res);
  }

  it("an upload goes where the active branch runs; a turn elsewhere gets a copy of what it names", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = await runTurn(token, cid, "[write:a.txt:1]");
    const second = await runTurn(token, cid, "[write:b.txt:2]");
    await changesOf(token, cid, second.turnId);
    // Uploaded while branch 0 is active: into the conversation's sandbox.
    const before = await attach(token, cid, "spec.txt", "the spec");
    expect(await fileOf(first.sandboxId, before.path)).toBe("the spec");
    // An edit naming it: the branch's sandbox comes from a checkpoint taken before the upload, and gets a copy.
    const edit = await runTurn(token, cid, "with the spec", { parentTurnId: first.turnId, attachments: [before.id] });
    expect(edit.sandboxId).not.toBe(first.sandboxId);
    expect(edit.turn.status).toBe("completed");
    expect(await fileOf(edit.sandboxId, before.path)).toBe("the spec");
    // The copy was there before the turn ran: it is not one of the turn's own changes. (The next
    // turn's checkpoint waits for this turn's changes to be read, so once it ended they are.)
    const next = await runTurn(token, cid, "[write:c.txt:3]");
    const nextChanges = await changesOf(token, cid, next.turnId, "1");
    expect(nextChanges.source === "workspace" && nextChanges.files.map((f) => f.path)).toEqual(["c.txt"]);
    const messages = MessagesSchema.parse(
      await json(await api(`/v1/conversations/${cid}/messages?branch=1`, { token })),
    );
    const answer = messages.messages.find((m) => m.role === "assistant" && m.turnId === edit.turnId);
    expect(answer?.role === "assistant" && answer.parts.some((p) => p.type === "changes")).toBe(false);
    // Uploaded while the branch is active: into the branch's sandbox only.
    const after = await attach(token, cid, "notes.txt", "for the branch");
    expect(await fileOf(edit.sandboxId, after.path)).toBe("for the branch");
    expect(await fileOf(first.sandboxId, after.path)).toBeNull();
  });
});
