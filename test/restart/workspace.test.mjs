// The workspace's checkpoints across kills (issue 40, "recoverable after a restart"): the dev
// server killed (SIGKILL to `npm start`'s whole process group: nothing shuts down, nothing is
// flushed) while a turn that changes a file is held, after its checkpoint was taken, then started
// again on the same PERSIST_TO. The new instance knows the checkpoint only from storage: once the
// turn ends, its real changes are read from it; an undo restores the file; killed again, the same
// undo's operation id answers `replayed` (its acknowledgement stored) and a redo brings the file back.
// Run: node --test test/restart/workspace.test.mjs
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { devLogin, startDevServer } from "../../scripts/devserver.mjs";

const persistTo = mkdtempSync(join(tmpdir(), "gateway-workspace-"));
let server;

after(async () => {
  await server?.stopped();
  rmSync(persistTo, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function call(path, token, init = {}) {
  const headers = { authorization: `Bearer ${token}`, ...(init.body ? { "content-type": "application/json" } : {}) };
  const res = await fetch(`${server.base}${path}`, { ...init, headers });
  return { status: res.status, body: await res.json() };
}

async function ended(token, turnId) {
  for (let i = 0; ; i++) {
    const turn = await call(`/v1/conversations/c1/turns/${turnId}`, token);
    if (turn.body.status !== "running" && turn.body.status !== "pending") return turn.body;
    assert.ok(i < 600, `turn ${turnId} never ended`);
    await sleep(100);
  }
}

async function held(executionId) {
  for (let i = 0; ; i++) {
    const hold = await (await fetch(`${server.base}/_emulator/executions/${executionId}/hold`)).json();
    if (hold.held) return;
    assert.ok(i < 600, "the run never reached its hold");
    await sleep(100);
  }
}

/** The turn's `changes` part in /messages, once recorded. */
async function changesOf(token, turnId) {
  for (let i = 0; ; i++) {
    const { body } = await call("/v1/conversations/c1/messages", token);
    const answer = (body.messages ?? []).find((m) => m.role === "assistant" && m.turnId === turnId);
    const part = answer?.parts.find((p) => p.type === "changes");
    if (part) return part;
    assert.ok(i < 300, `no changes recorded for ${turnId}`);
    await sleep(50);
  }
}

const notes = async (token) =>
  (await call("/v1/environment/files/content?path=notes.txt&conversation=c1", token)).body.content;

const restore = (token, turnId, direction, operationId) =>
  call(`/v1/conversations/c1/turns/${turnId}/${direction}`, token, {
    method: "POST",
    body: JSON.stringify({ operationId }),
  });

it("killed mid-turn and again after an undo: the turn's changes, its undo and the undo's acknowledgement survive", async () => {
  server = await startDevServer({ persistTo });
  const token = await devLogin(server.base, "workspace-user");
  const first = await call("/v1/conversations/c1/turns", token, {
    method: "POST",
    body: JSON.stringify({ turnId: "t1", message: "[write:notes.txt:v1]" }),
  });
  assert.equal(first.status, 202, JSON.stringify(first.body));
  await ended(token, "t1");
  const second = await call("/v1/conversations/c1/turns", token, {
    method: "POST",
    body: JSON.stringify({ turnId: "t2", message: "[hold] [write:notes.txt:v2]" }),
  });
  assert.equal(second.status, 202, JSON.stringify(second.body));
  await held(second.body.executionId);

  await server.killed();
  server = await startDevServer({ persistTo, port: server.port });
  await held(second.body.executionId);
  const released = await fetch(`${server.base}/_emulator/executions/${second.body.executionId}/release`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(released.status, 200, await released.text());
  assert.equal((await ended(token, "t2")).checkpoint.status, "created");
  const changes = await changesOf(token, "t2");
  assert.equal(changes.source, "workspace");
  assert.deepEqual(
    changes.files.map((f) => [f.path, f.status]),
    [["notes.txt", "modified"]],
  );
  assert.equal(await notes(token), "v2");

  const undone = await restore(token, "t2", "undo", "undo-1");
  assert.equal(undone.status, 200, JSON.stringify(undone.body));
  assert.equal(undone.body.status, "restored");
  assert.equal(await notes(token), "v1");

  await server.killed();
  server = await startDevServer({ persistTo, port: server.port });
  const again = await restore(token, "t2", "undo", "undo-1");
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.status, "replayed");
  assert.equal(await notes(token), "v1");
  const redone = await restore(token, "t2", "redo", "redo-1");
  assert.equal(redone.status, 200, JSON.stringify(redone.body));
  assert.equal(await notes(token), "v2");
});
