// A child task's update applied once per sourceEventId across a kill (issue 39, "See the
// subagents"): the dev server killed (SIGKILL to `npm start`'s whole process group: nothing shuts
// down, nothing is flushed) while a `[subagents:dup] [hold]` run is held with both its children
// running, then started again on the same PERSIST_TO. Released, the run ends its children and then
// sends every update again, each copy a new frame with the same sourceEventId: the copies of the
// updates applied before the kill are known to the new instance only from storage. Each update is
// in the log once, and /messages shows the children as they ended, not running again.
// Run: node --test test/restart/subagents.test.mjs
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { devLogin, readSse, startDevServer } from "../../scripts/devserver.mjs";

const persistTo = mkdtempSync(join(tmpdir(), "gateway-subagents-"));
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

/** The turn's subagent parts in /messages. */
async function subagents(token) {
  const { body } = await call("/v1/conversations/c1/messages", token);
  return (body.messages ?? [])
    .filter((m) => m.role === "assistant")
    .flatMap((m) => m.parts.filter((p) => p.type === "subagent"));
}

/** Waits until the emulator holds the run (`[hold]`), the run's state surviving a kill with the rest. */
async function held(executionId) {
  for (let i = 0; ; i++) {
    const hold = await (await fetch(`${server.base}/_emulator/executions/${executionId}/hold`)).json();
    if (hold.held) return;
    assert.ok(i < 600, "the run never reached its hold");
    await sleep(100);
  }
}

it("killed with two child tasks running and started again: the copies of their updates are dropped, each update applied once", async () => {
  server = await startDevServer({ persistTo });
  const token = await devLogin(server.base, "subagents-user");
  const sent = await call("/v1/conversations/c1/turns", token, {
    method: "POST",
    body: JSON.stringify({ turnId: "t1", message: "Look around [subagents:dup] [hold]" }),
  });
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  const { executionId } = sent.body;
  await held(executionId);
  // Held with both children running, and their updates applied (stored before anyone sees them).
  for (let i = 0; (await subagents(token)).length < 2; i++) {
    assert.ok(i < 600, "the children's first updates never reached /messages");
    await sleep(50);
  }
  assert.deepEqual(
    (await subagents(token)).map((p) => p.status),
    ["running", "running"],
  );

  await server.killed();
  server = await startDevServer({ persistTo, port: server.port });
  await held(executionId);
  const released = await fetch(`${server.base}/_emulator/executions/${executionId}/release`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(released.status, 200, await released.text());
  for (let i = 0; ; i++) {
    const turn = await call("/v1/conversations/c1/turns/t1", token);
    if (turn.body.status !== "running" && turn.body.status !== "pending") {
      assert.equal(turn.body.status, "completed", JSON.stringify(turn.body));
      break;
    }
    assert.ok(i < 600, "the turn never ended");
    await sleep(100);
  }

  // Every update once in the log, in order, its copies (the running ones applied before the kill included) dropped.
  // (Only full frames are read: the lean `message.part.delta` ones are text, docs/sse-protocol.md §11.)
  const events = [];
  const stream = await fetch(`${server.base}/v1/conversations/c1/events?after=0`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await readSse(stream, (frame) => {
    if (frame.event === "child-task" || frame.event === "turn.completed") events.push(JSON.parse(frame.data));
    return frame.event === "turn.completed";
  });
  const updates = events.filter((e) => e.type === "child-task").map((e) => e.data);
  assert.deepEqual(
    updates.map((u) => [u.sourceEventId.slice(executionId.length + 1), u.status]),
    [
      ["child-explore#1", "running"],
      ["child-tests#1", "running"],
      ["child-tests#2", "failed"],
      ["child-explore#2", "completed"],
    ],
  );
  // The children as they ended, not running again.
  assert.deepEqual(
    (await subagents(token)).map((p) => [p.id.slice(executionId.length + 1), p.status]),
    [
      ["child-explore", "completed"],
      ["child-tests", "failed"],
    ],
  );
});
