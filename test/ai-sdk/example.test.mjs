// The terminal chat of examples/ai-sdk-chat.mjs (only the `ai` package's client) run against
// `npm start`'s server, as a user would run it: an approval typed in, then the chat picked up again.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, it } from "node:test";
import { startDevServer } from "../../scripts/devserver.mjs";

let server;
before(async () => {
  server = await startDevServer({ vars: { EMULATOR_FRAME_DELAY_MS: "15" } });
});
after(() => server?.stop());

/** Runs the example with `args`; `env` instead of `--base` names the server when given. */
function runExample(args, input, env = undefined) {
  return new Promise((resolve, reject) => {
    const where = env ? [] : ["--base", server.base];
    const child = spawn(process.execPath, ["examples/ai-sdk-chat.mjs", ...where, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, BASE_URL: "", PORT: "", ...env },
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`the example did not finish:\n${out}`));
    }, 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
    child.stdin.end(input);
  });
}

it("the example chats, approves a permission typed in, and picks the chat up again", async () => {
  const chat = `example-${Date.now().toString(36)}`;
  const first = await runExample(["--chat", chat, "--user", chat], "[permission] run the tests\ny\n");
  assert.equal(first.code, 0, first.out);
  assert.match(first.out, /\? Run the test suite\?/);
  assert.match(first.out, /The tests pass \(allowed once\)/);
  assert.match(first.out, /\(completed; tokens in \d+, out \d+\)/);
  const again = await runExample(["--chat", chat, "--user", chat], "");
  assert.equal(again.code, 0, again.out);
  assert.match(again.out, new RegExp(`\\(chat ${chat}: 2 messages\\)`));
});

it("finds the server from the environment as npm start does: PORT, or BASE_URL", async () => {
  for (const env of [{ PORT: String(server.port) }, { BASE_URL: server.base }]) {
    const chat = `example-env-${Date.now().toString(36)}`;
    const run = await runExample(["--chat", chat, "--user", chat], "hello\n", env);
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /\(completed; tokens in \d+, out \d+\)/);
  }
});
