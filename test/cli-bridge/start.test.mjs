// `npm start` against a CLI Bridge set up as docs/cli-bridge.md#run-against-your-cli-bridge says: a
// `.dev.vars` with only the CLI Bridge lines (the local secrets keep their defaults) and the bridge's
// token in the environment, never in a process's arguments. Run: node --test test/cli-bridge/start.test.mjs
//
// The product starts from a scratch checkout (this tree's code, linked; its own `.dev.vars`), so
// no file of this tree is touched.
import assert from "node:assert/strict";
import {
  cpSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { devLogin, startDevServer } from "../../scripts/devserver.mjs";
import { startStandIn } from "./standin.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
// A `$` on purpose: wrangler expands env files, and the token must arrive as it is.
const MARK = crypto.randomUUID();
const TOKEN = `start-test-$HOME-${MARK}`;

let bridge;
let server;
let checkout;

before(async () => {
  bridge = await startStandIn({ port: 0, token: TOKEN });
  checkout = mkdtempSync(join(tmpdir(), "gateway-checkout-"));
  for (const name of ["src", "public", "node_modules", "tsconfig.json", "worker-configuration.d.ts"])
    symlinkSync(realpathSync(join(root, name)), join(checkout, name));
  for (const name of ["scripts", "wrangler.toml", "package.json"])
    cpSync(join(root, name), join(checkout, name), { recursive: true });
  writeFileSync(
    join(checkout, ".dev.vars"),
    `# only the CLI Bridge lines\nPROVIDER=cli-bridge\nCLI_BRIDGE_URL=${bridge.url}\nCLI_BRIDGE_MODEL=codex/default\n`,
  );
  process.env.CLI_BRIDGE_TOKEN = TOKEN;
  try {
    server = await startDevServer({ checkout });
  } finally {
    delete process.env.CLI_BRIDGE_TOKEN;
  }
});

after(async () => {
  await server?.stopped();
  await bridge?.close();
  if (checkout) rmSync(checkout, { recursive: true, force: true });
});

it("a .dev.vars with only the CLI Bridge lines keeps the local secrets: /healthz answers and a turn runs on the bridge", async () => {
  assert.equal((await fetch(`${server.base}/healthz`)).status, 200);
  const token = await devLogin(server.base, "start-test-user");
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const sent = await fetch(`${server.base}/v1/conversations/c1/turns`, {
    method: "POST",
    headers,
    body: JSON.stringify({ turnId: "t1", message: "hello from dev vars" }),
  });
  assert.equal(sent.status, 202, await sent.text());
  let turn;
  for (let i = 0; i < 200; i++) {
    turn = await (await fetch(`${server.base}/v1/conversations/c1/turns/t1`, { headers })).json();
    if (turn.status !== "running" && turn.status !== "pending") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(turn.status, "completed", JSON.stringify(turn));
  assert.equal(turn.result.text, "echo: hello from dev vars");
});

it("the bridge token from the environment is in no process's arguments and not in the server's output; its file goes when the server stops", async () => {
  const leaks = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue; // gone, or not ours to read
    }
    if (cmdline.includes(MARK)) leaks.push(`process ${pid}: ${cmdline.replaceAll("\0", " ").slice(0, 200)}`);
  }
  assert.deepEqual(leaks, []);
  assert.ok(server.output().length > 0, "the server wrote its output");
  assert.equal(server.output().includes(MARK), false);
  await server.stopped();
  // (Only files are read: a start's env file is a pipe, which reading would wait on; test/start/start.test.mjs.)
  const left = readdirSync(tmpdir())
    .filter((name) => name.startsWith("gateway-dev-vars-"))
    .filter((name) => {
      try {
        const path = join(tmpdir(), name, "dev.vars");
        return lstatSync(path).isFile() && readFileSync(path, "utf8").includes(MARK);
      } catch {
        return false;
      }
    });
  assert.deepEqual(left, []);
});
