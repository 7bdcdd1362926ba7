// The gateway against a Sandbox at a URL, over HTTP, as a deployment reaches the real one
// (docs/configuration.md: PROVIDER=tangle, SANDBOX_BASE_URL, TANGLE_API_KEY): the emulator served on
// a server of its own (bench/emulator-server/, docs/emulator.md), a gateway dev server pointed at it.
// A turn runs end to end through it; the gateway's own emulator routes are off. The benchmarks run
// this way to measure the gateway's CPU apart from the emulator's (bench/agents.mjs).
// Run: node --test test/remote-sandbox/remote.test.mjs
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { devLogin, readSse, startDevServer, startWrangler } from "../../scripts/devserver.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
let emulator;
let gateway;

/** `wrangler dev` of the emulator alone, on a free port, throwaway state, its own process group. */
const startEmulatorServer = () =>
  startWrangler({
    config: join(root, "bench", "emulator-server", "wrangler.toml"),
    label: "the emulator's server",
    timeoutMs: 180_000,
  });

before(async () => {
  emulator = await startEmulatorServer();
  gateway = await startDevServer({
    timeoutMs: 180_000,
    vars: { PROVIDER: "tangle", SANDBOX_BASE_URL: emulator.base, SANDBOX_READY_POLL_MS: "100" },
    secrets: { TANGLE_API_KEY: "remote-sandbox-test-key" },
  });
});

after(() => {
  gateway?.stop();
  emulator?.stop();
});

it("runs a turn against the Sandbox at SANDBOX_BASE_URL, over HTTP", async () => {
  const health = await (await fetch(`${gateway.base}/healthz`)).json();
  assert.equal(health.provider, "tangle");
  const auth = { authorization: `Bearer ${await devLogin(gateway.base, "remote")}` };
  const accepted = await fetch(`${gateway.base}/v1/conversations/remote-1/turns`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ turnId: "t1", message: "hello [words:20]" }),
  });
  assert.equal(accepted.status, 202, await accepted.clone().text());
  const { executionId } = await accepted.json();
  // The turn's end on the conversation's stream, whatever came before it.
  const events = await fetch(`${gateway.base}/v1/conversations/remote-1/events?after=0`, { headers: auth });
  let end = null;
  await readSse(events, (f) => {
    if (f.event === "turn.completed" || f.event === "turn.failed" || f.event === "turn.cancelled") end = f.event;
    return end !== null;
  });
  assert.equal(end, "turn.completed");
  const turn = await (await fetch(`${gateway.base}/v1/conversations/remote-1/turns/t1`, { headers: auth })).json();
  assert.equal(turn.status, "completed");
  assert.equal(turn.executionId, executionId);
  // The run was the emulator server's: it holds that execution, and counted the gateway's calls.
  const execution = await fetch(`${emulator.base}/_emulator/executions/${executionId}`);
  assert.equal(execution.status, 200);
  const { counters } = await (await fetch(`${emulator.base}/_emulator/counters`)).json();
  assert.equal(counters["requests.sandboxes.create"], 1);
  assert.equal(counters["runs.dispatches"], 1);
});

it("answers 404 on its own emulator routes: the control routes are the emulator server's", async () => {
  const res = await fetch(`${gateway.base}/_emulator/counters`);
  assert.equal(res.status, 404);
  assert.equal((await res.json()).error.code, "not_found");
});
