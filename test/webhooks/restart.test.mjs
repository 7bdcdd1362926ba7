// A webhook delivery survives the dev server being killed between attempts: `npm start` (with
// PORT and PERSIST_TO) is killed with SIGKILL (no shutdown of any kind) while its receiver
// answers 500, started again on the same state, and the delivery arrives, under the same
// webhook-id, verified by the `standardwebhooks` package, with no request to the gateway after
// the restart. Run: node --test test/webhooks/restart.test.mjs
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { devLogin, freePort } from "../../scripts/devserver.mjs";
import { startReceiver } from "./receiver.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
// The server's own temporary files (start.mjs's env file, left behind by a SIGKILL) go here.
const scratch = mkdtempSync(join(tmpdir(), "gateway-webhook-restart-"));
const persist = join(scratch, "state");
const VARS = { WEBHOOK_RETRY_BASE_MS: "300", WEBHOOK_RETRY_MAX_DELAY_MS: "1000", WEBHOOK_TIMEOUT_MS: "2000" };

let receiver;
let port;
let server;

/** Starts `npm start`'s script on `port` with `persist` as its state; answers once /healthz does. */
async function start() {
  const args = Object.entries(VARS).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
  const child = spawn(process.execPath, [join(root, "scripts", "start.mjs"), ...args], {
    cwd: root,
    env: { ...process.env, PORT: String(port), PERSIST_TO: persist, INSPECTOR_PORT: "0", TMPDIR: scratch },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const keep = (d) => (output = (output + d).slice(-100_000));
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the dev server exited (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) throw new Error(`the dev server did not answer:\n${output}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  /** SIGKILL to the whole process group (node, wrangler, workerd): a crash, nothing flushed. */
  const kill = async () => {
    const exited = child.exitCode !== null ? Promise.resolve() : new Promise((r) => child.once("exit", r));
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // gone already
    }
    await exited;
  };
  return { base, kill, output: () => output };
}

async function inbox(name, settings) {
  const res = await fetch(
    `${receiver.url}/_control/${name}`,
    settings ? { method: "PUT", body: JSON.stringify(settings) } : {},
  );
  return (await res.json()).received;
}

async function until(what, check, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${server ? `\n${server.output().slice(-3000)}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  receiver = await startReceiver();
  port = await freePort();
});

after(async () => {
  await server?.kill();
  await receiver?.close();
  rmSync(scratch, { recursive: true, force: true });
});

it("killed between attempts and started again on the same state, the server delivers under the same webhook-id", async () => {
  server = await start();
  const token = await devLogin(server.base, "webhook-restart");
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const created = await fetch(`${server.base}/v1/webhooks`, {
    method: "POST",
    headers,
    body: JSON.stringify({ url: `${receiver.url}/hooks/restart`, events: ["turn.completed"] }),
  });
  assert.equal(created.status, 201, await created.clone().text());
  const endpoint = await created.json();
  await inbox("restart", { secrets: [endpoint.secret], mode: "fail", status: 500 });

  const sent = await fetch(`${server.base}/v1/conversations/c1/turns`, {
    method: "POST",
    headers,
    body: JSON.stringify({ turnId: "t1", message: "hello before the crash" }),
  });
  assert.equal(sent.status, 202, await sent.text());
  const failed = await until("a failed attempt", async () => {
    const received = await inbox("restart");
    return received.length > 0 ? received : undefined;
  });
  const webhookId = failed[0].webhookId;
  assert.equal(failed[0].verified, true);

  await server.kill();
  const before = (await inbox("restart")).length;
  await inbox("restart", { mode: "ok" });
  server = await start();
  // No request reaches the gateway now: the user object's alarm, kept in its storage, delivers.
  const arrived = await until("the delivery after the restart", async () => {
    const received = await inbox("restart");
    return received.length > before ? received.at(-1) : undefined;
  });
  assert.equal(arrived.webhookId, webhookId);
  assert.equal(arrived.verified, true);
  assert.equal(arrived.payload.type, "turn.completed");
  assert.equal(arrived.payload.data.turnId, "t1");
  assert.deepEqual(new Set((await inbox("restart")).map((r) => r.webhookId)), new Set([webhookId]));

  const log = await (await fetch(`${server.base}/v1/webhooks/${endpoint.id}/deliveries`, { headers })).json();
  assert.equal(log.deliveries.length, 1);
  assert.equal(log.deliveries[0].status, "delivered");
  assert.equal(log.deliveries[0].webhookId, webhookId);
  assert.ok(log.deliveries[0].attempts >= 2, JSON.stringify(log.deliveries[0]));
});
