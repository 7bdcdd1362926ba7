// The dev server killed (SIGKILL to `npm start`'s whole process group: nothing shuts down) while a
// turn runs with turns queued behind it, then started again on the same PERSIST_TO: every queued
// turn runs, in order, each dispatched exactly once (the emulator's counters, kept in the same
// state directory). Run: node --test test/restart/queue.test.mjs
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { devLogin, startDevServer } from "../../scripts/devserver.mjs";

const persistTo = mkdtempSync(join(tmpdir(), "gateway-restart-"));
let server;

after(async () => {
  await server?.stopped();
  rmSync(persistTo, { recursive: true, force: true });
});

async function call(path, token, init = {}) {
  const headers = { authorization: `Bearer ${token}`, ...(init.body ? { "content-type": "application/json" } : {}) };
  const res = await fetch(`${server.base}${path}`, { ...init, headers });
  return { status: res.status, body: await res.json() };
}

const counters = async () => (await (await fetch(`${server.base}/_emulator/counters`)).json()).counters;

it("killed with turns queued and restarted on the same PERSIST_TO: each queued turn is dispatched exactly once, in order", async () => {
  server = await startDevServer({ persistTo });
  const token = await devLogin(server.base, "restart-user");
  const send = (turnId, message, extra = {}) =>
    call("/v1/conversations/c1/turns", token, { method: "POST", body: JSON.stringify({ turnId, message, ...extra }) });

  // Held after its first step ([hold]) until the restart: it is still running, the rest still queued, when the kill comes.
  const first = await send("t1", "runs through the kill [slow] [hold]");
  assert.equal(first.status, 202, JSON.stringify(first.body));
  const queued = ["q1", "q2", "q3"];
  for (const [i, turnId] of queued.entries()) {
    const answer = await send(turnId, `queued ${i + 1}`, { whenBusy: "queue" });
    assert.equal(answer.status, 202, JSON.stringify(answer.body));
    assert.equal(answer.body.status, "queued");
  }
  assert.equal((await counters())["runs.started"], 1);
  // Killed mid-run, with every queued turn still waiting.
  const before = await call("/v1/conversations/c1", token);
  assert.equal(before.body.activeTurn?.turnId, "t1", JSON.stringify(before.body));
  assert.deepEqual(
    before.body.queue.map((t) => t.turnId),
    queued,
  );

  await server.killed();
  server = await startDevServer({ persistTo, port: server.port });

  // Nothing was lost: the summary still holds the queue.
  const summary = await call("/v1/conversations/c1", token);
  assert.equal(summary.status, 200, JSON.stringify(summary.body));
  assert.deepEqual(
    summary.body.queue.map((t) => t.turnId),
    queued,
  );
  // The held run goes on (the emulator's state survived the kill with the rest), once it is held.
  for (
    let i = 0;
    !(await (await fetch(`${server.base}/_emulator/executions/${first.body.executionId}/hold`)).json()).held;
    i++
  ) {
    assert.ok(i < 600, "the first turn's run never reached its hold");
    await new Promise((r) => setTimeout(r, 100));
  }
  const released = await fetch(`${server.base}/_emulator/executions/${first.body.executionId}/release`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(released.status, 200, await released.text());
  let turns = {};
  for (let i = 0; i < 1200; i++) {
    turns = Object.fromEntries(
      await Promise.all(
        ["t1", ...queued].map(async (id) => [id, (await call(`/v1/conversations/c1/turns/${id}`, token)).body.status]),
      ),
    );
    if (Object.values(turns).every((s) => s === "completed" || s === "failed" || s === "cancelled")) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(turns, { t1: "completed", q1: "completed", q2: "completed", q3: "completed" });

  const counted = await counters();
  // One run per turn, each started once, and no dispatch attached to a run already started (a
  // dispatch upstream refused busy, the agent session not yet released after the previous
  // receipt, starts nothing and is retried: runs.dispatches counts those too).
  assert.equal(counted["runs.started"], 4, JSON.stringify(counted));
  assert.equal(counted["runs.attached"] ?? 0, 0, JSON.stringify(counted));
  assert.equal(counted["runs.notDispatched"] ?? 0, 0, JSON.stringify(counted));
  const executions = await Promise.all(
    ["t1", ...queued].map(async (id) => (await call(`/v1/conversations/c1/turns/${id}`, token)).body.executionId),
  );
  assert.equal(new Set(executions).size, 4);
  const messages = (await call("/v1/conversations/c1/messages", token)).body.messages;
  assert.deepEqual(
    messages.filter((m) => m.role === "user").map((m) => m.text),
    ["runs through the kill [slow] [hold]", "queued 1", "queued 2", "queued 3"],
  );
});
